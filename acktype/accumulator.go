package acktype

import (
	"cmp"
	"slices"
)

// Accumulator collects the acknowledgements of one partition until they are sent. Until then, a
// later acknowledgement of an offset replaces the earlier one. The zero value is empty and ready
// to use. An Accumulator is not safe for concurrent use.
//
// Offsets are kept sorted: adding offsets in ascending order, the usual case, appends; an
// earlier offset costs a binary search and an insertion.
type Accumulator struct {
	acks []Ack // sorted by offset, one per offset
}

// Add records that the record at offset was dealt with as t, replacing any acknowledgement of
// offset not yet taken. t is not checked.
func (a *Accumulator) Add(offset int64, t Type) {
	if i, found := a.search(offset); found {
		a.acks[i].Type = t
	} else {
		a.acks = slices.Insert(a.acks, i, Ack{Offset: offset, Type: t})
	}
}

// AddIfAbsent records that the record at offset was dealt with as t unless offset already has
// an acknowledgement, and reports whether it did. Implicit acknowledgement uses it, so that
// types the consumer set itself (a Release for a record that could not be decoded) are kept.
func (a *Accumulator) AddIfAbsent(offset int64, t Type) bool {
	i, found := a.search(offset)
	if !found {
		a.acks = slices.Insert(a.acks, i, Ack{Offset: offset, Type: t})
	}
	return !found
}

// Get returns the acknowledgement recorded for offset, if any.
func (a *Accumulator) Get(offset int64) (Type, bool) {
	if i, found := a.search(offset); found {
		return a.acks[i].Type, true
	}
	return 0, false
}

// Len returns the number of offsets with an acknowledgement.
func (a *Accumulator) Len() int { return len(a.acks) }

// Take returns the recorded acknowledgements as batches (see AppendBatches), in offset order,
// and empties the Accumulator. It returns nil when there is nothing to send.
func (a *Accumulator) Take() []Batch {
	batches := AppendBatches(nil, a.acks)
	a.acks = a.acks[:0]
	return batches
}

// search returns where offset is, or where it would be inserted.
func (a *Accumulator) search(offset int64) (int, bool) {
	n := len(a.acks)
	if n == 0 || a.acks[n-1].Offset < offset {
		return n, false
	}
	return slices.BinarySearchFunc(a.acks, offset, func(x Ack, o int64) int { return cmp.Compare(x.Offset, o) })
}

package acktype

import (
	"slices"
)

// Accumulator collects the acknowledgements of one partition until they are sent. Until then, a
// later acknowledgement of an offset replaces the earlier one. The zero value is empty and ready
// to use. An Accumulator is not safe for concurrent use.
//
// It keeps runs of consecutive offsets with one type, sorted: adding offsets in ascending order,
// the usual case, extends the last run or appends one, so that a poll's worth of accepted
// records costs one run, not one entry per record; an earlier offset costs a binary search and
// at most splitting one run in three.
type Accumulator struct {
	runs []run // sorted, disjoint; neighbours may touch
	n    int   // offsets in runs
}

// run is the offsets first..last, all acknowledged as t.
type run struct {
	first, last int64
	t           Type
}

// Add records that the record at offset was dealt with as t, replacing any acknowledgement of
// offset not yet taken. t is not checked.
func (a *Accumulator) Add(offset int64, t Type) {
	if k := len(a.runs); k > 0 {
		if last := &a.runs[k-1]; offset == last.last+1 && t == last.t {
			last.last++
			a.n++
			return
		}
	}
	i, found := a.search(offset)
	if !found {
		a.insert(i, offset, t)
		return
	}
	r := a.runs[i]
	if r.t == t {
		return
	}
	// Split r around offset: the part before it, offset alone, the part after it.
	var parts [3]run
	p := parts[:0]
	if offset > r.first {
		p = append(p, run{r.first, offset - 1, r.t})
	}
	p = append(p, run{offset, offset, t})
	if offset < r.last {
		p = append(p, run{offset + 1, r.last, r.t})
	}
	a.runs = slices.Replace(a.runs, i, i+1, p...)
}

// AddRange records that the records at offsets first to last were all dealt with as t, as Add
// for each would. Offsets above every one recorded so far, the usual case, cost O(1); offsets
// none of which is recorded yet cost a binary search; over recorded ones, Add per offset.
func (a *Accumulator) AddRange(first, last int64, t Type) {
	if first > last {
		return
	}
	if k := len(a.runs); k == 0 || a.runs[k-1].last < first {
		if k > 0 && a.runs[k-1].last+1 == first && a.runs[k-1].t == t {
			a.runs[k-1].last = last
		} else {
			a.runs = append(a.runs, run{first, last, t})
		}
		a.n += int(last - first + 1)
		return
	}
	i, found := a.search(first)
	if found || (i < len(a.runs) && a.runs[i].first <= last) {
		for o := first; o <= last; o++ {
			a.Add(o, t)
		}
		return
	}
	// A gap between runs i-1 and i holds first..last: one run, joined to a neighbour of the
	// same type that it touches.
	a.n += int(last - first + 1)
	joinPrev := i > 0 && a.runs[i-1].last+1 == first && a.runs[i-1].t == t
	joinNext := i < len(a.runs) && a.runs[i].first-1 == last && a.runs[i].t == t
	switch {
	case joinPrev && joinNext:
		a.runs[i-1].last = a.runs[i].last
		a.runs = slices.Delete(a.runs, i, i+1)
	case joinPrev:
		a.runs[i-1].last = last
	case joinNext:
		a.runs[i].first = first
	default:
		a.runs = slices.Insert(a.runs, i, run{first, last, t})
	}
}

// Overlaps reports whether any offset from first to last has an acknowledgement.
func (a *Accumulator) Overlaps(first, last int64) bool {
	if first > last {
		return false
	}
	i, found := a.search(first)
	return found || (i < len(a.runs) && a.runs[i].first <= last)
}

// AddIfAbsent records that the record at offset was dealt with as t unless offset already has
// an acknowledgement, and reports whether it did. Implicit acknowledgement uses it, so that
// types the consumer set itself (a Release for a record that could not be decoded) are kept.
func (a *Accumulator) AddIfAbsent(offset int64, t Type) bool {
	i, found := a.search(offset)
	if !found {
		a.insert(i, offset, t)
	}
	return !found
}

// Get returns the acknowledgement recorded for offset, if any.
func (a *Accumulator) Get(offset int64) (Type, bool) {
	if i, found := a.search(offset); found {
		return a.runs[i].t, true
	}
	return 0, false
}

// Len returns the number of offsets with an acknowledgement.
func (a *Accumulator) Len() int { return a.n }

// Take returns the recorded acknowledgements as batches (see AppendBatches), in offset order,
// and empties the Accumulator. It returns nil when there is nothing to send.
func (a *Accumulator) Take() []Batch {
	if len(a.runs) == 0 {
		return nil
	}
	// A run stores at most MaxSameTypeInMixedBatch+1 types before it becomes a batch of its
	// own, so that bounds the types buffer (which must not grow: batches are windows on it).
	size := 0
	for _, r := range a.runs {
		size += int(min(r.last-r.first+1, MaxSameTypeInMixedBatch+1))
	}
	b := batcher{buf: make([]Type, 0, size)}
	for _, r := range a.runs {
		b.addRun(r.first, r.last, r.t)
	}
	b.flush()
	a.runs, a.n = a.runs[:0], 0
	return b.dst
}

// insert adds offset, which no run holds, as a run of its own at i, joined to a neighbour of
// the same type that it touches.
func (a *Accumulator) insert(i int, offset int64, t Type) {
	a.n++
	if i > 0 && a.runs[i-1].last+1 == offset && a.runs[i-1].t == t {
		a.runs[i-1].last++
		return
	}
	if i < len(a.runs) && a.runs[i].first-1 == offset && a.runs[i].t == t {
		a.runs[i].first--
		return
	}
	a.runs = slices.Insert(a.runs, i, run{offset, offset, t})
}

// search returns the run that holds offset, or where a run of it would be inserted.
func (a *Accumulator) search(offset int64) (int, bool) {
	k := len(a.runs)
	if k == 0 || a.runs[k-1].last < offset {
		return k, false
	}
	i, _ := slices.BinarySearchFunc(a.runs, offset, func(r run, o int64) int {
		switch {
		case r.last < o:
			return -1
		case r.first > o:
			return 1
		}
		return 0
	})
	return i, i < k && a.runs[i].first <= offset && offset <= a.runs[i].last
}

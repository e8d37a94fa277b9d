package acktype

import (
	"cmp"
	"slices"
	"unsafe"
)

// MaxSameTypeInMixedBatch is the longest run of one type that stays inside a batch of mixed
// types (Kafka's MAX_RECORDS_WITH_SAME_ACKNOWLEDGE_TYPE). A longer run becomes a batch of its own
// with a single type, which is shorter on the wire than one type per offset.
const MaxSameTypeInMixedBatch = 10

// Ack is one acknowledgement: the record at Offset was dealt with as Type.
type Ack struct {
	Offset int64
	Type   Type
}

// Batch is one acknowledgement batch as Kafka sends it: the offsets FirstOffset to LastOffset
// (inclusive) and their types. Types has one element when every offset has that type, and
// otherwise exactly LastOffset-FirstOffset+1 elements, one per offset; brokers reject any other
// length.
type Batch struct {
	FirstOffset int64
	LastOffset  int64
	Types       []Type
}

// Wire returns b.Types as the []int8 a kmsg AcknowledgementBatch's AcknowledgeTypes field takes.
// It shares b.Types' memory, with no copy.
func (b Batch) Wire() []int8 {
	// Type's underlying type is int8, so the two slices have the same layout.
	return unsafe.Slice((*int8)(unsafe.SliceData(b.Types)), len(b.Types))
}

// AppendBatches appends to dst the batches that carry acks, in offset order, and returns the
// extended slice. The rules are Kafka's (its Java client's Acknowledgements):
//
//   - every run of consecutive offsets is one batch, and any missing offset starts a new one;
//   - inside a run, a stretch of more than MaxSameTypeInMixedBatch offsets of one type is split
//     into a batch of its own;
//   - a batch whose offsets all have one type carries that type once, whatever its length;
//     otherwise it carries one type per offset.
//
// acks need not be sorted: AppendBatches sorts it in place by offset, keeping the order of acks
// for the same offset, of which the last one wins. The types are not checked: a Gap is sent as is.
// All the batches' Types share one new array, which later calls do not touch.
func AppendBatches(dst []Batch, acks []Ack) []Batch {
	if len(acks) == 0 {
		return dst
	}
	byOffset := func(a, b Ack) int { return cmp.Compare(a.Offset, b.Offset) }
	if !slices.IsSortedFunc(acks, byOffset) {
		slices.SortStableFunc(acks, byOffset)
	}
	// Each distinct offset stores at most one type, so buf never grows and the batches' Types,
	// which are windows on it, stay valid.
	b := batcher{dst: dst, buf: make([]Type, 0, len(acks))}
	for i, a := range acks {
		if i+1 < len(acks) && acks[i+1].Offset == a.Offset {
			continue
		}
		b.add(a)
	}
	b.flush()
	return b.dst
}

// batcher turns sorted, distinct acks into batches, one ack at a time. The open batch covers
// first..last; its types are buf[start:], one per offset, except when it is a long run (long),
// which is stored as its single type.
type batcher struct {
	dst         []Batch
	buf         []Type
	start       int
	first, last int64
	run         int // length of the same-type run that ends at last
	long        bool
	open        bool
}

func (b *batcher) add(a Ack) {
	if !b.open || a.Offset != b.last+1 {
		b.flush()
		b.begin(a)
		return
	}
	if a.Type != b.buf[len(b.buf)-1] {
		if b.long {
			b.flush()
			b.begin(a)
			return
		}
		b.buf = append(b.buf, a.Type)
		b.last, b.run = a.Offset, 1
		return
	}
	b.last = a.Offset
	b.run++
	switch {
	case b.long:
	case b.run > MaxSameTypeInMixedBatch:
		// The run just became too long to stay in a mixed batch: what precedes it is a batch
		// of its own, and the run continues as a single-type batch.
		runFirst := a.Offset - MaxSameTypeInMixedBatch
		b.buf = b.buf[:len(b.buf)-MaxSameTypeInMixedBatch]
		if runFirst > b.first {
			b.emit(runFirst - 1)
		}
		b.first, b.start, b.long = runFirst, len(b.buf), true
		b.buf = append(b.buf, a.Type)
	default:
		b.buf = append(b.buf, a.Type)
	}
}

// addRun adds the offsets first..last, all of type t, as add would one at a time. Once the open
// batch has become a single-type one of t, the rest of the run only moves its end.
func (b *batcher) addRun(first, last int64, t Type) {
	for o := first; o <= last; o++ {
		b.add(Ack{Offset: o, Type: t})
		if b.long {
			b.run += int(last - o)
			b.last = last
			return
		}
	}
}

func (b *batcher) begin(a Ack) {
	b.first, b.last, b.run, b.long, b.open = a.Offset, a.Offset, 1, false, true
	b.start = len(b.buf)
	b.buf = append(b.buf, a.Type)
}

// flush closes the open batch, if any.
func (b *batcher) flush() {
	if b.open {
		b.emit(b.last)
		b.open = false
	}
}

// emit appends the batch first..last, whose types are buf[start:], and starts the next batch's
// types after it.
func (b *batcher) emit(last int64) {
	types := b.buf[b.start:]
	if allSame(types) {
		types = types[:1]
		b.buf = b.buf[:b.start+1]
	}
	b.dst = append(b.dst, Batch{FirstOffset: b.first, LastOffset: last, Types: types[:len(types):len(types)]})
	b.start = len(b.buf)
}

func allSame(types []Type) bool {
	for _, t := range types[1:] {
		if t != types[0] {
			return false
		}
	}
	return true
}

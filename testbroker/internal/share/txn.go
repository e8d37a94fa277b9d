package share

import (
	"cmp"
	"slices"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// span is a run of offsets [first, last].
type span struct{ first, last int64 }

// archiveAborted archives the records this acquisition acquired that belong to aborted
// transactions and drops them from its ranges, as Kafka's SharePartition does for a
// read_committed group (maybeFilterAbortedTransactionalAcquiredRecords): a ShareFetch response
// has no aborted transaction list, so the broker, not the client, must keep them from being
// delivered. The aborted transactions are those a read_committed fetch at fetch of the batches
// read would list; the SPSO moves past archived records at its front.
//
// Only records this acquisition acquired are archived: in RecordLimit mode the AVAILABLE rest
// of an aborted batch is archived when a later acquisition takes it.
func (a *acquisition) archiveAborted(fetch int64) {
	if len(a.out) == 0 {
		return
	}
	p := a.p
	aborted := p.log.AbortedTransactions(fetch, a.ext[len(a.ext)-1].Last+1)
	if len(aborted) == 0 {
		return
	}
	drop := abortedBatches(a.ext, aborted)
	if len(drop) == 0 {
		return
	}
	var c counts
	for _, d := range drop {
		for _, r := range a.out {
			if first, last := max(d.first, r.FirstOffset), min(d.last, r.LastOffset); first <= last {
				a.archive(&c, first, last)
			}
		}
	}
	a.out = subtractSpans(a.out, drop)
	p.done += c.done
	p.advanceStart()
	// A waiting ShareFetch tries again at once: the records after the archived ones may be
	// acquirable although this acquisition returned none.
	a.freed = true
}

// abortedBatches returns the batches of ext that belong to an aborted transaction, in offset
// order, as Kafka's fetchAbortedTransactionRecordBatches finds them: walking the batches, a
// producer counts as aborted from the first offset of one of its aborted transactions until
// its ABORT marker, and its transactional batches meanwhile are aborted.
func abortedBatches(ext []log.Extent, aborted []log.AbortedTxn) []span {
	pending := slices.SortedFunc(slices.Values(aborted), func(x, y log.AbortedTxn) int {
		return cmp.Compare(x.FirstOffset, y.FirstOffset)
	})
	producers := make(map[int64]bool)
	var out []span
	for _, e := range ext {
		h, err := log.ParseHeader(e.Data)
		if err != nil || h.ProducerID < 0 {
			continue
		}
		for len(pending) > 0 && pending[0].FirstOffset <= e.Last {
			producers[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		switch {
		case log.IsAbortMarker(e.Data):
			delete(producers, h.ProducerID)
		case h.IsTransactional() && producers[h.ProducerID]:
			out = append(out, span{e.Base, e.Last})
		}
	}
	return out
}

// archive makes the records [first, last], which this acquisition acquired, ARCHIVED, and
// stops the locks no record points to any more.
func (a *acquisition) archive(c *counts, first, last int64) {
	p := a.p
	for i := p.find(first); i >= 0 && i < len(p.batches) && p.batches[i].first <= last; i++ {
		b := &p.batches[i]
		if b.offs == nil && b.first >= first && b.last <= last {
			if b.rec.state == Acquired {
				l := b.rec.lock
				p.add(c, settle(&b.rec, Archived, a.limit, false), b.first, b.last)
				l.stop()
			}
			continue
		}
		if b.offs == nil {
			if b.rec.state != Acquired {
				continue
			}
			b.split()
		}
		for o := max(b.first, first); o <= min(b.last, last); o++ {
			r := &b.offs[o-b.first]
			if r.state != Acquired {
				continue
			}
			l := r.lock
			p.add(c, settle(r, Archived, a.limit, false), o, o)
			if !p.referenced(l) {
				l.stop()
			}
		}
	}
}

// subtractSpans returns the ranges of out without the offsets of drop, both in offset order,
// as Kafka's filterRecordBatchesFromAcquiredRecords.
func subtractSpans(out []AcquiredRange, drop []span) []AcquiredRange {
	var res []AcquiredRange
	for _, r := range out {
		cur := r
		for _, d := range drop {
			if d.last < cur.FirstOffset || d.first > cur.LastOffset {
				continue
			}
			if d.first > cur.FirstOffset {
				res = append(res, AcquiredRange{FirstOffset: cur.FirstOffset, LastOffset: d.first - 1, DeliveryCount: cur.DeliveryCount})
			}
			cur.FirstOffset = d.last + 1
			if cur.FirstOffset > cur.LastOffset {
				break
			}
		}
		if cur.FirstOffset <= cur.LastOffset {
			res = append(res, cur)
		}
	}
	return res
}

package share

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// errFenced is what Acknowledge answers once the partition has been handed over. Kafka's old
// leader learns that it was fenced when the share coordinator refuses its state write with
// FENCED_LEADER_EPOCH and no message, which SharePartition reports as NOT_LEADER_OR_FOLLOWER.
var errFenced = kafkaerr.Code(kerr.NotLeaderForPartition)

// Handover ends p's leadership of its topic partition and returns the share partition the new
// leader starts with: what Kafka's new leader loads from the share-group state when its
// SharePartition initializes. Kafka persists every transition except acquisition and RENEW
// (SharePartition.acquire writes no state), so the new partition has:
//
//   - the SPSO, the ACKNOWLEDGED and ARCHIVED records, and the AVAILABLE records with their
//     delivery counts, as they were;
//   - every ACQUIRED record AVAILABLE again with its delivery count one lower, the count it
//     had before the acquisition, and no owner or lock; its next acquisition gives it the
//     delivery count its last owner saw;
//   - the records at the end that were never persisted (AVAILABLE with delivery count 0, as
//     records acquired once and never acknowledged become) untracked, so that the SPEO is the
//     last record with persisted state and those records are read from the log as new ones.
//
// The new partition reads lg, the new leader's log (each replica has its own), or p's log
// when lg is nil (no replica leads: the partition is kept only for inspection until one does).
//
// p itself is fenced: its lock timers stop and its waiters wake; afterwards Acquire acquires
// nothing, ReleaseMember releases nothing, Notify returns a closed channel, and Acknowledge
// fails with NOT_LEADER_OR_FOLLOWER and no message. Handover of a closed or already handed
// over partition returns nil.
func (p *Partition) Handover(lg *log.Partition) *Partition {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed, p.fenced = true, true
	if lg == nil {
		lg = p.log
	}
	// availFrom stays 0: the records unacquired below become AVAILABLE.
	q := &Partition{group: p.group, log: lg, clk: p.clk, settings: p.settings,
		start: p.start, end: p.end, avail: p.avail, done: p.done}
	q.batches = make([]inflight, 0, len(p.batches)-p.head)
	for i := p.head; i < len(p.batches); i++ {
		b := p.batches[i]
		if b.offs == nil {
			if b.rec.state == Acquired {
				unacquire(&b.rec)
				q.avail += b.size()
			}
		} else {
			b.offs = slices.Clone(b.offs)
			for k := range b.offs {
				if r := &b.offs[k]; r.state == Acquired {
					unacquire(r)
					q.avail++
				}
			}
		}
		q.batches = append(q.batches, b)
	}
	q.untrackUnpersisted()
	w := p.wake
	p.wake = nil
	p.mu.Unlock()
	wakeUp(w)
	return q
}

// unacquire stops r's lock and gives r the state it had before its acquisition.
func unacquire(r *rec) {
	r.lock.stop()
	r.state, r.count, r.member, r.lock = Available, r.count-1, "", nil
}

// untrackUnpersisted forgets the batches at the end whose every record is AVAILABLE with
// delivery count 0: Kafka never persisted them, so a new leader does not know them.
func (p *Partition) untrackUnpersisted() {
	n := len(p.batches)
	for ; n > 0 && unpersisted(&p.batches[n-1]); n-- {
		p.avail -= p.batches[n-1].size()
	}
	if n == len(p.batches) {
		return
	}
	clear(p.batches[n:])
	p.batches = p.batches[:n]
	if n == 0 {
		p.end = p.start
		return
	}
	p.end = p.batches[n-1].last
}

// unpersisted reports whether every record of b is AVAILABLE with delivery count 0.
func unpersisted(b *inflight) bool {
	if b.offs == nil {
		return b.rec.state == Available && b.rec.count == 0
	}
	for k := range b.offs {
		if r := &b.offs[k]; r.state != Available || r.count != 0 {
			return false
		}
	}
	return true
}

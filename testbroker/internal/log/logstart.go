package log

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// IncrementLogStartOffset moves the log start offset up to offset, as Kafka's
// UnifiedLog.maybeIncrementLogStartOffset does for DeleteRecords and for a follower that
// learns its leader's log start offset. Records below it can no longer be read: fetches there
// fail with kerr.OffsetOutOfRange, and timestamp lookups skip them. Batches wholly below it are
// forgotten; the batch that holds it stays whole (its earlier records are sent with it, and
// consumers skip them, as with Kafka's segments). The leader epoch cache keeps its entries from
// the epoch of the new start on, that entry starting at it.
//
// An offset at or below the log start offset changes nothing; one above the high watermark
// fails with kerr.OffsetOutOfRange and Kafka's message. It returns the log start offset after
// the call. A change wakes the Notify channel.
func (p *Partition) IncrementLogStartOffset(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset > p.hwm {
		return p.logStart, kafkaerr.Detailed(kerr.OffsetOutOfRange, "Cannot increment the log start offset to %d since it is larger than the high watermark %d", offset, p.hwm)
	}
	if offset > p.logStart {
		p.moveStart(offset)
		p.notifyLocked()
	}
	return p.logStart, nil
}

// moveStart makes offset, above the log start offset and at most the log end offset, the log
// start offset.
func (p *Partition) moveStart(offset int64) {
	p.logStart = offset
	n := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset })
	if n > 0 {
		k := copy(p.batches, p.batches[n:])
		clear(p.batches[k:])
		p.batches = p.batches[:k]
		p.reindexTimes()
	}
	p.epochs.truncateFromStart(offset)
}

// reindexTimes recomputes the time index, maxSoFar and maxIdx, after batches left the front:
// the largest timestamps of removed batches must not steer lookups.
func (p *Partition) reindexTimes() {
	p.maxIdx = 0
	for i := range p.batches {
		b := &p.batches[i]
		b.maxSoFar = b.maxTimestamp
		if i > 0 {
			b.maxSoFar = max(b.maxTimestamp, p.batches[i-1].maxSoFar)
			if b.maxTimestamp > p.batches[p.maxIdx].maxTimestamp {
				p.maxIdx = i
			}
		}
	}
}

// truncateFromStart removes the entries that the log no longer holds any batch of, when the
// log start moves to start, as Kafka's LeaderEpochFileCache.truncateFromStart: of the entries
// that start at or before start, only the last stays, and it starts at start.
func (c *epochCache) truncateFromStart(start int64) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].start > start })
	if i == 0 {
		return
	}
	n := copy(c.entries, c.entries[i-1:])
	c.entries = c.entries[:n]
	c.entries[0].start = start
}

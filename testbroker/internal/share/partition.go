package share

import (
	"sort"
	"sync"
	"time"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// RecordState is the state of a record in a share partition, with Kafka's ids.
type RecordState int8

// The record states. ACKNOWLEDGED and ARCHIVED are terminal.
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

// String returns Kafka's name of the state.
func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return "UNKNOWN"
}

func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// Settings are a group's effective share settings. The partition asks for them at the moment
// of each use, so that a config change takes effect at the next transition, as in Kafka.
type Settings struct {
	// LockDuration is the acquisition lock duration: share.record.lock.duration.ms of the
	// group, else group.share.record.lock.duration.ms of the broker.
	LockDuration time.Duration
	// DeliveryCountLimit is share.delivery.count.limit: a record delivered this many times is
	// archived instead of being made available again.
	DeliveryCountLimit int16
	// MaxRecordLocks is share.partition.max.record.locks, the cap on in-flight records.
	MaxRecordLocks int
	// RenewEnabled is share.renew.acknowledge.enable.
	RenewEnabled bool
	// AutoOffsetReset is share.auto.offset.reset: "latest", "earliest" or
	// "by_duration:<ISO-8601 duration>". It is read once, when the partition is created.
	AutoOffsetReset string
	// ReadCommitted is share.isolation.level read_committed: acquisitions stop at the last
	// stable offset and archive the records of aborted transactions.
	ReadCommitted bool
}

// AcquiredRange is a run of offsets acquired by one Acquire, all with the same delivery count:
// one AcquiredRecords entry of a ShareFetch response.
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// RecordInfo is the state of one record of a share partition, for inspection.
type RecordInfo struct {
	Offset int64
	State  RecordState
	// DeliveryCount is how many times the record has been acquired; a RENEW does not count.
	DeliveryCount int16
	// Member is the member holding the record while it is Acquired, else empty.
	Member string
	// LockDeadline is when the acquisition lock expires on the cluster clock while the record is
	// Acquired, else the zero time.
	LockDeadline time.Time
}

// rec is the state of one record, or of every record of a batch that is not split.
type rec struct {
	state  RecordState
	count  int16
	member string // non-empty exactly while ACQUIRED
	lock   *lock  // non-nil exactly while ACQUIRED
}

// inflight is one in-flight batch: the records [first, last], which share rec until offs is
// made, then have offs[o-first] each.
type inflight struct {
	first, last int64
	rec         rec
	offs        []rec
	// maxCount bounds offs' delivery counts from above, so that a batch none of whose records
	// can be throttled is not scanned for one at every acquisition.
	maxCount int16
}

func (b *inflight) size() int64 { return b.last - b.first + 1 }

// at returns the state of the record at offset, which b holds.
func (b *inflight) at(offset int64) *rec {
	if b.offs == nil {
		return &b.rec
	}
	return &b.offs[offset-b.first]
}

// split gives every record of b its own state, a copy of the batch's. The batch's state stays
// as it was, so that a rolled-back acknowledgement can drop offs and find it again.
func (b *inflight) split() {
	offs := make([]rec, b.size())
	for i := range offs {
		offs[i] = b.rec
	}
	b.offs, b.maxCount = offs, b.rec.count
}

// Partition is one topic partition as one share group sees it. All its methods are safe for
// concurrent use.
type Partition struct {
	group    string
	log      *log.Partition
	clk      clock.Clock
	settings func() Settings

	mu      sync.Mutex
	closed  bool
	fenced  bool       // closed by Handover
	batches []inflight // the cached batches are batches[head:], contiguous and ascending
	head    int
	start   int64 // SPSO
	end     int64 // SPEO; the SPSO while nothing is cached, as in Kafka
	avail   int64 // cached AVAILABLE records
	// availFrom is a lower bound of the first AVAILABLE offset: every change that makes
	// records AVAILABLE lowers it, and nextFetchOffset raises it to what it finds. In
	// record-limit mode a stored batch is split and acquired 500 records at a time; without
	// the bound each acquisition scanned the batch's records from its first, three times
	// (9-16% of the broker's CPU samples in the record-limit share benchmark).
	availFrom int64
	done      int64 // cached terminal records at or after the SPSO (Kafka's deliveryCompleteCount)
	wake      chan struct{}

	// Scratch space, reused under mu.
	ext []log.Extent
	tx  ackTx
}

// NewPartition returns the share partition of group over lg, with locks timed on clk. settings
// returns the group's effective settings; the partition calls it without holding its own
// mutex, at every use. The SPSO starts where share.auto.offset.reset says: the high watermark
// for latest (and for anything unparsable), the log start offset for earliest, and for
// by_duration the first record with a timestamp at or after now minus the duration, or the
// high watermark if no record below it qualifies.
func NewPartition(group string, lg *log.Partition, clk clock.Clock, settings func() Settings) *Partition {
	hwm := lg.HighWatermark()
	start := hwm
	switch strategy, back := parseOffsetReset(settings().AutoOffsetReset); strategy {
	case resetEarliest:
		start = lg.LogStartOffset()
	case resetByDuration:
		if at, ok := lg.OffsetForTimestamp(clk.Now().Add(-back).UnixMilli(), hwm); ok {
			start = at.Offset
		}
	}
	return newPartitionAt(group, lg, clk, settings, start)
}

// newPartitionAt returns the share partition of group over lg with SPSO start and no records
// tracked.
func newPartitionAt(group string, lg *log.Partition, clk clock.Clock, settings func() Settings, start int64) *Partition {
	return &Partition{group: group, log: lg, clk: clk, settings: settings, start: start, end: start}
}

// Group returns the share group the partition belongs to.
func (p *Partition) Group() string { return p.group }

// StartOffset returns the share-partition start offset (SPSO): every record below it is
// ACKNOWLEDGED or ARCHIVED and forgotten.
func (p *Partition) StartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}

// EndOffset returns the share-partition end offset (SPEO): the last offset the partition
// tracks. While it tracks none (before the first acquisition, and once every acquired record
// is terminal) it equals the SPSO, as Kafka's endOffset does.
func (p *Partition) EndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.end
}

// Lag returns the records a DescribeShareGroupOffsets reports as lag, computed as Kafka does:
// the high watermark, minus the SPSO, minus the terminal records at or after the SPSO.
func (p *Partition) Lag() int64 {
	hwm := p.log.HighWatermark()
	p.mu.Lock()
	defer p.mu.Unlock()
	return hwm - p.start - p.done
}

// Notify returns a channel that is closed when records become AVAILABLE again (a release, a
// lock expiry, the end of a member's session, the unacquired rest of a record-limited
// acquisition) or when the SPSO moves (which frees in-flight capacity), and at Close. A waiting
// ShareFetch calls Notify before it tries to acquire, then waits on the channel and on the
// log's Notify. The channel is made only when asked for.
func (p *Partition) Notify() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake == nil {
		p.wake = make(chan struct{})
		if p.closed {
			close(p.wake)
		}
	}
	return p.wake
}

// takeWakeLocked returns the channel to close for a change that waiters care about, if any
// waiter asked for one. The caller closes it after unlocking.
func (p *Partition) takeWakeLocked(changed bool) chan struct{} {
	if !changed || p.wake == nil {
		return nil
	}
	w := p.wake
	p.wake = nil
	return w
}

func wakeUp(w chan struct{}) {
	if w != nil {
		close(w)
	}
}

// Close stops every lock timer and wakes every waiter; the partition is gone (its topic was
// deleted, or the cluster closed). Afterwards Acquire acquires nothing, Acknowledge and
// ReleaseMember change nothing, and Notify returns a closed channel.
func (p *Partition) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for i := p.head; i < len(p.batches); i++ {
		b := &p.batches[i]
		if b.offs == nil {
			b.rec.lock.stop()
			continue
		}
		for k := range b.offs {
			b.offs[k].lock.stop()
		}
	}
	w := p.wake
	p.wake = nil
	p.mu.Unlock()
	wakeUp(w)
}

// Record returns the state of the record at offset, if the partition tracks it: it lies
// between the front of the first tracked batch and the SPEO.
func (p *Partition) Record(offset int64) (RecordInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(offset)
	if i < 0 {
		return RecordInfo{}, false
	}
	return info(offset, p.batches[i].at(offset)), true
}

// Records returns the state of every record the partition tracks, in offset order.
func (p *Partition) Records() []RecordInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []RecordInfo
	for i := p.head; i < len(p.batches); i++ {
		b := &p.batches[i]
		for o := b.first; o <= b.last; o++ {
			out = append(out, info(o, b.at(o)))
		}
	}
	return out
}

func info(offset int64, r *rec) RecordInfo {
	ri := RecordInfo{Offset: offset, State: r.state, DeliveryCount: r.count, Member: r.member}
	if r.lock != nil {
		ri.LockDeadline = r.lock.deadline
	}
	return ri
}

// cached reports whether any batch is tracked.
func (p *Partition) cached() bool { return p.head < len(p.batches) }

// find returns the index of the cached batch holding offset, or -1.
func (p *Partition) find(offset int64) int {
	if !p.cached() || offset < p.batches[p.head].first || offset > p.batches[len(p.batches)-1].last {
		return -1
	}
	return p.head + sort.Search(len(p.batches)-p.head, func(i int) bool { return p.batches[p.head+i].last >= offset })
}

// floor returns the index of the last cached batch whose first offset is at most offset, or -1.
func (p *Partition) floor(offset int64) int {
	if !p.cached() || offset < p.batches[p.head].first {
		return -1
	}
	if offset > p.end {
		return len(p.batches) - 1
	}
	return p.find(offset)
}

// live returns how many of the offsets [first, last] are at or after the SPSO.
func (p *Partition) live(first, last int64) int64 {
	if last < p.start {
		return 0
	}
	return last - max(first, p.start) + 1
}

// counts are changes to the partition's AVAILABLE and terminal record counts.
type counts struct{ avail, done int64 }

// add counts the records [first, last], now in state s.
func (p *Partition) add(c *counts, s RecordState, first, last int64) {
	switch {
	case s == Available:
		c.avail += last - first + 1
		p.availFrom = min(p.availFrom, first)
	case s.terminal():
		c.done += p.live(first, last)
	}
}

// settle moves an ACQUIRED record (or batch) to target, which becomes ARCHIVED instead of
// AVAILABLE once the delivery count has reached limit or when the records lie below the SPSO,
// and drops its owner and lock. The delivery count is left alone (Kafka's NO_OP). It returns
// the state reached.
func settle(r *rec, target RecordState, limit int16, belowStart bool) RecordState {
	if target == Available && (r.count >= limit || belowStart) {
		target = Archived
	}
	r.state, r.member, r.lock = target, "", nil
	return target
}

// nextFetchOffset returns where the next acquisition starts: the first AVAILABLE record, else
// the offset after the SPEO (the SPSO while nothing is cached, or when the SPSO has moved past
// every cached record), as Kafka's nextFetchOffset.
func (p *Partition) nextFetchOffset() int64 {
	if !p.cached() || p.start > p.batches[len(p.batches)-1].last {
		return p.end
	}
	if p.avail > 0 {
		from := p.availFrom
		i := p.head + sort.Search(len(p.batches)-p.head, func(k int) bool { return p.batches[p.head+k].last >= from })
		for ; i < len(p.batches); i++ {
			b := &p.batches[i]
			if b.offs == nil {
				if b.rec.state == Available {
					p.availFrom = b.first
					return b.first
				}
				continue
			}
			for k := max(0, from-b.first); k < int64(len(b.offs)); k++ {
				if b.offs[k].state == Available {
					p.availFrom = b.first + k
					return p.availFrom
				}
			}
		}
	}
	p.availFrom = p.end + 1
	return p.end + 1
}

// advanceStart moves the SPSO past the terminal records at its front and drops the batches
// that hold only terminal records, as Kafka's maybeUpdateCachedStateAndOffsets. It reports
// whether the SPSO moved.
func (p *Partition) advanceStart() bool {
	i := p.find(p.start)
	if i < 0 {
		return false
	}
	if !p.batches[i].at(p.start).state.terminal() {
		return false
	}
	lastDone, nDone, j := int64(-1), int64(0), p.head
scan:
	for ; j < len(p.batches); j++ {
		b := &p.batches[j]
		if b.offs == nil {
			if !b.rec.state.terminal() {
				break
			}
			lastDone, nDone = b.last, nDone+p.live(b.first, b.last)
			continue
		}
		for k := range b.offs {
			if !b.offs[k].state.terminal() {
				break scan
			}
			lastDone = b.first + int64(k)
			if lastDone >= p.start {
				nDone++
			}
		}
	}
	old := p.start
	p.done -= nDone
	switch {
	case lastDone == p.end:
		p.start, p.end = p.end+1, p.end+1
		p.drop(len(p.batches))
	case j > p.head && lastDone == p.batches[j-1].last:
		// Every batch before j is terminal: the SPSO moves to the next batch.
		p.start = max(p.start, p.batches[j].first)
		p.drop(j)
	default:
		// lastDone lies inside batch j, which stays.
		p.start = max(p.start, lastDone+1)
		p.drop(j)
	}
	return p.start != old
}

// drop forgets the cached batches before index j.
func (p *Partition) drop(j int) {
	clear(p.batches[p.head:j])
	p.head = j
	switch {
	case p.head == len(p.batches):
		p.batches, p.head = p.batches[:0], 0
	case p.head >= 64 && p.head*2 >= len(p.batches):
		n := copy(p.batches, p.batches[p.head:])
		clear(p.batches[n:])
		p.batches, p.head = p.batches[:n], 0
	}
}

package share

import (
	"sort"
	"time"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// AcquireMode is a ShareFetch's ShareAcquireMode (v2).
type AcquireMode int8

// The acquire modes.
const (
	// BatchOptimized acquires whole log batches: maxRecords is a soft limit, rounded up to the
	// end of the batch that reaches it.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most maxRecords records, splitting a batch if it must.
	RecordLimit AcquireMode = 1
)

// Acquire acquires records for member and returns them as AcquiredRecords ranges, with the raw
// log batches that hold them appended to dst, one slice per batch: whole stored batches from
// the one holding the first acquired offset to the one holding the last, as Kafka sends them
// (the client delivers only acquired offsets). The slices are the log's storage, which never
// changes once appended, so the response refers to them rather than copying: in record-limit
// mode each acquisition of 500 records resends its whole stored batch (hundreds of KB), and the
// two copies of it (here and in the response's encoding) were 16-19% of the broker's CPU
// samples (docs/benchmarks.md; the gain in µs/rec is within this machine's noise). It follows Kafka's
// SharePartition.acquire:
//
//   - It starts at the first AVAILABLE record (released, or whose lock expired), else after
//     the SPEO, and reads the log from there as a fetch would: whole batches below the high
//     watermark, or below the last stable offset for a read_committed group (ReadCommitted),
//     at least one, within maxBytes. Records are acquired only among those.
//   - The cached batches met are re-acquired first, then new records are added up to the end
//     of what was read.
//   - At most min(maxRecords, MaxRecordLocks - in-flight records) records are acquired, where
//     in-flight records are those from the SPSO to the SPEO. When no capacity is left, only
//     AVAILABLE records up to the SPEO are re-acquired. BatchOptimized rounds the limit up to
//     the end of a log batch; RecordLimit stops exactly at it, splitting a batch and leaving
//     the rest AVAILABLE.
//   - Redelivery is throttled: records whose delivery count has reached max(2,
//     ceil(DeliveryCountLimit/2)) end the fetch they are in, and are acquired at most half
//     their batch at a time at that count, a quarter at the next, and so on; a record on its
//     last attempt is acquired alone. A poison record thus ends up archived on its own.
//   - batchSize shapes the ranges of new records in BatchOptimized mode: a range is cut at a
//     log batch boundary once it holds batchSize records or more; zero or less means no cut.
//
// Each acquired record gets delivery count + 1, state ACQUIRED and owner member; each range
// gets one lock timer of LockDuration. A read_committed group then archives the acquired
// records of aborted transactions and leaves them out of the ranges (archiveAborted). Control
// records (transaction markers) are acquired as any record, as Kafka acquires them: the
// client delivers none of them and acknowledges their offsets as gaps. maxRecords or maxBytes
// of zero or less acquire nothing.
//
// An SPSO outside the log while nothing is tracked (AlterShareGroupOffsets set it below the log
// start offset or past the log end offset) first moves to the log start offset, as Kafka's
// share fetch moves it when the log answers OFFSET_OUT_OF_RANGE; Kafka answers that fetch
// empty and acquires from the new SPSO at the next one, this acquisition goes on at once.
// The error, which wraps kerr.OffsetOutOfRange, comes only from a log that no longer holds the
// SPSO. Acquire holds the partition's mutex while it reads the log, whose mutex is a leaf.
func (p *Partition) Acquire(dst [][]byte, member string, maxRecords, batchSize, maxBytes int, mode AcquireMode) ([]AcquiredRange, [][]byte, error) {
	if maxRecords <= 0 || maxBytes <= 0 {
		return nil, dst, nil
	}
	s := p.settings()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, dst, nil
	}
	limit := p.log.HighWatermark()
	if s.ReadCommitted {
		limit = p.log.LastStableOffset()
	}
	fetch := p.nextFetchOffset()
	if !p.cached() {
		if ls := p.log.LogStartOffset(); fetch < ls || fetch > p.log.LogEndOffset() {
			p.start, p.end, fetch = ls, ls, ls
		}
	}
	if fetch >= limit {
		p.mu.Unlock()
		return nil, dst, nil
	}
	// Nothing past the SPEO plus maxRecords can be acquired (rounded up to a batch end): the
	// batches after it are not listed, which changes nothing but the cost of a deep backlog.
	upTo := max(p.end, fetch-1) + int64(maxRecords)
	ext, err := p.log.AppendExtents(p.ext[:0], fetch, maxBytes, limit, upTo)
	p.ext = ext[:0]
	if err != nil || len(ext) == 0 {
		p.mu.Unlock()
		return nil, dst, err
	}
	a := acquisition{
		p:          p,
		member:     member,
		mode:       mode,
		ext:        ext,
		now:        p.clk.Now(),
		lockFor:    s.LockDuration,
		limit:      s.DeliveryCountLimit,
		throttleAt: max(2, (s.DeliveryCountLimit+1)/2),
	}
	a.run(fetch, int64(maxRecords), int64(batchSize), int64(s.MaxRecordLocks))
	if s.ReadCommitted {
		a.archiveAborted(fetch)
	}
	w := p.takeWakeLocked(a.freed)
	if len(a.out) > 0 {
		first, last := a.out[0].FirstOffset, a.out[len(a.out)-1].LastOffset
		for _, e := range ext {
			if e.Last >= first && e.Base <= last {
				dst = append(dst, e.Data)
			}
		}
	}
	p.mu.Unlock()
	wakeUp(w)
	return a.out, dst, nil
}

// acquisition is one Acquire in progress, under the partition's mutex.
type acquisition struct {
	p          *Partition
	member     string
	mode       AcquireMode
	ext        []log.Extent // the batches read from the log
	now        time.Time
	lockFor    time.Duration
	limit      int16 // delivery count limit
	throttleAt int16 // delivery count from which redelivery is throttled
	out        []AcquiredRange
	freed      bool // records were left AVAILABLE
}

// run acquires from the batches read at fetch, as SharePartition.acquire.
func (a *acquisition) run(fetch, maxRecords, batchSize, maxLocks int64) {
	p := a.p
	firstBase, lastToAcquire := a.ext[0].Base, a.ext[len(a.ext)-1].Last
	if lastToAcquire < p.start {
		return
	}
	var inFlight int64
	if p.cached() {
		inFlight = p.end - p.start + 1
	}
	maxAcquire := min(maxRecords, maxLocks-inFlight)
	if maxAcquire <= 0 {
		// At capacity: only released records up to the SPEO may be acquired again.
		if fetch > p.end {
			return
		}
		maxAcquire = min(maxRecords, p.end-fetch+1)
		lastToAcquire = min(lastToAcquire, p.end)
	}

	// The cached batches overlapping what was read, starting with the one holding its first
	// offset; the first new offset otherwise.
	base := firstBase
	if fi := p.floor(firstBase); fi < 0 {
		base = max(base, p.start)
	} else if p.batches[fi].last >= firstBase {
		base = p.batches[fi].first
	}
	lo := min(firstBase, base)
	i := p.head + sort.Search(len(p.batches)-p.head, func(k int) bool { return p.batches[p.head+k].first >= lo })
	if i == len(p.batches) || p.batches[i].first > lastToAcquire {
		a.acquireNew(base, lastToAcquire, batchSize, maxAcquire)
		return
	}

	// No record before fetch is AVAILABLE: the split batches' scans start there.
	scanFrom := max(firstBase, fetch)
	end := p.end
	var acquired int64
	for ; i < len(p.batches) && p.batches[i].first <= lastToAcquire && acquired < maxAcquire; i++ {
		b := &p.batches[i]
		full := b.first >= firstBase && b.last <= lastToAcquire
		overLimit := a.mode == RecordLimit && b.size() > maxAcquire-acquired
		throttled := a.throttled(b, scanFrom, lastToAcquire)
		if throttled && acquired > 0 {
			// The throttled records go alone in a later fetch.
			return
		}
		if !full || b.offs != nil || overLimit || throttled {
			if b.offs == nil {
				if b.rec.state != Available {
					continue
				}
				b.split()
			}
			n := a.acquireOffsets(b, maxAcquire-acquired, scanFrom, lastToAcquire)
			acquired += n
			if throttled && n > 0 {
				return
			}
			continue
		}
		if b.rec.state != Available {
			continue
		}
		b.rec.state, b.rec.member = Acquired, a.member
		b.rec.count++
		b.rec.lock = a.lock(b.first, b.last)
		p.avail -= b.size()
		a.out = append(a.out, AcquiredRange{FirstOffset: b.first, LastOffset: b.last, DeliveryCount: b.rec.count})
		acquired += b.size()
	}
	if acquired < maxAcquire && end < lastToAcquire {
		a.acquireNew(end+1, lastToAcquire, batchSize, maxAcquire-acquired)
	}
}

// throttled reports whether the AVAILABLE records of b within [first, last] include one whose
// delivery count calls for throttled redelivery.
func (a *acquisition) throttled(b *inflight, first, last int64) bool {
	if b.offs == nil {
		return b.rec.state == Available && b.rec.count >= a.throttleAt
	}
	if b.maxCount < a.throttleAt {
		return false
	}
	for o := max(b.first, first); o <= min(b.last, last); o++ {
		if r := &b.offs[o-b.first]; r.state == Available && r.count >= a.throttleAt {
			return true
		}
	}
	return false
}

// acquireOffsets acquires the AVAILABLE records of the split batch b within [first, last], as
// Kafka's acquireSubsetBatchRecords: a record on its last attempt goes alone, throttled records
// go at most size >> (count - throttleAt + 1) at a time, and RecordLimit stops at remaining.
// It returns how many it acquired.
func (a *acquisition) acquireOffsets(b *inflight, remaining, first, last int64) int64 {
	var acquired int64
	throttledMax := int64(-1)
	runFirst, runLast := int64(-1), int64(-1)
	var runCount int16
	flush := func() {
		if runFirst < 0 {
			return
		}
		l := a.lock(runFirst, runLast)
		for o := runFirst; o <= runLast; o++ {
			b.offs[o-b.first].lock = l
		}
		a.out = append(a.out, AcquiredRange{FirstOffset: runFirst, LastOffset: runLast, DeliveryCount: runCount})
		runFirst = -1
	}
	for o := max(b.first, first); o <= min(b.last, last); o++ {
		r := &b.offs[o-b.first]
		if r.state != Available {
			continue
		}
		if a.limit > 2 && r.count == a.limit-1 && acquired > 0 {
			break
		}
		if r.count >= a.throttleAt && throttledMax < 0 {
			throttledMax = max(1, b.size()>>(r.count-a.throttleAt+1))
		}
		r.state, r.member = Acquired, a.member
		r.count++
		b.maxCount = max(b.maxCount, r.count)
		a.p.avail--
		acquired++
		if runFirst >= 0 && o == runLast+1 && r.count == runCount {
			runLast = o
		} else {
			flush()
			runFirst, runLast, runCount = o, o, r.count
		}
		if a.limit > 2 && r.count == a.limit ||
			a.mode == RecordLimit && acquired >= remaining ||
			acquired == throttledMax {
			break
		}
	}
	flush()
	return acquired
}

// acquireNew acquires records the partition has never tracked, from first to at most last, as
// Kafka's acquireNewBatchRecords: at most maxAcquire, rounded up to the end of a log batch; in
// RecordLimit mode the rest of that batch stays AVAILABLE.
func (a *acquisition) acquireNew(first, last, batchSize, maxAcquire int64) {
	p := a.p
	wasEmpty := !p.cached()
	firstAcq, lastAcq := first, last
	if wasEmpty && p.end > firstAcq {
		firstAcq = p.end
	}
	if maxAcquire < lastAcq-firstAcq+1 {
		lastAcq = a.lastOfBatchHolding(firstAcq + maxAcquire - 1)
	}
	if firstAcq > lastAcq {
		return
	}
	switch n := lastAcq - firstAcq + 1; {
	case a.mode == RecordLimit && n > maxAcquire:
		// One batch, its first maxAcquire records acquired and the rest AVAILABLE with
		// delivery count 0, as Kafka's createPartiallyAcquiredBatch.
		acqLast := firstAcq + maxAcquire - 1
		l := a.lock(firstAcq, acqLast)
		b := inflight{first: firstAcq, last: lastAcq, offs: make([]rec, n), maxCount: 1}
		for k := range b.offs[:maxAcquire] {
			b.offs[k] = rec{state: Acquired, count: 1, member: a.member, lock: l}
		}
		p.batches = append(p.batches, b)
		p.avail += n - maxAcquire
		// nextFetchOffset left availFrom at most at the old SPEO + 1, below these records, but
		// the bound must not rest on that.
		p.availFrom = min(p.availFrom, acqLast+1)
		a.freed = true
		a.out = append(a.out, AcquiredRange{FirstOffset: firstAcq, LastOffset: acqLast, DeliveryCount: 1})
	case a.mode == RecordLimit || batchSize <= 0 || n <= batchSize:
		a.addBatch(firstAcq, lastAcq)
	default:
		cur := firstAcq
		for _, e := range a.ext {
			if e.Base > lastAcq {
				break
			}
			if e.Base-cur >= batchSize {
				a.addBatch(cur, e.Base-1)
				cur = e.Base
			}
		}
		a.addBatch(cur, lastAcq)
	}
	if wasEmpty {
		p.start = firstAcq
	}
	p.end = max(p.end, lastAcq)
}

// addBatch caches [first, last] as one batch acquired for the first time.
func (a *acquisition) addBatch(first, last int64) {
	a.p.batches = append(a.p.batches, inflight{
		first: first,
		last:  last,
		rec:   rec{state: Acquired, count: 1, member: a.member, lock: a.lock(first, last)},
	})
	a.out = append(a.out, AcquiredRange{FirstOffset: first, LastOffset: last, DeliveryCount: 1})
}

// lastOfBatchHolding returns the last offset of the batch read that holds offset, or offset.
func (a *acquisition) lastOfBatchHolding(offset int64) int64 {
	for _, e := range a.ext {
		if e.Base <= offset && offset <= e.Last {
			return e.Last
		}
	}
	return offset
}

// lock schedules a lock over [first, last] for this acquisition.
func (a *acquisition) lock(first, last int64) *lock {
	l := newLock(first, last, a.now, a.lockFor)
	a.p.schedule(l, a.lockFor)
	return l
}

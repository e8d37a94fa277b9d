package shareconsumer

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/kshare/kshare/apiversions"
)

// admission decides, for Poll and Process alike, whether a session may be sent a ShareFetch
// now and how many records it may ask for. It reads no clock. Guarded by Consumer.mu, but for
// the watermark Process's workers read.
//
// Poll: records are fetched only for a waiting Poll with nothing to return, MaxPollRecords at
// a time (one leader at a time with RecordLimitAcquire), or, with FetchAhead, once per leader
// after each Poll that returned records, while fewer than MaxPollRecords are held. Renewed
// records go first: no fetch while they wait for a Poll, or, with a Poll waiting, for their
// renews' answers.
//
// Process (workers > 0): never more records held than the workers plus the queue, counting
// those queued, those with a handler and those the ShareFetches in flight may bring (their
// grants). The queue is QueueSize at most, and about a second of the handlers' work (queueTime)
// as they go, at least as many records as there are workers: fast handlers get fetches of up to
// QueueSize records rather than a round trip per few, slow ones do not keep records from the
// group's other members for minutes. A session fetches once the queue has run down to the low
// watermark: the records the workers get through in about two ShareFetch round trips, so that
// the next records arrive before the queue empties; or to empty, when that is over half the
// room (fast handlers: a fetch then brings as much as fits). The free room is shared evenly
// among the leaders not fetching.
type admission struct {
	maxPollRecords int
	fetchAhead     bool
	recordLimit    bool
	fetchMaxWait   time.Duration

	// waiting: a Poll, or Process's intake, waits for records; fetches may be sent.
	waiting bool
	// pollSeq counts Polls; returned, the Polls that returned records.
	pollSeq, returned uint64
	// limitNode is the one leader fetched at a time with RecordLimitAcquire; -1 none yet.
	limitNode int32

	// Process: its workers and QueueSize, 0 for Poll.
	workers, queueMax int
	reserved          int // the grants of the ShareFetches in flight
	fetchingLeaders   int // the leaders with a ShareFetch in flight
	// rate is the records handlers settle per second, and rtt the ShareFetch round trip,
	// both smoothed; low is the watermark they give, which workers read.
	rate      float64
	rtt       time.Duration
	settled   uint64 // the settled count at the last sample
	sampledAt time.Time
	low       atomic.Int64
	// wantKick: a session did not fetch for Process because the queue was above the
	// watermark or full; the worker that sees it at or below the watermark kicks.
	wantKick atomic.Bool
}

func newAdmission(c cfg) admission {
	return admission{maxPollRecords: c.maxPollRecords, fetchAhead: c.fetchAhead, recordLimit: c.recordLimit,
		fetchMaxWait: c.fetchMaxWait, limitNode: -1}
}

// heldView is what the ledger holds for Process, for admission.
type heldView struct {
	held, queued int
}

// admitHeld reads the Process records the ledger holds.
func (c *Consumer) admitHeld() heldView {
	return heldView{held: int(c.ledger.lease.held.Load()), queued: int(c.ledger.lease.queued.Load())}
}

// queueTime is how much of the handlers' work Process's queue holds, at most.
const queueTime = time.Second

// startPool makes admission size fetches for a pool of workers with a queue of at most
// queueMax records.
func (a *admission) startPool(workers, queueMax int, now time.Time) {
	a.workers, a.queueMax, a.rate, a.rtt, a.sampledAt = workers, queueMax, 0, 0, time.Time{}
	a.low.Store(0)
}

// endPool returns admission to Poll. The grants of ShareFetches still in flight stay reserved
// until they are answered: their records go to whichever pool runs then, or to Poll's buffer.
func (a *admission) endPool() { a.workers, a.queueMax = 0, 0 }

// capacity is how many records Process may hold now: its workers, and a queue of about
// queueTime of their work, at least as many records as workers, at most QueueSize.
func (a *admission) capacity() int {
	q := min(max(int(a.rate*queueTime.Seconds()), min(a.workers, a.queueMax)), a.queueMax)
	return a.workers + q
}

// mayFetch returns how many records s may ask for now, 0 when it may not fetch. leaders are
// the leaders of the assigned partitions.
func (a *admission) mayFetch(s *session, pv pollView, hv heldView, leaders []int32) int {
	if s.fetching || s.piggyback != nil || s.sending != nil {
		return 0
	}
	if a.workers > 0 {
		if !a.waiting {
			return 0
		}
		g := 0
		if int64(hv.queued) <= a.low.Load() {
			g = a.grant(hv, leaders)
		}
		if g == 0 {
			a.wantKick.Store(true)
		}
		return g
	}
	if a.waiting && s.queuedRenews > 0 {
		// A renew fetch; or, when the session must be opened anew, the opening fetch, on
		// which the renews fail (acknowledgements cannot travel on it).
		return 1
	}
	if pv.renewsHeld > 0 && (pv.renewsReady > 0 || a.waiting) {
		return 0 // renewed records go first: a Poll returns them, or waits for their renews' answers
	}
	switch {
	case a.waiting && !pv.anyBuffered:
	case a.fetchAhead && a.returned > 0 && s.fetchedAhead != a.returned && pv.buffered < a.maxPollRecords:
	default:
		return 0
	}
	if a.recordLimit && a.limitLeader(leaders) != s.node {
		return 0
	}
	return a.maxPollRecords
}

// grant is how many records the next ShareFetch of Process may ask a leader for: an even share
// of the free room among the leaders not fetching yet (this one included), at least one while
// any is free. Grants are taken one after the other, each reserving its records, so their sum
// never exceeds what was free.
func (a *admission) grant(hv heldView, leaders []int32) int {
	free := a.capacity() - hv.held - a.reserved
	if free <= 0 {
		return 0
	}
	idle := max(1, len(leaders)-a.fetchingLeaders)
	return max(1, free/idle)
}

// fetchLimits is how a ShareFetch is sized.
type fetchLimits struct {
	maxWait     int32
	records     int32
	acquireMode int8
	grant       int // Process: the records reserved for it
}

// limits sizes s's ShareFetch: for Poll, MaxPollRecords (exactly, with RecordLimitAcquire);
// for Process, the grant, exactly where the leader takes the record-limit acquire mode, with a
// wait short enough for renews to pass (a quarter of the lock) and for acknowledgements queued
// behind it to leave within ackFlushInterval. A FetchAhead fetch takes what
// is there: waiting at the broker would hold up the acknowledgements queued behind it, and a
// Poll that finds nothing fetches anyway.
func (a *admission) limits(s *session, v apiversions.Versions, hv heldView, leaders []int32, lock time.Duration) fetchLimits {
	l := fetchLimits{maxWait: int32(a.fetchMaxWait / time.Millisecond), records: int32(a.maxPollRecords)}
	if a.recordLimit {
		l.acquireMode = 1
	}
	s.fetchedPoll = a.pollSeq
	s.fetchedAhead = a.returned
	if a.workers > 0 {
		l.grant = max(a.grant(hv, leaders), 1)
		l.records = int32(l.grant)
		if v.SupportsRecordLimitAcquire() {
			l.acquireMode = 1
		}
		w := min(a.fetchMaxWait, ackFlushInterval)
		if lock > 0 {
			w = min(w, lock/4)
		}
		l.maxWait = int32(w / time.Millisecond)
		return l
	}
	if a.fetchAhead && !a.waiting {
		l.maxWait = 0
	}
	return l
}

// fetchSent reserves grant records for s's ShareFetch (Process; 0 for Poll).
func (a *admission) fetchSent(s *session, grant int) {
	if grant > 0 {
		s.grant = grant
		a.reserved += grant
		a.fetchingLeaders++
	}
}

// fetchAnswered releases s's grant, and takes the round trip and the count of records
// Process's handlers settled so far.
func (a *admission) fetchAnswered(s *session, rtt time.Duration, settled uint64, now time.Time) {
	if s.grant > 0 {
		a.reserved = max(0, a.reserved-s.grant)
		a.fetchingLeaders = max(0, a.fetchingLeaders-1)
		s.grant = 0
	}
	if a.workers == 0 {
		return
	}
	if a.rtt == 0 {
		a.rtt = rtt
	} else {
		a.rtt += (rtt - a.rtt) / 4
	}
	a.observeSettled(settled, now)
}

// observeSettled takes Process's count of settled records at now, and moves the watermark.
func (a *admission) observeSettled(settled uint64, now time.Time) {
	switch d := now.Sub(a.sampledAt); {
	case a.sampledAt.IsZero():
		// The first answer: the time before it was the group join's, not the handlers'.
		a.settled, a.sampledAt = settled, now
	case d >= time.Millisecond:
		// The rate rises at once and falls slowly: a small queue keeps the rate it can measure
		// small, so it must not hold the queue back when the handlers could do more.
		r := float64(settled-a.settled) / d.Seconds()
		if r > a.rate {
			a.rate = r
		} else {
			a.rate += (r - a.rate) / 4
		}
		a.settled, a.sampledAt = settled, now
	}
	low := int64(a.rate * a.rtt.Seconds() * 2)
	if low*2 >= int64(a.capacity()) {
		low = 0
	}
	a.low.Store(low)
}

// fetchIfLow kicks the sessions when admission declined a ShareFetch for Process and the queue
// has run down to the watermark since. Process's workers and lease loop call it, without a lock,
// whenever records left the queue or the count of held ones.
func (c *Consumer) fetchIfLow() {
	a := &c.admit
	if a.wantKick.Load() && c.ledger.lease.queued.Load() <= a.low.Load() && a.wantKick.CompareAndSwap(true, false) {
		c.kick()
	}
}

// limitLeader returns the leader RecordLimitAcquire fetches now, choosing the first leader of
// an assigned partition when the current one leads none.
func (a *admission) limitLeader(leaders []int32) int32 {
	if len(leaders) == 0 {
		return -1
	}
	if !slices.Contains(leaders, a.limitNode) {
		a.limitNode = leaders[0]
	}
	return a.limitNode
}

// rotate moves RecordLimitAcquire on to the next leader, after an empty fetch.
func (a *admission) rotate(leaders []int32) {
	if len(leaders) == 0 {
		return
	}
	i, _ := slices.BinarySearch(leaders, a.limitNode+1)
	a.limitNode = leaders[i%len(leaders)]
}

package shareconsumer

import (
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// RecordOutcome is what became of one record Process acquired, as OnRecordDone receives it:
// handled, or lost before or while a handler had it.
type RecordOutcome struct {
	Record *Record
	// Ack is what was acknowledged: acktype.Accept, Release or Reject; 0 when nothing was,
	// because the lock was lost (Err is then the *errors.LockLostError).
	Ack acktype.Type
	// Err is the handler's error (nil for Accept), a *errors.PanicError when it panicked, or the
	// *errors.LockLostError when the lock was lost.
	Err error
	// HandlerTime is how long the handler ran.
	HandlerTime time.Duration
	// Renews is how many times the broker renewed the record's lock for it.
	Renews int
	// DeadLettered says that the record's copy was produced to the dead-letter topic
	// (DeadLetterTopic); Ack is then acktype.Accept and Err the handler's error, unless the
	// lock was lost while the copy was produced: then Ack is 0, Err the *errors.LockLostError,
	// and the record comes back (its next dead-lettering makes a second copy). No copy is
	// tried for a record whose lock ran out before its handler returned.
	DeadLettered bool
	// DeadLetterErr is the failure to produce the record's dead-letter copy, a
	// *errors.DeadLetterError; the record was released (Ack is acktype.Release), or its lock
	// lost (Ack is 0).
	DeadLetterErr error
}

// ProcessStats is a snapshot of what Process did on a consumer, counted from its creation over
// every Process call.
type ProcessStats struct {
	// Delivered counts the records Process acquired, whatever became of them: handed to a
	// handler, released from the queue at shutdown, or lost while they waited in it.
	Delivered uint64
	Accepted  uint64
	Released  uint64 // handler errors and panics, and records released at shutdown
	Rejected  uint64
	// DeadLettered counts the copies produced to the dead-letter topic (DeadLetterTopic): each
	// record was then acknowledged ACCEPT (not counted in Accepted), or, when its lock was lost
	// while the copy was produced, not acknowledged (counted in LocksLost too; it comes back).
	// DeadLetterFailures counts the produces to it that failed: those records were released
	// (counted in Released) or, again, lost their lock (LocksLost).
	DeadLettered       uint64
	DeadLetterFailures uint64
	// RenewRequests counts the ShareAcknowledge requests that renewed locks; Renewed, the
	// renews of one record's lock that a broker confirmed, counted when the answer came, also
	// for a record whose handler had returned by then (RecordOutcome.Renews counts those its
	// handler saw).
	RenewRequests uint64
	Renewed       uint64
	RenewFailures uint64 // renews a broker refused (a lock lost to a session reset or a late answer counts in LocksLostBy only)
	LocksLost     uint64 // records whose lock was lost; LocksLostBy splits them by reason
	LocksLostBy   map[errors.LockLostReason]uint64
	Redeliveries  uint64 // records delivered with DeliveryCount above 1
	Panics        uint64
	Held          int // acquired records Process holds now: queued, with a handler, or settled or lost but not yet counted out by their worker's batch
	HandlerTime   Histogram
}

// String returns the stats as key=value pairs separated by spaces, in a fixed order:
// delivered, accepted, released, rejected, redeliveries, renew_requests, renewed,
// renew_failures, locks_lost, then locks_lost_<reason> for each reason with a count, panics,
// dead_lettered, dead_letter_failures, held, handler_p50 and handler_p99.
func (s ProcessStats) String() string {
	var b strings.Builder
	kv := func(k string, v uint64) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(v, 10))
	}
	kv("delivered", s.Delivered)
	kv("accepted", s.Accepted)
	kv("released", s.Released)
	kv("rejected", s.Rejected)
	kv("redeliveries", s.Redeliveries)
	kv("renew_requests", s.RenewRequests)
	kv("renewed", s.Renewed)
	kv("renew_failures", s.RenewFailures)
	kv("locks_lost", s.LocksLost)
	for _, r := range errors.LockLostReasons {
		if n := s.LocksLostBy[r]; n > 0 {
			kv("locks_lost_"+r.String(), n)
		}
	}
	kv("panics", s.Panics)
	kv("dead_lettered", s.DeadLettered)
	kv("dead_letter_failures", s.DeadLetterFailures)
	kv("held", uint64(max(0, s.Held)))
	b.WriteString(" handler_p50=" + s.HandlerTime.Quantile(0.5).String())
	b.WriteString(" handler_p99=" + s.HandlerTime.Quantile(0.99).String())
	return b.String()
}

// histogramBuckets is how many buckets a Histogram has: the first ends at 50µs, each next one
// at twice the one before, the last is open-ended (from about 7.5 hours).
const histogramBuckets = 30

const histogramFirst = 50 * time.Microsecond

// Histogram counts durations in buckets whose upper bounds double, from 50µs.
type Histogram struct {
	Counts [histogramBuckets]uint64
	Count  uint64
	Sum    time.Duration
}

// BucketBound returns the upper bound of bucket i (inclusive); the last bucket has none and
// returns the largest time.Duration.
func BucketBound(i int) time.Duration {
	if i >= histogramBuckets-1 {
		return time.Duration(1<<63 - 1)
	}
	return histogramFirst << i
}

func bucketOf(d time.Duration) int {
	if d <= histogramFirst {
		return 0
	}
	// The smallest i with histogramFirst<<i >= d.
	i := bits.Len64(uint64((d - 1) / histogramFirst))
	return min(i, histogramBuckets-1)
}

// Quantile returns the upper bound of the bucket holding the q-quantile (0 < q <= 1) of the
// durations counted, 0 when none were: an estimate at most twice the true value.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(h.Count) + 0.5)
	rank = max(1, min(rank, h.Count))
	var seen uint64
	for i, n := range h.Counts {
		seen += n
		if seen >= rank {
			return BucketBound(i)
		}
	}
	return BucketBound(histogramBuckets - 1)
}

// processCounters are ProcessStats as the workers count them.
type processCounters struct {
	delivered, accepted, released, rejected atomic.Uint64
	redeliveries, panics                    atomic.Uint64
	deadLettered, deadLetterFailures        atomic.Uint64
	locksLost                               [errors.LockMaxHoldReached + 1]atomic.Uint64
	handlerCounts                           [histogramBuckets]atomic.Uint64
	handlerCount                            atomic.Uint64
	handlerSum                              atomic.Int64
}

func (pc *processCounters) observeHandler(d time.Duration) {
	pc.handlerCounts[bucketOf(d)].Add(1)
	pc.handlerCount.Add(1)
	pc.handlerSum.Add(int64(d))
}

func (pc *processCounters) countAck(t acktype.Type) {
	switch t {
	case acktype.Accept:
		pc.accepted.Add(1)
	case acktype.Release:
		pc.released.Add(1)
	case acktype.Reject:
		pc.rejected.Add(1)
	}
}

// snapshot returns the counts, with held and the lease's renew counts.
func (pc *processCounters) snapshot(held int, renewRequests, renewed, renewFailures uint64) ProcessStats {
	s := ProcessStats{
		Delivered:          pc.delivered.Load(),
		Accepted:           pc.accepted.Load(),
		Released:           pc.released.Load(),
		Rejected:           pc.rejected.Load(),
		RenewRequests:      renewRequests,
		Renewed:            renewed,
		RenewFailures:      renewFailures,
		Redeliveries:       pc.redeliveries.Load(),
		Panics:             pc.panics.Load(),
		DeadLettered:       pc.deadLettered.Load(),
		DeadLetterFailures: pc.deadLetterFailures.Load(),
		Held:               held,
		LocksLostBy:        make(map[errors.LockLostReason]uint64),
	}
	for _, r := range errors.LockLostReasons {
		if n := pc.locksLost[r].Load(); n > 0 {
			s.LocksLostBy[r] = n
			s.LocksLost += n
		}
	}
	for i := range pc.handlerCounts {
		s.HandlerTime.Counts[i] = pc.handlerCounts[i].Load()
	}
	s.HandlerTime.Count = pc.handlerCount.Load()
	s.HandlerTime.Sum = time.Duration(pc.handlerSum.Load())
	return s
}

// fold adds the counts of o, a worker's, to pc.
func (pc *processCounters) fold(o *processCounters) {
	pc.delivered.Add(o.delivered.Load())
	pc.accepted.Add(o.accepted.Load())
	pc.released.Add(o.released.Load())
	pc.rejected.Add(o.rejected.Load())
	pc.redeliveries.Add(o.redeliveries.Load())
	pc.panics.Add(o.panics.Load())
	pc.deadLettered.Add(o.deadLettered.Load())
	pc.deadLetterFailures.Add(o.deadLetterFailures.Load())
	for i := range pc.locksLost {
		pc.locksLost[i].Add(o.locksLost[i].Load())
	}
	for i := range pc.handlerCounts {
		pc.handlerCounts[i].Add(o.handlerCounts[i].Load())
	}
	pc.handlerCount.Add(o.handlerCount.Load())
	pc.handlerSum.Add(o.handlerSum.Load())
}

// add adds the counts of o to s; Held and the renew counts stay s's.
func (s *ProcessStats) add(o ProcessStats) {
	s.Delivered += o.Delivered
	s.Accepted += o.Accepted
	s.Released += o.Released
	s.Rejected += o.Rejected
	s.Redeliveries += o.Redeliveries
	s.Panics += o.Panics
	s.DeadLettered += o.DeadLettered
	s.DeadLetterFailures += o.DeadLetterFailures
	for r, n := range o.LocksLostBy {
		s.LocksLostBy[r] += n
		s.LocksLost += n
	}
	for i := range s.HandlerTime.Counts {
		s.HandlerTime.Counts[i] += o.HandlerTime.Counts[i]
	}
	s.HandlerTime.Count += o.HandlerTime.Count
	s.HandlerTime.Sum += o.HandlerTime.Sum
}

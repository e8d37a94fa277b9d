package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/errors"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func heldAt(node int32, off int64, acquired time.Time, lock time.Duration) *heldRecord {
	return &heldRecord{rec: &Record{Topic: "t", Offset: off}, tp: TopicPartition{"t", 0}, node: node,
		acquired: acquired, lock: lock, deadline: acquired.Add(lock), renewable: true}
}

func TestLeaseMarginIsDerivedFromTheLockAndTheRoundTrips(t *testing.T) {
	t.Parallel()
	l := lease{fetchWait: 500 * time.Millisecond}
	assert.Equal(t, 6*time.Second, l.margin(30*time.Second), "a fifth of the lock")
	assert.Equal(t, 250*time.Millisecond, l.margin(time.Second), "the fetch wait, at most a quarter of the lock")
	l.observeRTT(200 * time.Millisecond)
	assert.Equal(t, 500*time.Millisecond, l.margin(time.Second), "at most half the lock")
	l.observeRTT(2 * time.Second)
	assert.Equal(t, 8500*time.Millisecond, l.margin(30*time.Second), "four round trips and the fetch wait")
	for range 50 {
		l.observeRTT(time.Millisecond)
	}
	assert.Equal(t, 6*time.Second, l.margin(30*time.Second), "an old peak fades")

	fixed := lease{fixedMargin: 10 * time.Second}
	assert.Equal(t, 10*time.Second, fixed.margin(30*time.Second))
	assert.Equal(t, 9*time.Second, fixed.margin(10*time.Second), "at most nine tenths of the lock")
}

func TestLeasePlanRenewsEveryRecordOfALeaderOnceOneIsDue(t *testing.T) {
	t.Parallel()
	l := lease{}
	lock := 10 * time.Second
	early := heldAt(1, 0, t0, lock)
	late := heldAt(1, 1, t0.Add(5*time.Second), lock)
	other := heldAt(2, 2, t0.Add(5*time.Second), lock)
	held := []*heldRecord{early, late, other}

	p := l.plan(t0.Add(time.Second), held)
	assert.Empty(t, p.renew)
	assert.Equal(t, t0.Add(8*time.Second), p.next, "due at the deadline less a fifth of the lock")

	p = l.plan(t0.Add(8*time.Second), held)
	require.Len(t, p.renew, 1, "only leader 1 has a record due")
	assert.ElementsMatch(t, []*heldRecord{early, late}, p.renew[1], "the record not due yet goes in the same request")
	assert.Empty(t, p.lost)
}

func TestLeasePlanWaitsForARenewInFlightThenGivesUp(t *testing.T) {
	t.Parallel()
	l := lease{}
	lock := 10 * time.Second
	h := heldAt(1, 0, t0, lock)
	h.renewSent = t0.Add(8 * time.Second)
	p := l.plan(t0.Add(11*time.Second), []*heldRecord{h})
	assert.Empty(t, p.lost, "past the local deadline, the answer still decides")
	assert.Empty(t, p.renew, "one renew in flight at a time")
	assert.Equal(t, t0.Add(15*time.Second), p.next)
	p = l.plan(t0.Add(15*time.Second), []*heldRecord{h})
	require.Len(t, p.lost, 1)
	assert.Equal(t, errors.LockDeadlinePassed, p.lost[0].reason)
}

func TestLeasePlanLosesLocksPastTheDeadlineOrTheMaximumHold(t *testing.T) {
	t.Parallel()
	l := lease{maxHold: time.Minute}
	lock := 10 * time.Second
	old := heldAt(1, 0, t0, lock)
	old.deadline = t0.Add(70 * time.Second) // renewed lately, but held for over a minute
	unrenewable := heldAt(2, 1, t0.Add(50*time.Second), lock)
	unrenewable.renewable = false
	p := l.plan(t0.Add(60*time.Second), []*heldRecord{old, unrenewable, {rec: &Record{}, lost: &errors.LockLostError{}}})
	require.Len(t, p.lost, 2)
	assert.Equal(t, lostLock{old, errors.LockMaxHoldReached}, p.lost[0])
	assert.Equal(t, lostLock{unrenewable, errors.LockDeadlinePassed}, p.lost[1], "a leader without RENEW: the lock runs out")
	assert.Empty(t, p.renew)

	p = l.plan(t0.Add(55*time.Second), []*heldRecord{unrenewable})
	assert.Empty(t, p.renew, "never renewed")
	assert.Equal(t, t0.Add(60*time.Second), p.next)
}

func TestAdmission(t *testing.T) {
	t.Parallel()
	a := admission{capacity: 20}
	assert.Equal(t, 20, a.free(0, 0, 0))
	assert.Equal(t, 5, a.free(10, 3, 2))
	assert.Equal(t, 0, a.free(15, 10, 0), "never negative")
	assert.Equal(t, 0, a.grant(0, 3))
	assert.Equal(t, 6, a.grant(20, 3), "an even share")
	assert.Equal(t, 1, a.grant(2, 3), "at least one record")
	assert.Equal(t, 20, a.grant(20, 0))
	// Taken one after the other, the grants never add up to more than was free.
	free, total := 7, 0
	for idle := 3; idle > 0; idle-- {
		g := a.grant(free, idle)
		total += g
		free -= g
	}
	assert.LessOrEqual(t, total, 7)
}

func TestLedgerKeepsTheLatestDelivery(t *testing.T) {
	t.Parallel()
	l := newLedger()
	first := heldAt(1, 5, t0, time.Second)
	again := heldAt(1, 5, t0.Add(time.Second), time.Second)
	assert.Nil(t, l.add(first))
	assert.Same(t, first, l.add(again))
	assert.False(t, l.holds(first))
	assert.False(t, l.remove(first), "the earlier delivery does not remove the later one")
	assert.Equal(t, 1, l.len())
	assert.True(t, l.remove(again))
	assert.Equal(t, 0, l.len())
}

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	var pc processCounters
	for range 98 {
		pc.observeHandler(time.Millisecond)
	}
	pc.observeHandler(time.Second)
	pc.observeHandler(time.Second)
	h := pc.snapshot(0).HandlerTime
	assert.Equal(t, uint64(100), h.Count)
	assert.Equal(t, 1600*time.Microsecond, h.Quantile(0.5), "the bucket above 1ms ends at 1.6ms")
	assert.Equal(t, 1638400*time.Microsecond, h.Quantile(0.99))
	assert.Equal(t, time.Duration(0), Histogram{}.Quantile(0.5))
	assert.Equal(t, 0, bucketOf(0))
	assert.Equal(t, 0, bucketOf(50*time.Microsecond))
	assert.Equal(t, 1, bucketOf(51*time.Microsecond))
	assert.Equal(t, histogramBuckets-1, bucketOf(1000*time.Hour))
}

func TestProcessStatsString(t *testing.T) {
	t.Parallel()
	s := ProcessStats{Delivered: 3, Accepted: 2, LocksLost: 1, LocksLostBy: map[errors.LockLostReason]uint64{errors.LockLeaderMoved: 1}, Held: 1}
	assert.Equal(t, "delivered=3 accepted=2 released=0 rejected=0 redeliveries=0 renew_requests=0 renewed=0 renew_failures=0 locks_lost=1 locks_lost_leader_moved=1 panics=0 held=1 handler_p50=0s handler_p99=0s", s.String())
}

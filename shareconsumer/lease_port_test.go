package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/errors"
)

// The tests of the lease that were written for lease.plan, before the re-cut: the same
// behaviour, asked of the lease's timer heap (due), renew building (renewParts) and renew
// answers.

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

func TestLeaseRenewsEveryRecordOfALeaderOnceOneIsDue(t *testing.T) {
	t.Parallel()
	l := tLeaseLedger()
	h := &lostLog{}
	lock := 10 * time.Second
	tAcquire(l, tHeld(0, 1), leaseT0, lock, true, h, 0)                    // early
	tAcquire(l, tHeld(0, 1), leaseT0.Add(5*time.Second), lock, true, h, 1) // late
	tAcquire(l, tHeld(1, 2), leaseT0.Add(5*time.Second), lock, true, h, 2) // another leader's

	ev := l.due(leaseT0.Add(time.Second))
	assert.Empty(t, ev.renew)
	assert.Equal(t, leaseT0.Add(8*time.Second), ev.next, "due at the deadline less a fifth of the lock")

	ev = l.due(leaseT0.Add(8 * time.Second))
	assert.Equal(t, []int32{1}, ev.renew, "only leader 1 has a record due")
	parts := l.renewParts(1, leaseT0.Add(8*time.Second))
	require.Len(t, parts, 1)
	assert.Equal(t, TopicPartition{"t", 0}, parts[0].tp)
	assert.Equal(t, []int64{0, 1}, parts[0].renewOffsets(), "the record not due yet goes in the same request")
	assert.True(t, parts[0].quiet, "not the application's callback's business")
	assert.Zero(t, h.told, "nothing lost")
}

func TestLeaseWaitsForARenewInFlightThenGivesUp(t *testing.T) {
	t.Parallel()
	l := tLeaseLedger()
	h := &lostLog{}
	tAcquire(l, tHeld(0, 1), leaseT0, 10*time.Second, true, h, 0)
	require.Equal(t, []int32{1}, l.due(leaseT0.Add(8*time.Second)).renew)
	require.NotEmpty(t, l.renewParts(1, leaseT0.Add(8*time.Second)))

	ev := l.due(leaseT0.Add(11 * time.Second))
	assert.Zero(t, h.told, "past the local deadline, the answer still decides")
	assert.Empty(t, ev.renew, "one renew in flight at a time")
	assert.Equal(t, leaseT0.Add(15*time.Second), ev.next)
	l.due(leaseT0.Add(15 * time.Second))
	assert.Equal(t, map[int64]errors.LockLostReason{0: errors.LockDeadlinePassed}, h.reasons)
}

func TestLeaseLosesLocksPastTheDeadlineOrTheMaximumHold(t *testing.T) {
	t.Parallel()
	l := tLeaseLedger()
	l.lease.maxHold = time.Minute
	h := &lostLog{}
	lock := 10 * time.Second
	// Held from leaseT0.
	tAcquire(l, tHeld(0, 1), leaseT0, lock, true, h, 0)
	// From a leader without RENEW: its lock runs out.
	tAcquire(l, tHeld(1, 2), leaseT0.Add(50*time.Second), lock, false, h, 1)
	// Lost already.
	lost := tAcquire(l, tHeld(2, 3), leaseT0.Add(50*time.Second), lock, true, h, 2)
	l.loseOne(&lost[0], errors.LockLeaderMoved)
	// The first, renewed lately: its lock runs until leaseT0+70s.
	parts := l.renewParts(1, leaseT0.Add(55*time.Second))
	require.Len(t, parts, 1)
	parts[0].renewOf.renewAnswered(parts[0], nil, 15000, leaseT0.Add(55100*time.Millisecond))

	ev := l.due(leaseT0.Add(56 * time.Second))
	assert.Empty(t, ev.renew, "never renewed")
	assert.Equal(t, leaseT0.Add(60*time.Second), ev.next)
	assert.Equal(t, 1, h.told)

	ev = l.due(leaseT0.Add(60 * time.Second))
	assert.Equal(t, map[int64]errors.LockLostReason{0: errors.LockMaxHoldReached, 1: errors.LockDeadlinePassed, 2: errors.LockLeaderMoved}, h.reasons)
	assert.Equal(t, 3, h.told, "a record lost already is not lost again")
	assert.Empty(t, ev.renew)
}

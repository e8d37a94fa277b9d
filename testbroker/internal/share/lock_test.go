package share

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

func TestLockExpiresExactlyAtTheDeadline(t *testing.T) {
	f := newFixture(t, defaults(), 3)
	f.acquire("m", 3)
	f.clk.Advance(30*time.Second - time.Millisecond)
	f.requireStates(0, st(Acquired, 1))
	f.clk.Advance(time.Millisecond)
	assert.Equal(t, RecordInfo{Offset: 1, State: Available, DeliveryCount: 1}, f.record(1))
	assert.Zero(t, f.clk.Pending())
	// The next fetch takes it again.
	assert.Equal(t, []AcquiredRange{rng(0, 2, 2)}, f.acquire("m2", 10))
}

func TestDeliveryLimitArchivesOnExpiry(t *testing.T) {
	set := defaults()
	set.DeliveryCountLimit = 2
	f := newFixture(t, set, 3)
	f.acquire("m", 3)
	f.clk.Advance(30 * time.Second)
	f.requireStates(0, st(Available, 1))
	assert.Equal(t, int64(3), f.p.Lag())
	require.Equal(t, []AcquiredRange{rng(0, 2, 2)}, f.acquire("m", 3))
	f.clk.Advance(30 * time.Second)
	// Archived after the second expiry: the SPSO moves past them.
	assert.Equal(t, int64(3), f.p.StartOffset())
	assert.Empty(t, f.p.Records())
	assert.Zero(t, f.p.Lag())
	assert.Empty(t, f.acquire("m", 3))
}

func TestDeliveryLimitChangeTakesEffectAtTheNextTransition(t *testing.T) {
	f := newFixture(t, defaults(), 1, 1)
	f.acquire("m", 1)
	f.acquire("m", 1)
	f.set.DeliveryCountLimit = 1
	require.NoError(t, f.ack("m", 1, 1, ackRelease))
	f.clk.Advance(30 * time.Second)
	assert.Equal(t, int64(2), f.p.StartOffset(), "both archived at delivery count 1")
}

func TestStaleLockDoesNothing(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m", 5)
	old := f.p.batches[f.p.head].rec.lock
	f.clk.Advance(10 * time.Second)
	require.NoError(t, f.ack("m", 0, 4, ackRenew))
	// The old timer was stopped; one that fired as it was stopped finds its lock dead.
	f.p.expire(old)
	f.requireStates(0, st(Acquired, 1))
	assert.Equal(t, t0.Add(40*time.Second), f.record(0).LockDeadline)

	// Released and acquired again: the earlier lock no longer holds them either.
	require.NoError(t, f.ack("m", 3, 4, ackRelease))
	f.clk.Advance(5 * time.Second)
	require.Equal(t, []AcquiredRange{rng(3, 4, 2)}, f.acquire("m2", 10))
	f.clk.Advance(25 * time.Second) // the renewed lock expires, for 0-2 only
	f.requireStates(0, st(Available, 1), st(Available, 1), st(Available, 1), st(Acquired, 2), st(Acquired, 2))
	f.clk.Advance(5 * time.Second)
	f.requireStates(3, st(Available, 2), st(Available, 2))
	assert.Zero(t, f.clk.Pending())
}

func TestNotify(t *testing.T) {
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	f := newFixture(t, defaults(), 2, 2, 2, 2)
	ch := f.p.Notify()
	f.acquire("m", 2)
	f.acquire("m", 2)
	f.acquire("m", 2)
	require.False(t, closed(ch), "acquiring makes nothing available")
	require.Equal(t, ch, f.p.Notify(), "the same channel until something happens")

	f.clk.Advance(30 * time.Second)
	require.True(t, closed(ch), "expiry")

	steps := []struct {
		name string
		do   func()
	}{
		{"acquire", func() { f.acquire("m", 6) }},
		{"release", func() { require.NoError(t, f.ack("m", 2, 3, ackRelease)) }},
		{"acquire again", func() { f.acquire("m", 2) }},
		{"end of session", func() { require.Equal(t, 6, f.p.ReleaseMember("m")) }},
		{"acquire a third time", func() { f.acquire("m", 2) }},
		{"SPSO moving", func() { require.NoError(t, f.ack("m", 0, 1, ackAccept)) }},
	}
	for i, step := range steps {
		ch := f.p.Notify()
		step.do()
		assert.Equal(t, i%2 == 1, closed(ch), step.name)
	}

	ch = f.p.Notify()
	f.p.Close()
	assert.True(t, closed(ch), "close")
	assert.True(t, closed(f.p.Notify()), "after close")
}

func TestReleaseMember(t *testing.T) {
	set := defaults()
	set.DeliveryCountLimit = 2
	f := newFixture(t, set, 2, 2, 2, 2)
	f.acquire("m1", 2)
	f.acquire("m2", 2)
	f.acquire("m1", 2)
	f.acquire("m1", 2)
	require.NoError(t, f.ack("m1", 4, 5, ackRelease))
	require.Equal(t, []AcquiredRange{rng(4, 5, 2)}, f.acquire("m1", 2))
	require.NoError(t, f.ack("m1", 6, 6, ackAccept))

	assert.Equal(t, 5, f.p.ReleaseMember("m1"))
	f.requireStates(0, st(Available, 1), st(Available, 1), st(Acquired, 1), st(Acquired, 1),
		st(Archived, 2), st(Archived, 2), st(Acknowledged, 1), st(Available, 1))
	assert.Equal(t, "m2", f.record(2).Member)
	assert.Equal(t, 1, f.clk.Pending(), "only m2's lock is left")
	assert.Zero(t, f.p.ReleaseMember("m1"))
	assert.Zero(t, f.p.ReleaseMember("nobody"))
}

func TestReleaseMemberMovesTheStartOffset(t *testing.T) {
	set := defaults()
	set.DeliveryCountLimit = 2
	f := newFixture(t, set, 2)
	f.acquire("m", 2)
	require.NoError(t, f.ack("m", 0, 1, ackRelease))
	f.acquire("m", 2)
	assert.Equal(t, 2, f.p.ReleaseMember("m"))
	assert.Equal(t, int64(2), f.p.StartOffset())
}

func TestStartOffsetMovesPastTerminalPrefix(t *testing.T) {
	f := newFixture(t, defaults(), 5, 5, 5)
	f.acquire("m", 5)
	f.acquire("m", 5)
	f.acquire("m", 5)
	assert.Equal(t, int64(15), f.p.Lag())

	require.NoError(t, f.ack("m", 5, 9, ackAccept))
	assert.Equal(t, int64(0), f.p.StartOffset())
	assert.Equal(t, int64(10), f.p.Lag(), "accepted records after the SPSO are not lag")

	require.NoError(t, f.ack("m", 0, 4, ackReject))
	assert.Equal(t, int64(10), f.p.StartOffset())
	_, ok := f.p.Record(9)
	assert.False(t, ok, "records below the SPSO are forgotten")
	assert.Equal(t, int64(5), f.p.Lag())

	require.NoError(t, f.ack("m", 10, 11, ackAccept, ackAccept))
	assert.Equal(t, int64(12), f.p.StartOffset())
	assert.Equal(t, Acknowledged, f.record(11).State, "a batch stays until all of it is terminal")
	assert.Equal(t, int64(3), f.p.Lag())
	assert.Len(t, f.p.Records(), 5)

	require.NoError(t, f.ack("m", 12, 14, ackAccept))
	assert.Equal(t, int64(15), f.p.StartOffset())
	assert.Equal(t, int64(15), f.p.EndOffset())
	assert.Empty(t, f.p.Records())
	assert.Zero(t, f.p.Lag())
	assert.Zero(t, f.clk.Pending())
}

func TestCloseStopsEverything(t *testing.T) {
	f := newFixture(t, defaults(), 2, 2, 2)
	f.acquire("m", 2)
	ranges, _, err := f.p.Acquire(nil, "m", 1, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	require.Len(t, ranges, 1)
	require.NoError(t, f.ack("m", 2, 2, ackRenew))
	require.Equal(t, 2, f.clk.Pending())
	f.p.Close()
	assert.Zero(t, f.clk.Pending())
	assert.Empty(t, f.acquire("m", 10))
	assert.NoError(t, f.ack("m", 0, 1, ackAccept))
	assert.Zero(t, f.p.ReleaseMember("m"))
	f.requireStates(0, st(Acquired, 1))
}

func TestConcurrentUseWithTheRealClock(t *testing.T) {
	set := defaults()
	set.LockDuration = 2 * time.Millisecond
	set.DeliveryCountLimit = 3
	var mu sync.Mutex
	settings := func() Settings {
		mu.Lock()
		defer mu.Unlock()
		return set
	}
	lg := log.NewPartition(log.Config{})
	for range 100 {
		_, err := lg.Append(encode(1+int(lg.LogEndOffset()%7), 8, t0.UnixMilli()), t0)
		require.NoError(t, err)
	}
	lg.SetHighWatermark(lg.LogEndOffset())
	p := NewPartition("g", lg, clock.Real{}, settings)
	defer p.Close()

	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := fmt.Sprint("m", c)
			for i := range 300 {
				ranges, _, err := p.Acquire(nil, member, 1+i%9, 3, 1<<20, AcquireMode(i%2))
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range ranges {
					// Refusals are expected: the lock may have expired meanwhile.
					_ = p.Acknowledge(member, []AckBatch{{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, Types: []int8{int8(i % 5)}}})
				}
				if i%50 == 0 {
					p.ReleaseMember(member)
				}
			}
		}()
	}
	wg.Wait()

	mu.Lock()
	set.LockDuration = time.Minute
	mu.Unlock()
	require.Eventually(t, func() bool {
		ranges, _, err := p.Acquire(nil, "drain", 1000, 0, 1<<20, BatchOptimized)
		require.NoError(t, err)
		for _, r := range ranges {
			require.NoError(t, p.Acknowledge("drain", []AckBatch{{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, Types: []int8{ackAccept}}}))
		}
		return p.StartOffset() == lg.HighWatermark()
	}, 10*time.Second, time.Millisecond)
	require.Empty(t, p.Records())
}

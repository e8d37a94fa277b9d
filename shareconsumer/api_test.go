package shareconsumer

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/internal/leakcheck"
	"github.com/kshare/kshare/testbroker"
)

func states(c *testbroker.Cluster, group, topic string, p int32) map[int64]testbroker.ShareRecordState {
	out := map[int64]testbroker.ShareRecordState{}
	for _, r := range c.ShareRecords(group, topic, p) {
		out[r.Offset] = r.State
	}
	return out
}

// accepted reports whether the record at off is done with: ACKNOWLEDGED, or below the share
// partition start offset, where the broker forgets records.
func accepted(c *testbroker.Cluster, group, topic string, p int32, off int64) bool {
	if start, _, ok := c.SharePartitionOffsets(group, topic, p); ok && off < start {
		return true
	}
	r, ok := c.ShareRecord(group, topic, p, off)
	return ok && r.State == testbroker.ShareAcknowledged
}

func TestImplicitMode(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})
	cons := tNew(t, c, "g", Topics("t"))
	recs := tPollN(t, cons, 2)

	assert.ErrorIs(t, cons.Acknowledge(recs[0], acktype.Accept), errors.ErrImplicitMode)
	assert.ErrorIs(t, cons.AcknowledgeOffset("t", 0, 0, acktype.Accept), errors.ErrImplicitMode)
	assert.Equal(t, map[int64]testbroker.ShareRecordState{0: testbroker.ShareAcquired, 1: testbroker.ShareAcquired}, states(c, "g", "t", 0))

	// The next Poll accepts them, on its ShareFetch.
	tProduce(t, c, "t", 0, []string{"c"})
	recs = tPollN(t, cons, 1)
	assert.EqualValues(t, 2, recs[0].Offset)
	assert.True(t, accepted(c, "g", "t", 0, 0))
	assert.True(t, accepted(c, "g", "t", 0, 1))
}

func TestExplicitMode(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b", "c"})
	var mu sync.Mutex
	var commits []AcknowledgementCommit
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement(), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, ac)
	}))
	recs := tPollN(t, cons, 3)

	// Nothing is consumed while a record is unacknowledged.
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Release))
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept), "a later acknowledgement replaces the earlier")
	require.NoError(t, cons.Acknowledge(recs[1], acktype.Reject))
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords)
	assert.EqualError(t, err, "All records must be acknowledged in explicit acknowledgement mode.")
	_, err = cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords, "still")

	// Misuse.
	assert.ErrorIs(t, cons.AcknowledgeOffset("t", 0, 2, acktype.Renew), errors.ErrInvalidAcknowledgeType, "no record to return again")
	assert.ErrorIs(t, cons.Acknowledge(recs[2], acktype.Gap), errors.ErrInvalidAcknowledgeType)
	assert.ErrorIs(t, cons.Acknowledge(recs[2], acktype.Type(9)), errors.ErrInvalidAcknowledgeType)
	assert.ErrorIs(t, cons.Acknowledge(nil, acktype.Accept), errors.ErrCannotAcknowledge)
	assert.ErrorIs(t, cons.Acknowledge(&Record{Topic: "t", Partition: 0, Offset: 99}, acktype.Accept), errors.ErrCannotAcknowledge)
	assert.ErrorIs(t, cons.Acknowledge(&Record{Topic: "other", Partition: 0, Offset: 0}, acktype.Accept), errors.ErrCannotAcknowledge)
	assert.ErrorIs(t, cons.AcknowledgeOffset("t", 0, 2, acktype.Accept), errors.ErrCannotAcknowledge, "only offsets of corrupt batches")

	// Explicit commit sends only what was acknowledged.
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, map[TopicPartition]error{{"t", 0}: nil}, res)
	assert.Equal(t, map[int64]testbroker.ShareRecordState{0: testbroker.ShareAcknowledged, 1: testbroker.ShareArchived, 2: testbroker.ShareAcquired}, states(c, "g", "t", 0))
	mu.Lock()
	assert.Equal(t, []AcknowledgementCommit{{TopicPartition: TopicPartition{"t", 0}, Offsets: []int64{0, 1}}}, commits)
	mu.Unlock()
	assert.ErrorIs(t, cons.Acknowledge(recs[0], acktype.Accept), errors.ErrCannotAcknowledge, "already sent")

	require.NoError(t, cons.Acknowledge(recs[2], acktype.Release))
	tProduce(t, c, "t", 0, []string{"d"})
	recs = tPollN(t, cons, 1)
	// The released record comes back first, with its delivery count raised.
	assert.EqualValues(t, 2, recs[0].Offset)
	assert.EqualValues(t, 2, recs[0].DeliveryCount)
	for _, r := range recs {
		require.NoError(t, cons.Acknowledge(r, acktype.Accept))
	}
	res, err = cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Len(t, res, 1)
	mu.Lock()
	assert.Len(t, commits, 3, "the piggybacked release, then the commit")
	assert.Equal(t, []int64{2}, commits[1].Offsets)
	assert.NoError(t, commits[1].Err)
	mu.Unlock()
}

func TestMaxPollRecordsHoldsTheRest(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"0", "1", "2", "3", "4"})
	cons := tNew(t, c, "g", Topics("t"), MaxPollRecords(2), ExplicitAcknowledgement())

	var got []int64
	for len(got) < 5 {
		recs, err := cons.Poll(tCtx(t))
		require.NoError(t, err)
		require.LessOrEqual(t, len(recs), 2)
		for _, r := range recs {
			got = append(got, r.Offset)
			require.NoError(t, cons.Acknowledge(r, acktype.Accept))
		}
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, got)
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.NoError(t, res[TopicPartition{"t", 0}])
	for o, s := range states(c, "g", "t", 0) {
		assert.Equal(t, testbroker.ShareAcknowledged, s, "offset %d", o)
	}
}

// TestNoPrefetch checks the promise that a consumer that stops polling acquires nothing more.
func TestNoPrefetch(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"))
	tPollN(t, cons, 1)
	require.Eventually(t, func() bool {
		cons.mu.Lock()
		defer cons.mu.Unlock()
		for _, n := range cons.sessions.byNode {
			if n.busy {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "no request is left in flight")
	tProduce(t, c, "t", 0, []string{"b", "c"})
	for _, r := range c.ShareRecords("g", "t", 0) {
		if r.Offset > 0 {
			assert.Equal(t, testbroker.ShareAvailable, r.State, "offset %d", r.Offset)
		}
	}
}

// TestFetchAhead checks that, with FetchAhead, the records of the next Poll are acquired while
// the application works on the last ones, and that the fetch carries the acknowledgements.
func TestFetchAhead(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	for _, v := range []string{"a", "b", "c"} {
		tProduce(t, c, "t", 0, []string{v}) // one batch each: a fetch of one record acquires one batch
	}
	cons := tNew(t, c, "g", Topics("t"), MaxPollRecords(1), ExplicitAcknowledgement(), FetchAhead())
	first := tPollN(t, cons, 1)
	require.Equal(t, int64(0), first[0].Offset)
	require.Eventually(t, func() bool {
		r, ok := c.ShareRecord("g", "t", 0, 1)
		return ok && r.State == testbroker.ShareAcquired
	}, 10*time.Second, time.Millisecond, "offset 1 is acquired ahead, with no Poll running")

	require.NoError(t, cons.Acknowledge(first[0], acktype.Accept))
	second, err := cons.Poll(tCtx(t))
	require.NoError(t, err)
	require.Len(t, second, 1)
	assert.Equal(t, int64(1), second[0].Offset, "the record fetched ahead")
	require.Eventually(t, func() bool {
		start, _, _ := c.SharePartitionOffsets("g", "t", 0)
		r2, ok2 := c.ShareRecord("g", "t", 0, 2)
		return start == 1 && ok2 && r2.State == testbroker.ShareAcquired
	}, 10*time.Second, time.Millisecond, "the next fetch ahead acknowledges offset 0 (the start offset moves past it) and acquires offset 2")
}

func TestWakeup(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	cons := tNew(t, c, "g", Topics("t"))

	// A Wakeup before Poll wakes the next Poll, once.
	cons.Wakeup()
	cons.Wakeup()
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrWokenUp)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cons.Poll(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A blocked Poll returns.
	done := make(chan error, 1)
	go func() {
		_, err := cons.Poll(tCtx(t))
		done <- err
	}()
	require.Eventually(t, func() bool { return cons.poll.polling.Load() }, 10*time.Second, time.Millisecond)
	cons.Wakeup()
	select {
	case err := <-done:
		require.ErrorIs(t, err, errors.ErrWokenUp)
	case <-time.After(10 * time.Second):
		t.Fatal("Poll did not return after Wakeup")
	}
}

func TestConcurrentPoll(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	cons := tNew(t, c, "g", Topics("t"))
	done := make(chan error, 1)
	go func() {
		_, err := cons.Poll(tCtx(t))
		done <- err
	}()
	require.Eventually(t, func() bool { return cons.poll.polling.Load() }, 10*time.Second, time.Millisecond)
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrConcurrentPoll)
	cons.Wakeup()
	require.ErrorIs(t, <-done, errors.ErrWokenUp)
}

func TestNotSubscribed(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	cons := tNew(t, c, "g")
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrNotSubscribed)
	require.Error(t, cons.Subscribe("t", ""))
	require.NoError(t, cons.Subscribe("t", "t"))
	assert.Equal(t, []string{"t"}, cons.Subscription())
	tProduce(t, c, "t", 0, []string{"a"})
	tPollN(t, cons, 1)
	require.Eventually(t, func() bool {
		g, ok := c.ShareGroup("g")
		return ok && len(g.Members) == 1
	}, 10*time.Second, time.Millisecond)

	require.NoError(t, cons.Unsubscribe())
	assert.Nil(t, cons.Subscription())
	_, err = cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrNotSubscribed)
	require.Eventually(t, func() bool {
		g, ok := c.ShareGroup("g")
		return ok && len(g.Members) == 0
	}, 10*time.Second, time.Millisecond, "the member left")
	// The Poll that found no subscription still accepted what the Poll before it returned, as
	// Kafka's client does, and sent it.
	require.Eventually(t, func() bool { return accepted(c, "g", "t", 0, 0) }, 10*time.Second, time.Millisecond)
	// The broker may have applied the acknowledgement before its answer reached the consumer:
	// CommitSync then waits for that answer and reports it, as it documents.
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	for tp, err := range res {
		assert.Equal(t, TopicPartition{"t", 0}, tp)
		assert.NoError(t, err)
	}
}

func TestCallback(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 2))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	tProduce(t, c, "t", 1, []string{"b"})
	var cons *Consumer
	var inside []error
	calls := 0
	cons = tNew(t, c, "g", Topics("t"), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
		calls++
		// Calls from inside the callback behave as from any goroutine and never wait for
		// the callback to end.
		inside = append(inside, cons.Acknowledge(&Record{Topic: "t"}, acktype.Accept))
		cons.CommitAsync()
		inside = append(inside, cons.Subscribe("t"))
		panic("the callback panics")
	}))
	tPollN(t, cons, 2)
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Len(t, res, 2)
	assert.Equal(t, 2, calls, "once per partition")
	require.Len(t, inside, 4)
	for i := 0; i < len(inside); i += 2 {
		assert.ErrorIs(t, inside[i], errors.ErrImplicitMode)
		assert.NoError(t, inside[i+1])
	}
}

func TestCallbackMayCloseTheConsumer(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	var cons *Consumer
	var closeErr error
	closed := false
	cons = tNew(t, c, "g", Topics("t"), OnAcknowledgementCommit(func(AcknowledgementCommit) {
		if !closed {
			closed = true
			closeErr = cons.Close(tCtx(t))
		}
	}))
	tPollN(t, cons, 1)
	_, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	require.True(t, closed)
	require.NoError(t, closeErr)
	_, err = cons.Poll(tCtx(t))
	assert.ErrorIs(t, err, errors.ErrClosed)
}

func TestCloseReleasesAndLeaves(t *testing.T) {
	c := tStart(t, testbroker.Topic("t", 3), testbroker.NumBrokers(3))
	tEarliest(t, c, "g")
	for p := range int32(3) {
		tProduce(t, c, "t", p, []string{"a", "b"})
	}
	var mu sync.Mutex
	var commits []AcknowledgementCommit
	cons, err := New(ClientOpts(kgo.SeedBrokers(c.Addrs()...)), Group("g"), Topics("t"), ExplicitAcknowledgement(),
		FetchMaxWait(50*time.Millisecond), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
			mu.Lock()
			defer mu.Unlock()
			commits = append(commits, ac)
		}))
	require.NoError(t, err)
	recs := tPollN(t, cons, 1)
	// Acknowledge one record, leave the others.
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))
	tp := TopicPartition{recs[0].Topic, recs[0].Partition}
	require.Eventually(t, func() bool {
		n := 0
		for b := range int32(3) {
			n += len(c.ShareSessions(b))
		}
		return n > 0
	}, 10*time.Second, time.Millisecond)

	require.NoError(t, cons.Close(tCtx(t)))
	for b := range int32(3) {
		assert.Empty(t, c.ShareSessions(b), "broker %d: every share session is closed", b)
	}
	g, ok := c.ShareGroup("g")
	require.True(t, ok)
	assert.Empty(t, g.Members, "the member left")
	for p := range int32(3) {
		for _, r := range c.ShareRecords("g", "t", p) {
			if p == tp.Partition && r.Offset == recs[0].Offset {
				assert.Equal(t, testbroker.ShareAcknowledged, r.State)
				continue
			}
			assert.Equal(t, testbroker.ShareAvailable, r.State, "%d/%d is released", p, r.Offset)
		}
	}
	mu.Lock()
	require.Len(t, commits, 1, "the callback ran inside Close")
	assert.Equal(t, tp, commits[0].TopicPartition)
	assert.NoError(t, commits[0].Err)
	mu.Unlock()

	// After Close every method says so.
	_, err = cons.Poll(tCtx(t))
	assert.ErrorIs(t, err, errors.ErrClosed)
	assert.ErrorIs(t, cons.Acknowledge(recs[0], acktype.Accept), errors.ErrClosed)
	_, err = cons.CommitSync(tCtx(t))
	assert.ErrorIs(t, err, errors.ErrClosed)
	assert.ErrorIs(t, cons.Subscribe("t"), errors.ErrClosed)
	assert.ErrorIs(t, cons.Unsubscribe(), errors.ErrClosed)
	assert.ErrorIs(t, cons.Close(tCtx(t)), errors.ErrClosed)
	cons.CommitAsync()
	cons.Wakeup()

	var left []string
	if !assert.Eventually(t, func() bool { left = consumerGoroutines(); return len(left) == 0 }, 10*time.Second, 5*time.Millisecond) {
		t.Fatalf("goroutines left after Close:\n%s", strings.Join(left, "\n\n"))
	}
}

// consumerGoroutines returns the stacks of goroutines running the consumer's code or a kgo
// client's, leaving out test functions (other tests wait in t.Parallel meanwhile) and the
// testbroker cluster, which the test's cleanup closes.
func consumerGoroutines() []string { return leakcheck.Left(isConsumerGoroutine) }

// isConsumerGoroutine reports whether a goroutine runs the consumer's code (other than the
// tests') or franz-go's.
func isConsumerGoroutine(stack string) bool {
	for _, line := range strings.Split(stack, "\n") {
		ours := strings.Contains(line, "kshare/shareconsumer.") && !strings.Contains(line, "shareconsumer.Test") &&
			!strings.Contains(line, "shareconsumer.consumerGoroutines") && !strings.Contains(line, "shareconsumer.isConsumerGoroutine")
		if ours || strings.Contains(line, "franz-go/pkg/kgo.") {
			return true
		}
	}
	return false
}

func TestFatalHeartbeatError(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareGroupHeartbeat}, Err: kerr.GroupAuthorizationFailed})
	require.NoError(t, err)
	cons := tNew(t, c, "g", Topics("t"))
	_, err = cons.Poll(tCtx(t))
	var fe *errors.FatalError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "g", fe.Group)
	assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	_, err = cons.Poll(tCtx(t))
	assert.ErrorAs(t, err, &fe, "every Poll after")
}

func TestFencedMemberRejoins(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	cons := tNew(t, c, "g", Topics("t"))
	tProduce(t, c, "t", 0, []string{"a"})
	tPollN(t, cons, 1)
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareGroupHeartbeat}, Err: kerr.FencedMemberEpoch, Times: 1})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.ActiveFaults() == 0 }, 10*time.Second, time.Millisecond)
	tProduce(t, c, "t", 0, []string{"b"})
	recs := tPollN(t, cons, 1)
	assert.EqualValues(t, 1, recs[0].Offset)
	assert.True(t, accepted(c, "g", "t", 0, 0), "accepted after the rejoin")
}

// TestCloseBoundedByContext closes a consumer whose ShareFetch a broker on a manual clock
// holds: Close gives up when its context ends, and still stops everything.
func TestCloseBoundedByContext(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.WithManualClock(time.Unix(1000, 0)))
	cons, err := New(ClientOpts(kgo.SeedBrokers(c.Addrs()...)), Group("g"), Topics("t"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cons.Poll(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return len(c.ShareSessions(0)) == 1 }, 10*time.Second, time.Millisecond, "a fetch opened a session")

	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = cons.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Eventually(t, func() bool { return len(c.ShareSessions(0)) == 0 }, 10*time.Second, time.Millisecond,
		"the connection closed, and the broker dropped the session with it")
}

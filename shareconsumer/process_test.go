package shareconsumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// processAsync runs Process on its own goroutine; the channel gets what it returned.
func processAsync(ctx context.Context, c *Consumer, h Handler, opts ...ProcessOpt) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Process(ctx, h, opts...) }()
	return done
}

func waitProcess(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Process did not return")
		return nil
	}
}

// recordInfos returns the share state of every record of t-0, by offset.
func recordInfos(c *testbroker.Cluster, group string) map[int64]testbroker.ShareRecordInfo {
	out := map[int64]testbroker.ShareRecordInfo{}
	for _, r := range c.ShareRecords(group, "t", 0) {
		out[r.Offset] = r
	}
	return out
}

// spso returns the share-partition start offset of t-0: every record below it is acknowledged
// or archived (and no longer listed by ShareRecords).
func spso(c *testbroker.Cluster, group string) int64 {
	start, _, _ := c.SharePartitionOffsets(group, "t", 0)
	return start
}

func countState(c *testbroker.Cluster, group string, s testbroker.ShareRecordState) int {
	n := 0
	for _, r := range c.ShareRecords(group, "t", 0) {
		if r.State == s {
			n++
		}
	}
	return n
}

func TestProcessAcknowledgesWhatTheHandlerAnswers(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	offs := tProduce(t, c, "t", 0, []string{"ok", "err", "reject", "panic", "ok"})
	cons := tNew(t, c, "g", Topics("t"))
	var panics atomic.Int32
	var stack []byte
	var mu sync.Mutex
	deliveries := map[int64][]int16{}
	h := func(ctx context.Context, r *Record) error {
		mu.Lock()
		deliveries[r.Offset] = append(deliveries[r.Offset], r.DeliveryCount)
		mu.Unlock()
		if r.DeliveryCount > 1 {
			return nil
		}
		switch string(r.Value) {
		case "err":
			return fmt.Errorf("try again")
		case "reject":
			return errors.Reject(fmt.Errorf("poison"))
		case "panic":
			panic("boom")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := processAsync(ctx, cons, h, Workers(2), OnPanic(func(r *Record, v any, s []byte) {
		assert.Equal(t, "boom", v)
		assert.Equal(t, "panic", string(r.Value))
		stack = s
		panics.Add(1)
	}))
	require.Eventually(t, func() bool { return spso(c, "g") == int64(len(offs)) }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, waitProcess(t, done))

	assert.Equal(t, map[int64][]int16{
		offs[0]: {1},
		offs[1]: {1, 2}, // released, then accepted on its second delivery
		offs[2]: {1},    // rejected
		offs[3]: {1, 2}, // the panic released it
		offs[4]: {1},
	}, deliveries)
	assert.Equal(t, int32(1), panics.Load())
	assert.Contains(t, string(stack), "process_test.go", "the stack of the handler")

	s := cons.ProcessStats()
	assert.Equal(t, uint64(7), s.Delivered)
	assert.Equal(t, uint64(4), s.Accepted)
	assert.Equal(t, uint64(2), s.Released)
	assert.Equal(t, uint64(1), s.Rejected)
	assert.Equal(t, uint64(1), s.Panics)
	assert.Equal(t, uint64(2), s.Redeliveries)
	assert.Equal(t, uint64(7), s.HandlerTime.Count)
	assert.Equal(t, 0, s.Held)
}

func TestProcessRefusesMisuse(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})

	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement(), MaxPollRecords(1))
	assert.ErrorContains(t, cons.Process(tCtx(t), nil), "the handler is nil")
	assert.ErrorContains(t, cons.Process(tCtx(t), func(context.Context, *Record) error { return nil }, Workers(0)), "Workers(0)")
	recs := tPollN(t, cons, 1)
	accept := func(context.Context, *Record) error { return nil }
	assert.ErrorIs(t, cons.Process(tCtx(t), accept), errors.ErrUnacknowledgedRecords, "explicit mode, a record unacknowledged")
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))

	started := make(chan struct{})
	unblock := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := processAsync(ctx, cons, func(context.Context, *Record) error {
		once.Do(func() { close(started) })
		<-unblock
		return nil
	})
	<-started
	_, err := cons.Poll(tCtx(t))
	assert.ErrorIs(t, err, errors.ErrProcessRunning)
	assert.ErrorIs(t, cons.Process(tCtx(t), accept), errors.ErrProcessRunning)
	assert.ErrorIs(t, cons.Acknowledge(&Record{Topic: "t", Offset: 1}, acktype.Accept), errors.ErrCannotAcknowledge, "Process's records are its own")
	close(unblock)
	cancel()
	require.NoError(t, waitProcess(t, done))
	assert.Equal(t, int64(2), spso(c, "g"), "the Poll's record and the Process's are acknowledged")

	// Process while a Poll waits.
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		_, _ = cons.Poll(pollCtx)
	}()
	require.Eventually(t, func() bool { return cons.poll.polling.Load() }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, cons.Process(tCtx(t), accept), errors.ErrConcurrentPoll)
	stopPoll()
	<-polled
}

func TestProcessNeverHoldsMoreThanWorkersAndQueue(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	values := make([]string, 30)
	for i := range values {
		values[i] = fmt.Sprint(i)
	}
	tProduce(t, c, "t", 0, values)
	cons := tNew(t, c, "g", Topics("t"))
	// The queue holds at least as many records as there are workers: with handlers that do not
	// return, that is all of QueueSize here.
	const workers, queue = 3, 2
	unblock := make(chan struct{})
	var running atomic.Int32
	var maxAcquired atomic.Int32
	h := func(ctx context.Context, r *Record) error {
		running.Add(1)
		defer running.Add(-1)
		n := int32(countState(c, "g", testbroker.ShareAcquired))
		for {
			m := maxAcquired.Load()
			if n <= m || maxAcquired.CompareAndSwap(m, n) {
				break
			}
		}
		<-unblock
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := processAsync(ctx, cons, h, Workers(workers), QueueSize(queue))
	require.Eventually(t, func() bool {
		return running.Load() == workers && cons.ProcessStats().Held == workers+queue
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, workers+queue, countState(c, "g", testbroker.ShareAcquired), "the broker locked no more than the pool holds")
	close(unblock)
	require.Eventually(t, func() bool { return spso(c, "g") == int64(len(values)) }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, waitProcess(t, done))
	assert.LessOrEqual(t, maxAcquired.Load(), int32(workers+queue))
	assert.Equal(t, uint64(len(values)), cons.ProcessStats().Accepted)
}

func TestProcessShutdownReleasesTheQueueAtOnceAndWaitsForRunningHandlers(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	offs := tProduce(t, c, "t", 0, []string{"a", "b", "c", "d"})
	cons := tNew(t, c, "g", Topics("t"))
	started := make(chan int64, 4)
	finish := make(chan struct{})
	var ctxErrs [2]error
	var n atomic.Int32
	h := func(ctx context.Context, r *Record) error {
		started <- r.Offset
		<-finish
		ctxErrs[n.Add(1)-1] = ctx.Err()
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := processAsync(ctx, cons, h, Workers(2), QueueSize(2))
	first := []int64{<-started, <-started}
	require.Eventually(t, func() bool { return cons.ProcessStats().Held == 4 }, 10*time.Second, time.Millisecond)
	cancel()
	// The two queued records go back while the handlers still run.
	require.Eventually(t, func() bool { return countState(c, "g", testbroker.ShareAvailable) == 2 }, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Process returned %v with handlers running", err)
	default:
	}
	close(finish)
	require.NoError(t, waitProcess(t, done))
	assert.Equal(t, [2]error{}, ctxErrs, "finished within the grace period")
	st := recordInfos(c, "g")
	assert.ElementsMatch(t, offs[:2], first, "one partition, delivered in order")
	assert.Equal(t, int64(2), spso(c, "g"), "the running handlers' answers are committed")
	assert.Equal(t, testbroker.ShareAvailable, st[offs[2]].State)
	assert.Equal(t, testbroker.ShareAvailable, st[offs[3]].State)
	assert.Len(t, started, 0, "no queued record reached a handler after the shutdown began")
	s := cons.ProcessStats()
	assert.Equal(t, uint64(2), s.Accepted)
	assert.Equal(t, uint64(2), s.Released)
}

func TestProcessCancelsHandlersAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	offs := tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"))
	started := make(chan struct{})
	var cause error
	h := func(ctx context.Context, r *Record) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil // ignored: Process releases what it cancelled
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := processAsync(ctx, cons, h, ShutdownGrace(0))
	<-started
	cancel()
	require.NoError(t, waitProcess(t, done))
	assert.ErrorIs(t, cause, errors.ErrProcessStopped)
	assert.Equal(t, testbroker.ShareAvailable, recordInfos(c, "g")[offs[0]].State)
	assert.Equal(t, uint64(1), cons.ProcessStats().Released)
}

func TestCloseStopsProcess(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	offs := tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"))
	started := make(chan struct{})
	finish := make(chan struct{})
	done := processAsync(context.Background(), cons, func(ctx context.Context, r *Record) error {
		close(started)
		<-finish
		return nil
	})
	<-started
	closed := make(chan error, 1)
	go func() { closed <- cons.Close(tCtx(t)) }()
	close(finish)
	assert.ErrorIs(t, waitProcess(t, done), errors.ErrClosed)
	require.NoError(t, <-closed)
	assert.Equal(t, int64(len(offs)), spso(c, "g"), "the acknowledgement went with the session's close")
}

func TestCloseThatCannotWaitStopsRunningHandlers(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"))
	started := make(chan struct{})
	var cause error
	done := processAsync(context.Background(), cons, func(ctx context.Context, r *Record) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	}) // the default grace period is 30 s
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, cons.Close(ctx), context.DeadlineExceeded)
	assert.ErrorIs(t, waitProcess(t, done), errors.ErrClosed)
	assert.ErrorIs(t, cause, errors.ErrProcessStopped, "stopped at once, not after the grace period")
}

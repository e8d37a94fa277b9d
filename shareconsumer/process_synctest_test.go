package shareconsumer

import (
	"context"
	stderrors "errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// These tests run the consumer, Process and a testbroker on an in-memory network inside one
// testing/synctest bubble: every clock is the bubble's, so a handler that works for five lock
// durations takes no real time, and time.Sleep in a handler is the work it simulates.

// lockMs is the lock duration of the group these tests use.
const lockMs = 1000

// sStart starts a cluster on the bubble's in-memory network, with a group "g" that starts at
// the earliest offset and locks records for lockMs, and produces n records to t-0.
func sStart(t *testing.T, n int, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	c := tStart(t, append([]testbroker.Opt{
		testbroker.InMemoryNetwork(),
		testbroker.Topic("t", 1),
		testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"),
	}, opts...)...)
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	require.NoError(t, c.SetGroupConfig("g", "share.record.lock.duration.ms", strconv.Itoa(lockMs)))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	for i := range n {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Value: []byte(strconv.Itoa(i))}).FirstErr())
	}
	return c
}

// sNew creates a consumer of "g" on c, subscribed to t, closed when the test ends. Its
// ShareFetches do not wait at the broker, so that a renew never queues behind one and the
// renew times below are exact (a fetch that waited would delay a renew by up to its wait, which
// the margin covers).
func sNew(t *testing.T, c *testbroker.Cluster, opts ...Opt) *Consumer {
	t.Helper()
	cons, err := New(append([]Opt{
		ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext)),
		Group("g"), Topics("t"), FetchMaxWait(0),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cons.Close(context.Background()) })
	return cons
}

// runUntil runs Process until done returns true after a record finished, then stops it and
// returns what it returned.
func runUntil(t *testing.T, cons *Consumer, h Handler, done func(RecordOutcome) bool, opts ...ProcessOpt) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts = append(opts, OnRecordDone(func(o RecordOutcome) {
		if done(o) {
			cancel()
		}
	}))
	return cons.Process(ctx, h, opts...)
}

func TestProcessRenewsWhileAHandlerWorksFiveLockDurations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 1)
		cons := sNew(t, c)
		var deliveries []int16
		var out RecordOutcome
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			deliveries = append(deliveries, r.DeliveryCount)
			time.Sleep(5 * lockMs * time.Millisecond)
			return ctx.Err()
		}, func(o RecordOutcome) bool { out = o; return true })
		require.NoError(t, err)
		assert.Equal(t, []int16{1}, deliveries, "handed out once")
		assert.NoError(t, out.Err)
		s := cons.ProcessStats()
		// The margin is a fifth of the lock (200ms; round trips take no bubble time): renews
		// at 0.8s, 1.6s, ... 4.8s, each up to 10ms later (the pause between empty fetches).
		assert.Equal(t, 6, out.Renews)
		assert.Equal(t, uint64(6), s.Renewed)
		assert.Equal(t, uint64(6), s.RenewRequests, "one record, one request per renew")
		assert.Equal(t, uint64(1), s.Delivered)
		assert.Equal(t, uint64(1), s.Accepted)
		assert.Equal(t, uint64(0), s.Redeliveries)
		assert.Equal(t, uint64(0), s.LocksLost)
		start, _, _ := c.SharePartitionOffsets("g", "t", 0)
		assert.Equal(t, int64(1), start, "accepted once")
	})
}

func TestProcessRenewsEveryRecordOfALeaderInOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 20)
		cons := sNew(t, c)
		var done atomic.Int32
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			time.Sleep(3 * lockMs * time.Millisecond)
			return nil
		}, func(RecordOutcome) bool { return done.Add(1) == 20 }, Workers(20), QueueSize(0))
		require.NoError(t, err)
		s := cons.ProcessStats()
		assert.Equal(t, uint64(20), s.Accepted)
		assert.Equal(t, uint64(0), s.Redeliveries)
		assert.Equal(t, uint64(3*20), s.Renewed, "renews at 0.8s, 1.6s and 2.4s")
		assert.Equal(t, uint64(3), s.RenewRequests, "one request per renew interval for the leader")
	})
}

// lostCause runs one record whose handler waits for its context to end, with setup applied once
// the handler runs, and returns the context's cause and the stats. Only the first delivery
// counts: once its lock is lost the broker may hand the record out again, to a second handler,
// before Process stops.
func lostCause(t *testing.T, c *testbroker.Cluster, cons *Consumer, setup func(), opts ...ProcessOpt) (error, ProcessStats) {
	t.Helper()
	var mu sync.Mutex
	var cause error
	err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
		first := r.DeliveryCount == 1
		if first {
			setup()
		}
		<-ctx.Done()
		if first {
			mu.Lock()
			cause = context.Cause(ctx)
			mu.Unlock()
		}
		return nil // ignored: the lock is gone
	}, func(RecordOutcome) bool { return true }, opts...)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return cause, cons.ProcessStats()
}

func requireLost(t *testing.T, cause error, reason errors.LockLostReason) *errors.LockLostError {
	t.Helper()
	var lle *errors.LockLostError
	require.ErrorAs(t, cause, &lle)
	assert.ErrorIs(t, cause, errors.ErrLockLost)
	assert.Equal(t, reason, lle.Reason, "%v", cause)
	assert.Equal(t, "t", lle.Topic)
	return lle
}

func TestProcessLostLockCancelsTheHandler(t *testing.T) {
	t.Run("renewing disabled for the group", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := sStart(t, 1)
			cons := sNew(t, c)
			cause, s := lostCause(t, c, cons, func() {
				require.NoError(t, c.SetGroupConfig("g", "share.renew.acknowledge.enable", "false"))
			})
			requireLost(t, cause, errors.LockInvalidRecordState)
			assert.ErrorIs(t, cause, kerr.InvalidRecordState)
			assert.ErrorContains(t, cause, "Renewing acquisition locks is not enabled for the group.")
			assert.Equal(t, uint64(1), s.LocksLostBy[errors.LockInvalidRecordState])
			assert.Equal(t, uint64(1), s.RenewFailures)
			assert.Equal(t, uint64(0), s.Accepted+s.Released+s.Rejected, "nothing acknowledged")
			start, _, _ := c.SharePartitionOffsets("g", "t", 0)
			assert.Equal(t, int64(0), start)
		})
	})
	t.Run("a fault refuses the renew", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := sStart(t, 1)
			cons := sNew(t, c)
			cause, s := lostCause(t, c, cons, func() {
				_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.ShareAcknowledge}, Err: kerr.InvalidRequest})
				require.NoError(t, err)
			})
			requireLost(t, cause, errors.LockRenewRefused)
			assert.ErrorIs(t, cause, kerr.InvalidRequest)
			assert.Equal(t, uint64(0), s.Accepted+s.Released+s.Rejected)
		})
	})
	t.Run("the connection drops", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := sStart(t, 1)
			cons := sNew(t, c)
			cause, _ := lostCause(t, c, cons, func() {
				_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.ShareAcknowledge}, DropConnection: true, Times: 1})
				require.NoError(t, err)
			})
			requireLost(t, cause, errors.LockSessionReset)
		})
	})
	t.Run("the renew comes too late", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := sStart(t, 1)
			cons := sNew(t, c)
			cause, s := lostCause(t, c, cons, func() {
				_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.ShareAcknowledge}, Delay: 5 * lockMs * time.Millisecond})
				require.NoError(t, err)
			})
			requireLost(t, cause, errors.LockDeadlinePassed)
			assert.Equal(t, uint64(0), s.Accepted+s.Released+s.Rejected)
		})
	})
	t.Run("the leader moves", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := sStart(t, 1, testbroker.NumBrokers(2))
			cons := sNew(t, c)
			cause, _ := lostCause(t, c, cons, func() {
				p, ok := c.Partition("t", 0)
				require.True(t, ok)
				require.NoError(t, c.MoveLeader("t", 0, 1-p.Leader%2))
			})
			requireLost(t, cause, errors.LockLeaderMoved)
		})
	})
}

func TestProcessMaxHoldLetsTheLockGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 1)
		cons := sNew(t, c)
		began := time.Now()
		var held time.Duration
		cause, s := lostCause(t, c, cons, func() { began = time.Now() }, MaxHold(2500*time.Millisecond))
		held = time.Since(began)
		requireLost(t, cause, errors.LockMaxHoldReached)
		assert.Equal(t, 2500*time.Millisecond, held.Round(100*time.Millisecond))
		assert.Equal(t, uint64(3), s.Renewed, "renewed at 0.8s, 1.6s and 2.4s, not after")
	})
}

func TestProcessOnKafka41NeverRenews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 1, testbroker.Kafka41())
		cons := sNew(t, c)
		var cause error
		var deadline, lockDeadline time.Time
		var hasDeadline bool
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			deadline, hasDeadline = ctx.Deadline()
			lockDeadline = r.LockDeadline
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		}, func(RecordOutcome) bool { return true })
		require.NoError(t, err)
		requireLost(t, cause, errors.LockDeadlinePassed)
		require.True(t, hasDeadline, "the handler's context carries the lock deadline")
		assert.Equal(t, lockDeadline, deadline)
		s := cons.ProcessStats()
		assert.Equal(t, uint64(0), s.RenewRequests)
		assert.Equal(t, uint64(0), s.Renewed)
		// The lost record is never acknowledged. Its lock ran out at the broker too, so a fetch
		// racing the stop may acquire it again; that delivery is released when Process
		// returns, and may or may not have happened by then.
		assert.Equal(t, uint64(0), s.Accepted+s.Rejected)
		assert.LessOrEqual(t, s.Released, uint64(1))
	})
}

// A record whose lock runs out while it waits for a worker never reaches a handler: the broker
// may have given it to another member by then. Its loss is reported.
func TestProcessRecordWhoseLockRanOutInTheQueueIsNotHandled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 2, testbroker.Kafka41()) // no renewing: the locks run out
		cons := sNew(t, c)
		var mu sync.Mutex // outcomes of lost records are reported from goroutines of their own
		var handled []int64
		var outcomes []RecordOutcome
		// Only first deliveries count: the stop below is asynchronous, so the broker may
		// already have handed offset 0 out again, and the pool taken it, before Process returns.
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			if r.DeliveryCount == 1 {
				mu.Lock()
				handled = append(handled, r.Offset)
				mu.Unlock()
			}
			<-ctx.Done() // the first record's lock deadline; the second waits behind it
			return nil
		}, func(o RecordOutcome) bool {
			mu.Lock()
			defer mu.Unlock()
			if o.Record.DeliveryCount == 1 {
				outcomes = append(outcomes, o)
			}
			return len(outcomes) == 2
		}, Workers(1), QueueSize(1))
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, err)
		assert.Equal(t, []int64{0}, handled, "the second record's lock ran out in the queue")
		require.Len(t, outcomes, 2)
		for _, o := range outcomes {
			requireLost(t, o.Err, errors.LockDeadlinePassed)
		}
	})
}

// When the lease loses the records that filled the pool (their locks ran out: MaxHold here, or
// a leader without RENEW), the room they leave is used: Process fetches the next records, even
// though no worker finished one.
func TestProcessFetchesAgainAfterTheLeaseLostTheRecordsThatFilledIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []testbroker.Opt
		pool []ProcessOpt
	}{
		{"max hold", nil, []ProcessOpt{MaxHold(300 * time.Millisecond)}},
		{"no renewal", nil, []ProcessOpt{NoRenewal()}},
		{"a Kafka 4.1 leader", []testbroker.Opt{testbroker.Kafka41()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := sStart(t, 3, tc.opts...)
				cons := sNew(t, c)
				var mu sync.Mutex
				var handled []int64
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				opts := append([]ProcessOpt{Workers(1), QueueSize(0), OnRecordDone(func(o RecordOutcome) {
					mu.Lock()
					defer mu.Unlock()
					if o.Ack == acktype.Accept && o.Record.DeliveryCount == 1 {
						if handled = append(handled, o.Record.Offset); len(handled) == 2 {
							cancel()
						}
					}
				})}, tc.pool...)
				err := cons.Process(ctx, func(hctx context.Context, r *Record) error {
					if r.Offset == 0 && r.DeliveryCount == 1 {
						<-hctx.Done() // its lock is lost with the worker busy
					}
					return nil
				}, opts...)
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, []int64{1, 2}, handled, "the records after the lost one were fetched and handled")
				assert.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded, "before the minute ran out")
			})
		})
	}
}

// A worker handles the records of a run one after the other. When fast records precede a slow
// one in a worker's run, their acknowledgements reach the broker while the slow handler works
// (within the acknowledgement flush), not when it returns: their locks, which no renew covers
// once they are settled, would run out at the broker, and it would deliver them again.
func TestProcessAcknowledgesFastRecordsWhileASlowOneOfTheirRunWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 6 // offsets 0 to 4 fast (1 rejected), 5 slow
		c := sStart(t, n)
		cons := sNew(t, c)
		var mu sync.Mutex
		deliveries := map[int64][]int16{}
		var startWhileSlow int64
		var slowWhileSlow testbroker.ShareRecordInfo
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			mu.Lock()
			deliveries[r.Offset] = append(deliveries[r.Offset], r.DeliveryCount)
			mu.Unlock()
			switch r.Offset {
			case 1:
				return errors.Reject(stderrors.New("never"))
			case n - 1:
				// Half a lock in: the fast records' acknowledgements have had five flushes to
				// leave, and their locks have not run out yet.
				time.Sleep(lockMs / 2 * time.Millisecond)
				startWhileSlow, _, _ = c.SharePartitionOffsets("g", "t", 0)
				slowWhileSlow, _ = c.ShareRecord("g", "t", 0, n-1)
				time.Sleep(3 * lockMs * time.Millisecond) // past the fast records' locks
				return ctx.Err()
			}
			return nil
		}, func(o RecordOutcome) bool { return o.Record.Offset == n-1 }, Workers(1), QueueSize(n-1))
		require.NoError(t, err)

		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[int64][]int16{0: {1}, 1: {1}, 2: {1}, 3: {1}, 4: {1}, 5: {1}}, deliveries,
			"each record handled once, in its first delivery")
		assert.Equal(t, int64(n-1), startWhileSlow, "the fast records were acknowledged (or archived) while the slow handler worked")
		assert.Equal(t, testbroker.ShareAcquired, slowWhileSlow.State, "the slow record, held")
		assert.Equal(t, int16(1), slowWhileSlow.DeliveryCount)
		start, _, _ := c.SharePartitionOffsets("g", "t", 0)
		assert.Equal(t, int64(n), start, "every record acknowledged once Process returned")
		s := cons.ProcessStats()
		assert.Equal(t, uint64(0), s.Redeliveries)
		assert.Equal(t, uint64(0), s.LocksLost)
		assert.Equal(t, uint64(n-1), s.Accepted)
		assert.Equal(t, uint64(1), s.Rejected)
	})
}

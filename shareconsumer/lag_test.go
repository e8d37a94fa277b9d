package shareconsumer_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// lagAccepted are the offsets of partition 0 that lagSetup accepts; it accepts every record of
// partition 1 and releases the rest of partition 0.
var lagAccepted = map[int64]bool{0: true, 1: true, 2: true, 5: true, 6: true}

// lagSetup produces 10 records to partition 0 and 4 to partition 1, has a consumer of group
// take each of them at least once, accepting lagAccepted and all of partition 1 and releasing
// the others, and commits. Partition 0 then has its start offset at 3, records 5 and 6 done past
// it and 5 records not done (3, 4, 7, 8, 9): a lag of 5, or 10 - 3 = 7 from the high
// watermark. Partition 1 is done with up to its end: start offset 4, lag 0.
func lagSetup(t *testing.T, env *e2eEnv, group string, opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	t.Helper()
	env.prepareGroup(t, group)
	env.produce(t, []int32{0}, 10)
	env.produce(t, []int32{1}, 4)
	c := env.newConsumer(t, group, append([]shareconsumer.Opt{shareconsumer.ExplicitAcknowledgement()}, opts...)...)
	ctx := e2eCtx(t, 30*time.Second)
	seen := map[recKey]bool{}
	for len(seen) < 14 {
		recs, err := c.Poll(ctx)
		require.NoError(t, err, "after %d of 14 records", len(seen))
		for _, r := range recs {
			seen[recKey{r.Partition, r.Offset}] = true
			ty := acktype.Release // released records come back; released again, they stay available
			if r.Partition == 1 || lagAccepted[r.Offset] {
				ty = acktype.Accept
			}
			require.NoError(t, c.Acknowledge(r, ty))
		}
	}
	commitSyncOK(t, c, "lagSetup")
	env.waitSPSO(t, group, []int32{0}, 3)
	env.waitSPSO(t, group, []int32{1}, 4)
	return c
}

// TestLagFromBroker checks Consumer.Lag against what the broker says (DescribeShareGroupOffsets
// v1, through kadm) and against the figure worked out by hand: high watermark minus start
// offset minus the records done past it. kfake computes the lag as testbroker does (its
// 90_describe_share_group_offsets.go: HWM - SPSO - acknowledged or archived records below the
// HWM), but lists partitions in a map's order: Lag sorts them.
func TestLagFromBroker(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{partitions: 2}, func(t *testing.T, env *e2eEnv) {
		c := lagSetup(t, env, "g")
		before := time.Now()
		lag, err := c.Lag(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, "g", lag.Group)
		assert.False(t, lag.At.Before(before), "At is when the answer came")
		require.Len(t, lag.Partitions, 2)
		want := []shareconsumer.PartitionLag{
			{TopicPartition: shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 0}, StartOffset: 3, EndOffset: -1, Lag: 5, FromBroker: true},
			{TopicPartition: shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 1}, StartOffset: 4, EndOffset: -1, Lag: 0, FromBroker: true},
		}
		assert.Equal(t, want, lag.Partitions)
		assert.Equal(t, int64(5), lag.Total)

		// What the broker says, asked otherwise.
		ds, err := env.adm(t).DescribeShareGroupOffsets(e2eCtx(t, 10*time.Second), "g")
		require.NoError(t, err)
		for _, p := range lag.Partitions {
			o, ok := ds["g"].Offsets.Lookup(e2eTopic, p.Partition)
			require.True(t, ok)
			assert.Equal(t, o.StartOffset, p.StartOffset, "partition %d", p.Partition)
			assert.Equal(t, o.Lag, p.Lag, "partition %d", p.Partition)
		}

		// By hand, from the testbroker's view of the share partition.
		if env.tb != nil {
			pi, ok := env.tb.Partition(e2eTopic, 0)
			require.True(t, ok)
			start, _, ok := env.tb.SharePartitionOffsets("g", e2eTopic, 0)
			require.True(t, ok)
			done := int64(0)
			for _, r := range env.tb.ShareRecords("g", e2eTopic, 0) {
				if r.Offset >= start && (r.State == testbroker.ShareAcknowledged || r.State == testbroker.ShareArchived) {
					done++
				}
			}
			assert.Equal(t, pi.HighWatermark-start-done, lag.Partitions[0].Lag)
		}
	})
}

// TestLagFallback checks the lag of a broker that does not send one (DescribeShareGroupOffsets
// v0, as Kafka 4.1 has it): the high watermark minus the start offset, which counts the done
// records past the start offset too. The client is capped at v0 with kgo.MaxVersions, which
// both brokers honour.
func TestLagFallback(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{partitions: 2}, func(t *testing.T, env *e2eEnv) {
		v := kversion.Stable()
		v.SetMaxKeyVersion(kmsg.DescribeShareGroupOffsets.Int16(), 0)
		c := lagSetup(t, env, "g", shareconsumer.ClientOpts(kgo.MaxVersions(v)))
		lag, err := c.Lag(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		want := []shareconsumer.PartitionLag{
			{TopicPartition: shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 0}, StartOffset: 3, EndOffset: 10, Lag: 7},
			{TopicPartition: shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 1}, StartOffset: 4, EndOffset: 4, Lag: 0},
		}
		assert.Equal(t, want, lag.Partitions)
		assert.Equal(t, int64(7), lag.Total)
	})
}

// TestLagKafka41 is the fallback against a broker that speaks Kafka 4.1's protocol
// (testbroker.Kafka41: DescribeShareGroupOffsets v0 only), through GroupLagOf with a client of
// its own; a ListOffsets failure for a partition goes in its Err and leaves the others alone.
func TestLagKafka41(t *testing.T) {
	t.Parallel()
	tb := testbroker.StartT(t, testbroker.Kafka41(), testbroker.NumBrokers(2), testbroker.Topic("a", 1), testbroker.Topic("b", 1),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"))
	require.NoError(t, tb.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := e2eCtx(t, 30*time.Second)
	for _, topic := range []string{"b", "a", "a"} {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr())
	}
	c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)), shareconsumer.Group("g"),
		shareconsumer.Topics("a", "b"), shareconsumer.FetchMaxWait(10*time.Millisecond))
	require.NoError(t, err)
	defer c.Close(context.Background())
	for n := 0; n < 3; {
		recs, err := c.Poll(ctx)
		require.NoError(t, err)
		n += len(recs)
	}
	_, err = c.CommitSync(ctx) // implicit mode: accepts all three
	require.NoError(t, err)

	lag, err := shareconsumer.GroupLagOf(ctx, cl, "g")
	require.NoError(t, err)
	assert.Equal(t, []shareconsumer.PartitionLag{
		{TopicPartition: shareconsumer.TopicPartition{Topic: "a", Partition: 0}, StartOffset: 2, EndOffset: 2, Lag: 0},
		{TopicPartition: shareconsumer.TopicPartition{Topic: "b", Partition: 0}, StartOffset: 1, EndOffset: 1, Lag: 0},
	}, lag.Partitions)

	// A fault fails a whole request: b must have a leader of its own.
	pa, _ := tb.Partition("a", 0)
	pb, _ := tb.Partition("b", 0)
	require.NotEqual(t, pa.Leader, pb.Leader)
	_, err = tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Brokers: []int32{pb.Leader}, Err: kerr.TopicAuthorizationFailed})
	require.NoError(t, err)
	lag, err = shareconsumer.GroupLagOf(ctx, cl, "g")
	require.NoError(t, err)
	require.Len(t, lag.Partitions, 2)
	assert.Equal(t, int64(0), lag.Partitions[0].Lag)
	b := lag.Partitions[1]
	assert.Equal(t, int64(-1), b.Lag)
	assert.Equal(t, int64(-1), b.EndOffset)
	assert.Equal(t, int64(1), b.StartOffset)
	var ke *errors.KafkaError
	require.ErrorAs(t, b.Err, &ke)
	assert.ErrorIs(t, b.Err, kerr.TopicAuthorizationFailed)
}

// TestLagUnknownGroup: a group nobody joined has no share state, which is no error (Kafka,
// testbroker and kfake alike answer no topics).
func TestLagUnknownGroup(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		cl := env.client(t)
		defer cl.Close()
		lag, err := shareconsumer.GroupLagOf(e2eCtx(t, 10*time.Second), cl, "nobody")
		require.NoError(t, err)
		assert.Equal(t, "nobody", lag.Group)
		assert.Empty(t, lag.Partitions)
		assert.Zero(t, lag.Total)
		assert.False(t, lag.At.IsZero())
	})
}

// TestLagGroupError: the group's error code is returned as a *errors.KafkaError; the coordinator
// errors are retried, a while by kgo and then by GroupLagOf until ctx ends.
func TestLagGroupError(t *testing.T) {
	t.Parallel()
	tb := testbroker.StartT(t, testbroker.Topic("t", 1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.RequestRetries(1))
	require.NoError(t, err)
	defer cl.Close()

	id, err := tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeShareGroupOffsets}, Err: kerr.GroupAuthorizationFailed})
	require.NoError(t, err)
	_, err = shareconsumer.GroupLagOf(e2eCtx(t, 10*time.Second), cl, "g")
	var ke *errors.KafkaError
	require.ErrorAs(t, err, &ke)
	assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	assert.Contains(t, err.Error(), `share group "g"`)
	tb.RemoveFault(id)

	// Five NOT_COORDINATOR answers outlast the client's retries (one), not GroupLagOf's.
	_, err = tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeShareGroupOffsets}, Err: kerr.NotCoordinator, Times: 5})
	require.NoError(t, err)
	lag, err := shareconsumer.GroupLagOf(e2eCtx(t, 10*time.Second), cl, "g")
	require.NoError(t, err)
	assert.Empty(t, lag.Partitions)
	assert.Zero(t, tb.ActiveFaults(), "every NOT_COORDINATOR was answered")

	// Without end, until ctx ends: the error says both.
	_, err = tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeShareGroupOffsets}, Err: kerr.CoordinatorLoadInProgress})
	require.NoError(t, err)
	// Long enough for the client's own retry (and its backoff) to give the error back at
	// least once on a loaded machine; 500 ms was not always.
	_, err = shareconsumer.GroupLagOf(e2eCtx(t, 2*time.Second), cl, "g")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, kerr.CoordinatorLoadInProgress)
}

// TestLagUnreachableCluster: a refused connection fails the lookup at once, with the dial
// error; a broker that never answers fails it when ctx ends, with ctx's error: the lookup does
// not hang beyond ctx.
func TestLagUnreachableCluster(t *testing.T) {
	t.Parallel()
	lag := func(t *testing.T, addr string, d time.Duration) error {
		c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers(addr)), shareconsumer.Group("g"))
		require.NoError(t, err)
		defer c.Close(context.Background())
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err = c.Lag(ctx)
		assert.Less(t, time.Since(start), d+5*time.Second)
		return err
	}
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close()) // nobody listens there now
		err = lag(t, addr, 10*time.Second)
		var oe *net.OpError
		assert.ErrorAs(t, err, &oe)
	})
	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var conns []net.Conn
		var wg sync.WaitGroup
		wg.Go(func() { // accepts, and never answers
			for {
				cn, err := ln.Accept()
				if err != nil {
					return
				}
				conns = append(conns, cn)
			}
		})
		err = lag(t, ln.Addr().String(), 300*time.Millisecond)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, ln.Close())
		wg.Wait()
		for _, cn := range conns {
			cn.Close()
		}
	})
}

// TestLagClosed: after Close, Lag says so.
func TestLagClosed(t *testing.T) {
	t.Parallel()
	tb := testbroker.StartT(t, testbroker.Topic("t", 1))
	c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)), shareconsumer.Group("g"))
	require.NoError(t, err)
	require.NoError(t, c.Close(e2eCtx(t, 10*time.Second)))
	_, err = c.Lag(e2eCtx(t, 10*time.Second))
	assert.ErrorIs(t, err, errors.ErrClosed)
}

func TestLagIntervalValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d       time.Duration
		wantErr string
	}{
		{0, ""},
		{time.Millisecond, ""},
		{1500 * time.Microsecond, ""},
		{-time.Second, "shareconsumer: LagInterval(-1s): must be 0 (off) or at least 1ms"},
		{time.Microsecond, "shareconsumer: LagInterval(1µs): must be 0 (off) or at least 1ms"},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), shareconsumer.Group("g"),
				shareconsumer.LagInterval(tc.d))
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, c.Close(e2eCtx(t, 10*time.Second)))
		})
	}
}

// lagEvents is a HookLag hook that keeps its events with the time each came.
type lagEvents struct {
	mu  sync.Mutex
	evs []shareconsumer.LagEvent
	at  []time.Time
}

func (h *lagEvents) OnLag(ev shareconsumer.LagEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evs = append(h.evs, ev)
	h.at = append(h.at, time.Now())
}

func (h *lagEvents) get() ([]shareconsumer.LagEvent, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]shareconsumer.LagEvent(nil), h.evs...), append([]time.Time(nil), h.at...)
}

// lagBubbleStart starts, inside a synctest bubble, a cluster on the in-memory network with 4
// records in t-0, 2 of them accepted by group g, and returns a consumer of g with opts that is
// not subscribed (so that it sends nothing but what LagInterval does).
func lagBubbleStart(t *testing.T, opts ...shareconsumer.Opt) (*testbroker.Cluster, *shareconsumer.Consumer) {
	t.Helper()
	tb := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("t", 1),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"))
	require.NoError(t, tb.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	seeds := shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...), kgo.Dialer(tb.DialContext))
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.Dialer(tb.DialContext))
	require.NoError(t, err)
	defer cl.Close()
	for _, v := range []string{"a", "b", "c", "d"} {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Value: []byte(v)}).FirstErr())
	}
	worker, err := shareconsumer.New(seeds, shareconsumer.Group("g"), shareconsumer.Topics("t"),
		shareconsumer.ExplicitAcknowledgement(), shareconsumer.FetchMaxWait(0), shareconsumer.MaxPollRecords(2))
	require.NoError(t, err)
	for done := 0; done < 2; {
		recs, err := worker.Poll(context.Background())
		require.NoError(t, err)
		for _, r := range recs {
			ty := acktype.Release
			if r.Offset < 2 {
				ty, done = acktype.Accept, done+1
			}
			require.NoError(t, worker.Acknowledge(r, ty))
		}
	}
	_, err = worker.CommitSync(context.Background())
	require.NoError(t, err)
	require.NoError(t, worker.Close(context.Background()))

	c, err := shareconsumer.New(append([]shareconsumer.Opt{seeds, shareconsumer.Group("g")}, opts...)...)
	require.NoError(t, err)
	return tb, c
}

// TestLagIntervalCallsHooks runs LagInterval on the bubble's clock: every hook gets a lookup
// each second from New, with the group's lag; Close ends the goroutine (the bubble fails the
// test if any goroutine outlives it) and no hook is called after.
func TestLagIntervalCallsHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h1, h2 lagEvents
		_, c := lagBubbleStart(t, shareconsumer.LagInterval(time.Second), shareconsumer.Hooks(&h1, &h2))
		created := time.Now() // lagBubbleStart returns as soon as it made c: no time passed

		time.Sleep(3*time.Second + time.Millisecond) // the bubble's clock: three ticks pass
		synctest.Wait()
		evs, at := h1.get()
		require.Len(t, evs, 3)
		for i, ev := range evs {
			require.NoError(t, ev.Err)
			assert.Equal(t, created.Add(time.Duration(i+1)*time.Second), at[i], "lookup %d", i)
			assert.Equal(t, "g", ev.Lag.Group)
			assert.Equal(t, []shareconsumer.PartitionLag{
				{TopicPartition: shareconsumer.TopicPartition{Topic: "t", Partition: 0}, StartOffset: 2, EndOffset: -1, Lag: 2, FromBroker: true},
			}, ev.Lag.Partitions)
			assert.Equal(t, int64(2), ev.Lag.Total)
		}
		evs2, _ := h2.get()
		assert.Len(t, evs2, 3, "every hook gets every lookup")

		require.NoError(t, c.Close(context.Background()))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		evs, _ = h1.get()
		assert.Len(t, evs, 3, "no lookup after Close")
	})
}

// TestLagIntervalCloseCutsLookupShort: a lookup that the broker holds does not hold up Close,
// which ends it as it begins; its hooks are not called.
func TestLagIntervalCloseCutsLookupShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h lagEvents
		tb, c := lagBubbleStart(t, shareconsumer.LagInterval(time.Second), shareconsumer.Hooks(&h))
		_, err := tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeShareGroupOffsets}, Delay: time.Hour})
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // the bubble's clock: the first lookup is held at the broker
		synctest.Wait()

		begin := time.Now()
		require.NoError(t, c.Close(context.Background()))
		assert.Less(t, time.Since(begin), time.Second, "Close did not wait for the held lookup")
		evs, _ := h.get()
		assert.Empty(t, evs)
	})
}

// TestLagIntervalWithoutHook: with no HookLag hook, LagInterval sends nothing.
func TestLagIntervalWithoutHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb, c := lagBubbleStart(t, shareconsumer.LagInterval(time.Second))
		// A lookup would fail on this fault; none is sent, so none uses it up.
		_, err := tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeShareGroupOffsets}, Err: kerr.GroupAuthorizationFailed, Times: 1})
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1, tb.ActiveFaults())
		require.NoError(t, c.Close(context.Background()))
	})
}

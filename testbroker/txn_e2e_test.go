package testbroker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// These tests run transactions end to end with franz-go's transactional producer, in both
// generations: TV2 (KIP-890 part 2, what franz-go picks when ApiVersions finalizes
// transaction.version 2) and classic (the client capped at Kafka 3.9's versions, as sarama,
// librdkafka and older Java clients speak).

// txnGenerations are the two protocols a transactional client speaks.
var txnGenerations = []struct {
	name string
	opts []kgo.Opt
}{
	{"tv2", nil},
	{"classic", []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}},
}

func txnClient(t *testing.T, c *testbroker.Cluster, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.TransactionalID(id),
		kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequestRetries(3),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// txnProduce runs one transaction of values, each to partition i mod 3, ended as commit says.
func txnProduce(t *testing.T, cl *kgo.Client, commit bool, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.BeginTransaction())
	for i, v := range values {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: []byte(v)}).FirstErr())
	}
	require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// consumeAll reads topic t from the start with isolation until it has want records or the
// deadline passes, and returns the values sorted.
func consumeAll(t *testing.T, c *testbroker.Cluster, isolation kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("t"),
		kgo.FetchIsolationLevel(isolation), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

// describeTxn describes a transactional id at its coordinator.
func describeTxn(t *testing.T, c *testbroker.Cluster, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := roundTrip[*kmsg.DescribeTransactionsResponse](t, txnCoordinatorAddr(t, c, id), req)
	require.Len(t, resp.TransactionStates, 1)
	require.Zero(t, resp.TransactionStates[0].ErrorCode)
	return resp.TransactionStates[0]
}

// txnCoordinatorAddr finds a transactional id's coordinator with FindCoordinator.
func txnCoordinatorAddr(t *testing.T, c *testbroker.Cluster, id string) string {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{id}
	resp := roundTrip[*kmsg.FindCoordinatorResponse](t, runningAddr(t, c), req)
	require.Zero(t, resp.Coordinators[0].ErrorCode)
	return c.Addrs()[resp.Coordinators[0].NodeID]
}

// runningAddr returns the address of a broker that accepts connections.
func runningAddr(t *testing.T, c *testbroker.Cluster) string {
	t.Helper()
	for _, a := range c.Addrs() {
		if nc, err := net.Dial("tcp", a); err == nil {
			nc.Close()
			return a
		}
	}
	t.Fatal("no broker runs")
	return ""
}

// TestTxnCommitAndAbort: committed transactions are read by read_committed consumers, aborted
// ones only by read_uncommitted consumers, in both protocol generations.
func TestTxnCommitAndAbort(t *testing.T) {
	t.Parallel()
	for _, gen := range txnGenerations {
		t.Run(gen.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 3, 3))
			cl := txnClient(t, c, "tx-"+gen.name, gen.opts...)
			txnProduce(t, cl, true, "c1", "c2", "c3")
			txnProduce(t, cl, false, "a1", "a2")
			txnProduce(t, cl, true, "c4")

			d := describeTxn(t, c, "tx-"+gen.name)
			assert.Equal(t, "CompleteCommit", d.State)
			if gen.name == "tv2" {
				assert.Equal(t, int16(3), d.ProducerEpoch, "TV2 bumps the epoch at each end")
			} else {
				assert.Equal(t, int16(0), d.ProducerEpoch, "classic keeps the epoch")
			}
			assert.Equal(t, []string{"c1", "c2", "c3", "c4"}, consumeAll(t, c, kgo.ReadCommitted(), 4))
			assert.Equal(t, []string{"a1", "a2", "c1", "c2", "c3", "c4"}, consumeAll(t, c, kgo.ReadUncommitted(), 6))
		})
	}
}

// TestTxnZombieFenced: a second producer with the same transactional id aborts the first's
// ongoing transaction and fences it: the zombie can neither produce nor commit, and its records
// are never read by read_committed consumers.
func TestTxnZombieFenced(t *testing.T) {
	t.Parallel()
	for _, gen := range txnGenerations {
		t.Run(gen.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 3, 3))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			zombie := txnClient(t, c, "tx", gen.opts...)
			require.NoError(t, zombie.BeginTransaction())
			require.NoError(t, zombie.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("zombie")}).FirstErr())

			fresh := txnClient(t, c, "tx", gen.opts...)
			txnProduce(t, fresh, true, "fresh")

			err := zombie.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("late")}).FirstErr()
			if err == nil {
				err = zombie.EndTransaction(ctx, kgo.TryCommit)
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch), "got %v", err)
			assert.Equal(t, []string{"fresh"}, consumeAll(t, c, kgo.ReadCommitted(), 1))
		})
	}
}

// TestTxnTimeout: a transaction left open longer than its transaction.timeout.ms is aborted at
// the coordinator's next check on the cluster clock, its producer's epoch bumped.
func TestTxnTimeout(t *testing.T) {
	t.Parallel()
	for _, gen := range txnGenerations {
		t.Run(gen.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 3, 3),
				testbroker.WithManualClock(time.Unix(1_700_000_000, 0)))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cl := txnClient(t, c, "tx", append([]kgo.Opt{kgo.TransactionTimeout(15 * time.Second)}, gen.opts...)...)
			require.NoError(t, cl.BeginTransaction())
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("slow")}).FirstErr())
			before := describeTxn(t, c, "tx")
			require.Equal(t, "Ongoing", before.State)

			c.ManualClock().Advance(10 * time.Second)
			assert.Equal(t, "Ongoing", describeTxn(t, c, "tx").State, "not timed out yet")
			c.ManualClock().Advance(10 * time.Second)
			after := describeTxn(t, c, "tx")
			assert.Equal(t, "CompleteAbort", after.State, "aborted at the first check past 15s")
			assert.Equal(t, before.ProducerEpoch+1, after.ProducerEpoch, "the producer is fenced")

			require.Error(t, cl.EndTransaction(ctx, kgo.TryCommit), "the commit of an aborted transaction fails")
			assert.Equal(t, []string{"slow"}, consumeAll(t, c, kgo.ReadUncommitted(), 1))
		})
	}
}

// TestTxnLeaderMove: a partition's leader moves, and another is stopped, in the middle of a
// transaction; the producer follows, and the commit's markers reach the new leaders.
func TestTxnLeaderMove(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 3, 3))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cl := txnClient(t, c, "tx")
	require.NoError(t, cl.BeginTransaction())
	for i := range 3 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i), Value: []byte(fmt.Sprint("before-", i))}).FirstErr())
	}
	p0, _ := c.Partition("t", 0)
	require.NoError(t, c.MoveLeader("t", 0, (p0.Leader+1)%3))
	p1, _ := c.Partition("t", 1)
	if coord := txnCoordinatorAddr(t, c, "tx"); c.Addrs()[p1.Leader] != coord {
		require.NoError(t, c.StopBroker(p1.Leader))
	}
	for i := range 3 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i), Value: []byte(fmt.Sprint("after-", i))}).FirstErr())
	}
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	assert.Equal(t, "CompleteCommit", describeTxn(t, c, "tx").State)
	assert.Equal(t, []string{"after-0", "after-1", "after-2", "before-0", "before-1", "before-2"}, consumeAll(t, c, kgo.ReadCommitted(), 6))
}

// groupCoordinatorAddr finds a group's coordinator with FindCoordinator.
func groupCoordinatorAddr(t *testing.T, c *testbroker.Cluster, group string) string {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorKeys = 4, []string{group}
	resp := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], req)
	require.Zero(t, resp.Coordinators[0].ErrorCode)
	return c.Addrs()[resp.Coordinators[0].NodeID]
}

// rawTxn drives one transactional id with raw requests to its coordinator and to group g's.
type rawTxn struct {
	t          *testing.T
	id         string
	txnc, grpc *rawConn
	pid        int64
	epoch      int16
	commitVer  int16 // TxnOffsetCommit's version: 5+ is TV2
	endTxnVer  int16
}

func newRawTxn(t *testing.T, c *testbroker.Cluster, id string, tv2 bool) *rawTxn {
	t.Helper()
	r := &rawTxn{t: t, id: id, txnc: dialRaw(t, txnCoordinatorAddr(t, c, id)), grpc: dialRaw(t, groupCoordinatorAddr(t, c, "g")),
		commitVer: 3, endTxnVer: 3}
	if tv2 {
		r.commitVer, r.endTxnVer = 5, 5
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	resp := request[*kmsg.InitProducerIDResponse](t, r.txnc, init)
	require.Zero(t, resp.ErrorCode)
	r.pid, r.epoch = resp.ProducerID, resp.ProducerEpoch
	return r
}

func (r *rawTxn) addOffsets() int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, r.id, r.pid, r.epoch, "g"
	return request[*kmsg.AddOffsetsToTxnResponse](r.t, r.txnc, req).ErrorCode
}

func (r *rawTxn) commitOffset(partition int32, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = r.commitVer, r.id, "g", r.pid, r.epoch
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = partition, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tp}}}
	resp := request[*kmsg.TxnOffsetCommitResponse](r.t, r.grpc, req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (r *rawTxn) end(commit bool) {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = r.endTxnVer, r.id, r.pid, r.epoch, commit
	resp := request[*kmsg.EndTxnResponse](r.t, r.txnc, req)
	require.Zero(r.t, resp.ErrorCode)
	if r.endTxnVer >= 5 {
		r.pid, r.epoch = resp.ProducerID, resp.ProducerEpoch
	}
}

// fetchOffset fetches group g's offset of t/partition, with or without RequireStable.
func (r *rawTxn) fetchOffset(partition int32, stable bool) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, "g", stable
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{partition}}}
	resp := request[*kmsg.OffsetFetchResponse](r.t, r.grpc, req)
	require.Zero(r.t, resp.ErrorCode)
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// TestTxnOffsetCommitVisibleAfterCommit: offsets committed in a transaction are pending until
// it commits: OffsetFetch shows the previous offset (RequireStable: UNSTABLE_OFFSET_COMMIT),
// the commit makes them visible, an abort drops them. A classic client must add the group with
// AddOffsetsToTxn first; a TV2 client's TxnOffsetCommit v5 adds it.
func TestTxnOffsetCommitVisibleAfterCommit(t *testing.T) {
	t.Parallel()
	for _, tv2 := range []bool{false, true} {
		t.Run(fmt.Sprint("tv2=", tv2), func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 3))
			r := newRawTxn(t, c, "tx", tv2)
			if !tv2 {
				assert.Equal(t, kerr.InvalidTxnState.Code, r.commitOffset(0, 5), "the group was not added")
				require.Zero(t, r.addOffsets())
			}
			require.Zero(t, r.commitOffset(0, 5))
			off, code := r.fetchOffset(0, false)
			assert.Equal(t, int64(-1), off, "pending offsets are not visible")
			assert.Zero(t, code)
			off, code = r.fetchOffset(0, true)
			assert.Equal(t, int64(-1), off)
			assert.Equal(t, kerr.UnstableOffsetCommit.Code, code)

			r.end(true)
			off, code = r.fetchOffset(0, true)
			assert.Equal(t, int64(5), off, "visible once committed")
			assert.Zero(t, code)

			if !tv2 {
				require.Zero(t, r.addOffsets())
			}
			require.Zero(t, r.commitOffset(0, 9))
			r.end(false)
			off, code = r.fetchOffset(0, true)
			assert.Equal(t, int64(5), off, "an abort drops the offset")
			assert.Zero(t, code)
		})
	}
}

// TestTxnGroupTransactSession: franz-go's GroupTransactSession consumes, produces and commits
// its offsets in one transaction, with a classic group and with a KIP-848 group.
func TestTxnGroupTransactSession(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "848"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("in", 2, 3), testbroker.ReplicatedTopic("t", 3, 3))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			plain, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("in"))
			require.NoError(t, err)
			defer plain.Close()
			for i := range 10 {
				require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr())
			}

			opts := []kgo.Opt{
				kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("etl"), kgo.DefaultProduceTopic("t"),
				kgo.ConsumerGroup("g-" + kind), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.FetchMaxWait(100 * time.Millisecond),
			}
			if kind == "848" {
				opts = append(opts, kgo.ServerSideBalancer())
			}
			s, err := kgo.NewGroupTransactSession(opts...)
			require.NoError(t, err)
			defer s.Close()
			copied := 0
			for copied < 10 && ctx.Err() == nil {
				fs := s.PollFetches(ctx)
				require.NoError(t, s.Begin())
				fs.EachRecord(func(r *kgo.Record) {
					s.Produce(ctx, &kgo.Record{Partition: int32(copied % 3), Value: r.Value}, nil)
					copied++
				})
				committed, err := s.End(ctx, kgo.TryCommit)
				require.NoError(t, err)
				require.True(t, committed)
			}
			require.Equal(t, 10, copied)
			var total int64
			for _, o := range c.CommittedOffsets("g-" + kind)["in"] {
				total += o.Offset
			}
			assert.Equal(t, int64(10), total, "the group's offsets are committed with the transaction")
			assert.Len(t, consumeAll(t, c, kgo.ReadCommitted(), 10), 10)
		})
	}
}

// TestTxnReadCommittedShareGroups: share groups with share.isolation.level=read_committed never
// deliver the records of aborted transactions, nor those of a transaction still open, to kshare's
// share consumer or to franz-go's; a read_uncommitted group gets them all.
func TestTxnReadCommittedShareGroups(t *testing.T) {
	t.Parallel()
	c := e2eStart(t, 1)
	for _, g := range []string{"kshare", "franz", "uncommitted"} {
		level := "read_committed"
		if g == "uncommitted" {
			level = "read_uncommitted"
		}
		e2eSetGroupConfigs(t, c, g, "share.auto.offset.reset", "earliest", "share.isolation.level", level)
	}
	cl := txnClient(t, c, "tx")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	txnTo0 := func(commit bool, values ...string) {
		require.NoError(t, cl.BeginTransaction())
		for _, v := range values {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr())
		}
		require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	txnTo0(true, "c1", "c2")
	txnTo0(false, "a1", "a2")
	txnTo0(true, "c3")
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("open")}).FirstErr())

	values := func(rs []*kgo.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, string(r.Value))
		}
		return out
	}
	franz := e2eJoin(t, c, "franz", "t", "franz")
	got := values(franz.pollUntilValue(t, "c3", kgo.AckAccept))
	got = append(got, values(franz.poll(t, 500*time.Millisecond))...)
	assert.Equal(t, []string{"c1", "c2", "c3"}, got, "franz-go's share consumer")

	kc, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.FetchMaxWait(100*time.Millisecond)),
		shareconsumer.Group("kshare"), shareconsumer.Topics("t"))
	require.NoError(t, err)
	defer kc.Close(context.Background())
	got = nil
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !slices.Contains(got, "c3") {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		rs, _ := kc.Poll(pctx)
		pcancel()
		for _, r := range rs {
			got = append(got, string(r.Value))
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	rs, _ := kc.Poll(pctx)
	pcancel()
	for _, r := range rs {
		got = append(got, string(r.Value))
	}
	assert.Equal(t, []string{"c1", "c2", "c3"}, got, "kshare's share consumer")

	all := values(e2eJoin(t, c, "uncommitted", "t", "uncommitted").pollUntilValue(t, "open", kgo.AckAccept))
	assert.Equal(t, []string{"c1", "c2", "a1", "a2", "c3", "open"}, all, "read_uncommitted gets every record")
}

package testbroker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// divergedCluster builds, on the manual clock, the log divergence of a leader that fails with
// records its followers never got, and lets it heal. Topic "r" (one partition, replicas 0, 1,
// 2) gets:
//
//   - a, b, c (offsets 0-2) in epoch 0 from leader 0 with acks=all, so every replica has them;
//   - x, y (offsets 3-4) in epoch 1 from leader 0 with acks=1, while a fault holds every fetch
//     its followers send it: only broker 0 has them, and the high watermark stays at 3;
//   - broker 0 stops; broker 1, still in the ISR (the clock never moves, so nobody lags),
//     leads in epoch 2 and takes p, q, r (offsets 3-5) with acks=all;
//   - broker 0 starts again as a follower: its fetch carries LastFetchedEpoch 1, which the
//     leader answers with DivergingEpoch (epoch 0, end offset 3), so it truncates x and y and
//     replicates p, q, r.
//
// It returns once every replica has the leader's log end offset and high watermark (6) and the
// ISR is whole again; the cluster logs to logs.
func divergedCluster(t *testing.T, logs *logBuffer) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.WithManualClock(clockStart), testbroker.ReplicatedTopic("r", 1, 3), loggerTo(logs))
	produceToLeader(t, c, 0, "a", "b", "c")

	// Hold the followers' fetches at broker 0 for ever (the clock never gets there), then raise
	// the epoch in place: a fetch parked at broker 0 before the fault wakes and is fenced, and
	// the next one is held.
	hold := injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Fetch}, Brokers: []int32{0}, Topic: "r", Delay: 24 * time.Hour})
	require.NoError(t, c.MoveLeader("r", 0, 0))
	produceAcks1(t, dialRaw(t, c.Addrs()[0]), plainBatch("x", "y"))
	p := partitionInfo(t, c)
	require.Equal(t, int32(1), p.LeaderEpoch)
	require.Equal(t, int64(5), p.LogEndOffset)
	require.Equal(t, int64(3), p.HighWatermark, "the followers never fetched x and y")
	require.Equal(t, []int32{0, 1, 2}, p.ISR)
	for _, r := range p.ReplicaStates[1:] {
		require.Equal(t, int64(3), r.LogEndOffset, "broker %d", r.Broker)
	}

	require.NoError(t, c.StopBroker(0))
	require.True(t, c.RemoveFault(hold))
	p = partitionInfo(t, c)
	require.Equal(t, int32(1), p.Leader)
	require.Equal(t, int32(2), p.LeaderEpoch)
	produceToLeader(t, c, 1, "p", "q", "r")
	p = partitionInfo(t, c)
	require.Equal(t, []int32{1, 2}, p.ISR)
	require.Equal(t, int64(6), p.HighWatermark)
	require.Equal(t, int64(5), replicaInfo(t, p, 0).LogEndOffset, "the stopped broker still holds x and y")

	require.NoError(t, c.StartBroker(0))
	require.Eventually(t, func() bool {
		p := partitionInfo(t, c)
		if len(p.ISR) != 3 {
			return false
		}
		for _, r := range p.ReplicaStates {
			if r.LogEndOffset != 6 || r.HighWatermark != 6 {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "broker 0 truncates, catches up and rejoins the ISR")
	return c
}

func partitionInfo(t *testing.T, c *testbroker.Cluster) testbroker.PartitionInfo {
	t.Helper()
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	return p
}

func replicaInfo(t *testing.T, p testbroker.PartitionInfo, broker int32) testbroker.ReplicaInfo {
	t.Helper()
	for _, r := range p.ReplicaStates {
		if r.Broker == broker {
			return r
		}
	}
	require.Failf(t, "no such replica", "broker %d", broker)
	return testbroker.ReplicaInfo{}
}

// TestDivergedLeaderTruncatesAndMatchesTheLeader: after the divergence of divergedCluster, the
// old leader's log is the new leader's byte for byte, read with consumer fetches (v11, which
// may read a follower) from each replica: its unreplicated x and y are gone, and every batch
// keeps the epoch it was written in.
func TestDivergedLeaderTruncatesAndMatchesTheLeader(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := divergedCluster(t, &logs)
	assert.Contains(t, logs.String(), `msg="truncating a diverging replica" broker=0 partition=r-0 offset=3`)
	assert.NotContains(t, logs.String(), "ahead of its leader", "the truncation comes from DivergingEpoch, not OFFSET_OUT_OF_RANGE")

	var leaderBatches []byte
	for _, broker := range []int32{1, 0, 2} {
		fp := onlyPartition(t, roundTrip[*kmsg.FetchResponse](t, c.Addrs()[broker], fetchRequest("r", 0, 0)))
		require.Zero(t, fp.ErrorCode, "broker %d", broker)
		assert.Equal(t, int64(6), fp.HighWatermark, "broker %d", broker)
		assert.Equal(t, []fetched{{0, "a"}, {1, "b"}, {2, "c"}, {3, "p"}, {4, "q"}, {5, "r"}}, fetchedRecords(t, fp, 0), "broker %d", broker)
		assert.Equal(t, []int32{0, 2}, batchEpochs(t, fp.RecordBatches), "broker %d", broker)
		if leaderBatches == nil {
			leaderBatches = fp.RecordBatches
			continue
		}
		assert.Equal(t, leaderBatches, fp.RecordBatches, "broker %d stores the leader's bytes", broker)
	}

	// The leader's epoch cache never had epoch 1: it ends where epoch 2 starts, at 3.
	got := offsetForLeaderEpoch(t, c.Addrs()[1], "r", epochQuery(0, 2, 0), epochQuery(0, 2, 1), epochQuery(0, 2, 2))
	assert.Equal(t, [2]any{int32(0), int64(3)}, [2]any{got[0].LeaderEpoch, got[0].EndOffset})
	assert.Equal(t, [2]any{int32(0), int64(3)}, [2]any{got[1].LeaderEpoch, got[1].EndOffset})
	assert.Equal(t, [2]any{int32(2), int64(6)}, [2]any{got[2].LeaderEpoch, got[2].EndOffset})
	assert.Equal(t, kerr.NotLeaderForPartition.Code, offsetForLeaderEpoch(t, c.Addrs()[0], "r", epochQuery(0, 2, 1))[0].ErrorCode,
		"the old leader follows now")
}

// batchEpochs returns the PartitionLeaderEpoch of each batch in records.
func batchEpochs(t *testing.T, records []byte) []int32 {
	t.Helper()
	var out []int32
	for b := records; len(b) > 0; {
		var batch kmsg.RecordBatch
		require.NoError(t, batch.ReadFrom(b))
		b = b[12+int(batch.Length):]
		if len(out) == 0 || out[len(out)-1] != batch.PartitionLeaderEpoch {
			out = append(out, batch.PartitionLeaderEpoch)
		}
	}
	return out
}

// TestFranzGoDetectsTruncatedPosition: a franz-go consumer that resumes at a position the log
// lost (offset 5 in epoch 1: it had read x and y from the old leader) asks OffsetForLeaderEpoch
// where epoch 1 ends, learns 3 (epoch 0), reports an *ErrDataLoss and consumes on from 3,
// reading the new leader's records.
func TestFranzGoDetectsTruncatedPosition(t *testing.T) {
	t.Parallel()
	c := divergedCluster(t, new(logBuffer))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"r": {0: kgo.NewOffset().At(5).WithEpoch(1)}}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var loss *kgo.ErrDataLoss
	var got []fetched
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, fe := range fs.Errors() {
			require.True(t, errors.As(fe.Err, &loss), "unexpected fetch error: %v", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fetched{r.Offset, string(r.Value)}) })
	}
	require.NotNil(t, loss, "franz-go reports the loss")
	assert.Equal(t, kgo.ErrDataLoss{Topic: "r", Partition: 0, ConsumedTo: 5, ConsumedToEpoch: 1, ResetTo: 3, ResetToEpoch: 0}, *loss)
	assert.Equal(t, []fetched{{3, "p"}, {4, "q"}, {5, "r"}}, got)
}

// requestCounter counts the requests a franz-go client writes, by key.
type requestCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (rc *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.n == nil {
		rc.n = make(map[int16]int)
	}
	rc.n[key]++
}

func (rc *requestCounter) count(key kmsg.Key) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[int16(key)]
}

// TestFranzGoConsumesThroughLeaderChanges: a franz-go consumer reads a partition of
// replication factor 3 while its leader moves (MoveLeader), stops and comes back
// (StopBroker, StartBroker), with an acks=all producer writing between the changes: it
// validates its position with OffsetForLeaderEpoch after the changes (KIP-320) and gets every
// record once, in order.
func TestFranzGoConsumesThroughLeaderChanges(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("r", 1, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("r"), kgo.MetadataMinAge(50*time.Millisecond))
	require.NoError(t, err)
	defer producer.Close()
	var requests requestCounter
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("r"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond), kgo.WithHooks(&requests))
	require.NoError(t, err)
	defer consumer.Close()

	produced := 0
	produce := func(n int) {
		t.Helper()
		for range n {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", produced)}).FirstErr())
			produced++
		}
	}
	var got []fetched
	consume := func() {
		t.Helper()
		for len(got) < produced {
			fs := consumer.PollFetches(ctx)
			require.NoError(t, ctx.Err(), "consumed %d of %d", len(got), produced)
			for _, fe := range fs.Errors() {
				require.NoError(t, fe.Err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fetched{r.Offset, string(r.Value)}) })
		}
	}

	produce(20)
	consume()
	require.NoError(t, c.MoveLeader("r", 0, 1))
	produce(20)
	consume()
	validations := requests.count(kmsg.OffsetForLeaderEpoch)
	assert.Positive(t, validations, "the consumer validates its position after the move")

	require.NoError(t, c.StopBroker(1))
	produce(20)
	consume()
	assert.Greater(t, requests.count(kmsg.OffsetForLeaderEpoch), validations, "and after the failover")

	// The restarted broker catches up and rejoins the ISR (each acks=all produce returns once
	// the ISR of its moment has the record), then takes the lead back.
	require.NoError(t, c.StartBroker(1))
	for len(partitionInfo(t, c).ISR) < 3 {
		produce(1)
	}
	require.NoError(t, c.MoveLeader("r", 0, 1))
	produce(20)
	consume()

	require.Len(t, got, produced)
	for i, r := range got {
		assert.Equal(t, fetched{int64(i), fmt.Sprintf("v%d", i)}, r)
	}
	p := partitionInfo(t, c)
	assert.Equal(t, int32(1), p.Leader)
	assert.Equal(t, int32(3), p.LeaderEpoch, "one epoch per move and one for the failover")
	assert.Equal(t, int64(produced), p.HighWatermark)
}

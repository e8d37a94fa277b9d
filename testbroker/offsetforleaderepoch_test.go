package testbroker_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// epochQuery is one partition of an OffsetForLeaderEpoch request: the epoch to look up, with
// the CurrentLeaderEpoch that fences it (-1: none).
func epochQuery(partition, current, epoch int32) kmsg.OffsetForLeaderEpochRequestTopicPartition {
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = partition, current, epoch
	return p
}

// offsetForLeaderEpoch sends an OffsetForLeaderEpoch v4 from a consumer (ReplicaID -1) for
// partitions of topic and returns the topic's answers.
func offsetForLeaderEpoch(t *testing.T, addr string, topic string, parts ...kmsg.OffsetForLeaderEpochRequestTopicPartition) []kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = 4, -1
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: topic, Partitions: parts}}
	return offsetForLeaderEpochTopic(t, roundTrip[*kmsg.OffsetForLeaderEpochResponse](t, addr, req), topic, len(parts))
}

// offsetForLeaderEpochTopic returns resp's answers for its only topic, which must be topic with
// n partitions.
func offsetForLeaderEpochTopic(t *testing.T, resp *kmsg.OffsetForLeaderEpochResponse, topic string, n int) []kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	require.Len(t, resp.Topics, 1)
	require.Equal(t, topic, resp.Topics[0].Topic)
	require.Len(t, resp.Topics[0].Partitions, n)
	return resp.Topics[0].Partitions
}

// produceToLeader appends values to partition 0 of "r" at broker leader with acks=all.
func produceToLeader(t *testing.T, c *testbroker.Cluster, leader int32, values ...string) {
	t.Helper()
	p := produceOne(t, dialRaw(t, c.Addrs()[leader]), "r", 0, plainBatch(values...))
	require.Zero(t, p.ErrorCode, "acks=all produce to broker %d", leader)
}

// epochsCluster is a manual-clock cluster of three brokers whose topic "r" (one partition,
// replication factor 3, every follower's fetcher running) holds records of three leader epochs,
// each produced with acks=all: epoch 0 led by broker 0 (offsets 0-1), epoch 1 led by broker 1
// (offsets 2-4), epoch 2 led by broker 2 (offset 5). The clock never moves, so the ISR stays
// whole.
func epochsCluster(t *testing.T) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.WithManualClock(clockStart), testbroker.ReplicatedTopic("r", 1, 3))
	produceToLeader(t, c, 0, "a", "b")
	require.NoError(t, c.MoveLeader("r", 0, 1))
	produceToLeader(t, c, 1, "c", "d", "e")
	require.NoError(t, c.MoveLeader("r", 0, 2))
	produceToLeader(t, c, 2, "f")
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int32(2), p.Leader)
	require.Equal(t, int32(2), p.LeaderEpoch)
	require.Equal(t, int64(6), p.HighWatermark)
	return c
}

// TestOffsetForLeaderEpochEndOffsets: the leader answers each epoch with the largest epoch not
// above it and where that epoch ends, from its epoch cache, as Kafka's
// LeaderEpochFileCache.endOffsetFor does.
func TestOffsetForLeaderEpochEndOffsets(t *testing.T) {
	t.Parallel()
	c := epochsCluster(t)
	tests := []struct {
		name       string
		epoch      int32
		wantEpoch  int32
		wantOffset int64
	}{
		{"the first epoch ends where the second starts", 0, 0, 2},
		{"an epoch in between ends where the next starts", 1, 1, 5},
		{"the latest epoch ends at the log end", 2, 2, 6},
		{"an epoch above the latest is undefined", 3, -1, -1},
		{"epoch -1 is undefined", -1, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, current := range []int32{-1, 2} {
				p := offsetForLeaderEpoch(t, c.Addrs()[2], "r", epochQuery(0, current, tt.epoch))[0]
				assert.Zero(t, p.ErrorCode, "CurrentLeaderEpoch %d", current)
				assert.Equal(t, int32(0), p.Partition)
				assert.Equal(t, tt.wantEpoch, p.LeaderEpoch, "CurrentLeaderEpoch %d", current)
				assert.Equal(t, tt.wantOffset, p.EndOffset, "CurrentLeaderEpoch %d", current)
			}
		})
	}
}

// TestOffsetForLeaderEpochBelowFirstEpoch: an epoch below every epoch of the leader's log ends
// where the log's first epoch starts; here the first records were written in epoch 1, and
// epoch 0, which wrote nothing, is answered with epoch 0 and offset 0.
func TestOffsetForLeaderEpochBelowFirstEpoch(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.WithManualClock(clockStart), testbroker.ReplicatedTopic("r", 1, 3))
	require.NoError(t, c.MoveLeader("r", 0, 1))
	produceToLeader(t, c, 1, "a", "b")

	got := offsetForLeaderEpoch(t, c.Addrs()[1], "r", epochQuery(0, 1, 0), epochQuery(0, 1, 1))
	assert.Equal(t, [2]any{int32(0), int64(0)}, [2]any{got[0].LeaderEpoch, got[0].EndOffset}, "epoch 0 is below the first")
	assert.Equal(t, [2]any{int32(1), int64(2)}, [2]any{got[1].LeaderEpoch, got[1].EndOffset}, "epoch 1 is the latest")
	for _, p := range got {
		assert.Zero(t, p.ErrorCode)
	}
}

// TestOffsetForLeaderEpochLatestEpochEndsAtLogEnd: the latest epoch ends at the leader's log
// end offset, past the high watermark, for a consumer too, as in Kafka (which reads the log end
// offset whoever asks).
func TestOffsetForLeaderEpochLatestEpochEndsAtLogEnd(t *testing.T) {
	t.Parallel()
	c, _ := kip1166Cluster(t)
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int64(0), p.HighWatermark, "the followers have not fetched")

	got := offsetForLeaderEpoch(t, c.Addrs()[0], "r", epochQuery(0, 0, 0))[0]
	assert.Zero(t, got.ErrorCode)
	assert.Equal(t, int32(0), got.LeaderEpoch)
	assert.Equal(t, int64(3), got.EndOffset)
}

// TestOffsetForLeaderEpochErrors: the per-partition errors, in Kafka's order: unknown
// partitions first, then the CurrentLeaderEpoch check, then leadership, which every replica id
// needs (Kafka serves the API from the leader only).
func TestOffsetForLeaderEpochErrors(t *testing.T) {
	t.Parallel()
	c := epochsCluster(t)
	tests := []struct {
		name      string
		broker    int32
		replicaID int32
		topic     string
		query     kmsg.OffsetForLeaderEpochRequestTopicPartition
		want      *kerr.Error
	}{
		{"an older CurrentLeaderEpoch", 2, -1, "r", epochQuery(0, 1, 1), kerr.FencedLeaderEpoch},
		{"a newer CurrentLeaderEpoch", 2, -1, "r", epochQuery(0, 3, 1), kerr.UnknownLeaderEpoch},
		{"a consumer at a follower", 0, -1, "r", epochQuery(0, 2, 1), kerr.NotLeaderForPartition},
		{"a consumer at a follower without a CurrentLeaderEpoch", 1, -1, "r", epochQuery(0, -1, 1), kerr.NotLeaderForPartition},
		{"a follower's replica id at a follower", 0, 1, "r", epochQuery(0, 2, 1), kerr.NotLeaderForPartition},
		{"the debugging replica id at a follower", 0, -2, "r", epochQuery(0, 2, 1), kerr.NotLeaderForPartition},
		{"a follower checks the CurrentLeaderEpoch first", 0, -1, "r", epochQuery(0, 1, 1), kerr.FencedLeaderEpoch},
		{"an unknown topic", 2, -1, "nope", epochQuery(0, 2, 1), kerr.UnknownTopicOrPartition},
		{"an unknown partition", 2, -1, "r", epochQuery(7, 2, 1), kerr.UnknownTopicOrPartition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.Version, req.ReplicaID = 4, tt.replicaID
			req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: tt.topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{tt.query}}}
			resp := roundTrip[*kmsg.OffsetForLeaderEpochResponse](t, c.Addrs()[tt.broker], req)
			p := offsetForLeaderEpochTopic(t, resp, tt.topic, 1)[0]
			assert.Equal(t, tt.want.Code, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
			assert.Equal(t, tt.query.Partition, p.Partition)
			assert.Equal(t, int32(-1), p.LeaderEpoch)
			assert.Equal(t, int64(-1), p.EndOffset)
		})
	}
}

// TestOffsetForLeaderEpochNotAReplica: a broker holding no replica of the partition answers
// NOT_LEADER_OR_FOLLOWER, before any CurrentLeaderEpoch check, as Kafka does for a partition it
// knows from metadata but does not host.
func TestOffsetForLeaderEpochNotAReplica(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("two", 1, 2))
	p, ok := c.Partition("two", 0)
	require.True(t, ok)
	outsider := int32(-1)
	for b := range int32(3) {
		if !slices.Contains(p.Replicas, b) {
			outsider = b
		}
	}
	require.GreaterOrEqual(t, outsider, int32(0))
	for _, current := range []int32{-1, 0, 5} {
		got := offsetForLeaderEpoch(t, c.Addrs()[outsider], "two", epochQuery(0, current, 0))[0]
		assert.Equal(t, kerr.NotLeaderForPartition.Code, got.ErrorCode, "CurrentLeaderEpoch %d", current)
	}
}

// TestOffsetForLeaderEpochVersions: v2-4 are served (Kafka 4 removed v0 and v1), each with
// the same answers; v1 is UNSUPPORTED_VERSION in every partition, and a partition named twice
// is answered twice.
func TestOffsetForLeaderEpochVersions(t *testing.T) {
	t.Parallel()
	c := epochsCluster(t)
	conn := dialRawKafka(t, c.Addrs()[2])
	v, ok := advertised(t, conn, kmsg.OffsetForLeaderEpoch)
	require.True(t, ok)
	assert.Equal(t, [2]int16{2, 4}, [2]int16{v.MinVersion, v.MaxVersion})

	for version := int16(1); version <= 4; version++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = version, -1
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "r", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{
			epochQuery(0, 2, 1), epochQuery(0, 2, 2),
		}}}
		got := offsetForLeaderEpochTopic(t, conn.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse), "r", 2)
		if version < 2 {
			for _, p := range got {
				assert.Equal(t, kerr.UnsupportedVersion.Code, p.ErrorCode, "v%d", version)
			}
			continue
		}
		assert.Equal(t, [2]int16{0, 0}, [2]int16{got[0].ErrorCode, got[1].ErrorCode}, "v%d", version)
		assert.Equal(t, int64(5), got[0].EndOffset, "v%d", version)
		assert.Equal(t, int64(6), got[1].EndOffset, "v%d", version)
	}
	conn.requireAlive()
}

// TestOffsetForLeaderEpochAfterFailover: a new leader elected when the old one stops answers
// from its own log: the old epoch ends where it took over. The cluster runs on the real clock:
// StopBroker waits for the fetches parked at the stopping broker, and a parked fetch ends at
// its MaxWait, not when its connection closes; the followers' MaxWait is kept short.
func TestOffsetForLeaderEpochAfterFailover(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("r", 1, 3), testbroker.BrokerConfig("replica.fetch.wait.max.ms", "10"))
	produceToLeader(t, c, 0, "a", "b", "c")
	require.NoError(t, c.StopBroker(0))
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int32(1), p.Leader)
	produceToLeader(t, c, 1, "d")

	got := offsetForLeaderEpoch(t, c.Addrs()[1], "r", epochQuery(0, 1, 0), epochQuery(0, 1, 1), epochQuery(0, 0, 0))
	assert.Equal(t, [3]any{int16(0), int32(0), int64(3)}, [3]any{got[0].ErrorCode, got[0].LeaderEpoch, got[0].EndOffset})
	assert.Equal(t, [3]any{int16(0), int32(1), int64(4)}, [3]any{got[1].ErrorCode, got[1].LeaderEpoch, got[1].EndOffset})
	assert.Equal(t, kerr.FencedLeaderEpoch.Code, got[2].ErrorCode, "the old leader's epoch is fenced")
}

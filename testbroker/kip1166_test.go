package testbroker_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// The KIP-1166 rules of the leader, as the KRaft tests of the KIP state them
// (KafkaRaftClientFetchTest), rephrased for partitions: the test sends the followers' FETCH v18
// itself, on the manual clock, to a leader whose own followers' fetchers are off.

// followerFetch is a follower's FETCH v18 of partition 0 of "r" at offset, with the high
// watermark it knows (hwm; -1 unknown, MaxInt64 the field's default), waiting up to 500 ms.
func followerFetch(topicID [16]byte, replica int32, offset, hwm int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 18
	req.ReplicaState.ID, req.ReplicaState.Epoch = replica, 1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 10<<20
	req.SessionEpoch = -1
	p := kmsg.NewFetchRequestTopicPartition()
	p.FetchOffset, p.PartitionMaxBytes, p.HighWatermark = offset, 1<<20, hwm
	req.Topics = []kmsg.FetchRequestTopic{{TopicID: topicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return req
}

// kip1166Cluster is a manual-clock cluster of three brokers with topic "r" (one partition, led
// by broker 0, followed by 1 and 2) holding three records: the followers have not fetched yet,
// so the leader's high watermark is still 0. Its extra options are applied last.
func kip1166Cluster(t *testing.T, opts ...testbroker.Opt) (*testbroker.Cluster, [16]byte) {
	t.Helper()
	c := testbroker.StartT(t, append([]testbroker.Opt{testbroker.NumBrokers(3), testbroker.WithManualClock(clockStart),
		testbroker.ReplicatedTopic("r", 1, 3), testbroker.WithoutReplicaFetchers()}, opts...)...)
	produceAcks1(t, dialRaw(t, c.Addrs()[0]), plainBatch("a", "b", "c"))
	ti, ok := c.Topic("r")
	require.True(t, ok)
	return c, ti.ID
}

// produceAcks1 appends records to partition 0 of "r" with acks 1: the followers are the
// test's, so an acks=all produce would wait for them.
func produceAcks1(t *testing.T, rc *rawConn, records []byte) {
	t.Helper()
	req := produceRequest("r", 0, records)
	req.Acks = 1
	resp := request[*kmsg.ProduceResponse](t, rc, req)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
}

// parked is how many timers a parked follower fetch leaves pending on the clock: its own, and
// the ISR expiration task that a replicated partition keeps.
const parked = 2

func TestKIP1166UnknownHighWatermarkAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	leader := dialRaw(t, c.Addrs()[0])
	// Follower 1 has the records and sends -1: the leader knows a watermark (0), so the fetch
	// is answered at once, with it, though there is nothing to read.
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 1, 3, -1)))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(0), p.HighWatermark)
}

func TestKIP1166DefaultHighWatermarkParks(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	clk := c.ManualClock()
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), followerFetch(id, 1, 3, math.MaxInt64))
	require.True(t, clk.WaitPending(t.Context().Done(), parked), "a follower that sends no watermark waits for data")
	clk.Advance(500 * time.Millisecond)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
}

func TestKIP1166BehindAnsweredWithLeadersValue(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	leader := dialRaw(t, c.Addrs()[0])
	// Followers 1 and 2 replicate the records; the fetches that carry them answer at once.
	for _, r := range []int32{1, 2} {
		p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, r, 0, -1)))
		require.NotEmpty(t, p.RecordBatches)
	}
	// Follower 1's next fetch, at 3, cannot move the watermark (follower 2 is still at 0); it
	// sends -1, so it learns 0 at once.
	require.Equal(t, int64(0), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 1, 3, -1))).HighWatermark)
	// Follower 2's fetch at 3 moves the watermark to 3, and is itself answered at once with it:
	// the leader compares after recording the fetch.
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 2, 3, 0)))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(3), p.HighWatermark)
}

// catchUp brings followers 1 and 2 to offset 3 with the watermark at 3 known to follower 2.
func catchUp(t *testing.T, leader *rawConn, id [16]byte) {
	t.Helper()
	for _, r := range []int32{1, 2} {
		require.NotEmpty(t, onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, r, 0, -1))).RecordBatches)
	}
	require.Equal(t, int64(0), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 1, 3, -1))).HighWatermark)
	require.Equal(t, int64(3), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 2, 3, 0))).HighWatermark)
}

func TestKIP1166EqualHighWatermarkParks(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	clk := c.ManualClock()
	catchUp(t, dialRaw(t, c.Addrs()[0]), id)
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), followerFetch(id, 2, 3, 3))
	require.True(t, clk.WaitPending(t.Context().Done(), parked))
	clk.Advance(499 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("a follower that knows the watermark was answered before new data or MaxWait")
	default:
	}
	clk.Advance(time.Millisecond)
	assert.Equal(t, int64(3), onlyPartition(t, awaitFetch(t, got)).HighWatermark)
}

// TestKIP1166WatermarkAdvanceCompletesParkedFetch parks follower 1, which has every record,
// and lets follower 2's fetch move the watermark: the parked fetch answers at once with it.
func TestKIP1166WatermarkAdvanceCompletesParkedFetch(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	clk := c.ManualClock()
	leader := dialRaw(t, c.Addrs()[0])
	catchUp(t, leader, id)
	produceAcks1(t, leader, plainBatch("d", "e"))
	require.NotEmpty(t, onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 1, 3, 3))).RecordBatches)

	got := startFetch(t, dialRaw(t, c.Addrs()[0]), followerFetch(id, 1, 5, 3))
	require.True(t, clk.WaitPending(t.Context().Done(), parked), "follower 1 is level with the leader's watermark (3): it parks")
	require.NotEmpty(t, onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 2, 3, 3))).RecordBatches)
	// Follower 2 fetching at 5 moves the watermark to 5, which completes follower 1's fetch.
	assert.Equal(t, int64(5), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, 2, 5, 3))).HighWatermark)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(5), p.HighWatermark)
}

// TestKIP1166OffBehavesAsKafka42 turns the rule off: the follower's watermark is not read, and
// a watermark advance leaves a parked follower fetch parked until data or MaxWait, as in Kafka
// 4.2's replica manager.
func TestKIP1166OffBehavesAsKafka42(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t, testbroker.BrokerConfig("testbroker.kip1166.enable", "false"))
	clk := c.ManualClock()
	leader := dialRaw(t, c.Addrs()[0])
	for _, r := range []int32{1, 2} {
		require.NotEmpty(t, onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, r, 0, -1))).RecordBatches)
	}
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), followerFetch(id, 1, 3, -1))
	require.True(t, clk.WaitPending(t.Context().Done(), parked), "an unknown watermark does not answer the fetch")
	moved := startFetch(t, dialRaw(t, c.Addrs()[0]), followerFetch(id, 2, 3, -1))
	require.True(t, clk.WaitPending(t.Context().Done(), parked+1), "the fetch that moves the watermark parks too")
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int64(3), p.HighWatermark)
	select {
	case <-got:
		t.Fatal("a watermark advance answered a parked follower fetch with KIP-1166 off")
	default:
	}
	clk.Advance(500 * time.Millisecond)
	assert.Equal(t, int64(3), onlyPartition(t, awaitFetch(t, got)).HighWatermark)
	assert.Equal(t, int64(3), onlyPartition(t, awaitFetch(t, moved)).HighWatermark)
}

// TestKIP1166ConsumerFetchIgnoresHighWatermark sends a consumer's FETCH v18 that carries -1:
// the field is a follower's, and the consumer's fetch waits for data as ever.
func TestKIP1166ConsumerFetchIgnoresHighWatermark(t *testing.T) {
	t.Parallel()
	c, id := kip1166Cluster(t)
	clk := c.ManualClock()
	catchUp(t, dialRaw(t, c.Addrs()[0]), id)
	req := followerFetch(id, -1, 3, -1)
	req.ReplicaState.Epoch = -1
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), req)
	require.True(t, clk.WaitPending(t.Context().Done(), parked))
	clk.Advance(500 * time.Millisecond)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(3), p.HighWatermark)
}

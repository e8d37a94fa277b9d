package testbroker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// isrCluster is a manual-clock cluster of three brokers with topic "r" (one partition led by
// broker 0, replication factor 3) and min.insync.replicas 2, its followers' fetchers parked
// at the leader.
func isrCluster(t *testing.T) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.WithManualClock(clockStart),
		testbroker.ReplicatedTopic("r", 1, 3), testbroker.BrokerConfig("min.insync.replicas", "2"))
	// The ISR expiration task and both followers' parked fetches.
	require.True(t, c.ManualClock().WaitPending(t.Context().Done(), 3))
	return c
}

// produceAll sends records to partition 0 of "r" with acks=all and the given timeout, and
// returns the partition's answer once it comes.
func produceAll(t *testing.T, rc *rawConn, timeout time.Duration, records []byte) <-chan kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest("r", 0, records)
	req.Acks, req.TimeoutMillis = -1, int32(timeout/time.Millisecond)
	corr := rc.send(t, req)
	got := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		resp, err := receive[*kmsg.ProduceResponse](rc, req, corr)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			close(got)
			return
		}
		got <- resp.Topics[0].Partitions[0]
	}()
	return got
}

func awaitProduce(t *testing.T, got <-chan kmsg.ProduceResponseTopicPartition) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	select {
	case p, ok := <-got:
		require.True(t, ok, "no produce response")
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no produce response")
		return kmsg.ProduceResponseTopicPartition{}
	}
}

func isr(t *testing.T, c *testbroker.Cluster) []int32 {
	t.Helper()
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	return p.ISR
}

// TestISRShrinksAfterLagTimeAndGrowsBack holds the followers' fetches back with an injected
// error: past replica.lag.time.max.ms (30 s) without catching up they leave the ISR, an
// acks=all produce is then refused with NOT_ENOUGH_REPLICAS (nothing appended), and once they
// fetch again they rejoin and acks=all works.
func TestISRShrinksAfterLagTimeAndGrowsBack(t *testing.T) {
	t.Parallel()
	c := isrCluster(t)
	clk := c.ManualClock()
	fault, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Fetch}, Brokers: []int32{0}, Err: kerr.NotLeaderForPartition})
	require.NoError(t, err)
	leader := dialRaw(t, c.Addrs()[0])
	// The parked fetches answer at their MaxWait; the next ones fail. A record only the leader
	// has puts the followers behind (a follower level with the leader never drops out).
	clk.Advance(500 * time.Millisecond)
	req := produceRequest("r", 0, plainBatch("w"))
	req.Acks = 1
	require.Zero(t, request[*kmsg.ProduceResponse](t, leader, req).Topics[0].Partitions[0].ErrorCode)

	clk.Advance(29500 * time.Millisecond)
	assert.Equal(t, []int32{0, 1, 2}, isr(t, c), "exactly replica.lag.time.max.ms behind is still in sync")
	clk.Advance(15 * time.Second) // the next ISR expiration check
	assert.Equal(t, []int32{0}, isr(t, c))

	refused := awaitProduce(t, produceAll(t, leader, time.Minute, plainBatch("x")))
	assert.Equal(t, kerr.NotEnoughReplicas.Code, refused.ErrorCode)
	assert.Equal(t, int64(-1), refused.BaseOffset)
	p, _ := c.Partition("r", 0)
	assert.Equal(t, int64(1), p.LogEndOffset, "a refused acks=all produce appends nothing")
	assert.Equal(t, int64(1), p.HighWatermark, "the leader alone is the ISR")

	require.True(t, clk.WaitPending(t.Context().Done(), 3), "both fetchers back off after their failed fetch")
	require.True(t, c.RemoveFault(fault))
	clk.Advance(time.Second) // the fetchers' replica.fetch.backoff.ms
	require.True(t, clk.WaitPending(t.Context().Done(), 3), "both followers fetch again and park")
	assert.Equal(t, []int32{0, 1, 2}, isr(t, c), "a follower at the high watermark rejoins the ISR")

	ok := awaitProduce(t, produceAll(t, leader, time.Minute, plainBatch("y")))
	assert.Zero(t, ok.ErrorCode)
	assert.Equal(t, int64(1), ok.BaseOffset)
	p, _ = c.Partition("r", 0)
	assert.Equal(t, int64(2), p.HighWatermark)
}

// holdFollowers holds the followers' fetches at the leader for an hour of the cluster clock: the
// parked ones answer at their MaxWait, and the next ones are held by a fault.
func holdFollowers(t *testing.T, c *testbroker.Cluster) {
	t.Helper()
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Fetch}, Brokers: []int32{0}, Delay: time.Hour})
	require.NoError(t, err)
	c.ManualClock().Advance(500 * time.Millisecond)
	require.True(t, c.ManualClock().WaitPending(t.Context().Done(), 3), "the ISR task and both held fetches")
}

// TestAcksAllTimesOutAndKeepsItsOffset holds the followers back while an acks=all produce
// waits: at its timeout on the cluster clock it answers REQUEST_TIMED_OUT with the offset the
// leader appended it at, as Kafka's DelayedProduce does; consumers still cannot read it.
func TestAcksAllTimesOutAndKeepsItsOffset(t *testing.T) {
	t.Parallel()
	c := isrCluster(t)
	clk := c.ManualClock()
	holdFollowers(t, c)

	got := produceAll(t, dialRaw(t, c.Addrs()[0]), time.Second, plainBatch("x"))
	require.True(t, clk.WaitPending(t.Context().Done(), 4), "the produce waits on its timeout")
	clk.Advance(time.Second)
	p := awaitProduce(t, got)
	assert.Equal(t, kerr.RequestTimedOut.Code, p.ErrorCode)
	assert.Equal(t, int64(0), p.BaseOffset)
	part, _ := c.Partition("r", 0)
	assert.Equal(t, int64(1), part.LogEndOffset)
	assert.Zero(t, part.HighWatermark)
}

// TestAcksAllNotEnoughReplicasAfterAppend lets the ISR shrink below min.insync.replicas while
// an acks=all produce waits: the shrink moves the high watermark over the batch, and the
// produce answers NOT_ENOUGH_REPLICAS_AFTER_APPEND with its offset.
func TestAcksAllNotEnoughReplicasAfterAppend(t *testing.T) {
	t.Parallel()
	c := isrCluster(t)
	clk := c.ManualClock()
	holdFollowers(t, c)

	got := produceAll(t, dialRaw(t, c.Addrs()[0]), time.Minute, plainBatch("x"))
	require.True(t, clk.WaitPending(t.Context().Done(), 4))
	clk.Advance(45 * time.Second)
	p := awaitProduce(t, got)
	assert.Equal(t, kerr.NotEnoughReplicasAfterAppend.Code, p.ErrorCode)
	assert.Equal(t, int64(0), p.BaseOffset)
	assert.Equal(t, []int32{0}, isr(t, c))
}

// TestStopBrokerEndsParkedRequests stops a leader while a consumer's long-poll fetch and an
// acks=all produce wait there on the manual clock: StopBroker closes their connections, which
// ends both waits at once (the clock never moves), and returns.
func TestStopBrokerEndsParkedRequests(t *testing.T) {
	t.Parallel()
	c := isrCluster(t)
	holdFollowers(t, c)
	fetch := startFetch(t, dialRaw(t, c.Addrs()[0]), func() *kmsg.FetchRequest {
		req := fetchRequest("r", 0, 0)
		req.MaxWaitMillis, req.MinBytes = 10_000, 1
		return req
	}())
	require.True(t, c.ManualClock().WaitPending(t.Context().Done(), 4), "the fetch parks")
	produce := produceAll(t, dialRaw(t, c.Addrs()[0]), time.Minute, plainBatch("x"))
	require.True(t, c.ManualClock().WaitPending(t.Context().Done(), 5), "the produce waits for the ISR")

	require.NoError(t, c.StopBroker(0))
	select {
	case r := <-fetch:
		assert.Error(t, r.err, "the parked fetch's connection closed")
	case <-time.After(10 * time.Second):
		t.Fatal("the parked fetch never ended")
	}
	select {
	case _, ok := <-produce:
		assert.False(t, ok, "the waiting produce's connection closed")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting produce never ended")
	}
}

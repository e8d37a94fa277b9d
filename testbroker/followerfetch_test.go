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

// Fetch from follower (KIP-392): the leader's choice of a preferred read replica, as Kafka's
// ReplicaManager.findPreferredReadReplica and RackAwareReplicaSelector make it, and a
// follower serving consumers up to its own high watermark.

const rackAware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// rackCluster is kip1166Cluster (topic "r" led by broker 0, followed by 1 and 2, holding
// three records; the test is the followers) with broker 0 in rack "a", brokers 1 and 2 in rack
// "b", and the RackAwareReplicaSelector.
func rackCluster(t *testing.T, opts ...testbroker.Opt) (*testbroker.Cluster, [16]byte) {
	t.Helper()
	return kip1166Cluster(t, append([]testbroker.Opt{testbroker.BrokerRacks("a", "b", "b"),
		testbroker.BrokerConfig("replica.selector.class", rackAware)}, opts...)...)
}

// rackFetch is a consumer's Fetch v11 of partition 0 of "r" at offset from rack, waiting up
// to 500 ms for a byte.
func rackFetch(rack string, offset int64) *kmsg.FetchRequest {
	req := fetchRequest("r", 0, offset)
	req.Rack = rack
	req.MaxWaitMillis, req.MinBytes = 500, 1
	return req
}

// replicate makes the test's follower r fetch at offset (its log end offset, as the leader
// sees it), answered at once since it sends an unknown watermark.
func replicate(t *testing.T, leader *rawConn, id [16]byte, r int32, offset int64) {
	t.Helper()
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, followerFetch(id, r, offset, -1)))
	require.Zero(t, p.ErrorCode)
}

// TestPreferredReadReplicaMostCaughtUpInRack sends a consumer in rack "b" to the follower
// there with the highest log end offset, then, between equal ones, to the one that caught up
// last (not the higher broker id): no records, the leader's offsets, answered at once.
func TestPreferredReadReplicaMostCaughtUpInRack(t *testing.T) {
	t.Parallel()
	c, id := rackCluster(t)
	clk := c.ManualClock()
	leader := dialRaw(t, c.Addrs()[0])
	replicate(t, leader, id, 1, 3)
	replicate(t, leader, id, 2, 0)

	preferred := func(offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		return onlyPartition(t, request[*kmsg.FetchResponse](t, leader, rackFetch("b", offset)))
	}
	p := preferred(0)
	assert.Zero(t, p.ErrorCode)
	assert.Equal(t, int32(1), p.PreferredReadReplica, "follower 1 has offsets 0-2, follower 2 none")
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(0), p.HighWatermark, "the leader's: follower 2 holds it at 0")
	assert.Equal(t, int64(0), p.LastStableOffset)
	assert.Equal(t, int64(0), p.LogStartOffset)

	clk.Advance(time.Second)
	replicate(t, leader, id, 2, 3) // caught up a second after follower 1
	p = preferred(3)
	assert.Equal(t, int64(3), p.HighWatermark)
	assert.Equal(t, int32(2), p.PreferredReadReplica, "equal log end offsets: the one caught up last")

	clk.Advance(time.Second)
	replicate(t, leader, id, 1, 3)
	assert.Equal(t, int32(1), preferred(3).PreferredReadReplica, "follower 1 caught up last now")
}

// TestPreferredReadReplicaFollowerMustHoldFetchOffset leaves follower 1 at offset 0: a fetch at
// 0 may go to it, a fetch at 2 may not, and with no other replica in the rack the leader
// serves it.
func TestPreferredReadReplicaFollowerMustHoldFetchOffset(t *testing.T) {
	t.Parallel()
	c, id := rackCluster(t, testbroker.BrokerRacks("a", "b", "c"))
	leader := dialRaw(t, c.Addrs()[0])
	replicate(t, leader, id, 1, 0)
	replicate(t, leader, id, 2, 3)
	assert.Equal(t, int32(1), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, rackFetch("b", 0))).PreferredReadReplica)
	req := rackFetch("b", 2)
	req.MaxWaitMillis = 0
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, req))
	assert.Equal(t, int32(-1), p.PreferredReadReplica)
	assert.Empty(t, p.RecordBatches, "the watermark is 0")
}

// TestPreferredReadReplicaLeaderServes lists the fetches the leader answers itself, reading
// the records, with every follower caught up and in rack "b".
func TestPreferredReadReplicaLeaderServes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		start func(*testing.T, ...testbroker.Opt) (*testbroker.Cluster, [16]byte) // nil: rackCluster
		opts  []testbroker.Opt
		req   func() *kmsg.FetchRequest
	}{
		{"no replica selector", kip1166Cluster, []testbroker.Opt{testbroker.BrokerRacks("a", "b", "b")}, func() *kmsg.FetchRequest { return rackFetch("b", 0) }},
		{"no rack", nil, nil, func() *kmsg.FetchRequest { return rackFetch("", 0) }},
		{"the leader's rack", nil, nil, func() *kmsg.FetchRequest { return rackFetch("a", 0) }},
		{"a rack without replicas", nil, nil, func() *kmsg.FetchRequest { return rackFetch("c", 0) }},
		{"brokers without racks", nil, []testbroker.Opt{testbroker.BrokerRacks("", "", "")}, func() *kmsg.FetchRequest { return rackFetch("b", 0) }},
		{"version 10", nil, nil, func() *kmsg.FetchRequest {
			req := rackFetch("b", 0)
			req.Version = 10
			return req
		}},
		{"a follower's fetch", nil, nil, func() *kmsg.FetchRequest {
			req := rackFetch("b", 0)
			req.ReplicaID = 1
			return req
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := tc.start
			if start == nil {
				start = rackCluster
			}
			c, id := start(t, tc.opts...)
			leader := dialRaw(t, c.Addrs()[0])
			replicate(t, leader, id, 1, 3)
			replicate(t, leader, id, 2, 3)
			p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, tc.req()))
			assert.Zero(t, p.ErrorCode)
			assert.Equal(t, int32(-1), p.PreferredReadReplica)
			assert.Len(t, fetchedRecords(t, p, 0), 3)
		})
	}
}

// TestPreferredReadReplicaStoppedFollower stops follower 1, which leaves the ISR: follower 2
// is the one left in the rack.
func TestPreferredReadReplicaStoppedFollower(t *testing.T) {
	t.Parallel()
	c, id := rackCluster(t)
	leader := dialRaw(t, c.Addrs()[0])
	replicate(t, leader, id, 1, 3)
	replicate(t, leader, id, 2, 0)
	require.NoError(t, c.StopBroker(1))
	assert.Equal(t, int32(2), onlyPartition(t, request[*kmsg.FetchResponse](t, leader, rackFetch("b", 0))).PreferredReadReplica)
}

// TestPreferredReadReplicaLeaderEpochChecked sends a CurrentLeaderEpoch from the future: the
// error, not a preferred replica.
func TestPreferredReadReplicaLeaderEpochChecked(t *testing.T) {
	t.Parallel()
	c, id := rackCluster(t)
	leader := dialRaw(t, c.Addrs()[0])
	replicate(t, leader, id, 1, 3)
	req := rackFetch("b", 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, leader, req))
	assert.Equal(t, kerr.UnknownLeaderEpoch.Code, p.ErrorCode)
	assert.Equal(t, int32(-1), p.PreferredReadReplica)
}

// TestPreferredReadReplicaAnswersWholeFetchAtOnce fetches "r", which goes to a follower, and
// "s", which broker 0 follows and has nothing of: the fetch is answered at once instead of
// waiting for MinBytes, as Kafka answers every fetch that names a preferred read replica.
func TestPreferredReadReplicaAnswersWholeFetchAtOnce(t *testing.T) {
	t.Parallel()
	c, id := rackCluster(t, testbroker.ReplicatedTopic("s", 1, 3))
	s, ok := c.Partition("s", 0)
	require.True(t, ok)
	require.Equal(t, int32(1), s.Leader)
	leader := dialRaw(t, c.Addrs()[0])
	replicate(t, leader, id, 1, 3)
	req := rackFetch("b", 0)
	req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: "s", Partitions: req.Topics[0].Partitions})
	resp := request[*kmsg.FetchResponse](t, leader, req)
	require.Len(t, resp.Topics, 2)
	assert.Equal(t, int32(1), resp.Topics[0].Partitions[0].PreferredReadReplica)
	follower := resp.Topics[1].Partitions[0]
	assert.Zero(t, follower.ErrorCode)
	assert.Equal(t, int32(-1), follower.PreferredReadReplica, "only a leader names a preferred read replica")
	assert.Empty(t, follower.RecordBatches)
}

// TestBrokerRacksReported checks the racks in Metadata and DescribeCluster, and that
// BrokerRacks needs one rack per broker.
func TestBrokerRacksReported(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.BrokerRacks("a", ""))
	rc := dialRaw(t, c.Addrs()[0])
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version = 12
	md := request[*kmsg.MetadataResponse](t, rc, mreq)
	require.Len(t, md.Brokers, 2)
	racks := map[int32]*string{}
	for _, b := range md.Brokers {
		racks[b.NodeID] = b.Rack
	}
	require.NotNil(t, racks[0])
	assert.Equal(t, "a", *racks[0])
	assert.Nil(t, racks[1])

	dc := request[*kmsg.DescribeClusterResponse](t, rc, kmsg.NewPtrDescribeClusterRequest())
	require.Len(t, dc.Brokers, 2)
	require.NotNil(t, dc.Brokers[0].Rack)
	assert.Equal(t, "a", *dc.Brokers[0].Rack)
	assert.Nil(t, dc.Brokers[1].Rack)

	_, err := testbroker.Start(testbroker.NumBrokers(2), testbroker.BrokerRacks("a"))
	assert.ErrorContains(t, err, "BrokerRacks got 1 racks for 2 brokers")
	_, err = testbroker.Start(testbroker.BrokerConfig("replica.selector.class", "com.example.Selector"))
	assert.ErrorContains(t, err, "Invalid value com.example.Selector for configuration replica.selector.class: Class com.example.Selector could not be found.")
}

// followerLagCluster is a manual-clock cluster of two brokers, with topic "r" led by broker 0
// and followed by broker 1 through its fetcher, and KIP-1166 off: after an acks=all produce
// the follower holds the records, but learns the watermark that its own fetch moved only from
// the next response, which waits replica.fetch.wait.max.ms (500 ms) for data. It returns once
// that produce of three records is acknowledged and the follower's next fetch is parked.
func followerLagCluster(t *testing.T) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.WithManualClock(clockStart),
		testbroker.ReplicatedTopic("r", 1, 2), testbroker.BrokerConfig("testbroker.kip1166.enable", "false"))
	clk := c.ManualClock()
	require.True(t, clk.WaitPending(t.Context().Done(), parked), "the follower's first fetch parks")
	require.Zero(t, produceOne(t, dialRaw(t, c.Addrs()[0]), "r", 0, plainBatch("a", "b", "c")).ErrorCode)
	require.True(t, clk.WaitPending(t.Context().Done(), parked), "the follower's fetch at 3 parks")
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int64(3), p.HighWatermark)
	require.Equal(t, int32(1), p.ReplicaStates[1].Broker)
	require.Equal(t, int64(3), p.ReplicaStates[1].LogEndOffset)
	require.Equal(t, int64(0), p.ReplicaStates[1].HighWatermark)
	return c
}

// TestFollowerServesUpToItsHighWatermark reads from the follower, which has the records but
// not yet the watermark that covers them, and from the leader, which has both.
func TestFollowerServesUpToItsHighWatermark(t *testing.T) {
	t.Parallel()
	c := followerLagCluster(t)
	p := onlyPartition(t, request[*kmsg.FetchResponse](t, dialRaw(t, c.Addrs()[1]), fetchRequest("r", 0, 0)))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(0), p.HighWatermark)

	p = onlyPartition(t, request[*kmsg.FetchResponse](t, dialRaw(t, c.Addrs()[0]), fetchRequest("r", 0, 0)))
	assert.Len(t, fetchedRecords(t, p, 0), 3)
	assert.Equal(t, int64(3), p.HighWatermark)

	old := fetchRequest("r", 0, 0)
	old.Version = 10
	p = onlyPartition(t, request[*kmsg.FetchResponse](t, dialRaw(t, c.Addrs()[1]), old))
	assert.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode, "before v11 a consumer reads from the leader only")
}

// TestFollowerLongPollWokenByHighWatermark parks a consumer's fetch at the follower and lets
// the follower's next fetch response bring the watermark: the consumer's fetch answers then,
// with the records, long before its own MaxWait.
func TestFollowerLongPollWokenByHighWatermark(t *testing.T) {
	t.Parallel()
	c := followerLagCluster(t)
	clk := c.ManualClock()
	req := fetchRequest("r", 0, 0)
	req.MaxWaitMillis, req.MinBytes = 10000, 1
	got := startFetch(t, dialRaw(t, c.Addrs()[1]), req)
	require.True(t, clk.WaitPending(t.Context().Done(), parked+1), "the consumer's fetch parks at the follower")
	select {
	case <-got:
		t.Fatal("the follower answered before it knew a watermark covering the records")
	default:
	}
	clk.Advance(500 * time.Millisecond) // the follower's parked fetch expires with the watermark
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Equal(t, int64(3), p.HighWatermark)
	assert.Equal(t, []fetched{{0, "a"}, {1, "b"}, {2, "c"}}, fetchedRecords(t, p, 0))
}

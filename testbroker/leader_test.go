package testbroker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// metadataPartition returns partition p of topic as Metadata reports it on addr.
func metadataPartition(t *testing.T, addr, topic string, p int32) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	resp := roundTrip[*kmsg.MetadataResponse](t, addr, metadataRequest(topic))
	require.Len(t, resp.Topics, 1)
	require.Zero(t, resp.Topics[0].ErrorCode)
	for _, mp := range resp.Topics[0].Partitions {
		if mp.Partition == p {
			return mp
		}
	}
	t.Fatalf("metadata has no partition %d of %s", p, topic)
	return kmsg.MetadataResponseTopicPartition{}
}

// requireEndpoint checks that a node endpoint is broker id of c.
func requireEndpoint(t *testing.T, c *testbroker.Cluster, id, nodeID int32, host string, port int32) {
	t.Helper()
	require.Equal(t, id, nodeID)
	require.Equal(t, c.Addrs()[id], net.JoinHostPort(host, strconv.Itoa(int(port))))
}

func TestMoveLeaderRefusals(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	tests := []struct {
		name      string
		topic     string
		partition int32
		broker    int32
		want      error
	}{
		{"unknown topic", "nope", 0, 1, kerr.UnknownTopicOrPartition},
		{"negative partition", "t", -1, 1, kerr.UnknownTopicOrPartition},
		{"partition past the last", "t", 1, 1, kerr.UnknownTopicOrPartition},
		{"unknown broker", "t", 0, 2, kerr.InvalidReplicaAssignment},
		{"negative broker", "t", 0, -1, kerr.InvalidReplicaAssignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, c.MoveLeader(tt.topic, tt.partition, tt.broker), tt.want)
		})
	}
	p, ok := c.Partition("t", 0)
	require.True(t, ok)
	assert.Equal(t, int32(0), p.Leader, "a refused move changes nothing")
	assert.Equal(t, int32(0), p.LeaderEpoch)

	c.Close()
	assert.Error(t, c.MoveLeader("t", 0, 1), "a closed cluster moves nothing")
}

// TestMoveLeaderMetadata moves leaders and reads Metadata: the leader and replicas follow, and
// the epoch goes up by one at every move, also a move to the broker that leads already.
func TestMoveLeaderMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		rf           string
		to           int32
		wantReplicas []int32
	}{
		{"to a broker without a replica", "1", 2, []int32{2}},
		{"to a follower", "3", 2, []int32{0, 1, 2}},
		{"to the leader", "1", 0, []int32{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.BrokerConfig("default.replication.factor", tt.rf), testbroker.Topic("t", 2))
			before := metadataPartition(t, c.Addrs()[1], "t", 0)
			require.Equal(t, int32(0), before.Leader)
			require.Equal(t, int32(0), before.LeaderEpoch)
			other := metadataPartition(t, c.Addrs()[1], "t", 1)

			require.NoError(t, c.MoveLeader("t", 0, tt.to))
			for _, addr := range c.Addrs() {
				mp := metadataPartition(t, addr, "t", 0)
				assert.Equal(t, tt.to, mp.Leader)
				assert.Equal(t, int32(1), mp.LeaderEpoch)
				assert.Equal(t, tt.wantReplicas, mp.Replicas)
				assert.Equal(t, tt.wantReplicas, mp.ISR)
			}
			assert.Equal(t, other, metadataPartition(t, c.Addrs()[1], "t", 1), "the other partition does not move")
			p, ok := c.Partition("t", 0)
			require.True(t, ok)
			assert.Equal(t, tt.to, p.Leader)
			assert.Equal(t, int32(1), p.LeaderEpoch)

			require.NoError(t, c.MoveLeader("t", 0, 1))
			assert.Equal(t, int32(2), metadataPartition(t, c.Addrs()[0], "t", 0).LeaderEpoch)
		})
	}
}

// TestMoveLeaderRequestsAtTheOldLeader sends raw requests after a move: the old leader refuses
// Produce, Fetch and ListOffsets with NOT_LEADER_OR_FOLLOWER naming the new leader, the new
// leader refuses the old epoch with FENCED_LEADER_EPOCH, and serves the log from before and after
// the move, each batch stamped with the epoch it was appended in.
func TestMoveLeaderRequestsAtTheOldLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	tid := topicIDOf(t, c, "t")
	oldLeader, newLeader := dialRaw(t, c.Addrs()[0]), dialRaw(t, c.Addrs()[1])
	require.Zero(t, produceOne(t, oldLeader, "t", 0, plainBatch("before")).ErrorCode)

	require.NoError(t, c.MoveLeader("t", 0, 1))

	req := produceRequest("t", 0, plainBatch("refused"))
	req.Version = 10
	presp := request[*kmsg.ProduceResponse](t, oldLeader, req)
	pp := presp.Topics[0].Partitions[0]
	assert.Equal(t, kerr.NotLeaderForPartition.Code, pp.ErrorCode)
	assert.Equal(t, int64(-1), pp.BaseOffset)
	assert.Equal(t, int32(1), pp.CurrentLeader.LeaderID)
	assert.Equal(t, int32(1), pp.CurrentLeader.LeaderEpoch)
	require.Len(t, presp.Brokers, 1)
	requireEndpoint(t, c, 1, presp.Brokers[0].NodeID, presp.Brokers[0].Host, presp.Brokers[0].Port)

	after := produceOne(t, newLeader, "t", 0, plainBatch("after"))
	require.Zero(t, after.ErrorCode)
	assert.Equal(t, int64(1), after.BaseOffset, "the new leader appends to the same log")

	fetchV16 := func(epoch int32) *kmsg.FetchRequest {
		req := fetchRequest("", 0, 0)
		req.Version = 16
		req.Topics[0].TopicID = tid
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		return req
	}
	for _, tt := range []struct {
		name  string
		rc    *rawConn
		epoch int32
		want  *kerr.Error
	}{
		{"old leader", oldLeader, -1, kerr.NotLeaderForPartition},
		{"old leader, old epoch", oldLeader, 0, kerr.NotLeaderForPartition},
		{"new leader, old epoch", newLeader, 0, kerr.FencedLeaderEpoch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := request[*kmsg.FetchResponse](t, tt.rc, fetchV16(tt.epoch))
			fp := onlyPartition(t, resp)
			assert.Equal(t, tt.want.Code, fp.ErrorCode)
			assert.Equal(t, int32(1), fp.CurrentLeader.LeaderID)
			assert.Equal(t, int32(1), fp.CurrentLeader.LeaderEpoch)
			require.Len(t, resp.Brokers, 1)
			requireEndpoint(t, c, 1, resp.Brokers[0].NodeID, resp.Brokers[0].Host, resp.Brokers[0].Port)
		})
	}

	lresp := request[*kmsg.ListOffsetsResponse](t, oldLeader, listOffsetsRequest("t", 0))
	assert.Equal(t, []int16{kerr.NotLeaderForPartition.Code}, listOffsetsCodes(lresp))

	fp := onlyPartition(t, request[*kmsg.FetchResponse](t, newLeader, fetchV16(1)))
	require.Zero(t, fp.ErrorCode)
	assert.Equal(t, []fetched{{0, "before"}, {1, "after"}}, fetchedRecords(t, fp, 0))
	var epochs []int32
	for b := fp.RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		require.NoError(t, batch.ReadFrom(b))
		epochs = append(epochs, batch.PartitionLeaderEpoch)
		b = b[12+int(batch.Length):]
	}
	assert.Equal(t, []int32{0, 1}, epochs)
}

// TestMoveLeaderWakesWaitingFetch parks a fetch at the leader on the manual clock, then moves
// the leader: the fetch answers at once, NOT_LEADER_OR_FOLLOWER with the new leader.
func TestMoveLeaderWakesWaitingFetch(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	req := longPollRequest()
	req.Version = 16
	req.Topics[0].Topic, req.Topics[0].TopicID = "", topicIDOf(t, c, "t")
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), req)
	require.True(t, clk.WaitPending(t.Context().Done(), 1), "the fetch parks")

	require.NoError(t, c.MoveLeader("t", 0, 1))
	fp := onlyPartition(t, awaitFetch(t, got))
	assert.Equal(t, kerr.NotLeaderForPartition.Code, fp.ErrorCode)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderID)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderEpoch)
	assert.Zero(t, clk.Pending(), "the wait's timer is stopped")
}

// TestMoveLeaderFranzGoProducerFollows has franz-go produce before and after a move: it
// follows the new leader, and every record lands once, in order.
func TestMoveLeaderFranzGoProducerFollows(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	// franz-go's producer follows a move at its next metadata refresh; MetadataMinAge keeps
	// that refresh from waiting 5 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produce := func(prefix string) {
		t.Helper()
		for i := range 10 {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr())
		}
	}

	produce("before")
	require.NoError(t, c.MoveLeader("t", 0, 2))
	produce("after")

	p, ok := c.Partition("t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(20), p.LogEndOffset)
	fp := onlyPartition(t, roundTrip[*kmsg.FetchResponse](t, c.Addrs()[2], fetchRequest("t", 0, 0)))
	require.Zero(t, fp.ErrorCode)
	var values []string
	for _, r := range fetchedRecords(t, fp, 0) {
		values = append(values, r.value)
	}
	want := make([]string, 0, 20)
	for _, prefix := range []string{"before", "after"} {
		for i := range 10 {
			want = append(want, fmt.Sprintf("%s-%d", prefix, i))
		}
	}
	assert.Equal(t, want, values)
}

// TestMoveLeaderFranzGoConsumerFollows has a franz-go consumer (no group) read a partition
// whose leader moves twice while records keep coming: it reads every record once, in order.
func TestMoveLeaderFranzGoConsumerFollows(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	require.NoError(t, err)
	defer cons.Close()

	var offsets []int64
	consume := func(until int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for len(offsets) < until {
			require.True(t, time.Now().Before(deadline), "read %d records of %d", len(offsets), until)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cons.PollFetches(ctx)
			cancel()
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("fetch %s/%d: %v", topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
		}
	}

	leaders := []int32{0, 1, 2}
	for round, leader := range leaders {
		if round > 0 {
			require.NoError(t, c.MoveLeader("t", 0, leader))
		}
		values := make([]string, 5)
		for i := range values {
			values[i] = fmt.Sprintf("r%d-%d", round, i)
		}
		e2eProduce(t, c, "t", 0, values...)
		consume(5 * (round + 1))
	}
	want := make([]int64, 15)
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, offsets)
}

// TestMoveLeaderShareState follows one share group's records across a move with raw requests:
// what was acquired at the old leader comes back from the new leader with the delivery count
// its member saw, what was acknowledged stays acknowledged, and the old leader refuses what it
// no longer leads as Kafka does.
func TestMoveLeaderShareState(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	tid := topicIDOf(t, c, "t")
	require.Zero(t, produceOne(t, dialRaw(t, c.Addrs()[0]), "t", 0, plainBatch("a", "b", "c", "d")).ErrorCode)

	// At the old leader: 0 accepted, 1 released and taken again (delivery 2), 2 and 3 held
	// (delivery 1).
	atOld := &shareMember{rc: dialRaw(t, c.Addrs()[0]), group: "g", id: "m", version: 2, tid: tid}
	assert.Equal(t, [][3]int64{{0, 3, 1}}, acquired(atOld.take(t)))
	require.Zero(t, onlyAckPartition(t, atOld.acknowledge(t, false, ack(0, 0, ackAccept), ack(1, 1, ackRelease))).ErrorCode)
	assert.Equal(t, [][3]int64{{1, 1, 2}}, acquired(atOld.take(t)))
	require.Equal(t, 2, clk.Pending(), "two acquisition locks")

	// The member's session at broker 1 names the partition, which broker 1 does not lead yet.
	atNew := &shareMember{rc: dialRaw(t, c.Addrs()[1]), group: "g", id: "m", version: 2, tid: tid}
	resp := atNew.fetch(t, atNew.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, onlySharePartition(t, resp).ErrorCode)

	require.NoError(t, c.MoveLeader("t", 0, 1))
	assert.Zero(t, clk.Pending(), "the old leader's locks are cancelled")
	for _, want := range []testbroker.ShareRecordInfo{
		{Offset: 1, State: testbroker.ShareAvailable, DeliveryCount: 1},
		{Offset: 2, State: testbroker.ShareAvailable},
		{Offset: 3, State: testbroker.ShareAvailable},
	} {
		got, ok := c.ShareRecord("g", "t", 0, want.Offset)
		require.True(t, ok, "offset %d", want.Offset)
		assert.Equal(t, want, got)
	}
	start, _, ok := c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(1), start, "offset 0 stays acknowledged")

	// The old leader no longer holds the share partition: an acknowledgement is
	// UNKNOWN_TOPIC_OR_PARTITION, and a fetch NOT_LEADER_OR_FOLLOWER naming the new leader.
	ap := onlyAckPartition(t, atOld.acknowledge(t, false, ack(2, 3, ackAccept)))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, ap.ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Description, deref(ap.ErrorMessage))
	assert.Zero(t, ap.CurrentLeader, "Kafka names a leader only with NOT_LEADER_OR_FOLLOWER")
	resp = atOld.fetch(t, atOld.fetchReq(fetchAck(1, 1, ackAccept)))
	require.Zero(t, resp.ErrorCode)
	fp := onlySharePartition(t, resp)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, fp.ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, fp.AcknowledgeErrorCode)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderID)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderEpoch)
	assert.Empty(t, fp.AcquiredRecords)
	require.Len(t, resp.NodeEndpoints, 1)
	ep := resp.NodeEndpoints[0]
	requireEndpoint(t, c, 1, ep.NodeID, ep.Host, ep.Port)

	// The session at the new leader takes the partition up: each record comes with the
	// delivery count the member saw at the old leader.
	assert.Equal(t, [][3]int64{{1, 1, 2}, {2, 3, 1}}, acquired(atNew.take(t)))
	require.Zero(t, onlyAckPartition(t, atNew.acknowledge(t, false, ack(1, 3, ackAccept))).ErrorCode)
	start, _, _ = c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, int64(4), start)
}

// TestMoveLeaderWakesWaitingShareFetch parks a ShareFetch at the leader, then moves the leader:
// the fetch answers at once with NOT_LEADER_OR_FOLLOWER and the new leader.
func TestMoveLeaderWakesWaitingShareFetch(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	m := &shareMember{rc: dialRaw(t, c.Addrs()[0]), group: "g", id: "m", version: 2, tid: topicIDOf(t, c, "t")}
	m.open(t)
	req := m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	got := startShareFetch(t, m.rc, req)
	require.True(t, clk.WaitPending(t.Context().Done(), 1), "the fetch parks")

	require.NoError(t, c.MoveLeader("t", 0, 1))
	resp := awaitShareFetch(t, got)
	require.Zero(t, resp.ErrorCode)
	fp := onlySharePartition(t, resp)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, fp.ErrorCode)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderID)
	require.Len(t, resp.NodeEndpoints, 1)
	assert.Zero(t, clk.Pending(), "the wait's timer is stopped")
}

// TestMoveLeaderToTheLeader re-elects the leader: the epoch goes up and requests naming the old
// one are fenced, but the leader keeps its share partitions: locks, owners and deadlines stay.
func TestMoveLeaderToTheLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	tid := topicIDOf(t, c, "t")
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a")).ErrorCode)
	m := &shareMember{rc: dialRaw(t, c.Addrs()[0]), group: "g", id: "m", version: 2, tid: tid}
	assert.Equal(t, [][3]int64{{0, 0, 1}}, acquired(m.take(t)))
	before, ok := c.ShareRecord("g", "t", 0, 0)
	require.True(t, ok)

	require.NoError(t, c.MoveLeader("t", 0, 0))
	after, ok := c.ShareRecord("g", "t", 0, 0)
	require.True(t, ok)
	assert.Equal(t, before, after)
	assert.Equal(t, 1, clk.Pending())

	req := fetchRequest("", 0, 0)
	req.Version = 16
	req.Topics[0].TopicID = tid
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 0
	fp := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, req))
	assert.Equal(t, kerr.FencedLeaderEpoch.Code, fp.ErrorCode)
	assert.Equal(t, int32(0), fp.CurrentLeader.LeaderID)
	assert.Equal(t, int32(1), fp.CurrentLeader.LeaderEpoch)

	require.Zero(t, onlyAckPartition(t, m.acknowledge(t, false, ack(0, 0, ackAccept))).ErrorCode)
	start, _, _ := c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, int64(1), start)
}

// TestMoveLeaderFranzGoShareConsumer has franz-go's share consumer take 200 records while the
// partition's leader moves under it: it follows the new leader, and every record ends
// acknowledged. Acknowledgements of records acquired at the old leader fail after the move as
// Kafka's would, and their records come again from the new leader.
func TestMoveLeaderFranzGoShareConsumer(t *testing.T) {
	t.Parallel()
	const total = 200
	c := e2eStart(t, 1, testbroker.NumBrokers(2))
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")
	for b := range 4 {
		values := make([]string, total/4)
		for i := range values {
			values[i] = fmt.Sprint(b*total/4 + i)
		}
		e2eProduce(t, c, "t", 0, values...)
	}
	m := e2eJoin(t, c, "g", "t", "member", kgo.ShareMaxRecords(20))

	received := map[int64]int{} // receipts per offset
	moved := false
	deadline := time.Now().Add(20 * time.Second)
	for len(received) < total {
		require.True(t, time.Now().Before(deadline), "received %d records of %d", len(received), total)
		for _, r := range m.poll(t, time.Second) {
			r.Ack(kgo.AckAccept)
			received[r.Offset]++
		}
		if !moved && len(received) >= total/4 {
			require.NoError(t, c.MoveLeader("t", 0, 1))
			moved = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.cl.FlushAcks(ctx))
	require.Eventually(t, func() bool {
		start, _, ok := c.SharePartitionOffsets("g", "t", 0)
		return ok && start == total
	}, 10*time.Second, 5*time.Millisecond, "every record ends acknowledged at the new leader")

	m.mu.Lock()
	defer m.mu.Unlock()
	// The old leader no longer holds the share partition (UNKNOWN_TOPIC_OR_PARTITION, or
	// NOT_LEADER_OR_FOLLOWER for one racing the move); the new leader holds the records
	// AVAILABLE (INVALID_RECORD_STATE) or, past the last one Kafka persisted, not at all
	// (INVALID_REQUEST).
	for _, err := range m.ackErrs {
		assert.True(t, errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.NotLeaderForPartition) ||
			errors.Is(err, kerr.InvalidRecordState) || errors.Is(err, kerr.InvalidRequest),
			"only acknowledgements of records acquired before the move fail: %v", err)
	}
	sessions := c.ShareSessions(1)
	require.Len(t, sessions, 1, "the member has a share session at the new leader")
}

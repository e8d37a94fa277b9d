package testbroker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestReplicationAcksAllSurvivesFailover produces with acks=all to a topic of replication
// factor 3, stops the leader, and reads every acknowledged record from the new leader; the
// stopped broker comes back, catches up and rejoins the ISR.
func TestReplicationAcksAllSurvivesFailover(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("r", 1, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"), kgo.MetadataMinAge(50*time.Millisecond))
	require.NoError(t, err)
	defer producer.Close()
	produce := func(from, n int) {
		for i := from; i < from+n; i++ {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
		}
	}
	produce(0, 50)

	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	assert.Equal(t, []int32{0, 1, 2}, p.ISR)
	assert.Equal(t, int64(50), p.HighWatermark)
	for _, r := range p.ReplicaStates {
		assert.Equal(t, int64(50), r.LogEndOffset, "acks=all returned, so every ISR member has the records: broker %d", r.Broker)
	}

	leader := p.Leader
	require.NoError(t, c.StopBroker(leader))
	p, _ = c.Partition("r", 0)
	assert.NotEqual(t, leader, p.Leader)
	assert.Equal(t, int32(1), p.LeaderEpoch)
	assert.NotContains(t, p.ISR, leader)
	assert.Equal(t, []int32{leader}, p.OfflineReplicas)

	produce(50, 50)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("r"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	var got []string
	for len(got) < 100 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		assert.Equal(t, fmt.Sprintf("v%d", i), v)
	}

	// The restarted broker catches up and rejoins the ISR; each acks=all produce returns only
	// once the ISR of its moment has it, so producing until the ISR is whole waits for the
	// rejoin without a sleep.
	require.NoError(t, c.StartBroker(leader))
	for i := 100; ; i++ {
		produce(i, 1)
		if p, _ = c.Partition("r", 0); len(p.ISR) == 3 {
			break
		}
	}
	assert.Empty(t, p.OfflineReplicas)
	for _, r := range p.ReplicaStates {
		assert.GreaterOrEqual(t, r.LogEndOffset, p.HighWatermark, "broker %d", r.Broker)
	}
}

// TestCreateTopicWhileABrokerIsStopped creates topics with a broker down, as Kafka's controller
// places them with a fenced broker: leaders only on running brokers, the stopped broker a
// replica only when the replication factor needs it, out of the ISR and listed offline; a
// manual assignment with no running broker is refused with Kafka's message.
func TestCreateTopicWhileABrokerIsStopped(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3))
	require.NoError(t, c.StopBroker(0))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()[1]))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)

	for _, tc := range []struct {
		name string
		rf   int16
	}{{"two", 2}, {"three", 3}} {
		resp, err := adm.CreateTopic(t.Context(), 4, tc.rf, nil, tc.name)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
		ti, ok := c.Topic(tc.name)
		require.True(t, ok)
		for _, p := range ti.Partitions {
			assert.NotEqual(t, int32(0), p.Leader, "%s-%d", tc.name, p.Partition)
			assert.Len(t, p.Replicas, int(tc.rf))
			assert.NotContains(t, p.ISR, int32(0))
			if tc.rf == 2 {
				assert.NotContains(t, p.Replicas, int32(0), "%s-%d: two running brokers suffice", tc.name, p.Partition)
			} else {
				assert.Equal(t, []int32{0}, p.OfflineReplicas, "%s-%d", tc.name, p.Partition)
			}
		}
	}

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "manual", -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}, {Partition: 1, Replicas: []int32{0}}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, resp.Topics[0].ErrorCode)
	require.NotNil(t, resp.Topics[0].ErrorMessage)
	assert.Equal(t, "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.", *resp.Topics[0].ErrorMessage)
}

// TestStoppedBrokerIsFencedInDescribeCluster lists a stopped broker only when DescribeCluster
// v2 asks for fenced brokers, and then as fenced; the controller is a running broker.
func TestStoppedBrokerIsFencedInDescribeCluster(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3))
	require.NoError(t, c.StopBroker(0))
	rc := dialRaw(t, c.Addrs()[1])
	for _, fenced := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.IncludeFencedBrokers = 2, fenced
		resp := request[*kmsg.DescribeClusterResponse](t, rc, req)
		assert.Equal(t, int32(1), resp.ControllerID)
		got := map[int32]bool{}
		for _, b := range resp.Brokers {
			got[b.NodeID] = b.IsFenced
		}
		want := map[int32]bool{1: false, 2: false}
		if fenced {
			want[0] = true
		}
		assert.Equal(t, want, got, "IncludeFencedBrokers=%v", fenced)
	}
}

// TestShareOffsetsOfALeaderlessPartition alters and describes a share group's start offset on
// a partition whose only replica is stopped (leader -1): the share state is kept over the log
// of the replica that will lead again, and the describe answers instead of failing.
func TestShareOffsetsOfALeaderlessPartition(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 2))
	require.NoError(t, c.StopBroker(1))
	p, _ := c.Partition("t", 1)
	require.Equal(t, int32(-1), p.Leader)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()[0]))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)

	altered, err := adm.AlterShareGroupOffsets(t.Context(), "g", kadm.Offsets{"t": {1: {Topic: "t", Partition: 1, At: 0}}})
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	described, err := adm.DescribeShareGroupOffsets(t.Context(), "g")
	require.NoError(t, err)
	require.NoError(t, described.Error())
	got, ok := described["g"]
	require.True(t, ok)
	o, ok := got.Offsets.Lookup("t", 1)
	require.True(t, ok, "%+v", got)
	assert.Equal(t, int64(0), o.StartOffset)
}

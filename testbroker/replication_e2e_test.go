package testbroker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

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

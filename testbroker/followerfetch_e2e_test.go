package testbroker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// fetchCounter counts the Fetch requests a client writes, per broker.
type fetchCounter struct {
	mu      sync.Mutex
	fetches map[int32]int
}

func (f *fetchCounter) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Fetch) || err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches[meta.NodeID]++
}

func (f *fetchCounter) count(broker int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches[broker]
}

// TestFetchFromFollowerWithFranzGo consumes with kgo.Rack from a topic led in rack "a": the
// leader sends the consumer to the follower in its rack "b", which serves the fetches that
// follow. When that follower stops, the consumer goes back to the leader once its preferred
// replica's lease runs out (kgo.RecheckPreferredReplicaInterval, the Java client's
// metadata.max.age.ms; franz-go keeps retrying the follower until then, since the partition's
// leader and epoch did not change), and no record is lost or repeated.
func TestFetchFromFollowerWithFranzGo(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.BrokerRacks("a", "b", "c"),
		testbroker.BrokerConfig("replica.selector.class", rackAware), testbroker.ReplicatedTopic("r", 1, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("r"), kgo.MetadataMinAge(50*time.Millisecond))
	require.NoError(t, err)
	defer producer.Close()
	produce := func(from, n int) {
		for i := from; i < from+n; i++ {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
		}
	}

	counter := &fetchCounter{fetches: map[int32]int{}}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("r"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack("b"), kgo.WithHooks(counter),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RecheckPreferredReplicaInterval(500*time.Millisecond))
	require.NoError(t, err)
	defer consumer.Close()
	var got []string
	consume := func(until int) {
		for len(got) < until {
			fs := consumer.PollFetches(ctx)
			require.NoError(t, ctx.Err())
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
	}

	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	require.Equal(t, int32(0), p.Leader)
	produce(0, 50)
	consume(50)
	assert.Positive(t, counter.count(1), "the consumer fetched from the follower in its rack")
	assert.Zero(t, counter.count(2), "nor from the follower in another rack")
	atFollower := counter.count(1)
	produce(50, 50)
	consume(100)
	assert.Greater(t, counter.count(1), atFollower, "the consumer keeps reading from the follower")

	leaderFetches := counter.count(0)
	require.NoError(t, c.StopBroker(1))
	produce(100, 50)
	consume(150)
	assert.Greater(t, counter.count(0), leaderFetches, "with the follower gone the consumer reads from the leader")

	want := make([]string, 150)
	for i := range want {
		want[i] = fmt.Sprintf("v%d", i)
	}
	assert.Equal(t, want, got)
}

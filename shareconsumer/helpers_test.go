package shareconsumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/testbroker"
)

// The helpers of the package's own tests; their names start with "t" so that they do not
// collide with those of other test files.

// tStart starts a cluster with short heartbeats and long member sessions, and returns it.
func tStart(t *testing.T, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.BrokerConfig("group.share.max.session.timeout.ms", "3600000"),
		testbroker.BrokerConfig("group.share.session.timeout.ms", "3600000"),
	}, opts...)...)
}

// tEarliest sets share.auto.offset.reset=earliest on group (a raw IncrementalAlterConfigs on a
// GROUP resource, type 32), so that records produced before the group fetches are delivered.
func tEarliest(t *testing.T, c *testbroker.Cluster, group string) {
	t.Helper()
	tGroupConfig(t, c, group, "share.auto.offset.reset", "earliest")
}

func tGroupConfig(t *testing.T, c *testbroker.Cluster, group string, kv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, groupconfig.SetOn(ctx, c.Addrs(), group, kv...))
}

// tProduce produces values to partition p of topic in one batch, with opts for the producer
// (compression), and returns their offsets.
func tProduce(t *testing.T, c *testbroker.Cluster, topic string, p int32, values []string, opts ...kgo.Opt) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
	offs := make([]int64, len(rs))
	for i, r := range rs {
		offs[i] = r.Offset
	}
	return offs
}

// tNew creates a consumer of group on the cluster, closed when the test ends.
func tNew(t *testing.T, c *testbroker.Cluster, group string, opts ...Opt) *Consumer {
	t.Helper()
	cons, err := New(append([]Opt{ClientOpts(kgo.SeedBrokers(c.Addrs()...)), Group(group), FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cons.Close(ctx)
	})
	return cons
}

// tPollN polls until n records came, failing the test after 10 seconds.
func tPollN(t *testing.T, cons *Consumer, n int) []*Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*Record
	for len(out) < n {
		recs, err := cons.Poll(ctx)
		require.NoError(t, err, "after %d records", len(out))
		out = append(out, recs...)
	}
	return out
}

func tCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type kmsgKey = kmsg.Key

const kmsgShareGroupHeartbeat = kmsg.ShareGroupHeartbeat

const kmsgShareFetch = kmsg.ShareFetch

const kmsgShareAcknowledge = kmsg.ShareAcknowledge

// ctxWithTimeout returns a child of ctx that ends after d; it is canceled when ctx is.
func ctxWithTimeout(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	_ = cancel // ends with ctx or after d
	return ctx
}

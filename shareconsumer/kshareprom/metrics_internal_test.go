package kshareprom

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
)

// TestConcurrentHooks calls the hooks from several goroutines, for one topic whose children
// they all make at once, while scrapes run: the race detector checks the sharing, the totals
// that nothing was lost.
func TestConcurrentHooks(t *testing.T) {
	t.Parallel()
	m := New("kshare", Registerer(nil))
	c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), shareconsumer.Group("g"), shareconsumer.Hooks(m))
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, c.Close(ctx))
	}()
	const goroutines, rounds = 8, 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			r := &shareconsumer.Record{Topic: "orders", Partition: int32(g % 2)}
			for range rounds {
				m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 1, Partitions: []shareconsumer.FetchedPartition{{TopicPartition: shareconsumer.TopicPartition{Topic: "orders"}, Records: 2}}})
				m.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{r, r}})
				m.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept})
				m.OnRenew(shareconsumer.RenewEvent{Records: []*shareconsumer.Record{r}})
				m.OnMembership(shareconsumer.MembershipEvent{Group: "g", MemberID: c.MemberID(), State: shareconsumer.StateStable, MemberEpoch: int32(g)})
				m.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "g", Partitions: []shareconsumer.PartitionLag{{Lag: int64(g)}}}})
			}
		})
	}
	wg.Go(func() {
		<-start
		for range 50 {
			_ = testutil.CollectAndCount(m)
		}
	})
	close(start)
	wg.Wait()
	const n = goroutines * rounds
	assert.Equal(t, float64(2*n), testutil.ToFloat64(m.fetchRecords.WithLabelValues("orders", "0")))
	assert.Equal(t, float64(2*n), testutil.ToFloat64(m.pollRecords.WithLabelValues("orders")))
	assert.Equal(t, float64(n), testutil.ToFloat64(m.processed.WithLabelValues("orders", "accept")))
	assert.Equal(t, float64(n), testutil.ToFloat64(m.renewed.WithLabelValues("orders")))
	assert.Equal(t, float64(n), testutil.ToFloat64(m.fetchRequests.WithLabelValues("1")))
	assert.Equal(t, uint64(n), histogramCount(t, m, "orders"))
	assert.Equal(t, 2, testutil.CollectAndCount(m, "kshare_member_epoch", "kshare_lag_records"), "the attached consumer's membership and lag kept")
}

// histogramCount returns the observations of topic's process_duration_seconds.
func histogramCount(t *testing.T, m *Metrics, topic string) uint64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.processDuration.WithLabelValues(topic).(prometheus.Metric).Write(&out))
	return out.GetHistogram().GetSampleCount()
}

package kshareprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
	"github.com/kshare/kshare/testbroker"
)

// TestE2ELag looks the lag up every 10ms: lag_records shows what was produced while nothing is
// acknowledged, then 0 on every partition once every record was accepted. Both are waited for
// with a deadline, the lookups being the consumer's own goroutine's.
func TestE2ELag(t *testing.T) {
	t.Parallel()
	const (
		topic      = "orders"
		group      = "lagging"
		partitions = 2
		perPart    = 7
	)
	tb := testbroker.StartT(t, testbroker.Topic(topic, partitions))
	require.NoError(t, tb.SetGroupConfig(group, "share.auto.offset.reset", "earliest"))
	produce(t, tb, topic, partitions, perPart)

	reg := prometheus.NewPedanticRegistry()
	m := kshareprom.New("kshare", kshareprom.Registerer(reg))
	c, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(topic),
		shareconsumer.FetchMaxWait(100*time.Millisecond),
		shareconsumer.ExplicitAcknowledgement(),
		shareconsumer.LagInterval(10*time.Millisecond),
		shareconsumer.Hooks(m),
	)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The group has share state once the consumer fetched: the records count as lag until
	// acknowledged, fetched or not.
	want := map[string]float64{"partition=0,topic=orders": perPart, "partition=1,topic=orders": perPart}
	polled := 0
	var recs []*shareconsumer.Record
	for polled < partitions*perPart {
		rs, err := c.Poll(ctx)
		require.NoError(t, err)
		recs = append(recs, rs...)
		polled += len(rs)
	}
	assert.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, want, series(t, reg, "kshare_lag_records"))
	}, 10*time.Second, 5*time.Millisecond, "lag while nothing is acknowledged")

	for _, r := range recs {
		require.NoError(t, c.Acknowledge(r, acktype.Accept))
	}
	_, err = c.CommitSync(ctx)
	require.NoError(t, err)
	zero := map[string]float64{"partition=0,topic=orders": 0, "partition=1,topic=orders": 0}
	assert.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, zero, series(t, reg, "kshare_lag_records"))
	}, 10*time.Second, 5*time.Millisecond, "lag once every record is accepted")
	assert.Equal(t, map[string]float64{"": 0}, series(t, reg, "kshare_lag_lookup_errors_total"))
}

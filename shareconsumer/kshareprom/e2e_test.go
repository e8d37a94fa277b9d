package kshareprom_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
	"github.com/kshare/kshare/testbroker"
)

// produce writes n records to each partition of topic, values "<partition>-<i>", i from 0.
func produce(t *testing.T, tb *testbroker.Cluster, topic string, partitions int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// series returns the values of the metric family name in g, by their label pairs
// ("outcome=accept,topic=orders"; "" for a metric without labels); histograms by their count.
func series(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() != "group" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			sort.Strings(labels)
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				v = float64(m.Histogram.GetSampleCount())
			}
			out[strings.Join(labels, ",")] = v
		}
	}
	return out
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestE2EProcess runs Process on a testbroker over two partitions, accepting a third of the
// records, rejecting a third and releasing the last third once (accepting them at their second
// delivery), and checks that the metrics say what ProcessStats says and what was produced.
func TestE2EProcess(t *testing.T) {
	t.Parallel()
	const (
		topic      = "orders"
		group      = "workers"
		partitions = 2
		perPart    = 15
		records    = partitions * perPart
	)
	tb := testbroker.StartT(t, testbroker.Topic(topic, partitions))
	require.NoError(t, tb.SetGroupConfig(group, "share.auto.offset.reset", "earliest"))
	produce(t, tb, topic, partitions, perPart)

	reg := prometheus.NewPedanticRegistry()
	m := kshareprom.New("kshare", kshareprom.Registerer(reg), kshareprom.ConstLabels(prometheus.Labels{"group": group}))
	c, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(topic),
		shareconsumer.FetchMaxWait(100*time.Millisecond),
		shareconsumer.Hooks(m),
	)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})

	// The record's index i (its offset: one producer, one batch per partition) says what the
	// handler does: i%3 == 0 accepts, 1 rejects, 2 releases at the first delivery and accepts
	// at the second.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var final atomic.Int32 // records accepted or rejected
	err = c.Process(runCtx, func(ctx context.Context, r *shareconsumer.Record) error {
		switch {
		case r.Offset%3 == 1:
			return errors.Reject(fmt.Errorf("record %d: bad", r.Offset))
		case r.Offset%3 == 2 && r.DeliveryCount == 1:
			return fmt.Errorf("record %d: try again", r.Offset)
		}
		return nil
	}, shareconsumer.Workers(4), shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
		if (o.Ack == acktype.Accept || o.Ack == acktype.Reject) && final.Add(1) == records {
			stop()
		}
	}))
	require.NoError(t, err)

	s := c.ProcessStats()
	t.Logf("ProcessStats: %v", s)
	// What the handler did, as produced.
	require.EqualValues(t, records/3*2, s.Accepted)
	require.EqualValues(t, records/3, s.Rejected)
	require.EqualValues(t, records/3, s.Released)
	require.EqualValues(t, records+records/3, s.Delivered)

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)

	processed := series(t, reg, "kshare_processed_records_total")
	assert.Equal(t, map[string]float64{
		"outcome=accept,topic=orders":  float64(s.Accepted),
		"outcome=release,topic=orders": float64(s.Released),
		"outcome=reject,topic=orders":  float64(s.Rejected),
		"outcome=lost,topic=orders":    float64(s.LocksLost),
	}, processed)
	assert.Equal(t, float64(s.Delivered), sum(processed))
	assert.Equal(t, map[string]float64{"topic=orders": float64(s.HandlerTime.Count)}, series(t, reg, "kshare_process_duration_seconds"))

	// Every record acquired went to Process.
	fetched := series(t, reg, "kshare_fetch_records_total")
	assert.Equal(t, float64(s.Delivered), sum(fetched), "%v", fetched)
	for p := range int32(partitions) {
		assert.GreaterOrEqual(t, fetched["partition="+strconv.Itoa(int(p))+",topic=orders"], float64(perPart), "partition %d", p)
	}
	assert.Positive(t, sum(series(t, reg, "kshare_fetch_bytes_total")))
	assert.Positive(t, sum(series(t, reg, "kshare_fetch_requests_total")))
	assert.Positive(t, sum(series(t, reg, "kshare_fetch_request_duration_seconds")))

	// The gauges, while the consumer is open.
	st := c.Status()
	assert.Equal(t, map[string]float64{"": float64(st.Held)}, series(t, reg, "kshare_held_records"))
	if ms, ok := c.AcquisitionLockTimeoutMs(); assert.True(t, ok) {
		assert.Equal(t, map[string]float64{"": float64(ms) / 1000}, series(t, reg, "kshare_acquisition_lock_timeout_seconds"))
	}
	assert.Equal(t, 1.0, series(t, reg, "kshare_member_state")["state="+st.State.String()])
	assert.Equal(t, 1.0, sum(series(t, reg, "kshare_member_state")))
	assert.Equal(t, map[string]float64{"": float64(st.MemberEpoch)}, series(t, reg, "kshare_member_epoch"))
	assert.Equal(t, map[string]float64{"topic=orders": float64(len(st.Assigned))}, series(t, reg, "kshare_assigned_partitions"))

	// HookAcknowledge, HookRenew and HookLockLost run once the answer is applied and the locks
	// let go, so they may run after Process returned; Close waits for the consumer's
	// goroutines, hence for them.
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer closeCancel()
	require.NoError(t, c.Close(closeCtx))
	assert.Equal(t, map[string]float64{
		"outcome=ok,topic=orders,type=accept":  float64(s.Accepted),
		"outcome=ok,topic=orders,type=reject":  float64(s.Rejected),
		"outcome=ok,topic=orders,type=release": float64(s.Released),
	}, series(t, reg, "kshare_acknowledged_records_total"))
	// At most ProcessStats.Renewed: a record settled between a renew's send and its answer is
	// renewed but in no RenewEvent.
	assert.LessOrEqual(t, sum(series(t, reg, "kshare_renewed_records_total")), float64(s.Renewed))
	assert.Equal(t, float64(s.LocksLost), sum(series(t, reg, "kshare_locks_lost_total")))
	assert.Empty(t, series(t, reg, "kshare_poll_records_total"), "Process only")

	// After Close the consumer is detached: the gauges are gone, the counters stay.
	for _, g := range closedGauges {
		assert.Empty(t, series(t, reg, g), g)
	}
	assert.Equal(t, processed, series(t, reg, "kshare_processed_records_total"))
}

// closedGauges are the gauges exported only while a consumer is attached.
var closedGauges = []string{
	"kshare_held_records", "kshare_acquisition_lock_timeout_seconds", "kshare_member_state",
	"kshare_member_epoch", "kshare_assigned_partitions", "kshare_lag_records",
}

// TestE2ECloseDropsGauges gives one Metrics to two consumers, a then b (the attached one):
// a's Close leaves the gauges, b's removes them all (held records, lock timeout, membership,
// lag), while the counters keep their values.
func TestE2ECloseDropsGauges(t *testing.T) {
	t.Parallel()
	const (
		topic   = "orders"
		perPart = 3
	)
	tb := testbroker.StartT(t, testbroker.Topic(topic, 1))
	for _, g := range []string{"closing-a", "closing-b"} {
		require.NoError(t, tb.SetGroupConfig(g, "share.auto.offset.reset", "earliest"))
	}
	produce(t, tb, topic, 1, perPart)

	reg := prometheus.NewPedanticRegistry()
	m := kshareprom.New("kshare", kshareprom.Registerer(reg))
	newConsumer := func(group string) *shareconsumer.Consumer {
		c, err := shareconsumer.New(
			shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)),
			shareconsumer.Group(group),
			shareconsumer.Topics(topic),
			shareconsumer.FetchMaxWait(100*time.Millisecond),
			shareconsumer.LagInterval(10*time.Millisecond),
			shareconsumer.Hooks(m),
		)
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.Close(ctx)
		})
		return c
	}
	a := newConsumer("closing-a")
	b := newConsumer("closing-b")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for polled := 0; polled < perPart; {
		recs, err := b.Poll(ctx)
		require.NoError(t, err)
		polled += len(recs)
	}
	assert.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, g := range closedGauges {
			assert.NotEmpty(ct, series(t, reg, g), g)
		}
	}, 10*time.Second, 5*time.Millisecond, "every gauge exported while b is open")

	closeCtx, closeCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer closeCancel()
	require.NoError(t, a.Close(closeCtx))
	for _, g := range closedGauges {
		assert.NotEmpty(t, series(t, reg, g), "%s after a's Close: b is the attached consumer", g)
	}
	assert.Equal(t, 1.0, series(t, reg, "kshare_member_state")["state=stable"], "b's membership, not a's leaving")
	assert.Equal(t, map[string]float64{"topic=orders": 1}, series(t, reg, "kshare_assigned_partitions"))

	require.NoError(t, b.Close(closeCtx))
	fetched := series(t, reg, "kshare_fetch_records_total")
	for _, g := range closedGauges {
		assert.Empty(t, series(t, reg, g), "%s after b's Close", g)
	}
	assert.Equal(t, map[string]float64{"topic=orders": perPart}, series(t, reg, "kshare_poll_records_total"), "counters stay")
	assert.Positive(t, sum(fetched))
	assert.Contains(t, series(t, reg, "kshare_lag_lookup_errors_total"), "")
}

// TestE2EPoll polls every record with explicit acknowledgement, accepting the even offsets and
// rejecting the odd ones: the metrics count what was polled and acknowledged, and no Process
// outcomes.
func TestE2EPoll(t *testing.T) {
	t.Parallel()
	const (
		topic      = "orders"
		group      = "pollers"
		partitions = 2
		perPart    = 10
		records    = partitions * perPart
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
	polled := 0
	for polled < records {
		recs, err := c.Poll(ctx)
		require.NoError(t, err, "after %d of %d records", polled, records)
		for _, r := range recs {
			ack := acktype.Accept
			if r.Offset%2 == 1 {
				ack = acktype.Reject
			}
			require.NoError(t, c.Acknowledge(r, ack))
		}
		polled += len(recs)
	}
	require.Equal(t, records, polled)
	res, err := c.CommitSync(ctx)
	require.NoError(t, err)
	for tp, err := range res {
		require.NoError(t, err, "%s", tp)
	}

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, map[string]float64{"topic=orders": records}, series(t, reg, "kshare_poll_records_total"))
	assert.Equal(t, map[string]float64{"": 0}, series(t, reg, "kshare_poll_errors_total"))
	assert.Equal(t, float64(records), sum(series(t, reg, "kshare_fetch_records_total")))
	assert.Empty(t, series(t, reg, "kshare_processed_records_total"), "Poll only")
	assert.Equal(t, map[string]float64{"": 0}, series(t, reg, "kshare_held_records"), "every record acknowledged and sent")

	// HookAcknowledge runs once the answer is applied and the lock let go, so it may run after
	// CommitSync returned; Close waits for the consumer's goroutines, hence for it.
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer closeCancel()
	require.NoError(t, c.Close(closeCtx))
	assert.Equal(t, map[string]float64{
		"outcome=ok,topic=orders,type=accept": records / 2,
		"outcome=ok,topic=orders,type=reject": records / 2,
	}, series(t, reg, "kshare_acknowledged_records_total"))
}

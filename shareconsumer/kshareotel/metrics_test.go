package kshareotel_test

import (
	"context"
	stderrors "errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
)

func tp(topic string, p int32) shareconsumer.TopicPartition {
	return shareconsumer.TopicPartition{Topic: topic, Partition: p}
}

// TestMetricsFromEvents feeds synthetic events and reads every metric back.
func TestMetricsFromEvents(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.ConsumerGroup("billing")) // no consumer gives it its group
	o := rg.o

	// ShareFetch: two answered, one failed; the lock timeout of the last that reported one.
	o.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 1, Records: 4, AcquisitionLockTimeout: 30 * time.Second, Latency: 100 * time.Millisecond,
		Partitions: []shareconsumer.FetchedPartition{{TopicPartition: tp("orders", 3), Records: 3}, {TopicPartition: tp("orders", 4), Records: 1}, {TopicPartition: tp("orders", 5), Err: errors.FromKafka(kerr.NotLeaderForPartition.Code, nil)}}})
	o.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 2, Records: 0, AcquisitionLockTimeout: 15 * time.Second, Latency: 300 * time.Millisecond})
	o.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 2, Err: &errors.KafkaError{Code: kerr.ShareSessionNotFound.Code}, Latency: time.Millisecond})

	// Process: three records handed out, one lost in the queue.
	r1, r2, r3, r4 := record(nil), record(nil), record(nil), record(nil)
	r2.Offset, r3.Offset, r4.Offset = 18, 19, 20
	r3.Partition = 4
	for _, x := range []struct {
		r   *shareconsumer.Record
		out shareconsumer.RecordOutcome
	}{
		{r1, shareconsumer.RecordOutcome{Ack: acktype.Accept, HandlerTime: 200 * time.Millisecond}},
		{r2, shareconsumer.RecordOutcome{Ack: acktype.Release, Err: stderrors.New("no"), HandlerTime: 2 * time.Second}},
		{r3, shareconsumer.RecordOutcome{Ack: acktype.Reject, Err: errors.Reject(nil), HandlerTime: 10 * time.Millisecond}},
	} {
		ctx := o.OnProcessStart(context.Background(), x.r)
		x.out.Record = x.r
		o.OnProcessDone(ctx, x.out)
	}
	lost := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 20, Reason: errors.LockSessionReset}
	o.OnLockLost(shareconsumer.LockLostEvent{Record: r4, Err: lost})
	o.OnProcessDone(context.Background(), shareconsumer.RecordOutcome{Record: r4, Err: lost})

	// Acknowledgements: one ShareFetch carried accepts and a release; a ShareAcknowledge's
	// reject failed for its partition.
	ackErr := &errors.AckError{Topic: "orders", Partition: 4, Offsets: []int64{19}, Err: kerr.InvalidRecordState}
	o.OnAcknowledge(shareconsumer.AcknowledgeEvent{Request: "ShareFetch", Latency: 50 * time.Millisecond, Partitions: []shareconsumer.AcknowledgedPartition{
		{TopicPartition: tp("orders", 3), Records: [5]int{acktype.Gap: 2, acktype.Accept: 1, acktype.Release: 1}},
	}})
	o.OnAcknowledge(shareconsumer.AcknowledgeEvent{Request: "ShareAcknowledge", Latency: 20 * time.Millisecond, Partitions: []shareconsumer.AcknowledgedPartition{
		{TopicPartition: tp("orders", 4), Records: [5]int{acktype.Reject: 1}, Err: ackErr},
	}})
	o.OnRenew(shareconsumer.RenewEvent{Records: []*shareconsumer.Record{r1, r2, r3}, LockDeadline: time.Now()})

	// Lag: the last lookup that succeeded; partitions with an unknown lag left out.
	o.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "billing", Partitions: []shareconsumer.PartitionLag{
		{TopicPartition: tp("orders", 3), Lag: 40}, {TopicPartition: tp("orders", 4), Lag: 2},
	}}})
	o.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "billing", Partitions: []shareconsumer.PartitionLag{
		{TopicPartition: tp("orders", 3), Lag: 7}, {TopicPartition: tp("orders", 4), Lag: -1},
	}}})
	o.OnLag(shareconsumer.LagEvent{Err: stderrors.New("coordinator unavailable")})

	m := rg.collect(t)
	g := map[string]string{"messaging.consumer.group.name": "billing", "messaging.system": "kafka"}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range g {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	consumed := m["messaging.client.consumed.messages"]
	assert.Equal(t, "{message}", consumed.Unit)
	assert.EqualValues(t, 4, sumInt(consumed, with("messaging.operation.name", "ShareFetch")), "acquired by ShareFetch")
	assert.EqualValues(t, 3, sumInt(consumed, with("messaging.destination.partition.id", "3")))
	assert.EqualValues(t, 0, sumInt(consumed, with("messaging.destination.partition.id", "5")))

	pd := m["messaging.process.duration"]
	assert.Equal(t, "s", pd.Unit)
	n, sum := histCount(pd, with("messaging.destination.name", "orders"))
	assert.EqualValues(t, 3, n, "records a handler had; the one lost in the queue is not")
	assert.InDelta(t, 2.21, sum, 1e-9)
	n, _ = histCount(pd, with("error.type", "release"))
	assert.EqualValues(t, 1, n)
	n, _ = histCount(pd, with("error.type", ""))
	assert.EqualValues(t, 1, n, "the accepted one")

	od := m["messaging.client.operation.duration"]
	assert.Equal(t, "s", od.Unit)
	n, sum = histCount(od, with("messaging.operation.name", "ShareFetch", "messaging.operation.type", "receive", "error.type", ""))
	assert.EqualValues(t, 2, n)
	assert.InDelta(t, 0.4, sum, 1e-9)
	n, _ = histCount(od, with("messaging.operation.type", "receive", "error.type", "SHARE_SESSION_NOT_FOUND"))
	assert.EqualValues(t, 1, n)
	n, sum = histCount(od, with("messaging.operation.type", "settle"))
	assert.EqualValues(t, 2, n)
	assert.InDelta(t, 0.07, sum, 1e-9)

	ack := m[kshareotel.MetricAcknowledged]
	assert.EqualValues(t, 1, sumInt(ack, with("kshare.acknowledge.type", "accept", "error.type", "")))
	assert.EqualValues(t, 1, sumInt(ack, with("kshare.acknowledge.type", "release")))
	assert.EqualValues(t, 2, sumInt(ack, with("kshare.acknowledge.type", "gap")))
	assert.EqualValues(t, 1, sumInt(ack, with("kshare.acknowledge.type", "reject", "error.type", "INVALID_RECORD_STATE", "messaging.destination.partition.id", "4")))

	assert.EqualValues(t, 3, sumInt(m[kshareotel.MetricRenewed], g))
	assert.EqualValues(t, 2, sumInt(m[kshareotel.MetricRenewed], with("messaging.destination.partition.id", "3")))
	assert.EqualValues(t, 1, sumInt(m[kshareotel.MetricLocksLost], with("kshare.lock_lost.reason", "session_reset")))

	lag := m[kshareotel.MetricLag]
	require.IsType(t, metricdata.Gauge[int64]{}, lag.Data)
	assert.Len(t, lag.Data.(metricdata.Gauge[int64]).DataPoints, 1, "partition 4's lag is unknown")
	assert.EqualValues(t, 7, sumInt(lag, with("messaging.destination.partition.id", "3")))

	lt := m[kshareotel.MetricLockTimeout]
	require.IsType(t, metricdata.Gauge[float64]{}, lt.Data)
	require.Len(t, lt.Data.(metricdata.Gauge[float64]).DataPoints, 1)
	assert.Equal(t, 15.0, lt.Data.(metricdata.Gauge[float64]).DataPoints[0].Value)
	assert.Equal(t, "s", lt.Unit)

	assert.NotContains(t, m, kshareotel.MetricHeld, "no consumer registered")
}

// TestGroupFromTheConsumer: the group attribute is the consumer's group from New on, unless
// ConsumerGroup sets another (kshare.lag's too); kshare.held.messages reports the consumer's Status().Held (none
// here) until it closes.
func TestGroupFromTheConsumer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []kshareotel.Opt
		want string
	}{
		{"consumer's", nil, "billing"},
		{"ConsumerGroup", []kshareotel.Opt{kshareotel.ConsumerGroup("invoices")}, "invoices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rg := newRig(t, tc.opts...)
			// Not subscribed, and no broker at that address: the consumer sends nothing that matters.
			c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers("127.0.0.1:1")),
				shareconsumer.Group("billing"), shareconsumer.Hooks(rg.o))
			require.NoError(t, err)
			rg.o.OnShareFetch(shareconsumer.ShareFetchEvent{Records: 2, Latency: time.Millisecond,
				Partitions: []shareconsumer.FetchedPartition{{TopicPartition: tp("orders", 0), Records: 2}}})
			rg.o.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "billing",
				Partitions: []shareconsumer.PartitionLag{{TopicPartition: tp("orders", 0), Lag: 5}}}})

			m := rg.collect(t)
			g := map[string]string{"messaging.consumer.group.name": tc.want}
			assert.EqualValues(t, 2, sumInt(m["messaging.client.consumed.messages"], g))
			n, _ := histCount(m["messaging.client.operation.duration"], g)
			assert.EqualValues(t, 1, n)
			assert.EqualValues(t, 5, sumInt(m[kshareotel.MetricLag], g), "the lag too")
			held := m[kshareotel.MetricHeld]
			require.IsType(t, metricdata.Sum[int64]{}, held.Data)
			require.Len(t, held.Data.(metricdata.Sum[int64]).DataPoints, 1)
			p := held.Data.(metricdata.Sum[int64]).DataPoints[0]
			assert.True(t, matches(p.Attributes, g), "held: %v", p.Attributes)
			assert.EqualValues(t, c.Status().Held, p.Value)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, c.Close(ctx))
			assert.NotContains(t, rg.collect(t), kshareotel.MetricHeld, "a closed consumer is forgotten")
		})
	}
}

// TestProcessDurationPerPartitionAndOutcome: the measurement options kept per partition and
// outcome give each its own attribute set, also when the same ones come back.
func TestProcessDurationPerPartitionAndOutcome(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.ConsumerGroup("billing"))
	o := rg.o
	for range 3 {
		for _, p := range []int32{3, 4} {
			for _, ack := range []acktype.Type{acktype.Accept, acktype.Release} {
				r := record(nil)
				r.Partition = p
				out := shareconsumer.RecordOutcome{Record: r, Ack: ack, HandlerTime: time.Duration(p) * time.Second}
				if ack == acktype.Release {
					out.Err = stderrors.New("no")
				}
				o.OnProcessDone(o.OnProcessStart(context.Background(), r), out)
			}
		}
	}
	m := rg.collect(t)
	pd := m["messaging.process.duration"]
	d, ok := pd.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "messaging.process.duration is %T", pd.Data)
	assert.Len(t, d.DataPoints, 4, "one point per partition and outcome")
	for _, p := range []string{"3", "4"} {
		for _, errType := range []string{"", kshareotel.ErrorTypeRelease} {
			want := map[string]string{
				"messaging.system": "kafka", "messaging.consumer.group.name": "billing",
				"messaging.destination.name": "orders", "messaging.destination.partition.id": p,
				"messaging.operation.name": "process", "error.type": errType,
			}
			n, sum := histCount(pd, want)
			assert.Equal(t, uint64(3), n, "partition %s, error.type %q", p, errType)
			wantSum := 9.0
			if p == "4" {
				wantSum = 12
			}
			assert.InDelta(t, wantSum, sum, 1e-9, "partition %s, error.type %q", p, errType)
		}
	}
}

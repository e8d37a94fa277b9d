package kshareotel_test

import (
	"context"
	stderrors "errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
	"github.com/kshare/kshare/testbroker"
)

// These tests run a consumer with an Otel hook against a testbroker on an in-memory network
// inside a testing/synctest bubble, as shareconsumer's Process tests do: every clock is the
// bubble's, so a handler that sleeps five lock durations takes no real time, and time.Sleep in a
// handler is the work it simulates, never a wait for something to happen.

const (
	eGroup  = "g"
	eTopic  = "t"
	eLockMs = 1000
)

// eStart starts a cluster on the bubble's network with topic t (one partition) and group g,
// which starts at the earliest offset and locks records for eLockMs.
func eStart(t *testing.T, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.InMemoryNetwork(),
		testbroker.Topic(eTopic, 1),
		testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.BrokerConfig("group.share.max.session.timeout.ms", "3600000"),
		testbroker.BrokerConfig("group.share.session.timeout.ms", "3600000"),
	}, opts...)...)
	require.NoError(t, c.SetGroupConfig(eGroup, "share.auto.offset.reset", "earliest"))
	require.NoError(t, c.SetGroupConfig(eGroup, "share.record.lock.duration.ms", strconv.Itoa(eLockMs)))
	return c
}

// eProduce produces n records to t, each inside a producer span of rg's provider whose context
// is injected into the record's headers; it returns the spans' contexts by offset.
func eProduce(t *testing.T, c *testbroker.Cluster, rg *rig, n int) []trace.SpanContext {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext))
	require.NoError(t, err)
	defer cl.Close()
	out := make([]trace.SpanContext, n)
	for i := range n {
		ctx, span := rg.tp.Tracer("producer").Start(context.Background(), "send "+eTopic, trace.WithSpanKind(trace.SpanKindProducer))
		r := &kgo.Record{Topic: eTopic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
		propagation.TraceContext{}.Inject(ctx, kshareotel.HeaderCarrier(&r.Headers))
		res, err := cl.ProduceSync(ctx, r).First()
		require.NoError(t, err)
		span.End()
		out[res.Offset] = span.SpanContext()
	}
	return out
}

// eConsumer creates a consumer of g on c, subscribed to t, with the hook; its ShareFetches do
// not wait at the broker, so that renews never queue behind one.
func eConsumer(t *testing.T, c *testbroker.Cluster, hook shareconsumer.Hook, opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	t.Helper()
	cons, err := shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext)),
		shareconsumer.Group(eGroup), shareconsumer.Topics(eTopic), shareconsumer.FetchMaxWait(0),
		shareconsumer.Hooks(hook),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cons.Close(context.Background()) })
	return cons
}

// processUntil runs Process until done returns true after a record's outcome.
func processUntil(t *testing.T, cons *shareconsumer.Consumer, h shareconsumer.Handler, done func(shareconsumer.RecordOutcome) bool, opts ...shareconsumer.ProcessOpt) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts = append(opts, shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
		if done(o) {
			cancel()
		}
	}))
	require.NoError(t, cons.Process(ctx, h, opts...))
}

// TestE2EProcessSpanFollowsTheProducer: a record produced inside a span is processed in a span
// of the same trace, the producer's span its parent; the handler's context carries it; renews
// while the handler works are events of it.
func TestE2EProcessSpanFollowsTheProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		c := eStart(t)
		producers := eProduce(t, c, rg, 1)
		cons := eConsumer(t, c, rg.o)
		var inHandler trace.SpanContext
		var heldWhileRunning int64
		processUntil(t, cons, func(ctx context.Context, r *shareconsumer.Record) error {
			inHandler = trace.SpanContextFromContext(ctx)
			heldWhileRunning = sumInt(rg.collect(t)[kshareotel.MetricHeld], map[string]string{"messaging.consumer.group.name": eGroup})
			time.Sleep(2500 * time.Millisecond) // renewed at 0.8s, 1.6s and 2.4s
			return nil
		}, func(shareconsumer.RecordOutcome) bool { return true })
		synctest.Wait()

		spans := rg.ended("process " + eTopic)
		require.Len(t, spans, 1)
		s := spans[0]
		assert.Equal(t, inHandler.SpanID(), s.SpanContext().SpanID(), "the handler's context carries the span")
		assert.Equal(t, producers[0].TraceID(), s.SpanContext().TraceID())
		assert.Equal(t, producers[0].SpanID(), s.Parent().SpanID())
		assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
		assert.Equal(t, codes.Unset, s.Status().Code)
		a := attrMap(s.Attributes())
		assert.Equal(t, eGroup, a["messaging.consumer.group.name"].AsString(), "the consumer's group")
		assert.Equal(t, eTopic, a["messaging.destination.name"].AsString())
		assert.Equal(t, "0", a["messaging.destination.partition.id"].AsString())
		assert.Equal(t, int64(0), a["messaging.kafka.offset"].AsInt64())
		assert.Equal(t, "k0", a["messaging.kafka.message.key"].AsString())
		assert.Equal(t, int64(1), a["messaging.message.body.size"].AsInt64())
		assert.Equal(t, int64(1), a["kshare.delivery_count"].AsInt64())
		assert.Equal(t, "accept", a["kshare.acknowledge.type"].AsString())
		assert.Equal(t, int64(3), a["kshare.renews"].AsInt64())
		var renews int
		for _, e := range s.Events() {
			if e.Name == kshareotel.EventLockRenewed {
				renews++
				assert.NotEmpty(t, attrMap(e.Attributes)["kshare.lock.deadline"].AsString())
			}
		}
		assert.Equal(t, 3, renews)
		assert.Equal(t, uint64(3), cons.ProcessStats().Renewed)
		assert.EqualValues(t, 1, heldWhileRunning, "kshare.held.messages while the handler ran")
		require.NoError(t, cons.Close(context.Background()))
		assert.NotContains(t, rg.collect(t), kshareotel.MetricHeld, "a closed consumer is forgotten")
	})
}

// TestE2ELockLostEventAndStatus: a renew the broker refuses loses the lock; the span gets the
// event, with the reason, and an error status; the metrics count it as ProcessStats does.
func TestE2ELockLostEventAndStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		c := eStart(t)
		eProduce(t, c, rg, 1)
		cons := eConsumer(t, c, rg.o)
		processUntil(t, cons, func(ctx context.Context, r *shareconsumer.Record) error {
			if r.DeliveryCount == 1 {
				require.NoError(t, c.SetGroupConfig(eGroup, "share.renew.acknowledge.enable", "false"))
				<-ctx.Done() // the first renew, at 0.8s, is refused
			}
			return nil
		}, func(shareconsumer.RecordOutcome) bool { return true })
		synctest.Wait()

		spans := rg.ended("process " + eTopic)
		require.NotEmpty(t, spans)
		s := spans[0]
		require.Equal(t, int64(1), attrMap(s.Attributes())["kshare.delivery_count"].AsInt64())
		assert.Equal(t, codes.Error, s.Status().Code)
		assert.Contains(t, s.Status().Description, "invalid_record_state")
		assert.Equal(t, "lock_lost", attrMap(s.Attributes())["error.type"].AsString())
		var lost []sdktrace.Event
		for _, e := range s.Events() {
			if e.Name == kshareotel.EventLockLost {
				lost = append(lost, e)
			}
		}
		require.Len(t, lost, 1)
		assert.Equal(t, "invalid_record_state", attrMap(lost[0].Attributes)["kshare.lock_lost.reason"].AsString())
		assert.True(t, attrMap(lost[0].Attributes)["kshare.lock_lost.running"].AsBool())

		synctest.Wait() // hooks may run on the consumer's goroutines after Process returned
		st := cons.ProcessStats()
		m := rg.collect(t)
		assert.EqualValues(t, st.LocksLostBy[errors.LockInvalidRecordState], sumInt(m[kshareotel.MetricLocksLost], map[string]string{"kshare.lock_lost.reason": "invalid_record_state"}))
		assert.EqualValues(t, st.LocksLost, sumInt(m[kshareotel.MetricLocksLost], nil))
	})
}

// TestE2EMetricsMatchProcessStats runs records that are accepted, released once, rejected,
// renewed, and one whose lock MaxHold lets go, until every record is accepted or rejected; then
// the metrics equal what ProcessStats and the broker say.
func TestE2EMetricsMatchProcessStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 12
		rg := newRig(t) // the group attribute is the consumer's, on every measurement
		c := eStart(t)
		eProduce(t, c, rg, n)
		cons := eConsumer(t, c, rg.o)
		var mu sync.Mutex
		handled := 0
		final := map[int64]bool{}
		processUntil(t, cons, func(ctx context.Context, r *shareconsumer.Record) error {
			mu.Lock()
			handled++
			mu.Unlock()
			switch {
			case r.Offset == 11 && r.DeliveryCount == 1: // held past MaxHold: lost
				<-ctx.Done()
				return nil
			case r.Offset%4 == 1 && r.DeliveryCount == 1:
				return stderrors.New("try again") // released, delivered again
			case r.Offset%4 == 2:
				return errors.Reject(stderrors.New("poison"))
			case r.Offset%4 == 3:
				time.Sleep(2 * eLockMs * time.Millisecond) // renewed at 0.8s and 1.6s
			}
			return nil
		}, func(o shareconsumer.RecordOutcome) bool {
			mu.Lock()
			defer mu.Unlock()
			if o.Ack == acktype.Accept || o.Ack == acktype.Reject {
				final[o.Record.Offset] = true
			}
			return len(final) == n
		}, shareconsumer.Workers(n), shareconsumer.MaxHold(2500*time.Millisecond))
		st := cons.ProcessStats()
		require.NoError(t, cons.Close(context.Background())) // every acknowledgement sent

		// The broker's share partition: every record acknowledged or archived, none in flight.
		start, end, ok := c.SharePartitionOffsets(eGroup, eTopic, 0)
		require.True(t, ok)
		assert.Equal(t, int64(n), start, "every record done with")
		assert.Equal(t, start, end, "no record in flight")
		assert.Empty(t, c.ShareRecords(eGroup, eTopic, 0))
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext))
		require.NoError(t, err)
		defer cl.Close()
		described, err := shareconsumer.GroupLagOf(context.Background(), cl, eGroup) // DescribeShareGroupOffsets
		require.NoError(t, err)
		require.Len(t, described.Partitions, 1)
		assert.Equal(t, int64(n), described.Partitions[0].StartOffset)
		assert.Zero(t, described.Partitions[0].Lag)
		// A record whose acknowledgement failed comes again, so these are lower bounds.
		assert.GreaterOrEqual(t, st.Rejected, uint64(3), "offsets 2, 6, 10")
		assert.GreaterOrEqual(t, st.Released, uint64(3), "offsets 1, 5, 9")
		assert.GreaterOrEqual(t, st.LocksLostBy[errors.LockMaxHoldReached], uint64(1), "offset 11's first delivery")
		assert.Positive(t, st.Renewed)

		m := rg.collect(t)
		g := map[string]string{"messaging.consumer.group.name": eGroup, "messaging.destination.name": eTopic}
		with := func(k, v string) map[string]string {
			out := map[string]string{k: v}
			for gk, gv := range g {
				out[gk] = gv
			}
			return out
		}
		assert.EqualValues(t, st.Delivered, sumInt(m["messaging.client.consumed.messages"], with("messaging.operation.name", "ShareFetch")))
		assert.EqualValues(t, st.Delivered, handled, "no record was lost or released before a handler had it")
		pn, _ := histCount(m["messaging.process.duration"], g)
		assert.Equal(t, st.HandlerTime.Count, pn)
		assert.EqualValues(t, st.Renewed, sumInt(m[kshareotel.MetricRenewed], g))
		for r, k := range st.LocksLostBy {
			assert.EqualValues(t, k, sumInt(m[kshareotel.MetricLocksLost], with("kshare.lock_lost.reason", r.String())), "%s", r)
		}
		// Every acknowledgement Process chose was sent, applied or not (error.type says).
		ack := func(typ string) int64 {
			return sumInt(m[kshareotel.MetricAcknowledged], with("kshare.acknowledge.type", typ))
		}
		assert.EqualValues(t, st.Accepted, ack("accept"))
		assert.EqualValues(t, st.Released, ack("release"))
		assert.EqualValues(t, st.Rejected, ack("reject"))
		assert.EqualValues(t, st.Renewed+st.RenewFailures, ack("renew"), "Process renews through acknowledgements")
		// The broker moved its start offset past each record once, on the one final
		// acknowledgement it applied: n of them, the three rejects (2, 6, 10) archived.
		applied := func(typ string) int64 {
			a := with("kshare.acknowledge.type", typ)
			a["error.type"] = ""
			return sumInt(m[kshareotel.MetricAcknowledged], a)
		}
		assert.EqualValues(t, n, applied("accept")+applied("reject"), "one applied final acknowledgement per record")
		assert.EqualValues(t, 3, applied("reject"))

		fetches, _ := histCount(m["messaging.client.operation.duration"], map[string]string{"messaging.operation.type": "receive"})
		assert.Positive(t, fetches)
		settles, _ := histCount(m["messaging.client.operation.duration"], map[string]string{"messaging.operation.type": "settle"})
		assert.Positive(t, settles)

		// The spans agree: one per handler run, an error for each release, reject and loss.
		spans := rg.ended("process " + eTopic)
		assert.Len(t, spans, handled)
		errs := map[string]int{}
		for _, s := range spans {
			if s.Status().Code == codes.Error {
				errs[attrMap(s.Attributes())["error.type"].AsString()]++
			}
		}
		assert.Equal(t, map[string]int{"release": int(st.Released), "reject": int(st.Rejected), "lock_lost": int(st.LocksLost)}, errs)
	})
}

// TestE2EPollReceiveSpan: a Poll that returns records has a receive span linked to each
// producer; a record Poll returns again after a renew is not consumed twice (it was fetched
// once).
func TestE2EPollReceiveSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		c := eStart(t)
		producers := eProduce(t, c, rg, 2)
		cons := eConsumer(t, c, rg.o, shareconsumer.ExplicitAcknowledgement())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var recs []*shareconsumer.Record
		for len(recs) < 2 {
			got, err := cons.Poll(ctx)
			require.NoError(t, err)
			recs = append(recs, got...)
		}
		held := map[string]string{"messaging.consumer.group.name": eGroup}
		assert.EqualValues(t, 2, sumInt(rg.collect(t)[kshareotel.MetricHeld], held), "returned, not yet acknowledged")
		require.NoError(t, cons.Acknowledge(recs[0], acktype.Renew))
		require.NoError(t, cons.Acknowledge(recs[1], acktype.Accept))
		again, err := cons.Poll(ctx)
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Same(t, recs[0], again[0])
		require.NoError(t, cons.Acknowledge(again[0], acktype.Accept))
		_, err = cons.CommitSync(ctx)
		require.NoError(t, err)
		synctest.Wait() // the hooks of the commit's request run after CommitSync returns
		assert.Zero(t, cons.Status().Held)
		assert.Zero(t, sumInt(rg.collect(t)[kshareotel.MetricHeld], held), "every acknowledgement sent")

		spans := rg.ended("poll " + eTopic)
		require.NotEmpty(t, spans)
		var links []trace.SpanID
		batch := int64(0)
		for _, s := range spans {
			assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
			assert.Equal(t, "receive", attrMap(s.Attributes())["messaging.operation.type"].AsString())
			batch += attrMap(s.Attributes())["messaging.batch.message_count"].AsInt64()
			for _, l := range s.Links() {
				links = append(links, l.SpanContext.SpanID())
			}
		}
		assert.EqualValues(t, 3, batch, "two records, one of them twice")
		assert.Contains(t, links, producers[0].SpanID())
		assert.Contains(t, links, producers[1].SpanID())

		m := rg.collect(t)
		assert.EqualValues(t, 2, sumInt(m["messaging.client.consumed.messages"], map[string]string{"messaging.operation.name": "ShareFetch"}))
		assert.EqualValues(t, 1, sumInt(m[kshareotel.MetricRenewed], nil))
		assert.EqualValues(t, 2, sumInt(m[kshareotel.MetricAcknowledged], map[string]string{"kshare.acknowledge.type": "accept"}))
		lt := m[kshareotel.MetricLockTimeout]
		require.IsType(t, metricdata.Gauge[float64]{}, lt.Data)
		require.Len(t, lt.Data.(metricdata.Gauge[float64]).DataPoints, 1)
		assert.Equal(t, float64(eLockMs)/1000, lt.Data.(metricdata.Gauge[float64]).DataPoints[0].Value)
	})
}

// TestE2ELag: with shareconsumer.LagInterval the consumer looks the group's lag up every second
// (the bubble's clock) and kshare.lag reports the last lookup, per partition, equal to what the
// broker's share partition says (records from its start offset to the end of the log, none of
// them done with: each lookup comes after an acknowledged prefix); Close makes it stop.
func TestE2ELag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		rg := newRig(t)
		c := eStart(t)
		eProduce(t, c, rg, n)
		cons := eConsumer(t, c, rg.o, shareconsumer.ExplicitAcknowledgement(), shareconsumer.MaxPollRecords(2),
			shareconsumer.LagInterval(time.Second))
		assert.NotContains(t, rg.collect(t), kshareotel.MetricLag, "no lookup before the first tick")

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p0 := map[string]string{"messaging.consumer.group.name": eGroup, "messaging.destination.name": eTopic, "messaging.destination.partition.id": "0"}
		// acceptTwo polls two records, accepts them, commits, and lets the next lookup run.
		acceptTwo := func(from int64) {
			t.Helper()
			var recs []*shareconsumer.Record
			for len(recs) < 2 {
				got, err := cons.Poll(ctx)
				require.NoError(t, err)
				recs = append(recs, got...)
			}
			for i, r := range recs {
				require.Equal(t, from+int64(i), r.Offset)
				require.NoError(t, cons.Acknowledge(r, acktype.Accept))
			}
			_, err := cons.CommitSync(ctx)
			require.NoError(t, err)
			time.Sleep(time.Second) // the bubble's clock: a tick passes
			synctest.Wait()
		}

		acceptTwo(0)
		start, _, ok := c.SharePartitionOffsets(eGroup, eTopic, 0)
		require.True(t, ok)
		require.Equal(t, int64(2), start)
		m := rg.collect(t)
		assert.EqualValues(t, n-start, sumInt(m[kshareotel.MetricLag], p0), "the log's end minus the start offset")
		broker, err := cons.Lag(ctx)
		require.NoError(t, err)
		require.Len(t, broker.Partitions, 1)
		assert.EqualValues(t, broker.Partitions[0].Lag, sumInt(m[kshareotel.MetricLag], p0), "the broker's figure")
		assert.Equal(t, "{message}", m[kshareotel.MetricLag].Unit)

		acceptTwo(2)
		start, _, _ = c.SharePartitionOffsets(eGroup, eTopic, 0)
		require.Equal(t, int64(n), start)
		lag := rg.collect(t)[kshareotel.MetricLag]
		require.IsType(t, metricdata.Gauge[int64]{}, lag.Data)
		require.Len(t, lag.Data.(metricdata.Gauge[int64]).DataPoints, 1)
		assert.Zero(t, sumInt(lag, p0), "every record done with")

		require.NoError(t, cons.Close(context.Background()))
		assert.NotContains(t, rg.collect(t), kshareotel.MetricLag, "a closed consumer's lag is forgotten")
	})
}

package kshareotel_test

import (
	"context"
	stderrors "errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
)

func record(headers []kgo.RecordHeader) *shareconsumer.Record {
	return &shareconsumer.Record{
		Topic: "orders", Partition: 3, Offset: 17,
		Key: []byte("order-17"), Value: []byte("hello"),
		Headers: headers, DeliveryCount: 2,
		Timestamp: time.Unix(1700000000, 0),
	}
}

// TestProcessSpanIsTheProducersChild: with no propagator set anywhere (the global one is the
// no-op), the traceparent header still makes the process span a child of the producer's span,
// and the handler's context carries the process span.
func TestProcessSpanIsTheProducersChild(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.ConsumerGroup("billing"))
	producer, headers := rg.produceSpan(t)
	r := record(headers)

	ctx := rg.o.OnProcessStart(context.Background(), r)
	handlerSpan := trace.SpanContextFromContext(ctx)
	require.True(t, handlerSpan.IsValid(), "the handler's context carries the process span")
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept, HandlerTime: 30 * time.Millisecond})

	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, handlerSpan.SpanID(), s.SpanContext().SpanID())
	assert.Equal(t, producer.TraceID(), s.SpanContext().TraceID(), "the producer's trace")
	assert.Equal(t, producer.SpanID(), s.Parent().SpanID(), "the producer's span is the parent")
	assert.True(t, s.Parent().IsRemote())
	assert.Empty(t, s.Links())
	assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
	assert.Equal(t, codes.Unset, s.Status().Code, "success leaves the status unset")

	a := attrMap(s.Attributes())
	assert.Equal(t, "kafka", a["messaging.system"].AsString())
	assert.Equal(t, "process", a["messaging.operation.name"].AsString())
	assert.Equal(t, "process", a["messaging.operation.type"].AsString())
	assert.Equal(t, "orders", a["messaging.destination.name"].AsString())
	assert.Equal(t, "3", a["messaging.destination.partition.id"].AsString())
	assert.Equal(t, "billing", a["messaging.consumer.group.name"].AsString())
	assert.Equal(t, int64(17), a["messaging.kafka.offset"].AsInt64())
	assert.Equal(t, "order-17", a["messaging.kafka.message.key"].AsString())
	assert.Equal(t, int64(5), a["messaging.message.body.size"].AsInt64())
	assert.Equal(t, int64(2), a["kshare.delivery_count"].AsInt64())
	assert.Equal(t, "accept", a["kshare.acknowledge.type"].AsString())
	assert.Equal(t, int64(0), a["kshare.renews"].AsInt64())
	assert.NotContains(t, a, attribute.Key("messaging.kafka.message.tombstone"))
	assert.NotContains(t, a, attribute.Key("error.type"))
}

// TestLinkSpans: the producer's span is a link; the parent is the span the handler's context
// carried.
func TestLinkSpans(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.LinkSpans())
	producer, headers := rg.produceSpan(t)
	r := record(headers)
	appCtx, app := rg.tp.Tracer("app").Start(context.Background(), "run consumer")
	defer app.End()

	ctx := rg.o.OnProcessStart(appCtx, r)
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept})
	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, app.SpanContext().SpanID(), s.Parent().SpanID())
	assert.Equal(t, app.SpanContext().TraceID(), s.SpanContext().TraceID())
	require.Len(t, s.Links(), 1)
	assert.Equal(t, producer.SpanID(), s.Links()[0].SpanContext.SpanID())
	assert.Equal(t, producer.TraceID(), s.Links()[0].SpanContext.TraceID())
}

// TestNoTraceContext: a record without a trace context starts a trace of its own (or a child
// of the handler's context's span), and LinkSpans adds no link.
func TestNoTraceContext(t *testing.T) {
	t.Parallel()
	for _, link := range []bool{false, true} {
		var opts []kshareotel.Opt
		if link {
			opts = append(opts, kshareotel.LinkSpans())
		}
		rg := newRig(t, opts...)
		r := record(nil)
		r.Key = []byte{0xff, 0xfe} // not UTF-8: left out
		r.Value = nil              // a tombstone
		ctx := rg.o.OnProcessStart(context.Background(), r)
		rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept})
		spans := rg.ended("process orders")
		require.Len(t, spans, 1)
		assert.False(t, spans[0].Parent().IsValid(), "link %v", link)
		assert.Empty(t, spans[0].Links())
		a := attrMap(spans[0].Attributes())
		assert.NotContains(t, a, attribute.Key("messaging.kafka.message.key"))
		assert.True(t, a["messaging.kafka.message.tombstone"].AsBool())
		assert.Equal(t, int64(0), a["messaging.message.body.size"].AsInt64())
		assert.NotContains(t, a, attribute.Key("messaging.consumer.group.name"), "group not known yet")
	}
}

// TestTextMapPropagator: an explicit propagator is used as it is; one that reads nothing
// leaves the span without the producer's parent.
func TestTextMapPropagator(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.TextMapPropagator(propagation.NewCompositeTextMapPropagator()))
	_, headers := rg.produceSpan(t)
	r := record(headers)
	ctx := rg.o.OnProcessStart(context.Background(), r)
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept})
	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	assert.False(t, spans[0].Parent().IsValid())

	rg = newRig(t, kshareotel.TextMapPropagator(propagation.TraceContext{}))
	producer, headers := rg.produceSpan(t)
	got := trace.SpanContextFromContext(rg.o.Extract(context.Background(), record(headers)))
	assert.Equal(t, producer.SpanID(), got.SpanID(), "Extract reads the producer's span context")
}

// TestProcessSpanStatus: every outcome but accept sets an error status and error.type.
func TestProcessSpanStatus(t *testing.T) {
	t.Parallel()
	handlerErr := stderrors.New("payment service down")
	lost := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 17, Reason: errors.LockDeadlinePassed}
	cases := []struct {
		name      string
		out       shareconsumer.RecordOutcome
		errType   string
		exception bool
	}{
		{"accept", shareconsumer.RecordOutcome{Ack: acktype.Accept}, "", false},
		{"release", shareconsumer.RecordOutcome{Ack: acktype.Release, Err: handlerErr}, "release", true},
		{"reject", shareconsumer.RecordOutcome{Ack: acktype.Reject, Err: errors.Reject(handlerErr)}, "reject", true},
		{"panic", shareconsumer.RecordOutcome{Ack: acktype.Release, Err: &errors.PanicError{Value: "boom"}}, "panic", true},
		{"lock lost", shareconsumer.RecordOutcome{Err: lost}, "lock_lost", false},
		{"dead letter", shareconsumer.RecordOutcome{Ack: acktype.Accept, Err: errors.DeadLetter(handlerErr), DeadLettered: true}, "dead_letter", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rg := newRig(t)
			r := record(nil)
			tc.out.Record = r
			ctx := rg.o.OnProcessStart(context.Background(), r)
			rg.o.OnProcessDone(ctx, tc.out)
			spans := rg.ended("process orders")
			require.Len(t, spans, 1)
			s := spans[0]
			a := attrMap(s.Attributes())
			var exceptions int
			for _, e := range s.Events() {
				if e.Name == "exception" {
					exceptions++
				}
			}
			if tc.errType == "" {
				assert.Equal(t, codes.Unset, s.Status().Code)
				assert.NotContains(t, a, attribute.Key("error.type"))
				return
			}
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, tc.out.Err.Error(), s.Status().Description)
			assert.Equal(t, tc.errType, a["error.type"].AsString())
			if tc.exception {
				assert.Equal(t, 1, exceptions, "the handler's error recorded")
			} else {
				assert.Zero(t, exceptions)
				assert.NotContains(t, a, attribute.Key("kshare.acknowledge.type"), "nothing was acknowledged")
			}
		})
	}
}

// TestRenewAndLockLostEvents: renews and a lost lock become events of the record's span; the
// lost lock makes the status an error, whatever came after.
func TestRenewAndLockLostEvents(t *testing.T) {
	t.Parallel()
	rg := newRig(t)
	r, other := record(nil), record(nil)
	other.Offset = 18
	ctx := rg.o.OnProcessStart(context.Background(), r)
	d1 := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	rg.o.OnRenew(shareconsumer.RenewEvent{Leader: 1, Records: []*shareconsumer.Record{r, other}, LockDeadline: d1})
	rg.o.OnRenew(shareconsumer.RenewEvent{Leader: 1, Records: []*shareconsumer.Record{r}, LockDeadline: d1.Add(time.Second)})
	lost := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 17, Reason: errors.LockInvalidRecordState}
	rg.o.OnLockLost(shareconsumer.LockLostEvent{Record: r, Running: true, Err: lost})
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Err: lost, Renews: 2})

	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	s := spans[0]
	ev := s.Events()
	require.Len(t, ev, 3)
	assert.Equal(t, "lock renewed", ev[0].Name)
	assert.Equal(t, "2030-01-02T03:04:05.000000006Z", attrMap(ev[0].Attributes)["kshare.lock.deadline"].AsString())
	assert.Equal(t, "lock renewed", ev[1].Name)
	assert.Equal(t, "2030-01-02T03:04:06.000000006Z", attrMap(ev[1].Attributes)["kshare.lock.deadline"].AsString())
	assert.Equal(t, "lock lost", ev[2].Name)
	assert.Equal(t, "invalid_record_state", attrMap(ev[2].Attributes)["kshare.lock_lost.reason"].AsString())
	assert.True(t, attrMap(ev[2].Attributes)["kshare.lock_lost.running"].AsBool())
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, lost.Error(), s.Status().Description)
	assert.Equal(t, int64(2), attrMap(s.Attributes())["kshare.renews"].AsInt64())

	// Events for a record whose span ended, or that had none, go nowhere.
	rg.o.OnRenew(shareconsumer.RenewEvent{Records: []*shareconsumer.Record{r}, LockDeadline: d1})
	rg.o.OnLockLost(shareconsumer.LockLostEvent{Record: other, Err: lost})
	assert.Len(t, rg.spans.Ended(), 1)
	assert.Len(t, rg.spans.Ended()[0].Events(), 3)
}

// TestPollReceiveSpan: one span per Poll that returned records, over Poll's own time, linked
// to each record's producer.
func TestPollReceiveSpan(t *testing.T) {
	t.Parallel()
	rg := newRig(t, kshareotel.ConsumerGroup("billing"))
	p1, h1 := rg.produceSpan(t)
	p2, h2 := rg.produceSpan(t)
	a, b, c := record(h1), record(h2), record(nil)
	b.Offset, c.Offset = 18, 19
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rg.o.OnPoll(shareconsumer.PollEvent{Start: start, Duration: 20 * time.Millisecond}) // nothing: no span
	rg.o.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{a, b, c}, Start: start, Duration: 40 * time.Millisecond})

	require.Len(t, rg.spans.Ended(), 3, "the two producer spans and one Poll's")
	spans := rg.ended("poll orders")
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
	assert.Equal(t, start, s.StartTime())
	assert.Equal(t, start.Add(40*time.Millisecond), s.EndTime())
	assert.False(t, s.Parent().IsValid(), "PollEvent carries no context: a root span")
	at := attrMap(s.Attributes())
	assert.Equal(t, "poll", at["messaging.operation.name"].AsString())
	assert.Equal(t, "receive", at["messaging.operation.type"].AsString())
	assert.Equal(t, int64(3), at["messaging.batch.message_count"].AsInt64())
	assert.Equal(t, "orders", at["messaging.destination.name"].AsString())
	assert.Equal(t, "3", at["messaging.destination.partition.id"].AsString())
	assert.Equal(t, "billing", at["messaging.consumer.group.name"].AsString())
	require.Len(t, s.Links(), 2, "the record without a trace context has no link")
	assert.Equal(t, p1.SpanID(), s.Links()[0].SpanContext.SpanID())
	assert.Equal(t, int64(17), attrMap(s.Links()[0].Attributes)["messaging.kafka.offset"].AsInt64())
	assert.Equal(t, p2.SpanID(), s.Links()[1].SpanContext.SpanID())

	// Records of two topics: no destination in the name or the attributes.
	d := record(nil)
	d.Topic = "refunds"
	rg.o.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{c, d}, Start: start, Duration: time.Millisecond})
	spans = rg.ended("poll")
	require.Len(t, spans, 1)
	assert.NotContains(t, attrMap(spans[0].Attributes()), attribute.Key("messaging.destination.name"))
	assert.NotContains(t, attrMap(spans[0].Attributes()), attribute.Key("messaging.destination.partition.id"))
}

// TestHeaderCarrier: Get reads the last header with a key; Set leaves the original array alone.
func TestHeaderCarrier(t *testing.T) {
	t.Parallel()
	backing := []kgo.RecordHeader{{Key: "traceparent", Value: []byte("a")}, {Key: "x", Value: []byte("1")}, {Key: "traceparent", Value: []byte("b")}}
	h := backing[:3:3]
	c := kshareotel.HeaderCarrier(&h)
	assert.Equal(t, "b", c.Get("traceparent"))
	assert.Equal(t, "", c.Get("missing"))
	assert.Equal(t, []string{"traceparent", "x", "traceparent"}, c.Keys())
	c.Set("traceparent", "c")
	assert.Equal(t, []kgo.RecordHeader{{Key: "x", Value: []byte("1")}, {Key: "traceparent", Value: []byte("c")}}, h)
	assert.Equal(t, "a", string(backing[0].Value), "the shared array is untouched")
}

// TestConcurrentHooks runs the hooks the way a pool of workers and the sessions do, for the
// race detector.
func TestConcurrentHooks(t *testing.T) {
	t.Parallel()
	rg := newRig(t)
	_, headers := rg.produceSpan(t)
	recs := make([]*shareconsumer.Record, 200)
	for i := range recs {
		recs[i] = record(headers)
		recs[i].Offset = int64(i)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(recs); i += 4 {
				ctx := rg.o.OnProcessStart(context.Background(), recs[i])
				rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: recs[i], Ack: acktype.Accept})
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			rg.o.OnRenew(shareconsumer.RenewEvent{Records: recs, LockDeadline: time.Now()})
			rg.o.OnLockLost(shareconsumer.LockLostEvent{Record: recs[7], Err: &errors.LockLostError{Reason: errors.LockSessionReset}})
		}
	})
	wg.Go(func() {
		for range 50 {
			rg.collect(t)
		}
	})
	wg.Wait()
	assert.Len(t, rg.ended("process orders"), len(recs))
}

// TestLockLostHookAfterTheSpanEnded: when the handler a lost lock cancelled returns before the
// lost lock's hook runs, the span gets the event when it ends, and only once.
func TestLockLostHookAfterTheSpanEnded(t *testing.T) {
	t.Parallel()
	rg := newRig(t)
	r := record(nil)
	lost := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 17, Reason: errors.LockSessionReset}
	ctx := rg.o.OnProcessStart(context.Background(), r)
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Err: lost})
	rg.o.OnLockLost(shareconsumer.LockLostEvent{Record: r, Running: true, Err: lost})
	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	ev := spans[0].Events()
	require.Len(t, ev, 1)
	assert.Equal(t, "lock lost", ev[0].Name)
	assert.Equal(t, "session_reset", attrMap(ev[0].Attributes)["kshare.lock_lost.reason"].AsString())
	assert.Equal(t, codes.Error, spans[0].Status().Code)
}

// seenSampler records the attributes each sampling decision saw and samples nothing.
type seenSampler struct {
	mu   sync.Mutex
	seen [][]attribute.KeyValue
}

func (s *seenSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, p.Attributes)
	return sdktrace.SamplingResult{Decision: sdktrace.Drop}
}

func (s *seenSampler) Description() string { return "seen" }

// TestSamplerSeesStartAttributes: a sampler is given the attributes the conventions ask for at
// a messaging span's start, for each group and topic; the record's own come after the decision.
func TestSamplerSeesStartAttributes(t *testing.T) {
	t.Parallel()
	s := &seenSampler{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o := kshareotel.New(kshareotel.TracerProvider(tp), kshareotel.ConsumerGroup("billing"))
	for _, topic := range []string{"orders", "refunds", "orders"} {
		r := record(nil)
		r.Topic = topic
		ctx := o.OnProcessStart(context.Background(), r)
		assert.False(t, trace.SpanFromContext(ctx).IsRecording())
		o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept})
	}
	require.Len(t, s.seen, 3)
	for i, topic := range []string{"orders", "refunds", "orders"} {
		a := attrMap(s.seen[i])
		assert.Equal(t, "kafka", a["messaging.system"].AsString(), topic)
		assert.Equal(t, "process", a["messaging.operation.name"].AsString(), topic)
		assert.Equal(t, "process", a["messaging.operation.type"].AsString(), topic)
		assert.Equal(t, topic, a["messaging.destination.name"].AsString())
		assert.Equal(t, "billing", a["messaging.consumer.group.name"].AsString(), topic)
	}
}

// TestDeadLetter: a produce to the dead-letter topic counts in kshare.dead_lettered.messages,
// with error.type when it failed, and is an event of the record's span.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	rg := newRig(t)
	r := record(nil)
	ctx := rg.o.OnProcessStart(context.Background(), r)
	rg.o.OnDeadLetter(shareconsumer.DeadLetterEvent{Record: r, DeadLetterTopic: "orders.dlq", Cause: stderrors.New("bad")})
	rg.o.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: r, Ack: acktype.Accept, Err: stderrors.New("bad"), DeadLettered: true})
	rg.o.OnDeadLetter(shareconsumer.DeadLetterEvent{Record: record(nil), DeadLetterTopic: "orders.dlq",
		Err: &errors.DeadLetterError{DeadLetterTopic: "orders.dlq", Err: kerr.TopicAuthorizationFailed}})

	spans := rg.ended("process orders")
	require.Len(t, spans, 1)
	var found bool
	for _, e := range spans[0].Events() {
		if e.Name == kshareotel.EventDeadLettered {
			found = true
			assert.Equal(t, "orders.dlq", attrMap(e.Attributes)[kshareotel.DeadLetterTopicKey].AsString())
		}
	}
	assert.True(t, found, "a dead lettered event")
	m := rg.collect(t)
	dl := m[kshareotel.MetricDeadLettered]
	assert.EqualValues(t, 2, sumInt(dl, nil))
	assert.EqualValues(t, 1, sumInt(dl, map[string]string{"error.type": "TOPIC_AUTHORIZATION_FAILED"}))
}

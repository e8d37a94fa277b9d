package kshareotel

import (
	"context"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
)

// kshare's own attributes, in its own namespace: the semantic conventions reserve messaging.*
// for the names they define.
const (
	// DeliveryCountKey is a record's shareconsumer.Record.DeliveryCount: 1 on its first delivery.
	DeliveryCountKey = attribute.Key("kshare.delivery_count")
	// AcknowledgeTypeKey is an acknowledgement's type: "accept", "release", "reject", "renew"
	// or "gap" (acktype.Type.String).
	AcknowledgeTypeKey = attribute.Key("kshare.acknowledge.type")
	// RenewsKey is how many times a record's lock was renewed while its handler ran
	// (shareconsumer.RecordOutcome.Renews).
	RenewsKey = attribute.Key("kshare.renews")
	// LockDeadlineKey is a renewed lock's new deadline, RFC 3339 with nanoseconds, on the
	// consumer's clock (shareconsumer.RenewEvent.LockDeadline).
	LockDeadlineKey = attribute.Key("kshare.lock.deadline")
	// LockLostReasonKey is why a lock was lost: errors.LockLostReason.String(), such as
	// "deadline_passed" or "invalid_record_state".
	LockLostReasonKey = attribute.Key("kshare.lock_lost.reason")
	// LockLostRunningKey says whether a handler had the record when its lock was lost.
	LockLostRunningKey = attribute.Key("kshare.lock_lost.running")
	// DeadLetterTopicKey is the dead-letter topic a record's copy was produced to
	// (shareconsumer.DeadLetterEvent.DeadLetterTopic).
	DeadLetterTopicKey = attribute.Key("kshare.dead_letter.topic")
)

// The span events this package adds to process spans.
const (
	EventLockRenewed = "lock renewed"
	EventLockLost    = "lock lost"
	// EventDeadLettered: the record's copy was produced to the dead-letter topic; with
	// error.type when the produce failed.
	EventDeadLettered = "dead lettered"
)

// The values of error.type this package sets on process spans and messaging.process.duration
// for a record that was not accepted.
const (
	ErrorTypeRelease  = "release"
	ErrorTypeReject   = "reject"
	ErrorTypePanic    = "panic"
	ErrorTypeLockLost = "lock_lost"
	// ErrorTypeDeadLetter: the handler failed the record and its copy went to the dead-letter
	// topic (it was then accepted).
	ErrorTypeDeadLetter = "dead_letter"
)

// OnProcessStart starts r's process span and returns ctx carrying it, for the handler. The
// attributes the semantic conventions ask for at a messaging span's start, for samplers (system,
// operation, destination, consumer group), are given to Start; the record's own (partition,
// offset, key, sizes, delivery count) are set after it, on a span that records only.
func (o *Otel) OnProcessStart(ctx context.Context, r *shareconsumer.Record) context.Context {
	st := o.starts.get(o.groupName(), r.Topic)
	opts := st.opts
	parent := ctx
	if o.linkSpans {
		if sc := o.producerSpan(r); sc.IsValid() {
			opts = append(opts[:len(opts):len(opts)], trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	} else {
		parent = o.propagator().Extract(ctx, HeaderCarrier(&r.Headers))
	}
	sctx, span := o.tracer.Start(parent, st.name, opts...)
	if span.IsRecording() {
		span.SetAttributes(recordAttrs(r)...)
		o.spans.Store(r, &recSpan{span: span})
	}
	return sctx
}

// recordAttrs returns the attributes of r a process span has besides its start's.
func recordAttrs(r *shareconsumer.Record) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		semconv.MessagingDestinationPartitionID(strconv.Itoa(int(r.Partition))),
		semconv.MessagingKafkaOffset(int(r.Offset)),
		semconv.MessagingMessageBodySize(len(r.Value)),
		DeliveryCountKey.Int(int(r.DeliveryCount)),
	)
	if r.Key != nil && utf8.Valid(r.Key) {
		attrs = append(attrs, semconv.MessagingKafkaMessageKey(string(r.Key)))
	}
	if r.Value == nil {
		attrs = append(attrs, semconv.MessagingKafkaMessageTombstone(true))
	}
	return attrs
}

// spanStart is how the process spans of one topic and group start: their name, and the span
// kind and start attributes, made once.
type spanStart struct {
	name string
	opts []trace.SpanStartOption // len == cap: append copies
}

type startKey struct{ group, topic string }

// spanStarts keeps a spanStart per group and topic processed.
type spanStarts struct {
	mu     sync.RWMutex
	starts map[startKey]*spanStart
}

// get returns the spanStart of group and topic, made on its first use.
func (c *spanStarts) get(group, topic string) *spanStart {
	k := startKey{group, topic}
	c.mu.RLock()
	st, ok := c.starts[k]
	c.mu.RUnlock()
	if ok {
		return st
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName("process"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(topic),
	}
	if group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	st = &spanStart{name: "process " + topic, opts: opts[:len(opts):len(opts)]}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starts == nil {
		c.starts = make(map[startKey]*spanStart)
	}
	c.starts[k] = st
	return st
}

// producerSpan returns the span context r's headers carry; not valid when they carry none.
func (o *Otel) producerSpan(r *shareconsumer.Record) trace.SpanContext {
	return trace.SpanContextFromContext(o.propagator().Extract(context.Background(), HeaderCarrier(&r.Headers)))
}

// OnProcessDone ends the record's process span, with an error status unless it was accepted,
// and records messaging.process.duration for a record a handler had.
func (o *Otel) OnProcessDone(ctx context.Context, out shareconsumer.RecordOutcome) {
	r := out.Record
	errType := outcomeErrorType(out)
	v, ok := o.spans.LoadAndDelete(r)
	if ok || ctx != context.Background() {
		o.m.processDuration.Record(ctx, out.HandlerTime.Seconds(), o.partOpts.get(partitionKey{
			group: o.groupName(), operation: "process", topic: r.Topic, partition: r.Partition, errorType: errType,
		}))
	}
	if !ok {
		return
	}
	rs := v.(*recSpan)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.ended = true
	span := rs.span
	var lle *errors.LockLostError
	if errType == ErrorTypeLockLost && !rs.lost && errors.As(out.Err, &lle) {
		// The lost lock's hook has not run yet: the event is added now, at the span's end.
		span.AddEvent(EventLockLost, trace.WithAttributes(LockLostReasonKey.String(lle.Reason.String()), LockLostRunningKey.Bool(true)))
	}
	attrs := []attribute.KeyValue{RenewsKey.Int(out.Renews)}
	if out.Ack != 0 {
		attrs = append(attrs, AcknowledgeTypeKey.String(out.Ack.String()))
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	span.SetAttributes(attrs...)
	if out.Err != nil && errType != ErrorTypeLockLost {
		span.RecordError(out.Err)
	}
	if errType != "" {
		desc := errType
		if out.Err != nil {
			desc = out.Err.Error()
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// outcomeErrorType returns the error.type of an outcome, "" for an accepted record.
func outcomeErrorType(out shareconsumer.RecordOutcome) string {
	if out.Ack == acktype.Accept && !out.DeadLettered {
		return "" // before pe, which errors.As makes escape: an accepted record allocates nothing here
	}
	var pe *errors.PanicError
	switch {
	case out.DeadLettered && out.Ack != 0:
		return ErrorTypeDeadLetter
	case out.Err != nil && errors.As(out.Err, &pe):
		return ErrorTypePanic
	case out.Ack == acktype.Release:
		return ErrorTypeRelease
	case out.Ack == acktype.Reject:
		return ErrorTypeReject
	}
	return ErrorTypeLockLost
}

// OnRenew adds a lock renewed event to the process span of each renewed record that has one,
// and counts the renews.
func (o *Otel) OnRenew(e shareconsumer.RenewEvent) {
	group := o.groupName()
	var deadline attribute.KeyValue
	if !e.LockDeadline.IsZero() {
		deadline = LockDeadlineKey.String(e.LockDeadline.Format(time.RFC3339Nano))
	}
	counts := make(map[shareconsumer.TopicPartition]int64)
	for _, r := range e.Records {
		counts[shareconsumer.TopicPartition{Topic: r.Topic, Partition: r.Partition}]++
		v, ok := o.spans.Load(r)
		if !ok {
			continue // no handler has it: a Poll record, or a Process record in the queue
		}
		rs := v.(*recSpan)
		rs.mu.Lock()
		if !rs.ended {
			if deadline.Valid() {
				rs.span.AddEvent(EventLockRenewed, trace.WithAttributes(deadline))
			} else {
				rs.span.AddEvent(EventLockRenewed)
			}
		}
		rs.mu.Unlock()
	}
	for tp, n := range counts {
		o.m.renewed.Add(context.Background(), n, o.partOpts.get(partitionKey{group: group, topic: tp.Topic, partition: tp.Partition}))
	}
}

// OnLockLost adds a lock lost event to the record's process span, when it has one, and sets
// the span's status to an error; and counts the loss.
func (o *Otel) OnLockLost(e shareconsumer.LockLostEvent) {
	r := e.Record
	reason := "unknown"
	desc := "acquisition lock lost"
	if e.Err != nil {
		reason = e.Err.Reason.String()
		desc = e.Err.Error()
	}
	a := partitionAttrs(o.groupName(), "", r.Topic, r.Partition)
	a = append(a, LockLostReasonKey.String(reason))
	o.m.locksLost.Add(context.Background(), 1, metricOpt(a))
	v, ok := o.spans.Load(r)
	if !ok {
		return
	}
	rs := v.(*recSpan)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.ended || rs.lost {
		return
	}
	rs.lost = true
	rs.span.AddEvent(EventLockLost, trace.WithAttributes(LockLostReasonKey.String(reason), LockLostRunningKey.Bool(e.Running)))
	rs.span.SetStatus(codes.Error, desc)
}

// OnDeadLetter counts a produce to the dead-letter topic (error.type set when it failed), and
// adds a dead lettered event to the record's process span, when it has one.
func (o *Otel) OnDeadLetter(e shareconsumer.DeadLetterEvent) {
	r := e.Record
	a := partitionAttrs(o.groupName(), "", r.Topic, r.Partition)
	event := []attribute.KeyValue{DeadLetterTopicKey.String(e.DeadLetterTopic)}
	if e.Err != nil {
		a = append(a, semconv.ErrorTypeKey.String(errorType(e.Err)))
		event = append(event, semconv.ErrorTypeKey.String(errorType(e.Err)))
	}
	o.m.deadLettered.Add(context.Background(), 1, metricOpt(a))
	v, ok := o.spans.Load(r)
	if !ok {
		return
	}
	rs := v.(*recSpan)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.ended {
		rs.span.AddEvent(EventDeadLettered, trace.WithAttributes(event...))
	}
}

// OnPoll starts and ends a receive span for a Poll that returned records, linked to each
// record's producer span.
func (o *Otel) OnPoll(e shareconsumer.PollEvent) {
	if len(e.Records) == 0 {
		return
	}
	group := o.groupName()
	var links []trace.Link // made for the first record that carries a trace context
	topic := e.Records[0].Topic
	partition := e.Records[0].Partition
	oneTopic, onePartition := true, true
	for i, r := range e.Records {
		if r.Topic != topic {
			oneTopic, onePartition = false, false
		} else if r.Partition != partition {
			onePartition = false
		}
		if sc := o.producerSpan(r); sc.IsValid() {
			if links == nil {
				links = make([]trace.Link, 0, len(e.Records)-i)
			}
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
				semconv.MessagingDestinationName(r.Topic),
				semconv.MessagingDestinationPartitionID(strconv.Itoa(int(r.Partition))),
				semconv.MessagingKafkaOffset(int(r.Offset)),
			}})
		}
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName("poll"),
		semconv.MessagingOperationTypeReceive,
		semconv.MessagingBatchMessageCount(len(e.Records)),
	}
	if group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
	}
	name := "poll"
	if oneTopic {
		name += " " + topic
		attrs = append(attrs, semconv.MessagingDestinationName(topic))
	}
	if onePartition {
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.Itoa(int(partition))))
	}
	_, span := o.tracer.Start(context.Background(), name,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(e.Start),
		trace.WithLinks(links...),
		trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

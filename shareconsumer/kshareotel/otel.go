package kshareotel

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/shareconsumer"
)

// instrumentationName names the tracer and the meter this package gets from its providers.
const instrumentationName = "github.com/kshare/kshare/shareconsumer/kshareotel"

// Opt configures an Otel.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

type cfg struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	prop      propagation.TextMapPropagator
	linkSpans bool
	group     string
}

// TracerProvider sets where spans go (default otel.GetTracerProvider(), read when New runs).
func TracerProvider(tp trace.TracerProvider) Opt { return opt(func(c *cfg) { c.tp = tp }) }

// MeterProvider sets where metrics go (default otel.GetMeterProvider(), read when New runs).
func MeterProvider(mp metric.MeterProvider) Opt { return opt(func(c *cfg) { c.mp = mp }) }

// TextMapPropagator sets how a producer's trace context is read from a record's headers. Without
// it the global propagator (otel.GetTextMapPropagator()) is used, at each record; while the
// global one propagates nothing (it is the no-op one until otel.SetTextMapPropagator is called),
// W3C Trace Context (the traceparent and tracestate headers) is read instead. A propagator given
// here is used as it is: pass propagation.NewCompositeTextMapPropagator() to read nothing.
func TextMapPropagator(p propagation.TextMapPropagator) Opt {
	return opt(func(c *cfg) { c.prop = p })
}

// LinkSpans makes the producer's span context a link of a record's process span instead of
// its parent: the process span's parent is then whatever span the handler's context carries
// (the one Process was called with), or none, and it starts a trace of its own.
func LinkSpans() Opt { return opt(func(c *cfg) { c.linkSpans = true }) }

// ConsumerGroup sets the messaging.consumer.group.name attribute. Without it the attribute is
// the consumer's group (shareconsumer.Consumer.Group), read when New gives the consumer to the
// Otel (OnNewConsumer), before it returns: measurements carry it from New on.
func ConsumerGroup(group string) Opt { return opt(func(c *cfg) { c.group = group }) }

// Otel traces and measures share consumers. Pass it to a consumer with shareconsumer.Hooks; it
// implements the hook interfaces of shareconsumer. One Otel may serve several consumers of one
// group (see the package doc for what it then reports). It starts no goroutine.
type Otel struct {
	tracer     trace.Tracer
	prop       propagation.TextMapPropagator // nil: the global one, or W3C when that is a no-op
	linkSpans  bool
	fixedGroup bool
	group      atomic.Pointer[string]

	spans  sync.Map // *shareconsumer.Record → *recSpan, from OnProcessStart to OnProcessDone
	starts spanStarts

	m        instruments
	partOpts partitionOpts
	reg      metric.Registration

	mu        sync.Mutex
	consumers map[*shareconsumer.Consumer]struct{}
	state     observed
}

// recSpan is a process span between OnProcessStart and OnProcessDone. mu orders the events
// the session goroutines add against the worker's end of the span: a lost lock's hook may run
// after the handler it cancelled returned, and the span then gets the event when it ends.
type recSpan struct {
	span trace.Span

	mu    sync.Mutex
	ended bool
	lost  bool // the lock lost event was added
}

var (
	_ shareconsumer.HookNewConsumer    = (*Otel)(nil)
	_ shareconsumer.HookConsumerClosed = (*Otel)(nil)
	_ shareconsumer.HookShareFetch     = (*Otel)(nil)
	_ shareconsumer.HookPoll           = (*Otel)(nil)
	_ shareconsumer.HookProcessStart   = (*Otel)(nil)
	_ shareconsumer.HookProcessDone    = (*Otel)(nil)
	_ shareconsumer.HookAcknowledge    = (*Otel)(nil)
	_ shareconsumer.HookRenew          = (*Otel)(nil)
	_ shareconsumer.HookLockLost       = (*Otel)(nil)
	_ shareconsumer.HookLag            = (*Otel)(nil)
	_ shareconsumer.HookDeadLetter     = (*Otel)(nil)
)

// New returns an Otel, with its instruments made on the meter provider. An instrument the
// provider refuses is reported to otel.Handle and replaced by a no-op one: New does not fail.
func New(opts ...Opt) *Otel {
	var c cfg
	for _, o := range opts {
		o.apply(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	o := &Otel{
		tracer:    c.tp.Tracer(instrumentationName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:      c.prop,
		linkSpans: c.linkSpans,
		consumers: make(map[*shareconsumer.Consumer]struct{}),
	}
	if c.group != "" {
		o.fixedGroup = true
		o.group.Store(&c.group)
	}
	meter := c.mp.Meter(instrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	o.m = newInstruments(meter)
	reg, err := meter.RegisterCallback(o.observe, o.m.held, o.m.lockTimeout, o.m.lag)
	if err != nil {
		otel.Handle(err)
	} else {
		o.reg = reg
	}
	return o
}

// propagator returns the propagator records' headers are read with.
func (o *Otel) propagator() propagation.TextMapPropagator {
	if o.prop != nil {
		return o.prop
	}
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return propagation.TraceContext{}
}

// Extract returns ctx with the trace context (and baggage, when the propagator carries it)
// that r's headers hold, read as the process span's parent is. For Poll, where the application
// starts its own processing spans: trace.SpanContextFromContext(o.Extract(ctx, r)) is the
// producer's span context, not valid when r carries none.
func (o *Otel) Extract(ctx context.Context, r *shareconsumer.Record) context.Context {
	return o.propagator().Extract(ctx, HeaderCarrier(&r.Headers))
}

// groupName returns the consumer group, "" while unknown.
func (o *Otel) groupName() string {
	if g := o.group.Load(); g != nil {
		return *g
	}
	return ""
}

// OnNewConsumer registers c, whose held records (Status().Held) the kshare.held.messages
// metric reads, and takes c's group for messaging.consumer.group.name, unless ConsumerGroup set
// it.
func (o *Otel) OnNewConsumer(c *shareconsumer.Consumer) {
	if g := c.Group(); !o.fixedGroup && g != "" {
		o.group.Store(&g)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.consumers[c] = struct{}{}
}

// OnConsumerClosed forgets c. When no consumer is left it also forgets what the gauges report
// (the lock timeout, the lag).
func (o *Otel) OnConsumerClosed(c *shareconsumer.Consumer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.consumers, c)
	if len(o.consumers) == 0 {
		o.state = observed{}
	}
}

package kshareotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/shareconsumer/kshareotel"
)

// rig is an Otel with a span recorder and a manual metric reader.
type rig struct {
	o      *kshareotel.Otel
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider // also the "producer's" provider
}

func newRig(t *testing.T, opts ...kshareotel.Opt) *rig {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	o := kshareotel.New(append([]kshareotel.Opt{kshareotel.TracerProvider(tp), kshareotel.MeterProvider(mp)}, opts...)...)
	return &rig{o: o, spans: sr, reader: reader, tp: tp}
}

// produceSpan starts and ends a producer span and returns it with headers carrying it in W3C
// form.
func (r *rig) produceSpan(t *testing.T) (trace.SpanContext, []kgo.RecordHeader) {
	t.Helper()
	ctx, span := r.tp.Tracer("producer").Start(context.Background(), "send orders", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	headers := []kgo.RecordHeader{{Key: "app", Value: []byte("x")}}
	propagation.TraceContext{}.Inject(ctx, kshareotel.HeaderCarrier(&headers))
	return span.SpanContext(), headers
}

// ended returns the ended spans named name.
func (r *rig) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// collect reads every metric.
func (r *rig) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// matches reports whether set holds every attribute of want ("" values must be absent).
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if v == "" {
			if ok {
				return false
			}
			continue
		}
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

// sumInt returns the sum of the int64 sum or gauge points of m whose attributes match want.
func sumInt(m metricdata.Metrics, want map[string]string) int64 {
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	}
	return n
}

// histCount returns the count and sum of the histogram points of m whose attributes match want.
func histCount(m metricdata.Metrics, want map[string]string) (uint64, float64) {
	var n uint64
	var sum float64
	if d, ok := m.Data.(metricdata.Histogram[float64]); ok {
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Count
				sum += p.Sum
			}
		}
	}
	return n, sum
}

package kshareotel_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/kshare/kshare/internal/benchhooks"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
)

// BenchmarkOtel is shareconsumer's BenchmarkHooks with the real hook: the same workloads
// (internal/benchhooks) without hooks and with an Otel per consumer on the SDK's providers: a
// TracerProvider whose spans go to a processor that drops them (sampler AlwaysSample, or
// NeverSample), and a MeterProvider with a ManualReader that is never read. It reports
// allocations, bytes and time per record. Run it with
//
//	go test github.com/kshare/kshare/shareconsumer/kshareotel/... -run '^$' -bench . -benchtime 1x -count 5
func BenchmarkOtel(b *testing.B) {
	otelHooks := func(s sdktrace.Sampler) func() []shareconsumer.Opt {
		return func() []shareconsumer.Opt {
			tracers := sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithSpanProcessor(dropSpans{}))
			meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			o := kshareotel.New(kshareotel.TracerProvider(tracers), kshareotel.MeterProvider(meters))
			return []shareconsumer.Opt{shareconsumer.Hooks(o)}
		}
	}
	benchhooks.Run(b, kshareRoot(b),
		benchhooks.Case{Name: "none"},
		benchhooks.Case{Name: "otel-always", Hooks: otelHooks(sdktrace.AlwaysSample())},
		benchhooks.Case{Name: "otel-never", Hooks: otelHooks(sdktrace.NeverSample())},
	)
}

// kshareRoot is the kshare module's directory, two levels up from this module's.
func kshareRoot(b *testing.B) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := brokerproc.ModuleRoot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(root, "..", "..")
}

// dropSpans is a span processor that drops every span: the SDK's work for a sampled span
// (recording it, and the snapshot End hands to processors) without an exporter's.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

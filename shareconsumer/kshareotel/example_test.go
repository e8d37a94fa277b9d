package kshareotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
	"github.com/kshare/kshare/testbroker"
)

// A record produced inside a span is processed in a span of the same trace, whose parent is the
// producer's span; the handler's context carries the process span.
func Example() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer c.Close()
	if err := c.SetGroupConfig("billing", "share.auto.offset.reset", "earliest"); err != nil {
		panic(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The producer injects its span's context into the record's headers.
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	sendCtx, send := tp.Tracer("producer").Start(ctx, "send orders", trace.WithSpanKind(trace.SpanKindProducer))
	r := kgo.StringRecord("order-1")
	r.Topic = "orders"
	propagation.TraceContext{}.Inject(sendCtx, kshareotel.HeaderCarrier(&r.Headers))
	if err := producer.ProduceSync(sendCtx, r).FirstErr(); err != nil {
		panic(err)
	}
	send.End()

	o := kshareotel.New(kshareotel.TracerProvider(tp), kshareotel.MeterProvider(mp))
	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...)),
		shareconsumer.Group("billing"),
		shareconsumer.Topics("orders"),
		shareconsumer.Hooks(o),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	pctx, stop := context.WithCancel(ctx)
	defer stop()
	err = consumer.Process(pctx, func(ctx context.Context, r *shareconsumer.Record) error {
		fmt.Println("handler in the process span:", trace.SpanFromContext(ctx).SpanContext().IsValid())
		return nil
	}, shareconsumer.OnRecordDone(func(shareconsumer.RecordOutcome) { stop() }))
	if err != nil {
		panic(err)
	}

	for _, s := range spans.Ended() {
		if s.SpanKind() == trace.SpanKindConsumer {
			fmt.Println(s.Name(), "child of the producer:", s.Parent().SpanID() == send.SpanContext().SpanID())
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "messaging.client.consumed.messages" {
				for _, p := range sum.DataPoints {
					fmt.Println(m.Name, p.Value)
				}
			}
		}
	}
	// Output:
	// handler in the process span: true
	// process orders child of the producer: true
	// messaging.client.consumed.messages 1
}

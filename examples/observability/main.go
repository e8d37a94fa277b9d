// Command observability runs a share consumer's records through Consumer.Process with both of
// kshare's plugins: kshareotel traces each record in a `process` span that continues the
// producer's trace, and kshareprom serves the consumer's metrics on /metrics for Prometheus.
//
// It produces -records records, each inside a producer span whose context travels in the
// record's traceparent header, then processes them with a handler that accepts most, fails the
// first delivery of every fifth (released, delivered again, then accepted), rejects every
// tenth, and works on the first longer than its lock, so that Process renews it (a span event).
// Spans are printed by OpenTelemetry's stdout exporter as they end, one JSON object a line.
// When every record is done it scrapes its own /metrics and prints kshare's series, then exits;
// with -serve it goes on serving /metrics until interrupted. Without -brokers it starts an
// embedded testbroker, so it runs anywhere:
//
//	go run ./examples/observability
//	go run ./examples/observability -spans=false            # the metrics only
//	go run ./examples/observability -serve -metrics-addr 127.0.0.1:9464
//	go run ./examples/observability -brokers 127.0.0.1:9092 -lock-ms 15000 -slow 20s
//
// It is a Go module of its own (so that kshare's core needs neither OpenTelemetry nor
// Prometheus); from the repository's root, go.work makes `go run ./examples/observability`
// work as it is. Against a Kafka cluster the lock (-lock-ms) cannot go below the brokers'
// group.share.min.record.lock.duration.ms (15 s by default), and the group keeps its state
// between runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareotel"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
	"github.com/kshare/kshare/testbroker"
)

// config is what the flags set.
type config struct {
	brokers     string // empty starts an embedded testbroker
	topic       string
	group       string
	records     int
	workers     int
	lockMs      int           // the group's share.record.lock.duration.ms
	slow        time.Duration // how long the handler works on the first record
	metricsAddr string        // where /metrics is served; port 0 picks one
	spans       bool          // print the spans
	serve       bool          // go on serving /metrics after the run
}

func main() {
	var cfg config
	flag.StringVar(&cfg.brokers, "brokers", "", "comma-separated seed brokers; empty starts an embedded testbroker")
	flag.StringVar(&cfg.topic, "topic", "observability", "topic to produce to and consume from")
	flag.StringVar(&cfg.group, "group", "observability", "share group to consume in")
	flag.IntVar(&cfg.records, "records", 10, "records to produce")
	flag.IntVar(&cfg.workers, "workers", 4, "handlers running at once")
	flag.IntVar(&cfg.lockMs, "lock-ms", 1000, "the group's share.record.lock.duration.ms")
	flag.DurationVar(&cfg.slow, "slow", 2500*time.Millisecond, "how long the handler works on the first record (past its lock: renewed)")
	flag.StringVar(&cfg.metricsAddr, "metrics-addr", "127.0.0.1:0", "address to serve /metrics on; port 0 picks a free one")
	flag.BoolVar(&cfg.spans, "spans", true, "print the spans (stdout exporter, one JSON object a line)")
	flag.BoolVar(&cfg.serve, "serve", false, "after the run, go on serving /metrics until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runCtx, cancel := context.WithTimeout(ctx, time.Minute+2*cfg.slow)
	defer cancel()
	err := run(runCtx, os.Stdout, cfg, func(metricsURL string) error {
		text, err := scrape(runCtx, metricsURL)
		if err != nil {
			return err
		}
		fmt.Printf("\nkshare's series on %s:\n", metricsURL)
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "kshare_") && !strings.Contains(l, "_bucket{") {
				fmt.Println(l)
			}
		}
		if cfg.serve {
			fmt.Printf("serving %s until interrupted\n", metricsURL)
			<-ctx.Done()
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

// run produces and processes the records, writing its report and the spans to w, then calls
// scraped with the URL of /metrics while it is still served.
func run(ctx context.Context, w io.Writer, cfg config, scraped func(metricsURL string) error) error {
	seeds := strings.Split(cfg.brokers, ",")
	if cfg.brokers == "" {
		// Kafka's brokers refuse group lock durations under 15 s unless told otherwise.
		c, err := testbroker.Start(testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"))
		if err != nil {
			return err
		}
		defer c.Close()
		seeds = c.Addrs()
		fmt.Fprintf(w, "started an embedded testbroker: %s\n", strings.Join(seeds, ","))
	}

	// One tracer provider for both sides here; in production the producer is another service.
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(spanWriter(w, cfg.spans)))
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "examples/observability"))))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	propagator := propagation.TraceContext{}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(cfg.topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := setUp(ctx, cl, cfg); err != nil {
		return err
	}
	tracer := tp.Tracer("examples/observability/producer")
	for i := range cfg.records {
		sendCtx, span := tracer.Start(ctx, "send "+cfg.topic, trace.WithSpanKind(trace.SpanKindProducer))
		r := &kgo.Record{Value: []byte("job " + strconv.Itoa(i))}
		propagator.Inject(sendCtx, kshareotel.HeaderCarrier(&r.Headers))
		err := cl.ProduceSync(sendCtx, r).FirstErr()
		span.End()
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "produced %d records to %s, each in a producer span; lock %v\n",
		cfg.records, cfg.topic, time.Duration(cfg.lockMs)*time.Millisecond)

	metrics := kshareprom.New("kshare")
	ln, err := net.Listen("tcp", cfg.metricsAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	metricsURL := "http://" + ln.Addr().String() + "/metrics"
	fmt.Fprintf(w, "serving %s\n", metricsURL)

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...)),
		shareconsumer.Group(cfg.group),
		shareconsumer.Topics(cfg.topic),
		shareconsumer.Hooks(
			kshareotel.New(kshareotel.TracerProvider(tp), kshareotel.TextMapPropagator(propagator)),
			metrics,
		),
		shareconsumer.LagInterval(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer consumer.Close(context.Background())

	// Process runs until every record is finally accepted or rejected.
	pctx, done := context.WithCancel(ctx)
	defer done()
	var left atomic.Int64
	left.Store(int64(cfg.records))
	handle := func(hctx context.Context, r *shareconsumer.Record) error {
		n, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "job "))
		switch {
		case n == 0 && r.DeliveryCount == 1:
			// Longer than the lock: Process renews it while the handler works.
			select {
			case <-time.After(cfg.slow):
			case <-hctx.Done():
				return context.Cause(hctx)
			}
		case n%10 == 9:
			return errors.Reject(fmt.Errorf("job %d cannot be done", n))
		case n%5 == 2 && r.DeliveryCount == 1:
			return fmt.Errorf("job %d failed once", n) // released: delivered again
		}
		return nil
	}
	err = consumer.Process(pctx, handle, shareconsumer.Workers(cfg.workers),
		shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			if o.Ack == acktype.Accept || o.Ack == acktype.Reject {
				if left.Add(-1) == 0 {
					done()
				}
			}
		}))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "processed: %s\n", consumer.ProcessStats())
	lag, err := consumer.Lag(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the group's lag now: %d records\n", lag.Total)
	return scraped(metricsURL)
}

// setUp creates the topic and sets the group's configs before the group exists, as
// kafka-configs.sh --entity-type groups does: one IncrementalAlterConfigs on a GROUP resource.
func setUp(ctx context.Context, cl *kgo.Client, cfg config) error {
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, cfg.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", cfg.topic, err)
	}
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, cfg.group
	for _, kv := range [][2]string{
		{"share.auto.offset.reset", "earliest"},
		{"share.record.lock.duration.ms", strconv.Itoa(cfg.lockMs)},
	} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[0], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, c)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)
	alter, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("setting group %s's configs: %w", cfg.group, err)
	}
	for _, r := range alter.Resources {
		if err := errors.FromKafka(r.ErrorCode, r.ErrorMessage); err != nil {
			return fmt.Errorf("setting group %s's configs: %w", cfg.group, err)
		}
	}
	return nil
}

// spanWriter is where the exporter prints spans: w, or nowhere.
func spanWriter(w io.Writer, spans bool) io.Writer {
	if spans {
		return w
	}
	return io.Discard
}

// scrape fetches the text Prometheus would.
func scrape(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

package kshareprom_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
	"github.com/kshare/kshare/testbroker"
)

// The Metrics are passed to the consumer as a hook; Handler serves them for Prometheus to
// scrape. Here Process accepts three records, and the example prints what /metrics says of
// them.
func Example() {
	tb := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer tb.Close()
	if err := tb.SetGroupConfig("order-workers", "share.auto.offset.reset", "earliest"); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	for _, v := range []string{"order-1", "order-2", "order-3"} {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			panic(err)
		}
	}

	m := kshareprom.New("kshare", kshareprom.ConstLabels(prometheus.Labels{"group": "order-workers"}))
	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...)),
		shareconsumer.Group("order-workers"),
		shareconsumer.Topics("orders"),
		shareconsumer.Hooks(m),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Int32
	err = consumer.Process(runCtx, func(context.Context, *shareconsumer.Record) error {
		return nil // accept
	}, shareconsumer.OnRecordDone(func(shareconsumer.RecordOutcome) {
		if done.Add(1) == 3 {
			stop()
		}
	}))
	if err != nil {
		panic(err)
	}

	// In a program: http.Handle("/metrics", m.Handler()).
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "kshare_processed_records_total") || strings.HasPrefix(l, "kshare_fetch_records_total") {
			fmt.Println(l)
		}
	}
	// Output:
	// kshare_fetch_records_total{group="order-workers",partition="0",topic="orders"} 3
	// kshare_processed_records_total{group="order-workers",outcome="accept",topic="orders"} 3
	// kshare_processed_records_total{group="order-workers",outcome="lost",topic="orders"} 0
	// kshare_processed_records_total{group="order-workers",outcome="reject",topic="orders"} 0
	// kshare_processed_records_total{group="order-workers",outcome="release",topic="orders"} 0
}

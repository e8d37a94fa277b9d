// Command workerpool runs a share consumer's records through Consumer.Process, a pool of
// workers whose handlers take three times as long as a record's acquisition lock. With
// automatic renewal (KIP-1222) every record is accepted on its first delivery: Process renews
// the locks of the records its handlers work on, and of those waiting for a worker, before
// they run out. For comparison, a first run does the same work with renewal off
// (NoRenewal): each handler's context ends at its record's lock deadline, nothing is
// acknowledged, and the broker delivers the record again, until the group's delivery limit
// archives it.
//
// It sets the group's share.record.lock.duration.ms to 1 s, works 3 s on each of 20 records
// with 10 workers, and prints a summary of each run followed by its ProcessStats, as key=value
// pairs; the last line is the stats of the run with renewal. Without -brokers it starts an
// embedded testbroker first, so it runs anywhere:
//
//	go run ./examples/workerpool                  # renewal off, then renewal on
//	go run ./examples/workerpool -compare=false   # only the run with renewal
//	go run ./examples/workerpool -renew=false     # only the run without renewal
//	go run ./examples/workerpool -kafka41         # the embedded testbroker speaks Kafka 4.1: no RENEW
//	go run ./examples/workerpool -brokers 127.0.0.1:9092 -lock-ms 15000 -work 45s
//
// A Kafka cluster needs 4.2 or later for renewal, and accepts a lock shorter than 15 s only
// when its brokers lower group.share.min.record.lock.duration.ms. The groups it uses
// (workerpool-norenew and workerpool-renew) keep their state between runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// config is what the flags set.
type config struct {
	brokers       string // empty starts an embedded testbroker
	kafka41       bool   // the embedded testbroker speaks Kafka 4.1
	topic         string
	records       int
	workers       int
	lockMs        int           // the groups' share.record.lock.duration.ms
	deliveryLimit int           // the groups' share.delivery.count.limit
	work          time.Duration // how long a handler works on one record
	renew         bool          // false: only the run without renewal
	compare       bool          // with renew: run without renewal first
}

func main() {
	var cfg config
	flag.StringVar(&cfg.brokers, "brokers", "", "comma-separated seed brokers; empty starts an embedded testbroker")
	flag.BoolVar(&cfg.kafka41, "kafka41", false, "make the embedded testbroker speak Kafka 4.1 (no RENEW)")
	flag.StringVar(&cfg.topic, "topic", "workerpool", "topic to produce to and consume from")
	flag.IntVar(&cfg.records, "records", 20, "records to produce")
	flag.IntVar(&cfg.workers, "workers", 10, "handlers running at once")
	flag.IntVar(&cfg.lockMs, "lock-ms", 1000, "the groups' share.record.lock.duration.ms")
	flag.IntVar(&cfg.deliveryLimit, "delivery-limit", 3, "the groups' share.delivery.count.limit (2 to 10)")
	flag.DurationVar(&cfg.work, "work", 3*time.Second, "time a handler works on one record")
	flag.BoolVar(&cfg.renew, "renew", true, "run with automatic renewal; false runs only without it")
	flag.BoolVar(&cfg.compare, "compare", true, "before the run with renewal, run the same work without it")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+10*cfg.work)
	defer cancel()
	if err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "workerpool:", err)
		os.Exit(1)
	}
}

// run writes its report to w, so that the test can read it.
func run(ctx context.Context, w io.Writer, cfg config) error {
	seeds := strings.Split(cfg.brokers, ",")
	if cfg.brokers == "" {
		// Kafka's brokers refuse group lock durations under 15 s unless told otherwise.
		opts := []testbroker.Opt{testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000")}
		if cfg.kafka41 {
			opts = append(opts, testbroker.Kafka41())
		}
		c, err := testbroker.Start(opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		seeds = c.Addrs()
		version := "4.2"
		if cfg.kafka41 {
			version = "4.1"
		}
		fmt.Fprintf(w, "started an embedded testbroker (Kafka %s): %s\n", version, strings.Join(seeds, ","))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(cfg.topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, cfg.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", cfg.topic, err)
	}

	type pass struct {
		name, group string
		renew       bool
	}
	var passes []pass
	if !cfg.renew || cfg.compare {
		passes = append(passes, pass{"renewal off (NoRenewal)", "workerpool-norenew", false})
	}
	if cfg.renew {
		name := "automatic renewal"
		if cfg.kafka41 && cfg.brokers == "" {
			name += ", which a Kafka 4.1 leader cannot do"
		}
		passes = append(passes, pass{name, "workerpool-renew", true})
	}
	// Each run reads every record through a group of its own, set up before it exists.
	for _, p := range passes {
		if err := groupconfig.Set(ctx, cl, p.group,
			"share.auto.offset.reset", "earliest",
			"share.record.lock.duration.ms", strconv.Itoa(cfg.lockMs),
			"share.delivery.count.limit", strconv.Itoa(cfg.deliveryLimit)); err != nil {
			return err
		}
	}

	for i := range cfg.records {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("job %d", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "produced %d records to %s; lock %v, work %v per record, %d workers, delivery limit %d\n",
		cfg.records, cfg.topic, time.Duration(cfg.lockMs)*time.Millisecond, cfg.work, cfg.workers, cfg.deliveryLimit)

	for i, p := range passes {
		fmt.Fprintf(w, "\n== run %d of %d: %s, group %s\n", i+1, len(passes), p.name, p.group)
		if err := runPool(ctx, w, cfg, seeds, p.group, p.renew); err != nil {
			return fmt.Errorf("run %d (%s): %w", i+1, p.name, err)
		}
	}
	return nil
}

// runPool consumes the topic through group with Process until every record is settled:
// acknowledged, or lost on its last delivery the group allows. It prints a summary, then the
// consumer's ProcessStats.
func runPool(ctx context.Context, w io.Writer, cfg config, seeds []string, group string, renew bool) error {
	c, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(cfg.topic),
	)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())

	// The handler stands for work that takes cfg.work. It stops when its context ends: then
	// the record is no longer this consumer's (context.Cause says why), and whatever it
	// returns is not acknowledged.
	handler := func(ctx context.Context, r *shareconsumer.Record) error {
		t := time.NewTimer(cfg.work)
		defer t.Stop()
		select {
		case <-t.C:
			return nil // accepted
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}

	// OnRecordDone sees every record a handler finished and every lock lost, from several
	// goroutines at once. Process stops once each record is settled.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu           sync.Mutex
		settled      = map[int64]bool{} // by offset: the topic has one partition
		accepted     int
		lastLost     int // locks lost on the last delivery allowed: the broker archives those
		firstAttempt int // records accepted on their first delivery
	)
	done := func(o shareconsumer.RecordOutcome) {
		mu.Lock()
		defer mu.Unlock()
		final := o.Ack != 0 || int(o.Record.DeliveryCount) >= cfg.deliveryLimit
		if !final || settled[o.Record.Offset] {
			return
		}
		settled[o.Record.Offset] = true
		switch {
		case o.Ack != 0 && o.Err == nil:
			accepted++
			if o.Record.DeliveryCount == 1 {
				firstAttempt++
			}
		case o.Ack == 0:
			lastLost++
		}
		if len(settled) == cfg.records {
			stop()
		}
	}

	opts := []shareconsumer.ProcessOpt{shareconsumer.Workers(cfg.workers), shareconsumer.OnRecordDone(done)}
	if !renew {
		opts = append(opts, shareconsumer.NoRenewal())
	}
	start := time.Now()
	// Process returns nil once runCtx ends, after it has committed every acknowledgement.
	if err := c.Process(runCtx, handler, opts...); err != nil {
		return err
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	if err := c.Close(ctx); err != nil {
		return err
	}

	mu.Lock()
	defer mu.Unlock()
	stats := c.ProcessStats()
	fmt.Fprintf(w, "%d of %d records accepted in %v", accepted, cfg.records, took)
	if accepted > 0 {
		fmt.Fprintf(w, ", %d on their first delivery", firstAttempt)
	}
	fmt.Fprintln(w)
	if stats.Redeliveries > 0 {
		fmt.Fprintf(w, "%d redeliveries: a lock ran out while its handler still worked, and the broker delivered the record again\n", stats.Redeliveries)
	}
	if lastLost > 0 {
		fmt.Fprintf(w, "%d records lost their lock on delivery %d, the group's limit: the broker archives them unprocessed\n", lastLost, cfg.deliveryLimit)
	}
	fmt.Fprintln(w, stats.String())
	if len(settled) < cfg.records {
		return fmt.Errorf("stopped with %d of %d records settled: %w", len(settled), cfg.records, ctx.Err())
	}
	return nil
}

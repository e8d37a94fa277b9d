// Command renew shows the manual renew loop of KIP-1222: a share consumer whose work on a
// record takes longer than the record's acquisition lock keeps the record by renewing the lock,
// with Acknowledge(r, acktype.Renew), whenever less than a quarter of the lock duration
// (AcquisitionLockTimeoutMs) is left on r.LockDeadline, and accepts it once the work is done.
// No record is delivered twice, although each takes twice as long as its lock.
//
// It sets the group's share.record.lock.duration.ms to 2 s and works 4 s on every record, in
// parallel. Without -brokers it starts an embedded testbroker first, so it runs anywhere:
//
//	go run ./examples/renew
//	go run ./examples/renew -brokers 127.0.0.1:9092 -records 20 -lock-ms 15000 -work 40s
//
// A Kafka cluster needs 4.2 or later (RENEW), and accepts a lock shorter than 15 s only when its
// brokers lower group.share.min.record.lock.duration.ms.
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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// config is what the flags set.
type config struct {
	brokers string // empty starts an embedded testbroker
	topic   string
	records int
	lockMs  int           // the group's share.record.lock.duration.ms
	work    time.Duration // how long processing one record takes
}

func main() {
	var cfg config
	flag.StringVar(&cfg.brokers, "brokers", "", "comma-separated seed brokers; empty starts an embedded testbroker")
	flag.StringVar(&cfg.topic, "topic", "renew", "topic to produce to and consume from")
	flag.IntVar(&cfg.records, "records", 10, "records to produce")
	flag.IntVar(&cfg.lockMs, "lock-ms", 2000, "the group's share.record.lock.duration.ms")
	flag.DurationVar(&cfg.work, "work", 4*time.Second, "time the work on one record takes")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+cfg.work)
	defer cancel()
	if err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "renew:", err)
		os.Exit(1)
	}
}

// run writes its report to w, so that the test can read it.
func run(ctx context.Context, w io.Writer, cfg config) error {
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
	const group = "renew"

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(cfg.topic))
	if err != nil {
		return err
	}
	defer cl.Close()

	// One partition keeps the report in offset order.
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, cfg.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", cfg.topic, err)
	}
	if err := groupconfig.Set(ctx, cl, group,
		"share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", strconv.Itoa(cfg.lockMs)); err != nil {
		return err
	}

	for i := range cfg.records {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("job %d", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "produced %d records to %s\n", cfg.records, cfg.topic)

	c, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(cfg.topic),
		shareconsumer.ExplicitAcknowledgement(),
	)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())

	jobs := map[*shareconsumer.Record]*job{}
	var shownMs int32
	accepted, renews, redeliveries := 0, 0, 0
	for accepted < cfg.records {
		recs, err := c.Poll(ctx)
		if err != nil {
			return err
		}
		lockMs, ok := c.AcquisitionLockTimeoutMs()
		if !ok {
			return errors.New("the broker reports no lock duration: RENEW needs Kafka 4.2 or later")
		}
		if lockMs != shownMs {
			fmt.Fprintf(w, "lock duration: %d ms\n", lockMs)
			shownMs = lockMs
		}

		for _, r := range recs {
			if jobs[r] != nil {
				continue // renewed: the same *Record, its LockDeadline moved on
			}
			if r.DeliveryCount > 1 {
				redeliveries++ // a lock ran out before its renew reached the broker
			}
			j := &job{done: make(chan struct{})}
			jobs[r] = j
			// The work is a sleep here. It must not read r (copy what it needs first): from a
			// renew until the Poll that returns r again, r belongs to the consumer.
			go func() {
				defer close(j.done)
				time.Sleep(cfg.work)
			}()
		}

		// Explicit mode wants every record of this Poll acknowledged before the next Poll: wait
		// until the work on all of them is done or a lock is about to run out, then accept
		// what is done and renew the rest.
		margin := time.Duration(lockMs) * time.Millisecond / 4
		if err := waitForWork(ctx, recs, jobs, margin); err != nil {
			return err
		}
		for _, r := range recs {
			j := jobs[r]
			select {
			case <-j.done:
				if err := c.Acknowledge(r, acktype.Accept); err != nil {
					return err
				}
				delete(jobs, r)
				accepted++
				fmt.Fprintf(w, "offset %d: renews=%d, accepted\n", r.Offset, j.renews)
			default:
				// The next Poll sends the renew and returns r once the broker has renewed the
				// lock. A renew that fails (the lock ran out first) is reported to
				// OnAcknowledgementCommit instead, and the broker delivers the record anew.
				if err := c.Acknowledge(r, acktype.Renew); err != nil {
					return fmt.Errorf("renewing offset %d: %w", r.Offset, err)
				}
				j.renews++
				renews++
			}
		}
	}
	results, err := c.CommitSync(ctx)
	if err != nil {
		return err
	}
	for tp, err := range results {
		if err != nil {
			return fmt.Errorf("acknowledging %s: %w", tp, err)
		}
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "records=%d accepted=%d renews=%d redeliveries=%d\n", cfg.records, accepted, renews, redeliveries)
	return nil
}

// job is the work on one record. It runs on its own goroutine and spans several Polls, each
// of which returns the record again, renewed, until the work is done.
type job struct {
	done   chan struct{} // closed when the work is done
	renews int
}

// waitForWork waits until the work on every record of recs is done, or until the first of
// their locks has less than margin left.
func waitForWork(ctx context.Context, recs []*shareconsumer.Record, jobs map[*shareconsumer.Record]*job, margin time.Duration) error {
	renewAt := recs[0].LockDeadline
	for _, r := range recs[1:] {
		if r.LockDeadline.Before(renewAt) {
			renewAt = r.LockDeadline
		}
	}
	t := time.NewTimer(time.Until(renewAt.Add(-margin)))
	defer t.Stop()
	for _, r := range recs {
		select {
		case <-jobs[r].done:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

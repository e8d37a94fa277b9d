// Command quickstart produces records to a topic and reads them back through a share group
// with kshare's share consumer, accepting each record explicitly and renewing the lock of every
// 100th once before accepting it. Without -brokers it starts an embedded testbroker cluster
// first, so it runs anywhere with nothing else installed:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -brokers 127.0.0.1:9092 -topic orders
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers; empty starts an embedded testbroker")
	topic := flag.String("topic", "quickstart", "topic to produce to and consume from")
	n := flag.Int("records", 1000, "records to produce")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *brokers, *topic, *n); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run writes its report to w, so that the test can read it.
func run(ctx context.Context, w io.Writer, brokers, topic string, n int) error {
	seeds := strings.Split(brokers, ",")
	if brokers == "" {
		c, err := testbroker.Start(testbroker.NumBrokers(3))
		if err != nil {
			return err
		}
		defer c.Close()
		seeds = c.Addrs()
		fmt.Fprintf(w, "started an embedded testbroker cluster: %s\n", strings.Join(seeds, ","))
	}
	const group = "quickstart"

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()

	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	// A share group starts at the end of the log unless told otherwise; this one reads what is
	// produced before it first fetches.
	if err := groupconfig.Set(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		return err
	}

	start := time.Now()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i%10)), Value: []byte(fmt.Sprintf("record %d", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "produced %d records to %s in %v\n", n, topic, time.Since(start).Round(time.Millisecond))

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(topic),
		shareconsumer.ExplicitAcknowledgement(),
	)
	if err != nil {
		return err
	}
	defer consumer.Close(context.Background())

	// Every 100th record stands for slow work: the first time it comes, it is renewed (KIP-1222,
	// "I need more time"), and a later Poll returns it again, its lock renewed; then it is
	// accepted. A leader older than Kafka 4.2 refuses the renew up front, and the record is
	// accepted at once.
	start = time.Now()
	perPartition := map[int32]int{}
	read, renewed, returned, refused := 0, 0, 0, 0
	pending := map[*shareconsumer.Record]bool{}
	for read < n {
		recs, err := consumer.Poll(ctx)
		if err != nil {
			return fmt.Errorf("after %d records: %w", read, err)
		}
		for _, r := range recs {
			if pending[r] {
				delete(pending, r)
				returned++
			} else if r.Offset%100 == 0 {
				switch err := consumer.Acknowledge(r, acktype.Renew); {
				case err == nil:
					pending[r] = true
					renewed++
					continue
				case errors.Is(err, errors.ErrUnsupportedAcknowledgeType):
					refused++
				default:
					return err
				}
			}
			if err := consumer.Acknowledge(r, acktype.Accept); err != nil {
				return err
			}
			perPartition[r.Partition]++
			read++
		}
	}
	results, err := consumer.CommitSync(ctx)
	if err != nil {
		return err
	}
	for tp, err := range results {
		if err != nil {
			return fmt.Errorf("acknowledging %s: %w", tp, err)
		}
	}
	fmt.Fprintf(w, "consumed %d records through share group %s in %v: %d, %d and %d per partition\n",
		read, group, time.Since(start).Round(time.Millisecond), perPartition[0], perPartition[1], perPartition[2])
	fmt.Fprintf(w, "renewed %d records once; %d came back from a later Poll and were accepted", renewed, returned)
	if refused > 0 {
		fmt.Fprintf(w, "; %d renews refused up front (leader older than Kafka 4.2)", refused)
	}
	fmt.Fprintln(w)
	if err := consumer.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintln(w, "acknowledged every record and left the group")
	return nil
}

// Command quickstart produces records to a topic and reads them back with franz-go. Without
// -brokers it starts an embedded testbroker cluster first, so it runs anywhere with nothing
// else installed:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -brokers 127.0.0.1:9092 -topic orders
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers; empty starts an embedded testbroker")
	topic := flag.String("topic", "quickstart", "topic to produce to and consume from")
	n := flag.Int("records", 1000, "records to produce")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *brokers, *topic, *n); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, brokers, topic string, n int) error {
	seeds := strings.Split(brokers, ",")
	if brokers == "" {
		c, err := testbroker.Start(testbroker.NumBrokers(3))
		if err != nil {
			return err
		}
		defer c.Close()
		seeds = c.Addrs()
		fmt.Printf("started an embedded testbroker cluster: %s\n", strings.Join(seeds, ","))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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

	start := time.Now()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i%10)), Value: []byte(fmt.Sprintf("record %d", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	fmt.Printf("produced %d records to %s in %v\n", n, topic, time.Since(start).Round(time.Millisecond))

	perPartition := map[int32]int{}
	read := 0
	for read < n {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			perPartition[r.Partition]++
			read++
		})
	}
	fmt.Printf("consumed %d records: %d, %d and %d per partition\n", read, perPartition[0], perPartition[1], perPartition[2])
	return nil
}

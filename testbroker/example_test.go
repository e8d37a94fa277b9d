package testbroker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

func ExampleStart() {
	c := testbroker.MustStart(testbroker.NumBrokers(3), testbroker.Topic("orders", 1))
	defer c.Close()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Addrs()...),
		kgo.DefaultProduceTopic("orders"),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		panic(err)
	}
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range []string{"order-1", "order-2"} {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			panic(err)
		}
	}
	for read := 0; read < 2; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			fmt.Printf("%s at offset %d\n", r.Value, r.Offset)
			read++
		})
	}
	p, _ := c.Partition("orders", 0)
	fmt.Println("high watermark:", p.HighWatermark)
	// Output:
	// order-1 at offset 0
	// order-2 at offset 1
	// high watermark: 2
}

func ExampleCluster_ManualClock() {
	c := testbroker.MustStart(testbroker.WithManualClock(time.Unix(0, 0)))
	defer c.Close()

	clk := c.ManualClock()
	fired := false
	clk.AfterFunc(time.Second, func() { fired = true })
	clk.Advance(999 * time.Millisecond)
	fmt.Println("after 999ms:", fired)
	clk.Advance(time.Millisecond)
	fmt.Println("after 1s:", fired)
	// Output:
	// after 999ms: false
	// after 1s: true
}

// ExampleCluster_StopBroker replicates a topic on three brokers, stops its leader and reads
// every acknowledged record from the new one.
func ExampleCluster_StopBroker() {
	c := testbroker.MustStart(testbroker.NumBrokers(3), testbroker.ReplicatedTopic("orders", 1, 3))
	defer c.Close()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Addrs()...),
		kgo.DefaultProduceTopic("orders"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(50*time.Millisecond),
	)
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// acks=all: each produce returns once every in-sync replica has the record.
	if err := cl.ProduceSync(ctx, kgo.StringRecord("order-1")).FirstErr(); err != nil {
		panic(err)
	}
	before, _ := c.Partition("orders", 0)
	fmt.Println("ISR:", before.ISR)

	if err := c.StopBroker(before.Leader); err != nil {
		panic(err)
	}
	after, _ := c.Partition("orders", 0)
	fmt.Println("new leader epoch:", after.LeaderEpoch, "offline:", after.OfflineReplicas)
	if err := cl.ProduceSync(ctx, kgo.StringRecord("order-2")).FirstErr(); err != nil {
		panic(err)
	}
	for read := 0; read < 2; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			fmt.Printf("%s at offset %d\n", r.Value, r.Offset)
			read++
		})
	}
	// Output:
	// ISR: [0 1 2]
	// new leader epoch: 1 offline: [0]
	// order-1 at offset 0
	// order-2 at offset 1
}

package shareconsumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// Five orders were produced; the consumer accepted the first two and released the others, so
// three are still to do.
func ExampleConsumer_Lag() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer c.Close()
	if err := c.SetGroupConfig("order-workers", "share.auto.offset.reset", "earliest"); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	for i := range 5 {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("order-%d", i))).FirstErr(); err != nil {
			panic(err)
		}
	}

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...)),
		shareconsumer.Group("order-workers"),
		shareconsumer.Topics("orders"),
		shareconsumer.ExplicitAcknowledgement(),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())
	for accepted := 0; accepted < 2; {
		recs, err := consumer.Poll(ctx)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			ack := acktype.Release
			if r.Offset < 2 {
				ack = acktype.Accept
				accepted++
			}
			if err := consumer.Acknowledge(r, ack); err != nil {
				panic(err)
			}
		}
	}
	if _, err := consumer.CommitSync(ctx); err != nil {
		panic(err)
	}

	lag, err := consumer.Lag(ctx)
	if err != nil {
		panic(err)
	}
	for _, p := range lag.Partitions {
		fmt.Printf("%s: start offset %d, lag %d (from the broker: %v)\n", p.TopicPartition, p.StartOffset, p.Lag, p.FromBroker)
	}
	fmt.Println("total", lag.Total)
	// Output:
	// orders-0: start offset 2, lag 3 (from the broker: true)
	// total 3
}

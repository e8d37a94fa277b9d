package shareconsumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// DeadLetterTopic keeps the records whose handler keeps failing: on the record's last delivery
// (the group's share.delivery.count.limit, 2 here) Process copies it to the dead-letter topic
// and accepts it. A poison record goes there at once with errors.DeadLetter.
func ExampleDeadLetterTopic() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1), testbroker.Topic("orders.dlq", 1))
	defer c.Close()
	for k, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"} {
		if err := c.SetGroupConfig("order-workers", k, v); err != nil {
			panic(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	for _, v := range []string{"order-1", "unreadable", "order-3"} {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			panic(err)
		}
	}

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...)),
		shareconsumer.Group("order-workers"),
		shareconsumer.Topics("orders"),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	handle := func(ctx context.Context, r *shareconsumer.Record) error {
		switch string(r.Value) {
		case "unreadable":
			return errors.DeadLetter(fmt.Errorf("cannot parse %q", r.Value)) // at once
		case "order-3":
			return fmt.Errorf("payment service down") // released, then dead-lettered on delivery 2
		}
		return nil
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var settled atomic.Int32
	err = consumer.Process(runCtx, handle,
		shareconsumer.DeadLetterTopic("orders.dlq"),
		shareconsumer.Workers(1), // one record at a time: the copies land in this order
		shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			if (o.Err == nil || o.DeadLettered) && settled.Add(1) == 3 {
				stop()
			}
		}),
	)
	fmt.Println("Process:", err)
	s := consumer.ProcessStats()
	fmt.Printf("accepted=%d released=%d dead_lettered=%d\n", s.Accepted, s.Released, s.DeadLettered)

	reader, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("orders.dlq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		panic(err)
	}
	defer reader.Close()
	for n := 0; n < 2; {
		if ctx.Err() != nil {
			fmt.Println("dead-letter records:", n)
			break
		}
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			fmt.Printf("%s: offset %s, delivery %s, %q\n", r.Value, h[shareconsumer.HeaderDeadLetterOffset],
				h[shareconsumer.HeaderDeadLetterDeliveryCount], h[shareconsumer.HeaderDeadLetterMessage])
		})
	}
	// Output:
	// Process: <nil>
	// accepted=1 released=1 dead_lettered=2
	// unreadable: offset 1, delivery 1, "cannot parse \"unreadable\""
	// order-3: offset 2, delivery 2, "payment service down"
}

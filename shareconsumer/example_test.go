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

// A share consumer reads three records from an embedded cluster and accepts each.
func ExampleConsumer_Poll() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer c.Close()
	// Share groups start at the log end by default; this one starts at the beginning.
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
	for _, v := range []string{"order-1", "order-2", "order-3"} {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
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

	for done := 0; done < 3; {
		recs, err := consumer.Poll(ctx)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			if err := consumer.Acknowledge(r, acktype.Accept); err != nil {
				panic(err)
			}
			fmt.Printf("%s (delivery %d) accepted\n", r.Value, r.DeliveryCount)
			done++
		}
	}
	results, err := consumer.CommitSync(ctx)
	if err != nil {
		panic(err)
	}
	for tp, err := range results {
		fmt.Printf("commit %s: %v\n", tp, err)
	}
	// Output:
	// order-1 (delivery 1) accepted
	// order-2 (delivery 1) accepted
	// order-3 (delivery 1) accepted
	// commit orders-0: <nil>
}

// A record that needs more time is renewed: the next Poll sends the renew and returns the same
// record again, its lock renewed, until it is accepted.
func ExampleConsumer_Acknowledge_renew() {
	c := testbroker.MustStart(testbroker.Topic("jobs", 1))
	defer c.Close()
	if err := c.SetGroupConfig("job-workers", "share.auto.offset.reset", "earliest"); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("jobs"))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx, kgo.StringRecord("long-job")).FirstErr(); err != nil {
		panic(err)
	}

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...)),
		shareconsumer.Group("job-workers"),
		shareconsumer.Topics("jobs"),
		shareconsumer.ExplicitAcknowledgement(),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	for steps := 1; ; steps++ {
		recs, err := consumer.Poll(ctx)
		if err != nil {
			panic(err)
		}
		r := recs[0]
		if steps < 3 {
			fmt.Printf("%s (delivery %d): step %d done, renewing\n", r.Value, r.DeliveryCount, steps)
			if err := consumer.Acknowledge(r, acktype.Renew); err != nil {
				panic(err)
			}
			continue
		}
		fmt.Printf("%s (delivery %d): finished\n", r.Value, r.DeliveryCount)
		if err := consumer.Acknowledge(r, acktype.Accept); err != nil {
			panic(err)
		}
		break
	}
	results, err := consumer.CommitSync(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("commit:", results[shareconsumer.TopicPartition{Topic: "jobs", Partition: 0}])
	// Output:
	// long-job (delivery 1): step 1 done, renewing
	// long-job (delivery 1): step 2 done, renewing
	// long-job (delivery 1): finished
	// commit: <nil>
}

// CreateGroup leaves an empty share group behind, ready to be configured before its first
// consumer starts.
func ExampleCreateGroup() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := shareconsumer.CreateGroup(ctx, "order-workers", kgo.SeedBrokers(c.Addrs()...)); err != nil {
		panic(err)
	}
	g, ok := c.ShareGroup("order-workers")
	fmt.Println(ok, g.State, len(g.Members))
	// Output:
	// true Empty 0
}

package shareconsumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// Process runs a pool of workers that each handle one record at a time; a handler's answer is
// the record's acknowledgement (nil accepts), and Process renews the locks of records whose
// handlers take long. Here it stops once three records are done.
func ExampleConsumer_Process() {
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
	for _, v := range []string{"order-1", "order-2", "order-3"} {
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

	var (
		mu   sync.Mutex
		seen []string
	)
	handle := func(ctx context.Context, r *shareconsumer.Record) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(r.Value)) // handlers run on several workers at once
		return nil                           // accept
	}

	// Process returns nil once its context ends, after committing every acknowledgement.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Int32
	err = consumer.Process(runCtx, handle,
		shareconsumer.Workers(2),
		shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			if done.Add(1) == 3 {
				stop()
			}
		}),
	)
	fmt.Println("Process:", err)

	slices.Sort(seen)
	fmt.Println(seen)
	s := consumer.ProcessStats()
	fmt.Printf("accepted=%d redeliveries=%d locks_lost=%d held=%d\n", s.Accepted, s.Redeliveries, s.LocksLost, s.Held)
	// Output:
	// Process: <nil>
	// [order-1 order-2 order-3]
	// accepted=3 redeliveries=0 locks_lost=0 held=0
}

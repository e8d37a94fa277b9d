package shareconsumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// A consumer subscribed to a topic that does not exist says so, in Poll's error and in Status.
func ExampleConsumer_Status() {
	c := testbroker.MustStart(testbroker.Topic("orders", 1))
	defer c.Close()
	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...)),
		shareconsumer.Group("order-workers"),
		shareconsumer.Topics("ordres"), // a typo
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := consumer.Poll(ctx)
		cancel()
		var pte *errors.PollTimeoutError
		if errors.As(err, &pte) && pte.Reason == errors.ReasonUnknownTopic {
			fmt.Println(errors.Is(err, context.DeadlineExceeded), pte.Reason, "-", pte.Detail)
			break
		}
	}
	s := consumer.Status()
	fmt.Println(s.State, s.Reason)
	// Output:
	// true subscribed topic unknown - UNKNOWN_TOPIC_OR_PARTITION for ordres
	// stable subscribed topic unknown
}

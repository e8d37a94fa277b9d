package renewbuffer_test

import (
	"fmt"
	"time"

	"github.com/kshare/kshare/renewbuffer"
)

// A consumer's path for renewed records: held while the renew is sent and answered, then
// handed back by the next Poll.
func Example() {
	var held renewbuffer.Buffer[string]
	sent := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	// The application renews two records of orders-0 (Acknowledge(r, Renew)).
	k7 := renewbuffer.Key{Topic: "orders", Partition: 0, Offset: 7}
	k3 := renewbuffer.Key{Topic: "orders", Partition: 0, Offset: 3}
	held.Add(k7, "order-7")
	held.Add(k3, "order-3")

	// The next request to the leader carries both renews.
	tickets := map[renewbuffer.Key]renewbuffer.Ticket{}
	for _, offset := range held.QueuedOffsets("orders", 0, nil) {
		k := renewbuffer.Key{Topic: "orders", Partition: 0, Offset: offset}
		tickets[k], _ = held.MarkSent(k, sent)
	}
	fmt.Println("pending:", held.Pending())

	// The broker renews offset 7 and refuses offset 3 (its lock had expired).
	held.Complete(k7, tickets[k7], 30*time.Second)
	if v, ok := held.Fail(k3, tickets[k3]); ok {
		fmt.Println("dropped:", v)
	}
	deadline, _ := held.NextDeadline()
	fmt.Println("ready:", held.Ready(), "until", deadline.Format(time.TimeOnly))

	// The next Poll returns the renewed record.
	out, expired := held.Take(sent.Add(time.Second), 500, nil)
	fmt.Println("poll:", out, "expired:", expired, "held:", held.Len())
	// Output:
	// pending: 2
	// dropped: order-3
	// ready: 1 until 12:00:30
	// poll: [order-7] expired: [] held: 0
}

// The application renews a record again before the first renew is answered: the answer to the
// first send is ignored, and the record waits for its new renew.
func ExampleBuffer_Complete() {
	var held renewbuffer.Buffer[string]
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := renewbuffer.Key{Topic: "orders", Partition: 1, Offset: 42}

	held.Add(k, "order-42")
	first, _ := held.MarkSent(k, at)
	held.Add(k, "order-42") // renewed again while the first renew is in flight

	fmt.Println("first answer applied:", held.Complete(k, first, 30*time.Second))
	_, state, _, _ := held.Get(k)
	fmt.Println("state:", state)

	second, _ := held.MarkSent(k, at.Add(time.Second))
	fmt.Println("second answer applied:", held.Complete(k, second, 30*time.Second))
	// Output:
	// first answer applied: false
	// state: queued
	// second answer applied: true
}

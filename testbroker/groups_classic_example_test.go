package testbroker_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// A commit without group membership (as kadm's CommitOffsets sends it) creates a simple
// classic group: Empty, protocol type "".
func ExampleCluster_CommittedOffsets() {
	c := testbroker.MustStart(testbroker.Topic("orders", 2))
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 42, LeaderEpoch: -1, Metadata: "checkpoint"})
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "billing", offsets); err != nil {
		panic(err)
	}

	for _, g := range c.Groups() {
		fmt.Printf("%s: %s, %s, protocol type %q\n", g.GroupID, g.Type, g.State, g.ProtocolType)
	}
	o := c.CommittedOffsets("billing")["orders"][1]
	fmt.Println(o.Offset, o.Metadata)
	// Output:
	// billing: classic, Empty, protocol type ""
	// 42 checkpoint
}

// ClassicGroup shows a franz-go consumer group's members and their assignments.
func ExampleCluster_ClassicGroup() {
	c := testbroker.MustStart(testbroker.Topic("orders", 2))
	defer c.Close()
	assigned := make(chan struct{})
	joined := sync.OnceFunc(func() { close(assigned) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ClientID("worker"),
		kgo.ConsumerGroup("workers"), kgo.ConsumeTopics("orders"), kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { joined() }))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go cl.PollFetches(ctx) // joins the group

	// The member is given its partitions once its SyncGroup is answered: the group is Stable.
	select {
	case <-assigned:
	case <-ctx.Done():
		panic("the member never joined")
	}
	g, _ := c.ClassicGroup("workers")
	fmt.Println(g.State, g.ProtocolType, g.ProtocolName, len(g.Members), g.Members[0].ClientID)
	// Output:
	// Stable consumer range 1 worker
}

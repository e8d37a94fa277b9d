package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// demoTopic is the topic of the embedded cluster, which the demo consumer groups read.
const demoTopic = "demo"

// demoQueue is the topic, of one partition, that the demo share group reads; seedDemoGroups
// creates it.
const demoQueue = "demo-queue"

// The demo groups, one of each type the testbroker has.
const (
	demoShare    = "demo-share"    // a share group with one member, 4 of 10 records accepted
	demoClassic  = "demo-classic"  // a classic group, protocol type "consumer" (franz-go, range balancer)
	demoConsumer = "demo-consumer" // a KIP-848 consumer group (franz-go, server-side assignor)
	demoConnect  = "demo-connect"  // a classic group with protocol type "connect" (raw JoinGroup and SyncGroup)
)

// demoSetupTimeout bounds each demo group's setup.
const demoSetupTimeout = 15 * time.Second

// startDemo starts an embedded testbroker with the demo topic and the demo groups
// (seedDemoGroups); stop closes the groups' members and the cluster.
func startDemo(ctx context.Context) (seeds []string, stop func(), err error) {
	c, err := testbroker.Start(testbroker.Topic(demoTopic, 3))
	if err != nil {
		return nil, nil, err
	}
	stopGroups, err := seedDemoGroups(ctx, c.Addrs())
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c.Addrs(), func() { stopGroups(); c.Close() }, nil
}

// seedDemoGroups creates one group of each type by running real clients against seeds (which
// must have the demo topic), whose members stay until stop: a share consumer of the demo queue
// that accepts the records at offsets below 4 and releases the rest, franz-go's classic consumer
// group, franz-go's KIP-848 consumer group and a "connect" member joined with raw JoinGroup and
// SyncGroup.
func seedDemoGroups(ctx context.Context, seeds []string) (func(), error) {
	var closers []func()
	stop := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, seed := range []struct {
		group string
		start func(ctx context.Context, seeds []string, group string) (func(), error)
	}{
		{demoShare, startShareMember},
		{demoConnect, func(ctx context.Context, seeds []string, group string) (func(), error) {
			return joinClassicGroup(ctx, seeds, group, "connect")
		}},
		{demoClassic, func(ctx context.Context, seeds []string, group string) (func(), error) {
			return startConsumerGroupMember(ctx, seeds, group)
		}},
		{demoConsumer, func(ctx context.Context, seeds []string, group string) (func(), error) {
			return startConsumerGroupMember(ctx, seeds, group, kgo.ServerSideBalancer())
		}},
	} {
		sctx, cancel := context.WithTimeout(ctx, demoSetupTimeout)
		closer, err := seed.start(sctx, seeds, seed.group)
		cancel()
		if err != nil {
			stop()
			return nil, fmt.Errorf("demo group %s: %w", seed.group, err)
		}
		closers = append(closers, closer)
	}
	return stop, nil
}

// startShareMember creates the demo queue, produces 10 records to it and runs a share consumer
// of group that accepts those below offset 4 and releases the rest, so that the group has a
// start offset (4) and a lag (6).
func startShareMember(ctx context.Context, seeds []string, group string) (func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(demoQueue))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, demoQueue)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return nil, fmt.Errorf("creating topic %s: %w", demoQueue, err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("record %d", i))).FirstErr(); err != nil {
			return nil, err
		}
	}
	if err := groupconfig.Set(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		return nil, err
	}
	c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...)), shareconsumer.Group(group),
		shareconsumer.Topics(demoQueue), shareconsumer.ExplicitAcknowledgement())
	if err != nil {
		return nil, err
	}
	closer := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	}
	for accepted := 0; accepted < 4; {
		recs, err := c.Poll(ctx)
		if err != nil {
			closer()
			return nil, err
		}
		for _, r := range recs {
			t := acktype.Release
			if r.Offset < 4 {
				t, accepted = acktype.Accept, accepted+1
			}
			if err := c.Acknowledge(r, t); err != nil {
				closer()
				return nil, err
			}
		}
		if _, err := c.CommitSync(ctx); err != nil {
			closer()
			return nil, err
		}
	}
	return closer, nil
}

// startConsumerGroupMember runs a franz-go consumer of group (range balancer; with
// kgo.ServerSideBalancer a KIP-848 member) until it has its first assignment.
func startConsumerGroupMember(ctx context.Context, seeds []string, group string, opts ...kgo.GroupOpt) (func(), error) {
	assigned := make(chan struct{})
	var once sync.Once
	kopts := []kgo.Opt{
		kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(demoTopic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { once.Do(func() { close(assigned) }) }),
	}
	for _, o := range opts {
		kopts = append(kopts, o)
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, err
	}
	select {
	case <-assigned:
		return cl.Close, nil
	case <-ctx.Done():
		cl.Close()
		return nil, fmt.Errorf("no assignment: %w", context.Cause(ctx))
	}
}

// joinClassicGroup makes a member join group as a classic group of protocolType with raw
// JoinGroup and SyncGroup, the member its own leader with an empty assignment. The member does
// not heartbeat: the coordinator drops it after the session timeout (45 s).
func joinClassicGroup(ctx context.Context, seeds []string, group, protocolType string) (func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	if err := joinAndSync(ctx, cl, group, protocolType); err != nil {
		cl.Close()
		return nil, err
	}
	return cl.Close, nil
}

func joinAndSync(ctx context.Context, cl *kgo.Client, group, protocolType string) error {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, protocolType
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 45000, 60000
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "demo"
	join.Protocols = append(join.Protocols, proto)
	jresp, err := join.RequestWith(ctx, cl)
	if err == nil && jresp.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jresp.MemberID
		jresp, err = join.RequestWith(ctx, cl)
	}
	if err != nil {
		return fmt.Errorf("JoinGroup: %w", err)
	}
	if err := errors.FromKafka(jresp.ErrorCode, nil); err != nil {
		return fmt.Errorf("JoinGroup: %w", err)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, jresp.MemberID, jresp.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr(protocolType), jresp.Protocol
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID = jresp.MemberID
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	sresp, err := sync.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("SyncGroup: %w", err)
	}
	if err := errors.FromKafka(sresp.ErrorCode, nil); err != nil {
		return fmt.Errorf("SyncGroup: %w", err)
	}
	return nil
}

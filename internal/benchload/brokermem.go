package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// brokerBytesPerSharePartition starts a testbroker in this process with an empty topic of
// partitions, joins one raw member to a share group and opens a share session over every
// partition with one ShareFetch, so that the broker creates a share partition for each, and
// returns the broker's heap growth (after GC) divided by partitions. The broker runs in process
// because only there its heap can be read apart from anything else; the raw client's own
// buffers are allocated before the first reading, by a metadata request and the heartbeat.
func brokerBytesPerSharePartition(ctx context.Context, partitions int) (float64, error) {
	const topic, group = "probe", "probe"
	c, err := testbroker.Start(testbroker.Topic(topic, int32(partitions)))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		return 0, fmt.Errorf("metadata of %s: %+v", topic, mresp.Topics)
	}
	topicID := mresp.Topics[0].TopicID

	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return 0, err
	}
	member := hex.EncodeToString(id[:])
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{topic}
	hresp, err := hb.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(hresp.ErrorCode); err != nil {
		return 0, fmt.Errorf("ShareGroupHeartbeat: %w", err)
	}

	before := heapInUse()
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), 0
	sf.MaxWaitMillis, sf.MinBytes, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = 0, 1, 1<<20, 500, 500
	st := kmsg.NewShareFetchRequestTopic()
	st.TopicID = topicID
	for p := range partitions {
		sp := kmsg.NewShareFetchRequestTopicPartition()
		sp.Partition = int32(p)
		st.Partitions = append(st.Partitions, sp)
	}
	sf.Topics = append(sf.Topics, st)
	fresp, err := sf.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(fresp.ErrorCode); err != nil {
		return 0, fmt.Errorf("ShareFetch: %w", err)
	}
	n := 0
	for p := range partitions {
		if _, _, ok := c.SharePartitionOffsets(group, topic, int32(p)); ok {
			n++
		}
	}
	if n != partitions {
		return 0, fmt.Errorf("the broker holds %d of %d share partitions after the ShareFetch", n, partitions)
	}
	after := heapInUse()
	return float64(after-before) / float64(partitions), nil
}

// heapInUse returns the live heap and the goroutine stacks after two garbage collections.
func heapInUse() int64 {
	m := memAfterGC()
	return int64(m.HeapAlloc) + int64(m.StackInuse)
}

// liveHeap returns the live heap after two garbage collections, without the goroutine stacks.
func liveHeap() int64 { return int64(memAfterGC().HeapAlloc) }

func memAfterGC() *runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return &m
}

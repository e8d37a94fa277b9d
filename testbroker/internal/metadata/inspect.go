package metadata

import (
	"slices"

	"github.com/kshare/kshare/testbroker/internal/replica"
)

// TopicInfo is a snapshot of a topic.
type TopicInfo struct {
	Name string
	ID   [16]byte
	// Configs holds the topic-level configs set explicitly (at creation or by
	// IncrementalAlterConfigs); defaults are not listed.
	Configs    map[string]string
	Partitions []PartitionInfo
}

// PartitionInfo is a snapshot of a partition: its placement and its leader's log offsets
// (while no replica leads, those of its first replica).
type PartitionInfo struct {
	Topic     string
	Partition int32
	// Leader is the broker that leads, or -1 when no in-sync replica runs.
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	// ISR are the in-sync replicas, in broker id order.
	ISR []int32
	// OfflineReplicas are the replicas on stopped brokers.
	OfflineReplicas []int32
	LogStartOffset  int64
	// LogEndOffset is the offset the next appended record gets.
	LogEndOffset int64
	// HighWatermark is the offset up to which consumers can read.
	HighWatermark int64
	// LastStableOffset is the offset up to which read_committed consumers can read: the first
	// offset of the earliest transaction not yet ended (and its marker replicated), else the
	// high watermark.
	LastStableOffset int64
	// ReplicaStates has each replica's own log offsets, in Replicas order.
	ReplicaStates []ReplicaInfo
}

// ReplicaInfo is a snapshot of one replica of a partition.
type ReplicaInfo struct {
	Broker         int32
	LogStartOffset int64
	LogEndOffset   int64
	// HighWatermark is what this replica knows of the partition's high watermark: a
	// follower's trails the leader's until its next fetch response.
	HighWatermark int64
	InISR         bool
	// Online reports whether the replica's broker runs (StopBroker).
	Online bool
}

// Topics returns a snapshot of every topic, sorted by name.
func (c *Controller) Topics() []TopicInfo {
	ts := c.SortedTopics()
	out := make([]TopicInfo, len(ts))
	for i, t := range ts {
		out[i] = c.topicInfo(t)
	}
	return out
}

// TopicInfo returns a snapshot of one topic by name.
func (c *Controller) TopicInfo(name string) (TopicInfo, bool) {
	t := c.Topic(name)
	if t == nil {
		return TopicInfo{}, false
	}
	return c.topicInfo(t), true
}

func (c *Controller) topicInfo(t *Topic) TopicInfo {
	ts := TopicInfo{Name: t.Name, ID: t.ID, Configs: c.TopicConfigs(t)}
	for _, p := range c.Partitions(t) {
		ts.Partitions = append(ts.Partitions, c.partitionInfo(p))
	}
	return ts
}

func (c *Controller) partitionInfo(p *replica.Partition) PartitionInfo {
	st := p.State()
	ps := PartitionInfo{
		Topic:       p.Topic,
		Partition:   p.Index,
		Leader:      st.Leader,
		LeaderEpoch: st.LeaderEpoch,
		Replicas:    slices.Clone(st.Replicas),
		ISR:         slices.Clone(st.ISR),
	}
	for _, r := range st.Replicas {
		lg := st.Log(r)
		rs := ReplicaInfo{Broker: r, LogStartOffset: lg.LogStartOffset(), LogEndOffset: lg.LogEndOffset(),
			HighWatermark: lg.HighWatermark(), InISR: st.InISR(r), Online: c.replicas.Alive(r)}
		if !rs.Online {
			ps.OfflineReplicas = append(ps.OfflineReplicas, r)
		}
		ps.ReplicaStates = append(ps.ReplicaStates, rs)
	}
	main := ps.ReplicaStates[0]
	if i := slices.Index(st.Replicas, st.Leader); i >= 0 {
		main = ps.ReplicaStates[i]
	}
	ps.LogStartOffset, ps.LogEndOffset, ps.HighWatermark = main.LogStartOffset, main.LogEndOffset, main.HighWatermark
	ps.LastStableOffset = st.Log(main.Broker).LastStableOffset()
	return ps
}

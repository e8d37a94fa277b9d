package testbroker

import "github.com/kshare/kshare/testbroker/internal/server"

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

// Topics returns every topic, sorted by name.
func (c *Cluster) Topics() []TopicInfo {
	ts := c.s.Topics()
	out := make([]TopicInfo, len(ts))
	for i, t := range ts {
		out[i] = topicInfo(t)
	}
	return out
}

// Topic returns one topic by name.
func (c *Cluster) Topic(name string) (TopicInfo, bool) {
	t, ok := c.s.TopicState(name)
	if !ok {
		return TopicInfo{}, false
	}
	return topicInfo(t), true
}

// Partition returns one partition of a topic.
func (c *Cluster) Partition(topic string, partition int32) (PartitionInfo, bool) {
	t, ok := c.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return PartitionInfo{}, false
	}
	return t.Partitions[partition], true
}

func topicInfo(t server.TopicState) TopicInfo {
	ti := TopicInfo{Name: t.Name, ID: t.ID, Configs: t.Configs, Partitions: make([]PartitionInfo, len(t.Partitions))}
	for i, p := range t.Partitions {
		pi := PartitionInfo{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: p.Replicas, ISR: p.ISR, OfflineReplicas: p.OfflineReplicas,
			LogStartOffset: p.LogStartOffset, LogEndOffset: p.LogEndOffset, HighWatermark: p.HighWatermark}
		pi.LastStableOffset = p.LastStableOffset
		for _, r := range p.ReplicaStates {
			pi.ReplicaStates = append(pi.ReplicaStates, ReplicaInfo(r))
		}
		ti.Partitions[i] = pi
	}
	return ti
}

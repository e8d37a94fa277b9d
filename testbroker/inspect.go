package testbroker

import "github.com/kshare/kshare/testbroker/internal/metadata"

// TopicInfo is a snapshot of a topic: its name, id, explicitly set configs and partitions.
type TopicInfo = metadata.TopicInfo

// PartitionInfo is a snapshot of a partition: its placement, its leader's log offsets (while
// no replica leads, those of its first replica) and each replica's own (ReplicaStates).
type PartitionInfo = metadata.PartitionInfo

// ReplicaInfo is a snapshot of one replica of a partition: its log offsets, whether it is in
// the ISR and whether its broker runs.
type ReplicaInfo = metadata.ReplicaInfo

// Topics returns every topic, sorted by name.
func (c *Cluster) Topics() []TopicInfo {
	return c.s.Metadata().Topics()
}

// Topic returns one topic by name.
func (c *Cluster) Topic(name string) (TopicInfo, bool) {
	return c.s.Metadata().TopicInfo(name)
}

// Partition returns one partition of a topic.
func (c *Cluster) Partition(topic string, partition int32) (PartitionInfo, bool) {
	t, ok := c.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return PartitionInfo{}, false
	}
	return t.Partitions[partition], true
}

package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/config"
)

// TopicState is a snapshot of a topic for tests and tools.
type TopicState struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []PartitionState
}

// PartitionState is a snapshot of a partition.
type PartitionState struct {
	Topic          string
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	Replicas       []int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
}

// Topics returns every topic, sorted by name.
func (c *Cluster) Topics() []TopicState {
	ts := c.sortedTopics()
	out := make([]TopicState, len(ts))
	for i, t := range ts {
		out[i] = c.topicState(t)
	}
	return out
}

// TopicState returns one topic by name.
func (c *Cluster) TopicState(name string) (TopicState, bool) {
	t := c.topic(name)
	if t == nil {
		return TopicState{}, false
	}
	return c.topicState(t), true
}

func (c *Cluster) topicState(t *Topic) TopicState {
	ts := TopicState{Name: t.Name, ID: t.ID, Configs: c.topicConfigs(t)}
	for _, p := range c.partitions(t) {
		ts.Partitions = append(ts.Partitions, p.state())
	}
	return ts
}

func (p *Partition) state() PartitionState {
	return PartitionState{
		Topic:          p.Topic.Name,
		Partition:      p.Index,
		Leader:         p.Leader,
		LeaderEpoch:    p.LeaderEpoch,
		Replicas:       append([]int32(nil), p.Replicas...),
		LogStartOffset: p.Log.LogStartOffset(),
		LogEndOffset:   p.Log.LogEndOffset(),
		HighWatermark:  p.Log.HighWatermark(),
	}
}

// CreateTopic creates a topic as CreateTopics would.
func (c *Cluster) CreateTopic(spec TopicSpec) error {
	_, err := c.createTopic(spec)
	return err
}

// DropConnections closes every client connection of one broker, or of all brokers when
// broker is negative.
func (c *Cluster) DropConnections(broker int32) {
	for _, b := range c.brokers {
		if broker < 0 || b.id == broker {
			b.dropConnections()
		}
	}
}

// SetGroupConfig sets one group config as IncrementalAlterConfigs SET on a GROUP resource
// would, with the same validation and errors.
func (c *Cluster) SetGroupConfig(group, key, value string) error {
	return c.configs.AlterGroup(group, []config.Op{{
		Name: key, Op: kmsg.IncrementalAlterConfigOpSet, Value: &value,
	}}, false)
}

package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/replica"
)

// TopicState is a snapshot of a topic for tests and tools.
type TopicState struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []PartitionState
}

// PartitionState is a snapshot of a partition. The offsets are the leader's, or, while no
// replica leads, those of the first replica.
type PartitionState struct {
	Topic           string
	Partition       int32
	Leader          int32
	LeaderEpoch     int32
	Replicas        []int32
	ISR             []int32
	OfflineReplicas []int32
	LogStartOffset  int64
	LogEndOffset    int64
	HighWatermark   int64
	// LastStableOffset is the last stable offset of the same replica: read_committed consumers
	// read below it.
	LastStableOffset int64
	// ReplicaStates has one entry per replica, in Replicas order.
	ReplicaStates []ReplicaState
}

// ReplicaState is a snapshot of one replica of a partition.
type ReplicaState struct {
	Broker         int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	InISR          bool
	Online         bool // the broker runs
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
		ts.Partitions = append(ts.Partitions, c.partitionState(p))
	}
	return ts
}

func (c *Cluster) partitionState(p *replica.Partition) PartitionState {
	st := p.State()
	ps := PartitionState{
		Topic:       p.Topic,
		Partition:   p.Index,
		Leader:      st.Leader,
		LeaderEpoch: st.LeaderEpoch,
		Replicas:    slices.Clone(st.Replicas),
		ISR:         slices.Clone(st.ISR),
	}
	for _, r := range st.Replicas {
		lg := st.Log(r)
		rs := ReplicaState{Broker: r, LogStartOffset: lg.LogStartOffset(), LogEndOffset: lg.LogEndOffset(),
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

package server

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/share"
)

// MoveLeader makes broker the leader of partition index of topic, as a KRaft controller's
// partition change does: the leader epoch goes up by one whether or not the leader changes
// (PartitionRegistration.merge bumps it whenever a change names a leader), and a broker that
// holds no replica takes the old leader's place among the replicas, as a reassignment would.
// The new epoch is stamped on the batches appended from then on.
//
// Every request then sees the new placement: the old leader answers NOT_LEADER_OR_FOLLOWER
// (with the new leader where the protocol carries it), a request naming the old epoch gets
// FENCED_LEADER_EPOCH, and fetches waiting on the partition wake and answer at once.
//
// When the leader changes, each share group's share partition of it is handed over
// (share.Partition.Handover): the old one is fenced, as Kafka's SharePartitionManager fences
// and drops a share partition when its broker becomes a follower, and the new leader gets the
// state Kafka's would load from the share-group state. Share sessions on every broker resolve
// their partitions again. Moving the leader to the broker that leads already only raises the
// epoch: Kafka's leader keeps its share partitions then.
//
// It fails, changing nothing, for a topic or partition the cluster does not have
// (UNKNOWN_TOPIC_OR_PARTITION), a broker it does not run (INVALID_REPLICA_ASSIGNMENT), and
// once the cluster is closed.
func (c *Cluster) MoveLeader(topic string, index, broker int32) error {
	select {
	case <-c.closed:
		return errClusterClosed
	default:
	}
	if c.broker(broker) == nil {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: no such broker: %w", topic, index, broker, kerr.InvalidReplicaAssignment)
	}
	c.topicsMu.Lock()
	t := c.topics[topic]
	if t == nil || index < 0 || int(index) >= len(t.partitions) {
		c.topicsMu.Unlock()
		return fmt.Errorf("moving the leader of %s-%d to broker %d: %w", topic, index, broker, kerr.UnknownTopicOrPartition)
	}
	old := t.partitions[index]
	p := *old
	p.Leader, p.LeaderEpoch, p.moved = broker, old.LeaderEpoch+1, make(chan struct{})
	if !slices.Contains(old.Replicas, broker) {
		p.Replicas = slices.Clone(old.Replicas)
		p.Replicas[slices.Index(p.Replicas, old.Leader)] = broker
	}
	p.Log.SetLeaderEpoch(p.LeaderEpoch)
	t.partitions[index] = &p
	c.topicsMu.Unlock()

	close(old.moved)
	c.shares.LeaderMoved(share.TopicPartition{Topic: t.ID, Partition: index}, old.Leader != broker)
	return nil
}

// current returns the partition in p's place now: p itself unless its leader moved since.
func (c *Cluster) current(p *Partition) *Partition {
	return c.partition(p.Topic, p.Index)
}

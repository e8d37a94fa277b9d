package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/replica"
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
// A follower takes over with its own log, so it must be in the ISR
// (PREFERRED_LEADER_NOT_AVAILABLE otherwise), and the broker must run (BROKER_NOT_AVAILABLE).
// It fails, changing nothing, for a topic or partition the cluster does not have
// (UNKNOWN_TOPIC_OR_PARTITION), a broker it does not have (INVALID_REPLICA_ASSIGNMENT), and
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
	p := c.partition(c.topic(topic), index)
	if p == nil {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: %w", topic, index, broker, kerr.UnknownTopicOrPartition)
	}
	if err := c.replicas.MoveLeader(p, broker); err != nil {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: %w", topic, index, broker, err)
	}
	return nil
}

// leaderChanged hands each share group's share partition of p over to p's new leader (see
// MoveLeader) and writes the transaction markers left pending for want of a leader; the
// replica manager calls it after every change of leader epoch.
func (c *Cluster) leaderChanged(p *replica.Partition, old, next *replica.State) {
	c.shares.LeaderMoved(share.TopicPartition{Topic: p.TopicID, Partition: p.Index}, old.Leader != next.Leader, next.LeaderLog())
	c.txns.RetryMarkers()
}

// topicDeleted forgets a deleted topic's replicas and share partitions.
func (c *Cluster) topicDeleted(t *Topic) {
	c.replicas.Forget(t.ID)
	c.shares.TopicDeleted(t.ID)
}

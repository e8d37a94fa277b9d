package metadata

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
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
// The replica manager then reports the change (replica.Config.LeaderChanged), which the server
// turns into share partition hand-overs.
//
// A follower takes over with its own log, so it must be in the ISR
// (PREFERRED_LEADER_NOT_AVAILABLE otherwise), and the broker must run (BROKER_NOT_AVAILABLE).
// It fails, changing nothing, for a topic or partition the cluster does not have
// (UNKNOWN_TOPIC_OR_PARTITION) and a broker it does not have (INVALID_REPLICA_ASSIGNMENT).
func (c *Controller) MoveLeader(topic string, index, broker int32) error {
	if broker < 0 || int(broker) >= c.brokers {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: no such broker: %w", topic, index, broker, kerr.InvalidReplicaAssignment)
	}
	p := c.Partition(c.Topic(topic), index)
	if p == nil {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: %w", topic, index, broker, kerr.UnknownTopicOrPartition)
	}
	if err := c.replicas.MoveLeader(p, broker); err != nil {
		return fmt.Errorf("moving the leader of %s-%d to broker %d: %w", topic, index, broker, err)
	}
	return nil
}

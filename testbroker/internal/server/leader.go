package server

import (
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/replica"
	"github.com/kshare/kshare/testbroker/internal/share"
)

// MoveLeader makes broker the leader of partition index of topic (metadata.Controller.MoveLeader
// has the rules). When the leader changes, each share group's share partition of it is handed
// over (share.Partition.Handover): the old one is fenced, as Kafka's SharePartitionManager
// fences and drops a share partition when its broker becomes a follower, and the new leader
// gets the state Kafka's would load from the share-group state. Share sessions on every broker
// resolve their partitions again. Moving the leader to the broker that leads already only
// raises the epoch: Kafka's leader keeps its share partitions then. It fails once the cluster
// is closed.
func (c *Cluster) MoveLeader(topic string, index, broker int32) error {
	select {
	case <-c.closed:
		return errClusterClosed
	default:
	}
	return c.meta.MoveLeader(topic, index, broker)
}

// leaderChanged hands each share group's share partition of p over to p's new leader (see
// MoveLeader) and writes the transaction markers left pending for want of a leader; the
// replica manager calls it after every change of leader epoch.
func (c *Cluster) leaderChanged(p *replica.Partition, old, next *replica.State) {
	c.shares.LeaderMoved(share.TopicPartition{Topic: p.TopicID, Partition: p.Index}, old.Leader != next.Leader, next.LeaderLog())
	c.txns.RetryMarkers()
}

// topicDeleted forgets a deleted topic's replicas and share partitions.
func (c *Cluster) topicDeleted(t *metadata.Topic) {
	c.replicas.Forget(t.ID)
	c.shares.TopicDeleted(t.ID)
}

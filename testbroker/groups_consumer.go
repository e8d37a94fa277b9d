package testbroker

import "github.com/kshare/kshare/testbroker/internal/group"

// ConsumerGroupInfo is a snapshot of a consumer group (KIP-848), as ConsumerGroupDescribe
// reports it plus each member's reconciliation state.
type ConsumerGroupInfo = group.ConsumerGroupInfo

// ConsumerMemberInfo is a snapshot of a consumer group member.
type ConsumerMemberInfo = group.ConsumerMemberInfo

// ConsumerGroup returns a snapshot of a consumer group; ok is false when there is no consumer
// group with this id (none, or a group of another type).
func (c *Cluster) ConsumerGroup(id string) (ConsumerGroupInfo, bool) {
	return c.s.ConsumerGroup(id)
}

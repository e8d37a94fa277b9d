package testbroker

import "github.com/kshare/kshare/testbroker/internal/group"

// ShareGroupInfo is a snapshot of a share group, as ShareGroupDescribe reports it.
type ShareGroupInfo = group.ShareGroupInfo

// ShareMemberInfo is a snapshot of a share group member.
type ShareMemberInfo = group.ShareMemberInfo

// TopicPartitions is a set of partitions of one topic.
type TopicPartitions = group.TopicPartitions

// ShareGroup returns a snapshot of a share group; ok is false when there is no share group
// with this id.
func (c *Cluster) ShareGroup(id string) (ShareGroupInfo, bool) {
	return c.s.ShareGroup(id)
}

// ShareGroups returns the ids of every share group, sorted. A share group exists from its
// first member's join until the cluster closes, with or without members.
func (c *Cluster) ShareGroups() []string { return c.s.ShareGroups() }

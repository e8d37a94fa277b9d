package testbroker

// ShareGroupInfo is a snapshot of a share group, as ShareGroupDescribe reports it.
type ShareGroupInfo struct {
	GroupID string
	// State is "Empty" (no members) or "Stable".
	State string
	// GroupEpoch is bumped whenever a member joins, leaves, is fenced or changes its
	// subscription, and when a subscribed topic is created, deleted or given partitions.
	GroupEpoch int32
	// AssignmentEpoch is the group epoch the target assignment was computed for.
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []ShareMemberInfo
}

// ShareMemberInfo is a snapshot of a share group member.
type ShareMemberInfo struct {
	MemberID string
	// MemberEpoch is the epoch of the member's current assignment. A member takes the group's
	// new assignment, and its epoch, only at its own next heartbeat.
	MemberEpoch int32
	// PreviousMemberEpoch is the epoch before the last assignment change; a heartbeat with it
	// is accepted (its response may have been lost).
	PreviousMemberEpoch int32
	RackID              *string
	ClientID            string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost           string
	SubscribedTopicNames []string
	// Assignment is the member's current assignment, by topic name.
	Assignment []TopicPartitions
}

// TopicPartitions is a set of partitions of one topic.
type TopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// ShareGroup returns a snapshot of a share group; ok is false when there is no share group
// with this id.
func (c *Cluster) ShareGroup(id string) (ShareGroupInfo, bool) {
	g, ok := c.s.ShareGroup(id)
	if !ok {
		return ShareGroupInfo{}, false
	}
	info := ShareGroupInfo{GroupID: g.GroupID, State: g.State, GroupEpoch: g.GroupEpoch, AssignmentEpoch: g.AssignmentEpoch}
	for _, m := range g.Members {
		mi := ShareMemberInfo{
			MemberID:             m.MemberID,
			MemberEpoch:          m.MemberEpoch,
			PreviousMemberEpoch:  m.PreviousMemberEpoch,
			RackID:               m.RackID,
			ClientID:             m.ClientID,
			ClientHost:           m.ClientHost,
			SubscribedTopicNames: m.SubscribedTopicNames,
		}
		for _, tp := range m.Assignment {
			mi.Assignment = append(mi.Assignment, TopicPartitions(tp))
		}
		info.Members = append(info.Members, mi)
	}
	return info, true
}

// ShareGroups returns the ids of every share group, sorted. A share group exists from its
// first member's join until the cluster closes, with or without members.
func (c *Cluster) ShareGroups() []string { return c.s.ShareGroups() }

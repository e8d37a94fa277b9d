package testbroker

import "github.com/kshare/kshare/testbroker/internal/group"

// ConsumerGroupInfo is a snapshot of a consumer group (KIP-848), as ConsumerGroupDescribe
// reports it plus each member's reconciliation state.
type ConsumerGroupInfo struct {
	GroupID string
	// State is "Empty" (no members), "Assigning" (the group epoch moved past the target
	// assignment, which the next heartbeat recomputes), "Reconciling" (a member has not
	// reached its target assignment yet) or "Stable".
	State string
	// GroupEpoch is bumped whenever a member joins, leaves, is fenced or changes its
	// subscription, and when a subscribed topic is created, deleted, given partitions or
	// matched by a member's regular expression.
	GroupEpoch int32
	// AssignmentEpoch is the group epoch the target assignment was computed for.
	AssignmentEpoch int32
	// AssignorName is the server-side assignor in use: the one most members ask for, else
	// "uniform".
	AssignorName string
	// Members are sorted by member id.
	Members []ConsumerMemberInfo
}

// ConsumerMemberInfo is a snapshot of a consumer group member.
type ConsumerMemberInfo struct {
	MemberID string
	// InstanceID is set for a static member.
	InstanceID *string
	RackID     *string
	ClientID   string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost string
	// MemberEpoch is the epoch of the member's current assignment. A member that must revoke
	// partitions keeps its epoch until it reports them revoked; -2 is a static member that
	// left and may come back within its session timeout.
	MemberEpoch int32
	// PreviousMemberEpoch is the epoch before the last change; a heartbeat with it is
	// accepted (its response may have been lost).
	PreviousMemberEpoch int32
	// State is "stable", "unrevoked_partitions" (it must revoke PendingRevocation first) or
	// "unreleased_partitions" (part of its target is still owned by members revoking it).
	State                string
	SubscribedTopicNames []string
	// SubscribedTopicRegex is nil for a member subscribing by names only.
	SubscribedTopicRegex *string
	// ServerAssignor is the assignor the member asked for; "" if none.
	ServerAssignor string
	// Assignment is what the member owns, or has just been given, at MemberEpoch.
	Assignment []TopicPartitions
	// TargetAssignment is what the assignor gave the member at the assignment epoch.
	TargetAssignment []TopicPartitions
	// PendingRevocation is what the member must give up before it gets anything new.
	PendingRevocation []TopicPartitions
}

// ConsumerGroup returns a snapshot of a consumer group; ok is false when there is no consumer
// group with this id (none, or a group of another type).
func (c *Cluster) ConsumerGroup(id string) (ConsumerGroupInfo, bool) {
	g, ok := c.s.ConsumerGroup(id)
	if !ok {
		return ConsumerGroupInfo{}, false
	}
	info := ConsumerGroupInfo{
		GroupID: g.GroupID, State: g.State, GroupEpoch: g.GroupEpoch, AssignmentEpoch: g.AssignmentEpoch,
		AssignorName: g.AssignorName, Members: []ConsumerMemberInfo{},
	}
	conv := func(in []group.TopicPartitions) []TopicPartitions {
		out := []TopicPartitions{}
		for _, tp := range in {
			out = append(out, TopicPartitions(tp))
		}
		return out
	}
	for _, m := range g.Members {
		info.Members = append(info.Members, ConsumerMemberInfo{
			MemberID:             m.MemberID,
			InstanceID:           m.InstanceID,
			RackID:               m.RackID,
			ClientID:             m.ClientID,
			ClientHost:           m.ClientHost,
			MemberEpoch:          m.MemberEpoch,
			PreviousMemberEpoch:  m.PreviousMemberEpoch,
			State:                m.State,
			SubscribedTopicNames: m.SubscribedTopicNames,
			SubscribedTopicRegex: m.SubscribedTopicRegex,
			ServerAssignor:       m.ServerAssignor,
			Assignment:           conv(m.Assignment),
			TargetAssignment:     conv(m.TargetAssignment),
			PendingRevocation:    conv(m.PendingRevocation),
		})
	}
	return info, true
}

package group

import (
	"slices"
	"time"
)

// memberState is where a consumer group member is in its reconciliation towards its target
// assignment (Kafka's MemberState).
type memberState int8

const (
	// memberStable: the member owns its whole target assignment, or waits for nothing.
	memberStable memberState = iota
	// memberUnrevokedPartitions: the member must revoke partitions (pendingRevocation) before
	// it gets anything new; it keeps its epoch until it does.
	memberUnrevokedPartitions
	// memberUnreleasedPartitions: the member has its new epoch, but some partitions of its
	// target are still owned by members that have not revoked them yet.
	memberUnreleasedPartitions
)

// String returns the state's name as Kafka's MemberState prints it.
func (s memberState) String() string {
	switch s {
	case memberUnrevokedPartitions:
		return "unrevoked_partitions"
	case memberUnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "stable"
}

// staticLeaveEpoch is the member epoch of a static member that left and keeps its place
// (LEAVE_GROUP_STATIC_MEMBER_EPOCH).
const staticLeaveEpoch = -2

// consumerMember is one member of a consumer group (Kafka's ConsumerGroupMember).
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	// rebalanceTimeout bounds the time the member may take to revoke partitions.
	rebalanceTimeout time.Duration
	// serverAssignor is the assignor the member asked for; "" if none.
	serverAssignor string
	topics         []string // subscribed topic names, sorted, without duplicates
	regex          string   // subscribed topic regular expression; "" if none

	state     memberState
	epoch     int32
	prevEpoch int32
	// assigned are the partitions the member owns (or is being given) at epoch.
	assigned partitionSet
	// pendingRevocation are the partitions the member must give up before it moves on.
	pendingRevocation partitionSet

	session   *sessionTimer
	rebalance *sessionTimer
}

func (m *consumerMember) stopTimers() {
	m.stopSession()
	m.stopRebalance()
}

func (m *consumerMember) stopSession() {
	if m.session != nil {
		m.session.t.Stop()
		m.session = nil
	}
}

func (m *consumerMember) stopRebalance() {
	if m.rebalance != nil {
		m.rebalance.t.Stop()
		m.rebalance = nil
	}
}

// reconciledTo reports whether the member is stable at the target assignment's epoch.
func (m *consumerMember) reconciledTo(assignmentEpoch int32) bool {
	return m.state == memberStable && m.epoch == assignmentEpoch
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

func (m *consumerMember) info(target partitionSet, topics Topics) ConsumerMemberInfo {
	mi := ConsumerMemberInfo{
		MemberID:             m.id,
		InstanceID:           cloneStringPtr(m.instanceID),
		RackID:               cloneStringPtr(m.rackID),
		ClientID:             m.clientID,
		ClientHost:           m.clientHost,
		MemberEpoch:          m.epoch,
		PreviousMemberEpoch:  m.prevEpoch,
		State:                m.state.String(),
		SubscribedTopicNames: slices.Clone(m.topics),
		ServerAssignor:       m.serverAssignor,
		Assignment:           m.assigned.list(topics),
		TargetAssignment:     target.list(topics),
		PendingRevocation:    m.pendingRevocation.list(topics),
	}
	if mi.SubscribedTopicNames == nil {
		mi.SubscribedTopicNames = []string{}
	}
	if m.regex != "" {
		r := m.regex
		mi.SubscribedTopicRegex = &r
	}
	return mi
}

package group

import (
	"slices"

	"github.com/kshare/kshare/testbroker/internal/clock"
)

// shareMember is one member of a share group.
type shareMember struct {
	id         string
	epoch      int32
	prevEpoch  int32 // the epoch before the last reconciliation; accepted from a member whose response was lost
	rackID     *string
	clientID   string
	clientHost string
	topics     []string // subscribed topic names, sorted, without duplicates
	assigned   []TopicPartitions

	// session fences the member when it fires; each heartbeat replaces it. The expiry
	// callback checks that it is still the member's current timer, so that a timer that fired
	// while a heartbeat was replacing it does nothing.
	session *sessionTimer
}

type sessionTimer struct{ t clock.Timer }

func (m *shareMember) stopSession() {
	if m.session != nil {
		m.session.t.Stop()
		m.session = nil
	}
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

func (m *shareMember) info(topics Topics) ShareMemberInfo {
	mi := ShareMemberInfo{
		MemberID:             m.id,
		MemberEpoch:          m.epoch,
		PreviousMemberEpoch:  m.prevEpoch,
		ClientID:             m.clientID,
		ClientHost:           m.clientHost,
		SubscribedTopicNames: slices.Clone(m.topics),
		Assignment:           []TopicPartitions{},
	}
	if m.rackID != nil {
		r := *m.rackID
		mi.RackID = &r
	}
	for _, tp := range cloneAssignment(m.assigned) {
		name, ok := topics.TopicName(tp.TopicID)
		if !ok {
			continue
		}
		tp.Topic = name
		mi.Assignment = append(mi.Assignment, tp)
	}
	return mi
}

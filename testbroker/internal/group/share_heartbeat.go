package group

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// LeaveEpoch is the member epoch of a heartbeat that leaves the group.
const LeaveEpoch = -1

// ShareHeartbeat is a ShareGroupHeartbeat request, with the client's identity taken from the
// request header and the connection.
type ShareHeartbeat struct {
	GroupID     string
	MemberID    string
	MemberEpoch int32
	// RackID is nil when not provided or unchanged since the last heartbeat.
	RackID *string
	// SubscribedTopicNames is nil when unchanged since the last heartbeat.
	SubscribedTopicNames []string
	ClientID             string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost string
}

// ShareHeartbeatResult is a successful heartbeat's answer.
type ShareHeartbeatResult struct {
	MemberID    string
	MemberEpoch int32
	// HeartbeatInterval is the group's share.heartbeat.interval.ms; zero for a leave.
	HeartbeatInterval time.Duration
	// HasAssignment says whether the response carries Assignment: on a join (epoch 0), on a
	// request that lists its subscription, and when the member's assignment changed.
	HasAssignment bool
	// Assignment is the member's assignment, by topic name; never nil when HasAssignment.
	Assignment []TopicPartitions
}

// ValidateShareHeartbeat checks a heartbeat as Kafka's GroupCoordinatorService does before
// anything else, each failure INVALID_REQUEST with Kafka's message, in this order: a blank
// MemberId ("MemberId can't be empty."), a blank GroupId ("GroupId can't be empty."), a
// blank RackId when one is given ("RackId can't be empty."), epoch 0 without topics
// ("SubscribedTopicNames must be set in first request.", also for an empty list) and an
// epoch below -1 ("MemberEpoch is invalid."). Blank means empty once Java's String.trim has
// removed the characters up to U+0020 at either end.
func ValidateShareHeartbeat(req *ShareHeartbeat) error {
	switch {
	case javaBlank(req.MemberID):
		return kafkaerr.New(kerr.InvalidRequest, "MemberId can't be empty.")
	case javaBlank(req.GroupID):
		return kafkaerr.New(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.RackID != nil && javaBlank(*req.RackID):
		return kafkaerr.New(kerr.InvalidRequest, "RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return kafkaerr.New(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < LeaveEpoch:
		return kafkaerr.New(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	return nil
}

// javaBlank reports whether Java's s.trim().isEmpty() holds: every character is U+0020 or
// below.
func javaBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > ' ' { // a UTF-8 byte of a non-ASCII character is above ' ' too
			return false
		}
	}
	return true
}

// ShareHeartbeat runs one ShareGroupHeartbeat, as Kafka's GroupMetadataManager does, after
// ValidateShareHeartbeat.
//
// Epoch -1 leaves: the member is removed, the group epoch bumped, and the result echoes the
// member id with epoch -1. A missing group is GROUP_ID_NOT_FOUND "Group <id> not found.", an
// unknown member UNKNOWN_MEMBER_ID "Member <m> is not a member of group <g>.".
//
// Otherwise, in this order: a missing group is created by epoch 0 and is GROUP_ID_NOT_FOUND
// "Share group <id> not found." for any other epoch; a group of another type is
// GROUP_ID_NOT_FOUND "Group <id> is not a share group."; a group with group.share.max.size
// members refuses a member it does not have with GROUP_MAX_SIZE_REACHED "The share group has
// reached its maximum capacity of <n> members."; an unknown member is created by epoch 0 and
// is UNKNOWN_MEMBER_ID for any other epoch; then the member's epoch is checked:
// FENCED_MEMBER_EPOCH when the request's is greater than the member's, or smaller and not the
// member's previous epoch (a response lost in flight). Epoch 0 from a known member is a rejoin
// and is accepted (KAFKA-19233).
//
// The member's rack, subscription (when given) and client identity are updated; a new member
// or a changed subscription bumps the group epoch, and so does a change in the subscribed
// topics' metadata since the last bump (a topic created, deleted or given partitions). The
// target assignment is recomputed when the group epoch passed it, and the member takes its
// target assignment and epoch at once. Its session timer restarts.
//
// After Close every heartbeat is COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) ShareHeartbeat(req ShareHeartbeat) (ShareHeartbeatResult, error) {
	if err := ValidateShareHeartbeat(&req); err != nil {
		return ShareHeartbeatResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ShareHeartbeatResult{}, kerr.CoordinatorNotAvailable
	}
	if req.MemberEpoch == LeaveEpoch {
		return c.shareLeaveLocked(req)
	}
	cfg := c.cfg.ShareConfig(req.GroupID)
	g := c.groups[req.GroupID]
	switch {
	case g == nil && req.MemberEpoch != 0:
		return ShareHeartbeatResult{}, kafkaerr.New(kerr.GroupIDNotFound, "Share group %s not found.", req.GroupID)
	case g == nil:
		// A new group can refuse nothing below, so it is registered at once.
		s := newShareGroup()
		g = &Group{id: strings.Clone(req.GroupID), typ: TypeShare, kind: s, share: s}
		c.groups[g.id] = g
	case g.typ != TypeShare:
		return ShareHeartbeatResult{}, notTypeError(req.GroupID, TypeShare)
	}
	s := g.share
	m := s.members[req.MemberID]
	if m == nil && len(s.members) >= cfg.MaxSize {
		return ShareHeartbeatResult{}, kafkaerr.New(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", cfg.MaxSize)
	}
	joined := m == nil
	if joined {
		if req.MemberEpoch != 0 {
			return ShareHeartbeatResult{}, kafkaerr.New(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
		}
		m = &shareMember{id: strings.Clone(req.MemberID)}
	} else if err := checkShareMemberEpoch(m, req.MemberEpoch); err != nil {
		return ShareHeartbeatResult{}, err
	}

	if req.RackID != nil {
		r := strings.Clone(*req.RackID)
		m.rackID = &r
	}
	m.clientID, m.clientHost = strings.Clone(req.ClientID), strings.Clone(req.ClientHost)
	subscriptionChanged := joined
	if req.SubscribedTopicNames != nil {
		topics := make([]string, len(req.SubscribedTopicNames))
		for i, t := range req.SubscribedTopicNames {
			topics[i] = strings.Clone(t)
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics = topics
			subscriptionChanged = true
		}
	}
	if joined {
		s.members[m.id] = m
	}
	c.refreshShareEpoch(s, subscriptionChanged)
	s.updateTarget()
	before := m.assigned
	if m.epoch != s.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, s.assignmentEpoch
		m.assigned = s.target[m.id]
	}
	c.restartShareSession(g.id, m, cfg.SessionTimeout)

	res := ShareHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: cfg.HeartbeatInterval}
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || !equalAssignment(before, m.assigned) {
		res.HasAssignment = true
		res.Assignment = cloneAssignment(m.assigned)
	}
	return res, nil
}

// checkMemberEpoch applies Kafka's share group epoch rules to a known member's heartbeat.
func checkShareMemberEpoch(m *shareMember, received int32) error {
	switch {
	case received == 0:
		return nil
	case received > m.epoch:
		return kafkaerr.New(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch && received != m.prevEpoch:
		return kafkaerr.New(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", received, m.epoch, m.prevEpoch)
	}
	return nil
}

func (c *Coordinator) shareLeaveLocked(req ShareHeartbeat) (ShareHeartbeatResult, error) {
	s, err := c.shareGroupLocked(req.GroupID)
	if err != nil {
		return ShareHeartbeatResult{}, err
	}
	m := s.members[req.MemberID]
	if m == nil {
		return ShareHeartbeatResult{}, kafkaerr.New(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
	}
	c.removeShareMember(s, m)
	return ShareHeartbeatResult{MemberID: req.MemberID, MemberEpoch: LeaveEpoch}, nil
}

// restartSession (re)arms the member's session timeout on the cluster clock.
func (c *Coordinator) restartShareSession(groupID string, m *shareMember, timeout time.Duration) {
	m.stopSession()
	st := &sessionTimer{}
	memberID := m.id
	st.t = c.cfg.Clock.AfterFunc(timeout, func() { c.expireShareSession(groupID, memberID, st) })
	m.session = st
}

// expireSession removes a member whose session timer st fired, unless a heartbeat replaced
// the timer meanwhile or the member already left.
func (c *Coordinator) expireShareSession(groupID, memberID string, st *sessionTimer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	g := c.groups[groupID]
	if g == nil || g.share == nil {
		return
	}
	m := g.share.members[memberID]
	if m == nil || m.session != st {
		return
	}
	m.session = nil
	c.removeShareMember(g.share, m)
}

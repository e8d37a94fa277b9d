package group

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// ConsumerHeartbeat is a ConsumerGroupHeartbeat request, with the client's identity taken
// from the request header and the connection.
type ConsumerHeartbeat struct {
	// Version is the request's version: from 1 the client generates its member id.
	Version     int16
	GroupID     string
	MemberID    string
	MemberEpoch int32
	// InstanceID is nil for a dynamic member, or when unchanged since the last heartbeat.
	InstanceID *string
	// RackID is nil when not provided or unchanged since the last heartbeat.
	RackID *string
	// RebalanceTimeout is -1ms when unchanged since the last heartbeat.
	RebalanceTimeout time.Duration
	// SubscribedTopicNames is nil when unchanged since the last heartbeat.
	SubscribedTopicNames []string
	// SubscribedTopicRegex is nil when unchanged since the last heartbeat; "" subscribes to
	// no regular expression.
	SubscribedTopicRegex *string
	// ServerAssignor is nil when not used or unchanged.
	ServerAssignor *string
	// Owned are the partitions the member owns, by topic id; nil when unchanged since the
	// last heartbeat.
	Owned    map[[16]byte][]int32
	ClientID string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost string
}

// ConsumerHeartbeatResult is a successful heartbeat's answer.
type ConsumerHeartbeatResult struct {
	MemberID    string
	MemberEpoch int32
	// HeartbeatInterval is the group's consumer.heartbeat.interval.ms; zero for a leave.
	HeartbeatInterval time.Duration
	// HasAssignment says whether the response carries Assignment: on a join (epoch 0), on a
	// full request and when the member's assignment changed.
	HasAssignment bool
	// Assignment is the member's assignment by topic id; never nil when HasAssignment.
	Assignment []TopicPartitions
}

// ValidateConsumerHeartbeat checks a heartbeat as Kafka's GroupCoordinatorService does before
// anything else, in this order, each failure INVALID_REQUEST with Kafka's message: a blank
// MemberId when the version is 1 or more, the epoch above 0 or -1 ("MemberId can't be
// empty."), a blank GroupId, a blank InstanceId or RackId when given ("InstanceId can't be
// empty.", "RackId can't be empty."); at epoch 0 a rebalance timeout of -1 ("RebalanceTimeoutMs
// must be provided in first request."), TopicPartitions null or not empty ("TopicPartitions
// must be empty when (re-)joining.") and neither SubscribedTopicNames nor SubscribedTopicRegex
// ("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.");
// at epoch -2 no InstanceId ("InstanceId can't be null."); an epoch below -2 ("MemberEpoch is
// invalid."). Last, a ServerAssignor that is not one of assignors is UNSUPPORTED_ASSIGNOR
// "ServerAssignor <a> is not supported. Supported assignors: <a1, a2>.".
func ValidateConsumerHeartbeat(req *ConsumerHeartbeat, assignors []string) error {
	switch {
	case (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == LeaveEpoch) && javaBlank(req.MemberID):
		return kafkaerr.New(kerr.InvalidRequest, "MemberId can't be empty.")
	case javaBlank(req.GroupID):
		return kafkaerr.New(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.InstanceID != nil && javaBlank(*req.InstanceID):
		return kafkaerr.New(kerr.InvalidRequest, "InstanceId can't be empty.")
	case req.RackID != nil && javaBlank(*req.RackID):
		return kafkaerr.New(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0 && req.RebalanceTimeout == -time.Millisecond:
		return kafkaerr.New(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
	case req.MemberEpoch == 0 && (req.Owned == nil || len(req.Owned) > 0):
		return kafkaerr.New(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return kafkaerr.New(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return kafkaerr.New(kerr.InvalidRequest, "InstanceId can't be null.")
	case req.MemberEpoch < staticLeaveEpoch:
		return kafkaerr.New(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil && !slices.Contains(assignors, *req.ServerAssignor) {
		return kafkaerr.New(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(assignors, ", "))
	}
	return nil
}

// ConsumerHeartbeat runs one ConsumerGroupHeartbeat, as Kafka's GroupMetadataManager does,
// after ValidateConsumerHeartbeat.
//
// Epoch -1 leaves and epoch -2 is a static member's temporary leave (see consumerLeaveLocked).
//
// Otherwise, in this order: a missing group is created by epoch 0 and is GROUP_ID_NOT_FOUND
// "Consumer group <id> not found." for any other epoch. At epoch 0 an empty classic group is
// replaced by a consumer group (the *Group, and what it holds besides its kind, such as
// committed offsets, stays); a classic group with members is not upgraded online:
// GROUP_ID_NOT_FOUND "Cannot upgrade classic group <id> to consumer group because ..." (the
// group does not use the consumer embedded protocol, the group size exceeds the consumer group
// maximum size, or, for a group that could be upgraded, online upgrade is disabled). Any other
// group of another type is GROUP_ID_NOT_FOUND "Group <id> is not a consumer group.". A full
// group refuses a member it does not have with GROUP_MAX_SIZE_REACHED "The consumer group has
// reached its maximum capacity of <n> members.". Then the member: an empty member id (v0) gets
// one; a dynamic member unknown at an epoch other than 0 is UNKNOWN_MEMBER_ID "Member <m> is
// not a member of group <g>."; a static member (InstanceID) joining takes over an instance id
// whose holder left with epoch -2 and is UNRELEASED_INSTANCE_ID otherwise; a static heartbeat
// for an unknown instance id is UNKNOWN_MEMBER_ID "Instance id <i> is unknown." and one from
// another member id FENCED_INSTANCE_ID; then FENCED_MEMBER_EPOCH for an epoch above the
// member's, or below it unless it is the previous epoch and the owned partitions are part of
// the assignment (a response lost in flight). Epoch 0 from a known member is a rejoin
// (KAFKA-19233). A new regular expression that does not compile is INVALID_REGULAR_EXPRESSION
// "SubscribedTopicRegex `<r>` is not a valid regular expression: <why>.".
//
// The member is updated; the group epoch is bumped for a new group, a changed subscription
// (names or regular expression) or changed subscribed topics (created, deleted, grown, or
// matched by a regular expression). The target assignment is recomputed by the preferred
// assignor when the group epoch passed it, and the member reconciled towards it (see
// reconciliation); a member that must revoke partitions gets its rebalance timeout, after
// which it is fenced if it still has not. Its session timer restarts.
//
// After Close every heartbeat is COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) ConsumerHeartbeat(req ConsumerHeartbeat) (ConsumerHeartbeatResult, error) {
	cfg := c.cfg.ConsumerConfig(req.GroupID)
	if err := ValidateConsumerHeartbeat(&req, cfg.Assignors); err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ConsumerHeartbeatResult{}, kerr.CoordinatorNotAvailable
	}
	if req.MemberEpoch == LeaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.consumerLeaveLocked(req)
	}

	g := c.groups[req.GroupID]
	var cg *consumerGroup
	replace := false // g is nil or an empty classic group: register cg on success
	switch {
	case g == nil && req.MemberEpoch != 0:
		return ConsumerHeartbeatResult{}, kafkaerr.New(kerr.GroupIDNotFound, "Consumer group %s not found.", req.GroupID)
	case g == nil:
		cg, replace = newConsumerGroup(strings.Clone(req.GroupID)), true
	case g.typ == TypeConsumer:
		cg = g.consumer
	case g.typ == TypeClassic && req.MemberEpoch == 0 && g.kind.memberCount() == 0:
		cg, replace = newConsumerGroup(strings.Clone(req.GroupID)), true
	case g.typ == TypeClassic && req.MemberEpoch == 0:
		return ConsumerHeartbeatResult{}, classicUpgradeError(g, cfg.MaxSize)
	default:
		return ConsumerHeartbeatResult{}, notTypeError(req.GroupID, TypeConsumer)
	}
	if len(cg.members) >= cfg.MaxSize && (req.MemberID == "" || cg.members[req.MemberID] == nil) {
		return ConsumerHeartbeatResult{}, kafkaerr.New(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", cfg.MaxSize)
	}
	if req.MemberID == "" {
		req.MemberID = newConsumerMemberID()
	}
	m, replaced, err := cg.lookupMember(req)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" && *req.SubscribedTopicRegex != m.regex {
		if err := checkRegex(*req.SubscribedTopicRegex); err != nil {
			return ConsumerHeartbeatResult{}, err
		}
	}

	// Nothing below refuses the heartbeat.
	if replace {
		if g == nil {
			g = &Group{id: cg.id}
			c.groups[g.id] = g
		} else {
			g.kind.stop()
		}
		g.typ, g.kind, g.consumer = TypeConsumer, cg, cg
	}
	if replaced != nil {
		cg.replaceStatic(replaced, m)
	}
	before := m.assigned
	subscriptionChanged := m.update(req)
	if cg.members[m.id] == nil {
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
	}
	c.refreshConsumerEpoch(cg, cg.epoch == 0 || subscriptionChanged)
	cg.updateTarget(cfg.Assignors)
	c.reconcile(g.id, cg, m, req.Owned, subscriptionChanged)
	c.restartConsumerSession(g.id, m, cfg.SessionTimeout)

	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: cfg.HeartbeatInterval}
	full := req.RebalanceTimeout != -time.Millisecond && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Owned != nil
	if req.MemberEpoch == 0 || full || !before.equal(m.assigned) {
		res.HasAssignment = true
		res.Assignment = m.assigned.list(c.cfg.Topics)
	}
	return res, nil
}

// classicUpgradeError is Kafka's answer to a consumer join of a classic group that has
// members: the online upgrade of such a group is not implemented, so a group that Kafka would
// upgrade gets the answer of a cluster whose group.consumer.migration.policy disables it.
func classicUpgradeError(g *Group, maxSize int) error {
	switch {
	case g.kind.protocolType() != "consumer":
		return kafkaerr.New(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the group does not use the consumer embedded protocol.", g.id)
	case g.kind.memberCount() > maxSize:
		return kafkaerr.New(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the group size exceeds the consumer group maximum size.", g.id)
	}
	return kafkaerr.New(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because online upgrade is disabled.", g.id)
}

// lookupMember finds or creates the heartbeat's member without changing the group. replaced
// is the static member a joining one takes over from.
func (g *consumerGroup) lookupMember(req ConsumerHeartbeat) (m, replaced *consumerMember, err error) {
	join := req.MemberEpoch == 0
	if req.InstanceID == nil {
		m = g.members[req.MemberID]
		if m == nil {
			if !join {
				return nil, nil, kafkaerr.New(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
			}
			return newConsumerMember(req.MemberID), nil, nil
		}
		return m, nil, checkConsumerMemberEpoch(m, req.MemberEpoch, req.Owned)
	}
	instance := *req.InstanceID
	var existing *consumerMember
	if id, ok := g.static[instance]; ok {
		existing = g.members[id]
	}
	if join {
		if existing == nil {
			if m = g.members[req.MemberID]; m == nil {
				m = newConsumerMember(req.MemberID)
			}
			return m, nil, nil
		}
		if existing.epoch != staticLeaveEpoch {
			return nil, nil, kafkaerr.New(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
				req.MemberID, instance, existing.id)
		}
		return existing.copyAs(req.MemberID), existing, nil
	}
	switch {
	case existing == nil:
		return nil, nil, kafkaerr.New(kerr.UnknownMemberID, "Instance id %s is unknown.", instance)
	case existing.id != req.MemberID:
		return nil, nil, kafkaerr.New(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, instance, existing.id)
	}
	return existing, nil, checkConsumerMemberEpoch(existing, req.MemberEpoch, req.Owned)
}

func newConsumerMember(id string) *consumerMember {
	return &consumerMember{id: strings.Clone(id), assigned: partitionSet{}, pendingRevocation: partitionSet{}}
}

// copyAs returns a copy of a static member under a new member id, at epoch 0, for the
// member that takes its instance id over.
func (m *consumerMember) copyAs(id string) *consumerMember {
	n := newConsumerMember(id)
	n.instanceID, n.rackID = cloneStringPtr(m.instanceID), cloneStringPtr(m.rackID)
	n.clientID, n.clientHost = m.clientID, m.clientHost
	n.rebalanceTimeout, n.serverAssignor = m.rebalanceTimeout, m.serverAssignor
	n.topics, n.regex = slices.Clone(m.topics), m.regex
	n.state = m.state
	n.assigned, n.pendingRevocation = m.assigned.clone(), m.pendingRevocation.clone()
	return n
}

// replaceStatic puts n, a copy of the static member old, in its place: old leaves without a
// group epoch bump and n inherits its target assignment.
func (g *consumerGroup) replaceStatic(old, n *consumerMember) {
	target := g.target[old.id]
	g.removeMember(old)
	g.members[n.id] = n
	g.static[*n.instanceID] = n.id
	g.target[n.id] = target
	g.ownPartitions(n)
}

// checkConsumerMemberEpoch applies Kafka's epoch rules to a known member's heartbeat.
func checkConsumerMemberEpoch(m *consumerMember, received int32, owned map[[16]byte][]int32) error {
	switch {
	case received == 0:
		return nil
	case received > m.epoch:
		return kafkaerr.New(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch && (received != m.prevEpoch || !ownedWithin(owned, m.assigned)):
		return kafkaerr.New(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	}
	return nil
}

// ownedWithin reports whether the owned partitions, when given, are all in set.
func ownedWithin(owned map[[16]byte][]int32, set partitionSet) bool {
	if owned == nil {
		return false
	}
	for t, ps := range owned {
		for _, p := range ps {
			if !set.contains(t, p) {
				return false
			}
		}
	}
	return true
}

// checkRegex compiles a subscription regular expression; Go's RE2 syntax and its error
// descriptions are those of Kafka's RE2/J.
func checkRegex(re string) error {
	if _, err := regexp.Compile(re); err != nil {
		why := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			why = string(se.Code)
		}
		return kafkaerr.New(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %s.", re, why)
	}
	return nil
}

// update applies the heartbeat's fields to m and reports whether its subscription (names or
// regular expression) changed.
func (m *consumerMember) update(req ConsumerHeartbeat) bool {
	if req.InstanceID != nil {
		m.instanceID = cloneStringPtr(req.InstanceID)
	}
	if req.RackID != nil {
		m.rackID = cloneStringPtr(req.RackID)
	}
	if req.RebalanceTimeout != -time.Millisecond {
		m.rebalanceTimeout = req.RebalanceTimeout
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = strings.Clone(*req.ServerAssignor)
	}
	m.clientID, m.clientHost = strings.Clone(req.ClientID), strings.Clone(req.ClientHost)
	changed := false
	if req.SubscribedTopicNames != nil {
		topics := make([]string, len(req.SubscribedTopicNames))
		for i, t := range req.SubscribedTopicNames {
			topics[i] = strings.Clone(t)
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics, changed = topics, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, changed = strings.Clone(*req.SubscribedTopicRegex), true
	}
	return changed
}

// reconcile moves m towards its target assignment, and arms or stops its rebalance timeout
// when its state changed: armed while it has partitions to revoke.
func (c *Coordinator) reconcile(groupID string, g *consumerGroup, m *consumerMember, owned map[[16]byte][]int32, subscriptionChanged bool) {
	if m.reconciledTo(g.assignmentEpoch) && !subscriptionChanged {
		return
	}
	cur := memberAssignment{state: m.state, epoch: m.epoch, prevEpoch: m.prevEpoch, assigned: m.assigned, pendingRevocation: m.pendingRevocation}
	var ownedSet partitionSet
	if owned != nil {
		ownedSet = partitionSet{}
		for t, ps := range owned {
			for _, p := range ps {
				ownedSet.add(t, p)
			}
		}
	}
	next := reconciliation{
		current:             cur,
		targetEpoch:         g.assignmentEpoch,
		target:              g.target[m.id],
		subscribed:          g.subscribedIDs(m),
		partitionEpoch:      g.partitionEpoch,
		owned:               ownedSet,
		subscriptionChanged: subscriptionChanged,
	}.next()
	if next.equal(cur) {
		return
	}
	g.setAssignment(m, next)
	if m.state == memberUnrevokedPartitions {
		c.startRebalanceTimeout(groupID, m)
	} else {
		m.stopRebalance()
	}
}

// consumerLeaveLocked runs a leave. A missing group is GROUP_ID_NOT_FOUND "Group <id> not
// found.", a group of another type "Group <id> is not a consumer group.". A dynamic member
// unknown to the group is UNKNOWN_MEMBER_ID "Member <m> is not a member of group <g>."; for a
// static member, an unknown instance id is UNKNOWN_MEMBER_ID "Instance id <i> is unknown." and
// another member's FENCED_INSTANCE_ID. Epoch -1 removes the member and bumps the group epoch;
// epoch -2 keeps a static member, with epoch -2 and its partitions but none pending
// revocation, until its session times out or a member with its instance id joins.
func (c *Coordinator) consumerLeaveLocked(req ConsumerHeartbeat) (ConsumerHeartbeatResult, error) {
	g, err := c.consumerGroupLocked(req.GroupID)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	var m *consumerMember
	if req.InstanceID == nil {
		if m = g.members[req.MemberID]; m == nil {
			return ConsumerHeartbeatResult{}, kafkaerr.New(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
		}
	} else {
		if id, ok := g.static[*req.InstanceID]; ok {
			m = g.members[id]
		}
		switch {
		case m == nil:
			return ConsumerHeartbeatResult{}, kafkaerr.New(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		case m.id != req.MemberID:
			return ConsumerHeartbeatResult{}, kafkaerr.New(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
		if req.MemberEpoch == staticLeaveEpoch {
			g.setAssignment(m, memberAssignment{state: m.state, epoch: staticLeaveEpoch, prevEpoch: m.epoch, assigned: m.assigned, pendingRevocation: partitionSet{}})
			return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: staticLeaveEpoch}, nil
		}
	}
	c.fenceConsumerMember(g, m)
	return res, nil
}

// fenceConsumerMember removes m (leave, session expiry, rebalance timeout) and bumps the
// group epoch. The others' target assignment is recomputed at the next heartbeat.
func (c *Coordinator) fenceConsumerMember(g *consumerGroup, m *consumerMember) {
	g.removeMember(m)
	c.refreshConsumerEpoch(g, true)
}

// restartConsumerSession (re)arms the member's session timeout on the cluster clock.
func (c *Coordinator) restartConsumerSession(groupID string, m *consumerMember, timeout time.Duration) {
	m.stopSession()
	st := &sessionTimer{}
	memberID := m.id
	st.t = c.cfg.Clock.AfterFunc(timeout, func() {
		c.expireConsumerTimer(groupID, memberID, st, func(m *consumerMember) *sessionTimer { return m.session })
	})
	m.session = st
}

// startRebalanceTimeout (re)arms the time m has to revoke its partitions pending revocation.
func (c *Coordinator) startRebalanceTimeout(groupID string, m *consumerMember) {
	m.stopRebalance()
	st := &sessionTimer{}
	memberID := m.id
	st.t = c.cfg.Clock.AfterFunc(m.rebalanceTimeout, func() {
		c.expireConsumerTimer(groupID, memberID, st, func(m *consumerMember) *sessionTimer { return m.rebalance })
	})
	m.rebalance = st
}

// expireConsumerTimer fences a member whose timer st fired, unless the member replaced the
// timer meanwhile (which of its timers is current returns), left or lost its group.
func (c *Coordinator) expireConsumerTimer(groupID, memberID string, st *sessionTimer, current func(*consumerMember) *sessionTimer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	g := c.groups[groupID]
	if g == nil || g.consumer == nil {
		return
	}
	m := g.consumer.members[memberID]
	if m == nil || current(m) != st {
		return
	}
	c.fenceConsumerMember(g.consumer, m)
}

// newConsumerMemberID returns a member id as Kafka's Uuid.randomUuid().toString() prints one:
// 16 random bytes in unpadded URL-safe base64.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

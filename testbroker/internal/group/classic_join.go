package group

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinGroup is a JoinGroup request, with the client's identity taken from the request header
// and the connection.
type JoinGroup struct {
	GroupID          string
	MemberID         string
	GroupInstanceID  *string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// Version is the request's version: from v4 a member without an id is given one and told
	// to rejoin with it (MEMBER_ID_REQUIRED).
	Version    int16
	ClientID   string
	ClientHost string
}

// JoinGroupMember is a member as the leader's JoinGroup response lists it.
type JoinGroupMember struct {
	MemberID        string
	GroupInstanceID *string
	Metadata        []byte
}

// JoinGroupResult is a JoinGroup's answer. Err is a Kafka error code (kerr); MemberID is set
// with it as Kafka sets it.
type JoinGroupResult struct {
	Err          error
	MemberID     string
	GenerationID int32
	ProtocolType *string
	ProtocolName *string
	LeaderID     string
	// SkipAssignment tells a static leader that rejoined a stable group not to assign again.
	SkipAssignment bool
	// Members is set for the leader only.
	Members []JoinGroupMember
}

// JoinGroup runs a JoinGroup as Kafka's GroupMetadataManager does. The answer comes on the
// returned channel, at once or when the rebalance completes; the caller waits on it without
// holding anything, and may stop waiting (the channel is buffered).
//
// Before the group is looked at: after Close COORDINATOR_NOT_AVAILABLE, an empty group id
// INVALID_GROUP_ID, a session timeout outside group.min/max.session.timeout.ms
// INVALID_SESSION_TIMEOUT. A share group, a streams group and a consumer group with members
// are INCONSISTENT_GROUP_PROTOCOL with member id "" (Kafka joins a classic member to a
// non-empty consumer group as a mixed group; testbroker does not); an empty consumer group is
// replaced by a classic group, keeping its committed offsets. A missing group is created by a
// member without id and is UNKNOWN_MEMBER_ID for one with an id.
//
// A full group (group.max.size) is GROUP_MAX_SIZE_REACHED. A member without id gets one; from
// v4 a dynamic member is told MEMBER_ID_REQUIRED with it and must rejoin with it within its
// session timeout. The first join of an empty group starts a rebalance that waits
// group.initial.rebalance.delay.ms, extended while members keep joining, up to the rebalance
// timeout; a later rebalance completes when every member rejoined, or at the rebalance timeout,
// when dynamic members that did not rejoin are removed. A known member joining a stable group
// with its metadata unchanged gets the current generation back, unless it is the leader, which
// starts a rebalance.
func (c *Coordinator) JoinGroup(req JoinGroup) <-chan JoinGroupResult {
	ch := make(chan JoinGroupResult, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if res, done := c.joinLocked(&req, ch); done {
		ch <- res
	}
	return ch
}

// joinLocked runs the join; done says that res is the answer now, else the answer comes later
// on ch.
func (c *Coordinator) joinLocked(req *JoinGroup, ch chan JoinGroupResult) (res JoinGroupResult, done bool) {
	fail := func(err error, memberID string) (JoinGroupResult, bool) {
		return JoinGroupResult{Err: err, MemberID: memberID}, true
	}
	cfg := c.classicConfig()
	switch {
	case c.closed:
		return fail(kerr.CoordinatorNotAvailable, req.MemberID)
	case req.GroupID == "":
		return fail(kerr.InvalidGroupID, req.MemberID)
	case req.SessionTimeout < cfg.MinSessionTimeout || req.SessionTimeout > cfg.MaxSessionTimeout:
		return fail(kerr.InvalidSessionTimeout, req.MemberID)
	}
	grp := c.groups[req.GroupID]
	switch {
	case grp == nil && req.MemberID != "":
		return fail(kerr.UnknownMemberID, req.MemberID)
	case grp == nil:
		grp = &Group{id: strings.Clone(req.GroupID), typ: TypeClassic}
		grp.kind = newClassicGroup(grp.id)
		c.groups[grp.id] = grp
	case grp.typ == TypeConsumer && grp.kind.memberCount() == 0:
		grp.kind.stop()
		grp.typ, grp.kind, grp.consumer = TypeClassic, newClassicGroup(grp.id), nil
	case grp.typ != TypeClassic:
		return fail(kerr.InconsistentGroupProtocol, "")
	}
	g := grp.kind.(*classicGroup)
	if !g.acceptJoiningMember(req.MemberID, cfg.MaxSize) {
		g.remove(req.MemberID)
		return fail(kerr.GroupMaxSizeReached, "")
	}
	if req.MemberID == "" {
		return c.joinNewMember(g, req, ch)
	}
	return c.joinExistingMember(g, req, ch)
}

// acceptJoiningMember applies group.max.size: while rebalancing, against the members that
// rejoined (so that the last to rejoin are the ones refused); otherwise against all members.
func (g *classicGroup) acceptJoiningMember(memberID string, maxSize int) bool {
	switch g.phase {
	case classicPreparingRebalance:
		m := g.members[memberID]
		return (m != nil && m.awaitingJoin()) || g.awaitingJoin < maxSize
	case classicCompletingRebalance, classicStable:
		return g.members[memberID] != nil || len(g.members) < maxSize
	}
	return true
}

func (c *Coordinator) joinNewMember(g *classicGroup, req *JoinGroup, ch chan JoinGroupResult) (JoinGroupResult, bool) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return JoinGroupResult{Err: kerr.InconsistentGroupProtocol}, true
	}
	id := newMemberID(req.ClientID, req.GroupInstanceID)
	if req.GroupInstanceID != nil {
		if old, ok := g.static[*req.GroupInstanceID]; ok {
			return c.replaceStaticMember(g, req, old, id, ch)
		}
		return c.addMemberThenRebalance(g, req, id, ch)
	}
	if req.Version >= 4 {
		slot := &timerSlot{}
		g.pending[id] = slot
		c.arm(slot, req.SessionTimeout, func() { c.expireClassicHeartbeat(g, id) })
		return JoinGroupResult{Err: kerr.MemberIDRequired, MemberID: id}, true
	}
	return c.addMemberThenRebalance(g, req, id, ch)
}

func (c *Coordinator) joinExistingMember(g *classicGroup, req *JoinGroup, ch chan JoinGroupResult) (JoinGroupResult, bool) {
	fail := func(err error) (JoinGroupResult, bool) {
		return JoinGroupResult{Err: err, MemberID: req.MemberID}, true
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if g.pending[req.MemberID] != nil {
		if req.GroupInstanceID != nil {
			// Kafka fails this with an IllegalStateException: a pending member is never static.
			return fail(kerr.UnknownServerError)
		}
		return c.addMemberThenRebalance(g, req, req.MemberID, ch)
	}
	if err := g.validateMember(req.MemberID, req.GroupInstanceID); err != nil {
		return fail(err)
	}
	m := g.members[req.MemberID]
	switch g.phase {
	case classicPreparingRebalance:
		return c.updateMemberThenRebalance(g, m, req, ch)
	case classicCompletingRebalance:
		if m.matches(req.Protocols) {
			// A repeated join (its first answer was lost): the current generation again.
			return g.joinAnswer(m, g.leader == m.id), true
		}
		return c.updateMemberThenRebalance(g, m, req, ch)
	case classicStable:
		if g.leader == m.id || !m.matches(req.Protocols) {
			return c.updateMemberThenRebalance(g, m, req, ch)
		}
		return g.joinAnswer(m, false), true
	}
	return fail(kerr.UnknownMemberID)
}

// joinAnswer is the successful JoinGroup answer for m in the current generation.
func (g *classicGroup) joinAnswer(m *classicMember, withMembers bool) JoinGroupResult {
	res := JoinGroupResult{
		MemberID:     m.id,
		GenerationID: g.generation,
		ProtocolType: g.protoType,
		ProtocolName: g.protoName,
		LeaderID:     g.leader,
		Members:      []JoinGroupMember{},
	}
	if withMembers {
		res.Members = g.currentMembers()
	}
	return res
}

func (c *Coordinator) addMemberThenRebalance(g *classicGroup, req *JoinGroup, id string, ch chan JoinGroupResult) (JoinGroupResult, bool) {
	m := &classicMember{
		id:               id,
		instanceID:       cloneStringPtr(req.GroupInstanceID),
		clientID:         strings.Clone(req.ClientID),
		clientHost:       strings.Clone(req.ClientHost),
		rebalanceTimeout: req.RebalanceTimeout,
		sessionTimeout:   req.SessionTimeout,
		protocolType:     strings.Clone(req.ProtocolType),
		protocols:        req.Protocols,
		isNew:            true,
	}
	if g.phase == classicPreparingRebalance && g.prevPhase == classicEmpty {
		g.newMemberAdded = true
	}
	g.add(m, ch)
	// A new member cannot heartbeat while its join is parked, so its join gets a deadline of
	// its own instead of the session timeout.
	c.armHeartbeat(g, m, newMemberJoinTimeout)
	c.maybePrepareRebalanceOrCompleteJoin(g)
	return JoinGroupResult{}, false
}

func (c *Coordinator) updateMemberThenRebalance(g *classicGroup, m *classicMember, req *JoinGroup, ch chan JoinGroupResult) (JoinGroupResult, bool) {
	g.updateMember(m, req, ch)
	c.maybePrepareRebalanceOrCompleteJoin(g)
	return JoinGroupResult{}, false
}

// replaceStaticMember gives a rejoining static member (unknown member id, known instance id)
// its new member id. In a stable group whose protocol stays the same there is no rebalance:
// the member gets the current generation and its assignment back at its SyncGroup.
func (c *Coordinator) replaceStaticMember(g *classicGroup, req *JoinGroup, oldID, newID string, ch chan JoinGroupResult) (JoinGroupResult, bool) {
	m := g.members[oldID]
	m.heartbeat.stop()
	g.completeJoin(m, JoinGroupResult{Err: kerr.FencedInstanceID, MemberID: oldID})
	g.completeSync(m, SyncGroupResult{Err: kerr.FencedInstanceID})
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	if g.pendingSync[oldID] { // the new id owes the SyncGroup the old one did
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.static[*req.GroupInstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	c.armHeartbeat(g, m, m.sessionTimeout)
	g.updateMember(m, req, ch)
	switch g.phase {
	case classicStable:
		if g.protoName != nil && *g.protoName == g.selectProtocol() {
			// From v9 the leader gets the members but is told to skip the assignment.
			leader := req.Version >= 9 && g.leader == newID
			res := g.joinAnswer(m, leader)
			res.SkipAssignment = leader
			g.completeJoin(m, res)
			return JoinGroupResult{}, false
		}
		c.maybePrepareRebalanceOrCompleteJoin(g)
	case classicCompletingRebalance:
		// The leader may already have assigned under the old member id.
		c.prepareRebalance(g)
	default:
		c.maybeCompleteJoinPhase(g)
	}
	return JoinGroupResult{}, false
}

func cloneStringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := strings.Clone(*s)
	return &c
}

// armHeartbeat (re)starts a member's session timer.
func (c *Coordinator) armHeartbeat(g *classicGroup, m *classicMember, d time.Duration) {
	id := m.id
	c.arm(&m.heartbeat, d, func() { c.expireClassicHeartbeat(g, id) })
}

// expireClassicHeartbeat removes a pending member, or a member that has not satisfied its
// heartbeat, when its session timer fires.
func (c *Coordinator) expireClassicHeartbeat(g *classicGroup, id string) {
	if g.pending[id] != nil {
		g.remove(id)
		if g.phase == classicPreparingRebalance && g.hasAllMembersJoined() {
			c.completeJoinPhase(g)
		}
		return
	}
	m := g.members[id]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	c.removeMemberAndUpdate(g, m)
}

// removeMemberAndUpdate removes a failed member, answering its parked join with
// UNKNOWN_MEMBER_ID so that a live client rejoins, and rebalances.
func (c *Coordinator) removeMemberAndUpdate(g *classicGroup, m *classicMember) {
	g.completeJoin(m, JoinGroupResult{Err: kerr.UnknownMemberID})
	g.remove(m.id)
	switch {
	case g.phase == classicStable || g.phase == classicCompletingRebalance:
		c.maybePrepareRebalanceOrCompleteJoin(g)
	case g.phase == classicPreparingRebalance && g.hasAllMembersJoined():
		c.completeJoinPhase(g)
	}
}

func (c *Coordinator) maybePrepareRebalanceOrCompleteJoin(g *classicGroup) {
	if g.canRebalance() {
		c.prepareRebalance(g)
		return
	}
	c.maybeCompleteJoinPhase(g)
}

// maybeCompleteJoinPhase completes the join phase when every member rejoined, except during
// the initial rebalance, which runs its delay to the end.
func (c *Coordinator) maybeCompleteJoinPhase(g *classicGroup) {
	if g.phase != classicPreparingRebalance || g.prevPhase == classicEmpty || !g.hasAllMembersJoined() {
		return
	}
	c.completeJoinPhase(g)
}

// prepareRebalance moves the group to PreparingRebalance: members awaiting their assignment
// are told REBALANCE_IN_PROGRESS; the first rebalance of an empty group waits the initial
// delay, any other completes once every member rejoined or at the rebalance timeout.
func (c *Coordinator) prepareRebalance(g *classicGroup) {
	if g.phase == classicCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		c.propagateAssignment(g, kerr.RebalanceInProgress)
	}
	clear(g.pendingSync)
	g.syncTimer.stop()
	initial := g.phase == classicEmpty
	if initial {
		delay := c.classicConfig().InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		c.armInitialRebalance(g, delay, remaining)
	}
	g.transition(classicPreparingRebalance)
	if initial {
		return
	}
	if g.hasAllMembersJoined() {
		c.completeJoinPhase(g)
		return
	}
	c.arm(&g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoinPhase(g) })
}

// armInitialRebalance waits delay, then completes the join phase unless a member joined
// meanwhile and time remains, in which case it waits again.
func (c *Coordinator) armInitialRebalance(g *classicGroup, delay, remaining time.Duration) {
	c.arm(&g.joinTimer, delay, func() {
		if g.newMemberAdded && remaining != 0 {
			g.newMemberAdded = false
			next := min(c.classicConfig().InitialRebalanceDelay, remaining)
			c.armInitialRebalance(g, next, max(remaining-delay, 0))
			return
		}
		c.completeJoinPhase(g)
	})
}

// completeJoinPhase ends the join phase: dynamic members that did not rejoin are removed and
// the next generation starts, answering every parked JoinGroup (the leader's with the members'
// metadata). If no member rejoined, it waits another rebalance timeout.
func (c *Coordinator) completeJoinPhase(g *classicGroup) {
	g.joinTimer.stop()
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() && m.instanceID == nil {
			g.remove(m.id)
		}
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		c.arm(&g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoinPhase(g) })
		return
	}
	g.initNextGeneration()
	if g.phase == classicEmpty {
		return
	}
	for _, m := range g.sortedMembers() {
		g.completeJoin(m, g.joinAnswer(m, g.leader == m.id))
		c.armHeartbeat(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	generation := g.generation
	c.arm(&g.syncTimer, g.rebalanceTimeout(), func() { c.expirePendingSync(g, generation) })
}

// expirePendingSync removes the members that did not send SyncGroup within the rebalance
// timeout, and rebalances.
func (c *Coordinator) expirePendingSync(g *classicGroup, generation int32) {
	if generation != g.generation || (g.phase != classicCompletingRebalance && g.phase != classicStable) || len(g.pendingSync) == 0 {
		return
	}
	for id := range g.pendingSync {
		g.remove(id)
	}
	c.prepareRebalance(g)
}

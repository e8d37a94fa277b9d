package group

import (
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// SyncGroup is a SyncGroup request.
type SyncGroup struct {
	GroupID         string
	GenerationID    int32
	MemberID        string
	GroupInstanceID *string
	// ProtocolType and ProtocolName are nil when the request does not carry them (before v5).
	ProtocolType *string
	ProtocolName *string
	// Assignments is the leader's assignment, by member id.
	Assignments map[string][]byte
}

// SyncGroupResult is a SyncGroup's answer; Err is a Kafka error code (kerr).
type SyncGroupResult struct {
	Err          error
	ProtocolType *string
	ProtocolName *string
	Assignment   []byte
}

// SyncGroup runs a SyncGroup as Kafka does; the answer comes on the returned channel, at once
// or when the leader's assignment arrives (the channel is buffered).
//
// After Close COORDINATOR_NOT_AVAILABLE; an empty group id INVALID_GROUP_ID; a missing or
// empty group, or one of another type, UNKNOWN_MEMBER_ID; then UNKNOWN_MEMBER_ID or
// FENCED_INSTANCE_ID for the member, ILLEGAL_GENERATION for another generation,
// INCONSISTENT_GROUP_PROTOCOL when a given protocol type or name is not the group's, and
// REBALANCE_IN_PROGRESS while the group prepares a rebalance. In CompletingRebalance a
// follower waits for the leader; the leader's SyncGroup gives every member its assignment
// (empty for members the leader left out) and makes the group Stable. In Stable the member
// gets its assignment at once.
func (c *Coordinator) SyncGroup(req SyncGroup) <-chan SyncGroupResult {
	ch := make(chan SyncGroupResult, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if res, done := c.syncLocked(&req, ch); done {
		ch <- res
	}
	return ch
}

func (c *Coordinator) syncLocked(req *SyncGroup, ch chan SyncGroupResult) (SyncGroupResult, bool) {
	fail := func(err error) (SyncGroupResult, bool) { return SyncGroupResult{Err: err}, true }
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if req.GroupID == "" {
		return fail(kerr.InvalidGroupID)
	}
	grp := c.groups[req.GroupID]
	if grp == nil || grp.kind.memberCount() == 0 || grp.typ != TypeClassic {
		return fail(kerr.UnknownMemberID)
	}
	g := grp.kind.(*classicGroup)
	if err := g.validateMember(req.MemberID, req.GroupInstanceID); err != nil {
		return fail(err)
	}
	switch {
	case req.GenerationID != g.generation:
		return fail(kerr.IllegalGeneration)
	case inconsistent(req.ProtocolType, g.protoType), inconsistent(req.ProtocolName, g.protoName):
		return fail(kerr.InconsistentGroupProtocol)
	}
	m := g.members[req.MemberID]
	switch g.phase {
	case classicPreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case classicCompletingRebalance:
		m.sync = ch
		g.removePendingSync(m.id)
		if g.leader == m.id {
			assignments := cloneAssignments(req.Assignments)
			for _, member := range g.members {
				member.assignment = assignments[member.id]
			}
			c.propagateAssignment(g, nil)
			g.transition(classicStable)
		}
		return SyncGroupResult{}, false
	}
	g.removePendingSync(m.id)
	return SyncGroupResult{ProtocolType: g.protoType, ProtocolName: g.protoName, Assignment: assignmentOrEmpty(m.assignment)}, true
}

// inconsistent reports whether a request's protocol type or name differs from the group's,
// when both are known.
func inconsistent(requested, group *string) bool {
	return requested != nil && group != nil && *requested != *group
}

func assignmentOrEmpty(a []byte) []byte {
	if a == nil {
		return []byte{}
	}
	return a
}

func (g *classicGroup) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 || g.phase == classicPreparingRebalance || g.phase == classicEmpty {
		g.syncTimer.stop()
	}
}

// propagateAssignment answers every parked SyncGroup with its member's assignment, or with
// err (and no protocol), and restarts those members' session timers.
func (c *Coordinator) propagateAssignment(g *classicGroup, err error) {
	for _, m := range g.sortedMembers() {
		res := SyncGroupResult{Err: err, Assignment: assignmentOrEmpty(m.assignment)}
		if err == nil {
			res.ProtocolType, res.ProtocolName = g.protoType, g.protoName
		}
		if g.completeSync(m, res) {
			c.armHeartbeat(g, m, m.sessionTimeout)
		}
	}
}

// Heartbeat is a classic Heartbeat request.
type Heartbeat struct {
	GroupID         string
	GenerationID    int32
	MemberID        string
	GroupInstanceID *string
}

// Heartbeat runs a classic Heartbeat: after Close COORDINATOR_NOT_AVAILABLE; an empty group id
// INVALID_GROUP_ID; a missing group or one of another type UNKNOWN_MEMBER_ID; then the member
// checks (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), ILLEGAL_GENERATION for another generation,
// UNKNOWN_MEMBER_ID in an Empty group, and REBALANCE_IN_PROGRESS while the group prepares a
// rebalance (the member should rejoin). Except for errors before the state check, the member's
// session timer restarts.
func (c *Coordinator) Heartbeat(req Heartbeat) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	if req.GroupID == "" {
		return kerr.InvalidGroupID
	}
	grp := c.groups[req.GroupID]
	if grp == nil || grp.typ != TypeClassic {
		return kerr.UnknownMemberID
	}
	g := grp.kind.(*classicGroup)
	if err := g.validateMember(req.MemberID, req.GroupInstanceID); err != nil {
		return err
	}
	if req.GenerationID != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.phase {
	case classicEmpty:
		return kerr.UnknownMemberID
	case classicPreparingRebalance:
		c.armHeartbeat(g, m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	}
	c.armHeartbeat(g, m, m.sessionTimeout)
	return nil
}

// LeaveMember is one member of a LeaveGroup: by member id, or by group instance id alone
// (member id "") for an administrative removal of a static member.
type LeaveMember struct {
	MemberID        string
	GroupInstanceID *string
}

// LeaveGroup removes members as Kafka's LeaveGroup does. The error is the request's
// (COORDINATOR_NOT_AVAILABLE after Close, INVALID_GROUP_ID); the slice has one error per
// member, nil for a member that left. A missing group or one of another type fails every
// member with UNKNOWN_MEMBER_ID; so does an unknown member (FENCED_INSTANCE_ID for an
// instance id held by another member). A pending member (told MEMBER_ID_REQUIRED) leaves
// without a rebalance; a member's leave rebalances the group.
func (c *Coordinator) LeaveGroup(groupID string, members []LeaveMember) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	errs := make([]error, len(members))
	grp := c.groups[groupID]
	if grp == nil || grp.typ != TypeClassic {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs, nil
	}
	g := grp.kind.(*classicGroup)
	left := false
	for i, lm := range members {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.GroupInstanceID != nil {
				id, ok = g.static[*lm.GroupInstanceID]
			}
			if !ok {
				errs[i] = kerr.UnknownMemberID
				continue
			}
			g.removeCurrentMember(id)
		case g.pending[lm.MemberID] != nil:
			g.remove(lm.MemberID)
		default:
			if err := g.validateMember(lm.MemberID, lm.GroupInstanceID); err != nil {
				errs[i] = err
				continue
			}
			g.removeCurrentMember(lm.MemberID)
		}
		left = true
	}
	if left {
		switch g.phase {
		case classicStable, classicCompletingRebalance:
			c.maybePrepareRebalanceOrCompleteJoin(g)
		case classicPreparingRebalance:
			c.maybeCompleteJoinPhase(g)
		}
	}
	return errs, nil
}

// removeCurrentMember removes a leaving member, answering its parked join with
// UNKNOWN_MEMBER_ID.
func (g *classicGroup) removeCurrentMember(id string) {
	m := g.members[id]
	g.completeJoin(m, JoinGroupResult{Err: kerr.UnknownMemberID})
	g.remove(id)
}

// ClassicGroupInfo is a snapshot of a classic group, as DescribeGroups reports it.
type ClassicGroupInfo struct {
	GroupID string
	// State is "Empty", "PreparingRebalance", "CompletingRebalance" or "Stable".
	State string
	// GenerationID is bumped by every completed join phase.
	GenerationID int32
	// ProtocolType is the members' protocol type ("consumer", "connect", ...), "" for a group
	// that only holds committed offsets.
	ProtocolType string
	// ProtocolName is the protocol the members voted for (the balancer, for consumers); "" until
	// the first generation with members.
	ProtocolName string
	LeaderID     string
	// Members are sorted by member id.
	Members []ClassicMemberInfo
}

// ClassicMemberInfo is a snapshot of a classic group member.
type ClassicMemberInfo struct {
	MemberID string
	// GroupInstanceID is set for a static member.
	GroupInstanceID *string
	ClientID        string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost string
	// Metadata is the member's metadata for the selected protocol.
	Metadata []byte
	// Assignment is what the leader assigned the member in this generation.
	Assignment []byte
}

// ClassicGroup returns a snapshot of a classic group. A missing group is GROUP_ID_NOT_FOUND
// "Group <id> not found.", a group of another type GROUP_ID_NOT_FOUND "Group <id> is not a
// classic group.".
func (c *Coordinator) ClassicGroup(id string) (ClassicGroupInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.groups[id]
	if grp == nil {
		return ClassicGroupInfo{}, kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", id)
	}
	if grp.typ != TypeClassic {
		return ClassicGroupInfo{}, notTypeError(id, TypeClassic)
	}
	g := grp.kind.(*classicGroup)
	info := ClassicGroupInfo{
		GroupID:      id,
		State:        g.state(),
		GenerationID: g.generation,
		ProtocolType: g.protocolTypeOrEmpty(),
		LeaderID:     g.leader,
		Members:      []ClassicMemberInfo{},
	}
	if g.protoName != nil {
		info.ProtocolName = *g.protoName
	}
	for _, m := range g.sortedMembers() {
		mi := ClassicMemberInfo{
			MemberID:        m.id,
			GroupInstanceID: cloneStringPtr(m.instanceID),
			ClientID:        m.clientID,
			ClientHost:      m.clientHost,
			Assignment:      append([]byte{}, m.assignment...),
		}
		if g.protoName != nil {
			mi.Metadata = append([]byte{}, m.metadata(*g.protoName)...)
		}
		info.Members = append(info.Members, mi)
	}
	return info, nil
}

// cloneAssignments copies a leader's assignments so that the group does not keep request
// buffers.
func cloneAssignments(in map[string][]byte) map[string][]byte {
	out := maps.Clone(in)
	for k, v := range out {
		out[k] = append([]byte{}, v...)
	}
	return out
}

package group

import (
	"crypto/rand"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClassicConfig is what classic groups run with (GroupCoordinatorConfig's group.* settings).
type ClassicConfig struct {
	// MinSessionTimeout and MaxSessionTimeout bound a JoinGroup's session timeout
	// (group.min.session.timeout.ms, group.max.session.timeout.ms); outside them the join is
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long the first rebalance
	// of an empty group waits for more members, extended (up to the rebalance timeout) while
	// members keep joining.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size: the most members a classic group accepts.
	MaxSize int
}

// DefaultClassicConfig is Kafka's default classic group configuration.
var DefaultClassicConfig = ClassicConfig{
	MinSessionTimeout:     6 * time.Second,
	MaxSessionTimeout:     30 * time.Minute,
	InitialRebalanceDelay: 3 * time.Second,
	MaxSize:               math.MaxInt32,
}

// newMemberJoinTimeout bounds how long a new member's JoinGroup may stay parked
// (classicGroupNewMemberJoinTimeoutMs): a client that gave up and retried would otherwise leave
// defunct members in the rebalance.
const newMemberJoinTimeout = 5 * time.Minute

func (c *Coordinator) classicConfig() ClassicConfig {
	if c.cfg.ClassicConfig == nil {
		return DefaultClassicConfig
	}
	return c.cfg.ClassicConfig()
}

// classicState is a classic group's state (ClassicGroupState).
type classicState int8

const (
	classicEmpty classicState = iota
	classicPreparingRebalance
	classicCompletingRebalance
	classicStable
)

// A classic group is never Dead in testbroker: Kafka marks a group Dead when it is deleted or
// its coordinator unloads it, and testbroker drops a deleted group at once (its timers
// stopped), so Kafka's checks for a Dead group have nothing to find.

func (s classicState) String() string {
	switch s {
	case classicEmpty:
		return "Empty"
	case classicPreparingRebalance:
		return "PreparingRebalance"
	case classicCompletingRebalance:
		return "CompletingRebalance"
	}
	return "Stable"
}

// Protocol is one protocol a classic member supports, with its metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// classicMember is one member of a classic group (ClassicGroupMember).
type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []Protocol
	assignment       []byte
	// isNew is set from the member's first join until its first generation: a new member's
	// heartbeat expires even while it awaits the join.
	isNew bool
	// join and sync receive the answer of the member's parked JoinGroup and SyncGroup; nil
	// when none is parked. Both are buffered so that answering never blocks.
	join      chan JoinGroupResult
	sync      chan SyncGroupResult
	heartbeat timerSlot
}

func (m *classicMember) awaitingJoin() bool { return m.join != nil }

func (m *classicMember) awaitingSync() bool { return m.sync != nil }

// hasSatisfiedHeartbeat says whether a member whose session timer fired may stay: a member
// awaiting a rebalance needs no heartbeat, unless it is new.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	return !m.isNew && (m.awaitingJoin() || m.awaitingSync())
}

func (m *classicMember) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols are the member's, in the same order with the same
// metadata.
func (m *classicMember) matches(protocols []Protocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b Protocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// vote is the member's first protocol among candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// classicGroup is the state of a classic group (ClassicGroup).
type classicGroup struct {
	id         string
	phase      classicState
	prevPhase  classicState
	generation int32
	// protocolType is nil for a group that never had a member (a simple group, created by an
	// offset commit); protocolName is set from CompletingRebalance on.
	protoType *string
	protoName *string
	leader    string
	members   map[string]*classicMember
	// static maps a group instance id to its member id.
	static map[string]string
	// pending are members told MEMBER_ID_REQUIRED that have not joined with their id yet,
	// each with its session timer.
	pending map[string]*timerSlot
	// pendingSync are the members of the generation that have not sent SyncGroup yet.
	pendingSync map[string]bool
	// supported counts, per protocol name, the members that support it.
	supported    map[string]int
	awaitingJoin int
	// newMemberAdded extends the initial rebalance's delay when set.
	newMemberAdded bool
	// subscribed is the union of the members' subscriptions when the group uses the consumer
	// protocol and its metadata parsed; nil when unknown.
	subscribed map[string]bool
	joinTimer  timerSlot
	syncTimer  timerSlot
}

func newClassicGroup(id string) *classicGroup {
	return &classicGroup{
		id:          id,
		members:     make(map[string]*classicMember),
		static:      make(map[string]string),
		pending:     make(map[string]*timerSlot),
		pendingSync: make(map[string]bool),
		supported:   make(map[string]int),
	}
}

func (g *classicGroup) protocolTypeOrEmpty() string {
	if g.protoType == nil {
		return ""
	}
	return *g.protoType
}

// The kind interface.

func (g *classicGroup) state() string { return g.phase.String() }

func (g *classicGroup) protocolType() string { return g.protocolTypeOrEmpty() }

func (g *classicGroup) memberCount() int { return len(g.members) }

// stop stops every timer of the group and answers parked requests with
// COORDINATOR_NOT_AVAILABLE, so that nothing waits on a group that is gone.
func (g *classicGroup) stop() {
	g.joinTimer.stop()
	g.syncTimer.stop()
	for _, p := range g.pending {
		p.stop()
	}
	for _, m := range g.members {
		m.heartbeat.stop()
		g.completeJoin(m, JoinGroupResult{Err: kerr.CoordinatorNotAvailable, MemberID: m.id})
		g.completeSync(m, SyncGroupResult{Err: kerr.CoordinatorNotAvailable})
	}
}

// sortedMembers returns the members by id, so that every choice among them (the leader, the
// protocol vote) is deterministic.
func (g *classicGroup) sortedMembers() []*classicMember {
	out := make([]*classicMember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *classicMember) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}

func (g *classicGroup) transition(to classicState) {
	g.prevPhase, g.phase = g.phase, to
}

// canRebalance: PreparingRebalance may follow Empty, Stable and CompletingRebalance.
func (g *classicGroup) canRebalance() bool {
	return g.phase == classicEmpty || g.phase == classicStable || g.phase == classicCompletingRebalance
}

func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pending) == 0
}

// rebalanceTimeout is the largest of the members' rebalance timeouts.
func (g *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols reports whether a member with this protocol type and these protocols
// may join: an empty group takes any non-empty type with at least one protocol; otherwise the
// type must be the group's and one protocol supported by every member.
func (g *classicGroup) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.phase == classicEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protoType == nil || *g.protoType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the group's protocol: among those every member supports, each member
// votes for its first, and the most votes win (ties to the smaller name, where Kafka's pick
// depends on hash order).
func (g *classicGroup) selectProtocol() string {
	candidates := map[string]bool{}
	for name, n := range g.supported {
		if n == len(g.members) {
			candidates[name] = true
		}
	}
	votes := map[string]int{}
	for _, m := range g.members {
		votes[m.vote(candidates)]++
	}
	best := ""
	for name, n := range votes {
		if best == "" || n > votes[best] || (n == votes[best] && name < best) {
			best = name
		}
	}
	return best
}

func (g *classicGroup) countProtocols(m *classicMember, delta int) {
	for _, p := range m.protocols {
		g.supported[p.Name] += delta
	}
}

// add adds a member, taking its protocol type if it is the first; join is the channel its
// JoinGroup waits on.
func (g *classicGroup) add(m *classicMember, join chan JoinGroupResult) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		t := m.protocolType
		g.protoType = &t
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.countProtocols(m, 1)
	m.join = join
	if join != nil {
		g.awaitingJoin++
	}
	if p := g.pending[m.id]; p != nil {
		p.stop()
		delete(g.pending, m.id)
	}
}

// remove takes a member (or a pending member) out of the group; a removed leader is
// replaced by the first remaining member.
func (g *classicGroup) remove(id string) {
	if m := g.members[id]; m != nil {
		m.heartbeat.stop()
		g.countProtocols(m, -1)
		if m.awaitingJoin() {
			g.awaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.static, *m.instanceID)
		}
		delete(g.members, id)
	}
	if g.leader == id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
	if p := g.pending[id]; p != nil {
		p.stop()
		delete(g.pending, id)
	}
	delete(g.pendingSync, id)
}

// updateMember replaces a member's protocols and timeouts on a rejoin; join is the channel
// its JoinGroup now waits on.
func (g *classicGroup) updateMember(m *classicMember, req *JoinGroup, join chan JoinGroupResult) {
	g.countProtocols(m, -1)
	m.protocols = req.Protocols
	g.countProtocols(m, 1)
	m.rebalanceTimeout, m.sessionTimeout = req.RebalanceTimeout, req.SessionTimeout
	switch {
	case join != nil && !m.awaitingJoin():
		g.awaitingJoin++
	case join == nil && m.awaitingJoin():
		g.awaitingJoin--
	}
	m.join = join
}

// completeJoin answers the member's parked JoinGroup, if any.
func (g *classicGroup) completeJoin(m *classicMember, res JoinGroupResult) {
	if m.join == nil {
		return
	}
	m.join <- res
	m.join = nil
	g.awaitingJoin--
}

// completeSync answers the member's parked SyncGroup, if any; it reports whether there was one.
func (g *classicGroup) completeSync(m *classicMember, res SyncGroupResult) bool {
	if m.sync == nil {
		return false
	}
	m.sync <- res
	m.sync = nil
	return true
}

// validateMember checks that memberID is a member and, for a static member, that the
// instance id maps to it: UNKNOWN_MEMBER_ID, or FENCED_INSTANCE_ID when another member holds
// the instance id.
func (g *classicGroup) validateMember(memberID string, instanceID *string) error {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if existing != memberID {
			return kerr.FencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else elects a member that did;
// it reports false when there is no leader or no member rejoined.
func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if m := g.members[g.leader]; m != nil && m.awaitingJoin() {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// initNextGeneration starts the next generation: CompletingRebalance with a selected protocol,
// or Empty when no member is left.
func (g *classicGroup) initNextGeneration() {
	g.generation++
	if len(g.members) > 0 {
		p := g.selectProtocol()
		g.protoName = &p
		g.subscribed = g.computeSubscribedTopics()
		g.transition(classicCompletingRebalance)
	} else {
		g.protoName = nil
		g.subscribed = g.computeSubscribedTopics()
		g.transition(classicEmpty)
	}
	clear(g.pendingSync)
}

// computeSubscribedTopics parses the members' consumer-protocol subscriptions; nil when the
// group does not use the consumer protocol or a subscription does not parse.
func (g *classicGroup) computeSubscribedTopics() map[string]bool {
	if !g.usesConsumerProtocol() {
		return nil
	}
	topics := map[string]bool{}
	if len(g.members) == 0 {
		return topics
	}
	if g.protoName == nil {
		return nil
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(*g.protoName)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// usesConsumerProtocol reports whether the group's protocol type is "consumer".
func (g *classicGroup) usesConsumerProtocol() bool { return g.protocolTypeOrEmpty() == "consumer" }

// subscribedTo reports whether the group's members subscribe to topic; when the
// subscriptions are unknown, a consumer-protocol group counts as subscribed.
func (g *classicGroup) subscribedTo(topic string) bool {
	if g.subscribed == nil {
		return g.usesConsumerProtocol()
	}
	return g.subscribed[topic]
}

// currentMembers is the members as the leader's JoinGroup response lists them.
func (g *classicGroup) currentMembers() []JoinGroupMember {
	out := []JoinGroupMember{}
	for _, m := range g.sortedMembers() {
		var meta []byte
		if g.protoName != nil {
			meta = m.metadata(*g.protoName)
		}
		out = append(out, JoinGroupMember{MemberID: m.id, GroupInstanceID: m.instanceID, Metadata: meta})
	}
	return out
}

// newMemberID is Kafka's member id: the instance id, or else the client id, then "-" and a
// random UUID.
func newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// timerSlot holds the one pending timer of a purpose (a member's heartbeat, a group's join
// or sync deadline), as Kafka's keyed timer does: arming it replaces the previous timer.
type timerSlot struct{ cur *sessionTimer }

func (s *timerSlot) stop() {
	if s.cur != nil {
		s.cur.t.Stop()
		s.cur = nil
	}
}

// arm schedules f after d under the coordinator lock, replacing the slot's timer. A timer
// that fired while it was being replaced or stopped does nothing.
func (c *Coordinator) arm(s *timerSlot, d time.Duration, f func()) {
	s.stop()
	st := &sessionTimer{}
	st.t = c.cfg.Clock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || s.cur != st {
			return
		}
		s.cur = nil
		f()
	})
	s.cur = st
}

package shareconsumer

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// maxBackoff caps the pause between failed heartbeats or metadata requests.
const maxBackoff = 5 * time.Second

// membership is the consumer's place in its share group: the subscription, the coordinator
// and member epoch (ShareGroupHeartbeat), the assignment the coordinator gave (by topic id),
// and the metadata that turns it into partitions and leaders. It builds heartbeats and applies
// their answers and metadata responses; the heartbeat and metadata goroutines send them. It
// reads no clock. Guarded by Consumer.mu.
type membership struct {
	group    string
	memberID string
	rack     *string

	subscription []string
	// withheld are subscribed topics Metadata says the member may not describe
	// (TOPIC_AUTHORIZATION_FAILED): the heartbeats leave them out, since Kafka refuses a whole
	// heartbeat that names one, so that the member can consume the others.
	withheld map[string]bool

	coord    int32    // the group coordinator; -1 unknown
	epoch    int32    // the member epoch; 0 (re)joins
	sentSub  []string // the subscription the coordinator acknowledged
	rackSent bool
	interval time.Duration // the coordinator's heartbeat interval
	failures int
	// describedEpoch is the member epoch at the last ShareGroupDescribe, sent to count the
	// members when the member is assigned nothing.
	describedEpoch int32

	// fatal is a *errors.FatalError once the coordinator refused the member for good.
	fatal error
	// left: the member left the group for want of Polls (max.poll.interval.ms).
	left bool

	assignment map[[16]byte][]int32
	topics     map[[16]byte]*topicMeta
	byName     map[string][16]byte
	// assigned is the assignment resolved through metadata: what the consumer fetches.
	assigned map[TopicPartition]*assignedPart
	// leadersBuf is leaders's answer, reused from call to call.
	leadersBuf []int32

	metaRunning bool // the metadata goroutine runs
	metaAgain   bool // and must run again
}

// topicMeta is what metadata says of one topic.
type topicMeta struct {
	name    string
	id      [16]byte
	leaders map[int32]leaderInfo
}

type leaderInfo struct {
	node  int32
	epoch int32
}

// assignedPart is one partition of the assignment, resolved.
type assignedPart struct {
	tp TopicPartition
	id [16]byte
}

// leaderMove is a partition whose leader changed to another broker.
type leaderMove struct {
	tp       TopicPartition
	from, to int32
}

func newMembership(group, memberID string, rack *string) membership {
	return membership{
		group: group, memberID: memberID, rack: rack,
		coord: -1, interval: 5 * time.Second,
		topics:   make(map[[16]byte]*topicMeta),
		byName:   make(map[string][16]byte),
		assigned: make(map[TopicPartition]*assignedPart),
	}
}

// backoff is the pause after a failed heartbeat or coordinator lookup: it doubles from
// retryBackoff with every failure in a row, up to maxBackoff.
func (m *membership) backoff() time.Duration {
	d := retryBackoff << min(m.failures, 6)
	m.failures++
	return min(d, maxBackoff)
}

// heartbeat makes the next ShareGroupHeartbeat: the subscription when joining or when it
// changed, the rack until the coordinator took it.
func (m *membership) heartbeat() *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.memberID, m.epoch
	if sub := m.heartbeatTopics(); m.epoch == 0 || !slices.Equal(sub, m.sentSub) {
		req.SubscribedTopicNames = sub
	}
	if m.rack != nil && (!m.rackSent || m.epoch == 0) {
		req.RackID = m.rack
	}
	return req
}

// heartbeatTopics is the subscription the heartbeats send: the subscribed topics but those
// withheld, or all of them when every one is withheld (nothing could be consumed either way).
func (m *membership) heartbeatTopics() []string {
	if len(m.withheld) == 0 {
		return m.subscription
	}
	var sub []string
	for _, t := range m.subscription {
		if !m.withheld[t] {
			sub = append(sub, t)
		}
	}
	if len(sub) == 0 {
		return m.subscription
	}
	return sub
}

// withhold follows what Metadata says of the subscribed topics: those it refuses (denied) are
// withheld from the heartbeats, those it knows (known) are sent again. It reports whether the
// heartbeats' subscription changed.
func (m *membership) withhold(denied map[string]error, known []string) bool {
	before := m.heartbeatTopics()
	for t := range denied {
		if slices.Contains(m.subscription, t) {
			if m.withheld == nil {
				m.withheld = make(map[string]bool)
			}
			m.withheld[t] = true
		}
	}
	for _, t := range known {
		delete(m.withheld, t)
	}
	for t := range m.withheld {
		if !slices.Contains(m.subscription, t) {
			delete(m.withheld, t)
		}
	}
	return !slices.Equal(before, m.heartbeatTopics())
}

// hbOutcome is what the answer to a heartbeat means for the consumer.
type hbOutcome struct {
	// next is when to send the next heartbeat; -1 waits for a wake-up.
	next time.Duration
	// assignment: the assignment changed (or was cleared) and was resolved as far as
	// metadata goes; resolved says whether every partition's leader is known.
	assignment bool
	resolved   bool
	// err is the error to show (Status, the last error), nil for none; coordErr, whether it is
	// why there is no coordinator; pollErr, an error for the next Poll; fatal, that the member
	// was refused for good (m.fatal holds it); fenced, that it must join again.
	err      error
	coordErr bool
	pollErr  error
	fatal    bool
	fenced   bool
}

// applyHeartbeat takes the answer to req (or the error sending it).
func (m *membership) applyHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse, err error) hbOutcome {
	if err != nil {
		m.coord = -1
		return hbOutcome{next: m.backoff(), err: err}
	}
	var out hbOutcome
	if code := resp.ErrorCode; code != 0 {
		out.err = errors.FromKafka(code, resp.ErrorMessage)
	}
	switch code := resp.ErrorCode; code {
	case 0:
		m.failures = 0
		m.epoch = resp.MemberEpoch
		if req.SubscribedTopicNames != nil {
			m.sentSub = req.SubscribedTopicNames
		}
		m.rackSent = true
		if resp.HeartbeatIntervalMillis > 0 {
			m.interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
		// An assignment answering an old subscription still counts: the next heartbeat brings
		// the one for the new subscription.
		if resp.Assignment != nil && len(m.subscription) > 0 {
			out.assignment, out.resolved = true, m.assign(resp.Assignment.TopicPartitions)
		}
		out.next = m.interval
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		m.epoch = 0
		out.fenced, out.assignment, out.resolved = true, true, m.assign(nil)
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		m.coord = -1
		out.coordErr, out.next = true, m.backoff()
	case kerr.CoordinatorLoadInProgress.Code:
		out.coordErr, out.next = true, m.backoff()
	case kerr.TopicAuthorizationFailed.Code:
		out.pollErr = &errors.KafkaError{Code: code, Message: deref(resp.ErrorMessage)}
		out.next = m.interval
	default:
		if !errors.IsFatalHeartbeatCode(code) {
			out.next = m.backoff()
			break
		}
		m.fatal = &errors.FatalError{Group: m.group, Err: kerr.ErrorForCode(code), Message: deref(resp.ErrorMessage),
			InconsistentGroupType: errors.IsInconsistentGroupType(code, deref(resp.ErrorMessage), req.MemberEpoch)}
		out.fatal, out.assignment, out.resolved, out.next = true, true, m.assign(nil), -1
	}
	return out
}

// describeDue reports whether the group's members should be counted now: once per member
// epoch, while the member is assigned nothing.
func (m *membership) describeDue() bool {
	if len(m.assignment) > 0 || len(m.subscription) == 0 || m.epoch <= 0 || m.describedEpoch == m.epoch {
		return false
	}
	m.describedEpoch = m.epoch
	return true
}

// leaving returns the member epoch to leave with, and forgets it: 0 when the consumer is not
// a member (nothing to send).
func (m *membership) leaving() int32 {
	e := m.epoch
	m.epoch = 0
	m.sentSub = nil
	return max(e, 0)
}

// assign replaces the assignment with the coordinator's (nil: none) and resolves it; it
// reports whether every partition's leader is known.
func (m *membership) assign(tps []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) bool {
	m.assignment = make(map[[16]byte][]int32, len(tps))
	for _, tp := range tps {
		m.assignment[tp.TopicID] = append(m.assignment[tp.TopicID], tp.Partitions...)
	}
	return m.resolve()
}

// resolve turns the assignment into partitions by name; it reports false when some topic id, or
// some partition's leader, is not known yet.
func (m *membership) resolve() bool {
	all := true
	assigned := make(map[TopicPartition]*assignedPart)
	for id, ps := range m.assignment {
		tm := m.topics[id]
		if tm == nil {
			all = false
			continue
		}
		for _, p := range ps {
			tp := TopicPartition{tm.name, p}
			assigned[tp] = &assignedPart{tp: tp, id: id}
			if li, ok := tm.leaders[p]; !ok || li.node < 0 {
				all = false
			}
		}
	}
	m.assigned = assigned
	return all
}

// metadataTopics returns the topics to ask metadata for: the subscribed ones and the assigned
// ones, sorted, without duplicates.
func (m *membership) metadataTopics() []string {
	names := slices.Clone(m.subscription)
	for _, tm := range m.topics {
		if _, ok := m.assignment[tm.id]; ok {
			names = append(names, tm.name)
		}
	}
	return normalizeTopics(names)
}

// applyMetadata records the topics of a metadata response, and returns the partitions whose
// leader moved to another broker and the subscribed topics it says do not exist (unknown) or
// do (known).
func (m *membership) applyMetadata(resp *kmsg.MetadataResponse) (moves []leaderMove, unknown, known []string) {
	for _, t := range resp.Topics {
		if t.Topic != nil {
			switch t.ErrorCode {
			case kerr.UnknownTopicOrPartition.Code:
				unknown = append(unknown, *t.Topic)
			case 0:
				known = append(known, *t.Topic)
			}
		}
		if t.ErrorCode != 0 || t.Topic == nil || t.TopicID == ([16]byte{}) {
			continue
		}
		name := *t.Topic
		tm := m.topics[t.TopicID]
		if tm == nil {
			tm = &topicMeta{name: name, id: t.TopicID, leaders: make(map[int32]leaderInfo)}
			m.topics[t.TopicID] = tm
		}
		// A topic deleted and created again has a new id; the old one stays known for the
		// records still in flight.
		m.byName[name] = t.TopicID
		for _, p := range t.Partitions {
			if cur, ok := tm.leaders[p.Partition]; ok && p.LeaderEpoch < cur.epoch {
				continue // older than a leader a broker already named
			}
			if mv, ok := m.setLeader(tm, p.Partition, leaderInfo{node: p.Leader, epoch: p.LeaderEpoch}); ok {
				moves = append(moves, mv)
			}
		}
	}
	return moves, unknown, known
}

// metadataDenied returns the topics a metadata response refuses (TOPIC_AUTHORIZATION_FAILED:
// the principal may not describe them), each with the error Kafka sent (Metadata carries no
// message); nil when there is none.
func metadataDenied(resp *kmsg.MetadataResponse) map[string]error {
	var denied map[string]error
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			continue
		}
		if denied == nil {
			denied = make(map[string]error)
		}
		denied[*t.Topic] = errors.FromKafka(t.ErrorCode, nil)
	}
	return denied
}

// hint follows a leader a broker named in CurrentLeader, when it is newer than what the
// consumer knows; it returns the move, if the leader changed broker.
func (m *membership) hint(h leaderHint) (leaderMove, bool) {
	tm := m.topics[h.id]
	if tm == nil || h.leader < 0 {
		return leaderMove{}, false
	}
	if cur, ok := tm.leaders[h.partition]; ok && h.epoch < cur.epoch {
		return leaderMove{}, false
	}
	return m.setLeader(tm, h.partition, leaderInfo{node: h.leader, epoch: h.epoch})
}

// setLeader records the leader of a partition, and returns the move when it is another broker
// than before.
func (m *membership) setLeader(tm *topicMeta, partition int32, li leaderInfo) (leaderMove, bool) {
	cur, known := tm.leaders[partition]
	tm.leaders[partition] = li
	if known && cur.node != li.node {
		return leaderMove{tp: TopicPartition{tm.name, partition}, from: cur.node, to: li.node}, true
	}
	return leaderMove{}, false
}

// leaderOf returns the leader of tp as the consumer knows it.
func (m *membership) leaderOf(tp TopicPartition) (int32, bool) {
	id, ok := m.byName[tp.Topic]
	if !ok {
		return -1, false
	}
	tm := m.topics[id]
	if tm == nil {
		return -1, false
	}
	li, ok := tm.leaders[tp.Partition]
	if !ok || li.node < 0 {
		return -1, false
	}
	return li.node, true
}

// partsLedBy returns the assigned partitions whose leader is node, in name order.
func (m *membership) partsLedBy(node int32) []*assignedPart {
	var out []*assignedPart
	for _, ap := range m.assigned {
		if l, ok := m.leaderOf(ap.tp); ok && l == node {
			out = append(out, ap)
		}
	}
	slices.SortFunc(out, func(a, b *assignedPart) int { return compareTP(a.tp, b.tp) })
	return out
}

// leads reports whether node leads an assigned partition.
func (m *membership) leads(node int32) bool {
	for _, ap := range m.assigned {
		if l, ok := m.leaderOf(ap.tp); ok && l == node {
			return true
		}
	}
	return false
}

// leaders returns the leaders of the assigned partitions, sorted, in memory it uses again at
// the next call: callers use the answer before they call it again.
func (m *membership) leaders() []int32 {
	ls := m.leadersBuf[:0]
	for _, ap := range m.assigned {
		if l, ok := m.leaderOf(ap.tp); ok && !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	slices.Sort(ls)
	m.leadersBuf = ls
	return ls
}

// assignedCount returns how many partitions the coordinator assigned.
func (m *membership) assignedCount() int {
	n := 0
	for _, ps := range m.assignment {
		n += len(ps)
	}
	return n
}

// subscribedPartitions returns how many partitions the subscribed topics have, as far as
// metadata tells.
func (m *membership) subscribedPartitions() int {
	parts := 0
	for _, t := range m.subscription {
		if id, ok := m.byName[t]; ok {
			parts += len(m.topics[id].leaders)
		}
	}
	return parts
}

package share

import (
	"iter"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Conn is the client connection a share session is opened on: closing it evicts the session.
// Connections are compared by identity.
type Conn interface {
	// OnClose registers f to run once when the connection closes.
	OnClose(f func())
}

// sessionKey identifies a share session on a broker (Kafka's ShareSessionKey).
type sessionKey struct{ group, member string }

// session is one member's share session on one broker: the partitions its ShareFetches read,
// the epoch its next request must carry, and the connection that opened it.
type session struct {
	key   sessionKey
	epoch int32
	conn  Conn
	parts []*sessionPart // in the order they joined the session
	index map[TopicPartition]*sessionPart
}

// sessionPart is one partition of a share session, with what it resolved to.
type sessionPart struct {
	TopicPartition
	// needsUpdate is Kafka's requiresUpdateInResponse: the partition is in the next response
	// even without records or errors. It is set when the partition joins an existing session,
	// and after an error, so that a client sees the error clear.
	needsUpdate bool

	// The resolution, valid while gen is the manager's generation: the placement (when the
	// partition exists), why it cannot be fetched here, and the group's share partition of it
	// once a fetch has made it.
	resolved bool
	gen      uint64
	known    bool // the topic id was known when the partition joined the session
	at       Placement
	sp       *Partition
	err      *kerr.Error
}

// Sessions is one broker's share session cache (Kafka's ShareSessionCache): at most
// group.share.max.share.sessions sessions, each evicted when its connection closes.
type Sessions struct {
	m      *Manager
	broker int32

	mu       sync.Mutex
	sessions map[sessionKey]*session
	watched  map[Conn]struct{} // connections whose close is hooked
}

func newSessions(m *Manager, broker int32) *Sessions {
	return &Sessions{
		m:        m,
		broker:   broker,
		sessions: make(map[sessionKey]*session),
		watched:  make(map[Conn]struct{}),
	}
}

// nextEpoch is ShareRequestMetadata.nextEpoch: epochs count up and wrap from MaxInt32 to 1.
func nextEpoch(epoch int32) int32 {
	if epoch == math.MaxInt32 {
		return 1
	}
	return epoch + 1
}

// FetchRequest is what the session rules of a ShareFetch read.
type FetchRequest struct {
	Conn          Conn
	Group, Member string
	Epoch         int32
	// Partitions are the request's partitions, in request order; Forgotten those it drops.
	Partitions, Forgotten iter.Seq[TopicPartition]
	// HasAcks is whether the request carries acknowledgements.
	HasAcks bool
}

// OpenFetch applies a ShareFetch's session rules (SharePartitionManager.newContext):
//
//   - epoch 0 with acknowledgements is INVALID_REQUEST; otherwise any session of the member is
//     dropped, without releasing its records, and a new one is made of the request's partitions
//     with epoch 1, unless the broker already has group.share.max.share.sessions sessions
//     (SHARE_SESSION_LIMIT_REACHED);
//   - epoch -1 needs a session (SHARE_SESSION_NOT_FOUND) and reads nothing;
//   - any other epoch needs a session (SHARE_SESSION_NOT_FOUND) whose epoch it equals
//     (INVALID_SHARE_SESSION_EPOCH); the request's partitions join the session, its forgotten
//     ones leave it, and the epoch moves on.
func (ss *Sessions) OpenFetch(req FetchRequest) (*Fetch, error) {
	key := sessionKey{req.Group, req.Member}
	maxSessions := 0
	if req.Epoch == 0 {
		maxSessions = ss.m.cfg.MaxSessions()
	}
	gen := ss.m.generation()

	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch req.Epoch {
	case 0:
		if req.HasAcks {
			return nil, kerr.InvalidRequest
		}
		delete(ss.sessions, key)
		if len(ss.sessions) >= maxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		sess := &session{key: key, epoch: 1, conn: req.Conn, index: make(map[TopicPartition]*sessionPart)}
		ss.addParts(sess, req.Partitions, false)
		ss.sessions[key] = sess
		ss.watchLocked(req.Conn)
		return ss.newFetch(req, sess, gen, false), nil
	case -1:
		sess := ss.sessions[key]
		if sess == nil {
			return nil, kerr.ShareSessionNotFound
		}
		return &Fetch{ss: ss, group: req.Group, member: req.Member, Final: true}, nil
	}
	sess := ss.sessions[key]
	if sess == nil {
		return nil, kerr.ShareSessionNotFound
	}
	if sess.epoch != req.Epoch {
		return nil, kerr.InvalidShareSessionEpoch
	}
	ss.addParts(sess, req.Partitions, true)
	for tp := range req.Forgotten {
		ss.removePart(sess, tp)
	}
	sess.epoch = nextEpoch(sess.epoch)
	return ss.newFetch(req, sess, gen, true), nil
}

func (ss *Sessions) newFetch(req FetchRequest, sess *session, gen uint64, subsequent bool) *Fetch {
	return &Fetch{
		ss: ss, group: req.Group, member: req.Member,
		Subsequent: subsequent, gen: gen, Targets: ss.resolveLocked(sess, gen),
	}
}

// OpenAcknowledge applies a ShareAcknowledge's session rules
// (SharePartitionManager.acknowledgeSessionUpdate): epoch 0 is INVALID_SHARE_SESSION_EPOCH; a
// missing session SHARE_SESSION_NOT_FOUND; -1 leaves the epoch alone; any other epoch must equal
// the session's (INVALID_SHARE_SESSION_EPOCH) and moves it on.
func (ss *Sessions) OpenAcknowledge(group, member string, epoch int32) error {
	if epoch == 0 {
		return kerr.InvalidShareSessionEpoch
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.sessions[sessionKey{group, member}]
	switch {
	case sess == nil:
		return kerr.ShareSessionNotFound
	case epoch == -1:
		return nil
	case sess.epoch != epoch:
		return kerr.InvalidShareSessionEpoch
	}
	sess.epoch = nextEpoch(sess.epoch)
	return nil
}

// addParts adds the request's partitions that the session lacks, in request order; later means
// they join an existing session and so must be in the next response.
func (ss *Sessions) addParts(sess *session, tps iter.Seq[TopicPartition], later bool) {
	for tp := range tps {
		if _, ok := sess.index[tp]; ok {
			continue
		}
		sp := &sessionPart{TopicPartition: tp, needsUpdate: later}
		sp.known = ss.m.cfg.Metadata.TopicExists(tp.Topic)
		sess.index[tp] = sp
		sess.parts = append(sess.parts, sp)
	}
}

func (ss *Sessions) removePart(sess *session, tp TopicPartition) {
	sp, ok := sess.index[tp]
	if !ok {
		return
	}
	delete(sess.index, tp)
	sess.parts = slices.DeleteFunc(sess.parts, func(p *sessionPart) bool { return p == sp })
}

// resolveLocked resolves every partition of the session that needs it and returns the fetch's
// own copy of the session's partitions with their resolution.
//
// A partition whose topic id was unknown when it joined is UNKNOWN_TOPIC_ID for as long as it
// stays (Kafka keeps its unknown name); a topic deleted since, or a partition index the topic
// lacks, is UNKNOWN_TOPIC_OR_PARTITION; a partition led by another broker
// NOT_LEADER_OR_FOLLOWER.
func (ss *Sessions) resolveLocked(sess *session, gen uint64) []FetchTarget {
	targets := make([]FetchTarget, len(sess.parts))
	for i, sp := range sess.parts {
		if !sp.resolved || sp.gen != gen || sp.err != nil || sp.sp == nil {
			sp.resolved, sp.gen, sp.at, sp.sp, sp.err = true, gen, Placement{}, nil, nil
			ss.resolvePartLocked(sess.key.group, sp)
		}
		targets[i] = FetchTarget{entry: sp, TopicPartition: sp.TopicPartition, Placement: sp.at, sp: sp.sp, Err: sp.err}
	}
	return targets
}

func (ss *Sessions) resolvePartLocked(group string, sp *sessionPart) {
	if !sp.known {
		sp.err = kerr.UnknownTopicID
		return
	}
	at, ok := ss.m.cfg.Metadata.Placement(sp.TopicPartition)
	switch {
	case !ok:
		sp.err = kerr.UnknownTopicOrPartition
	case at.Leader != ss.broker:
		sp.at, sp.err = at, kerr.NotLeaderForPartition
	default:
		// The share partition, if a fetch of the group made it already; the fetch makes it
		// otherwise, after the request's acknowledgements, which find none (as with Kafka).
		sp.at, sp.sp = at, ss.m.Get(group, sp.TopicPartition)
	}
}

// mustRespondLocked decides which fetched partitions a subsequent ShareFetch of the session
// answers, as Kafka's CachedSharePartition.maybeUpdateResponseData: those with records, with an
// error, or that need an update (they joined, or had an error last time). An error makes the
// partition need an update, so that the client sees it clear; an update sent without error
// clears it.
func (ss *Sessions) mustRespondLocked(t *FetchTarget) bool {
	respond := t.end > t.start || t.entry.needsUpdate
	if t.Err != nil {
		t.entry.needsUpdate = true
		return true
	}
	t.entry.needsUpdate = false
	return respond
}

// watchLocked makes cn's close evict the sessions it opened, once per connection.
func (ss *Sessions) watchLocked(cn Conn) {
	if _, ok := ss.watched[cn]; ok {
		return
	}
	ss.watched[cn] = struct{}{}
	cn.OnClose(func() { ss.connClosed(cn) })
}

// connClosed evicts every session opened on cn and releases its member's records, as Kafka's
// ShareSessionCache.ClientConnectionDisconnectListener does.
func (ss *Sessions) connClosed(cn Conn) {
	var gone []*session
	ss.mu.Lock()
	delete(ss.watched, cn)
	for k, sess := range ss.sessions {
		if sess.conn == cn {
			gone = append(gone, sess)
			delete(ss.sessions, k)
		}
	}
	ss.mu.Unlock()
	for _, sess := range gone {
		ss.releaseParts(sess)
	}
}

// Release removes a member's session and releases the records it holds in the session's
// partitions (SharePartitionManager.releaseSession, for epoch -1).
func (ss *Sessions) Release(group, member string) {
	key := sessionKey{group, member}
	ss.mu.Lock()
	sess := ss.sessions[key]
	delete(ss.sessions, key)
	ss.mu.Unlock()
	if sess != nil {
		ss.releaseParts(sess)
	}
}

// releaseParts releases the member's records in each of the session's partitions that this
// broker leads and holds a share partition for: they become AVAILABLE, or ARCHIVED at the
// delivery limit, with their delivery count unchanged. Kafka releases only the session's
// partitions; records the member still holds elsewhere (also at a partition's new leader)
// wait for their lock to expire.
func (ss *Sessions) releaseParts(sess *session) {
	ss.mu.Lock()
	tps := make([]TopicPartition, len(sess.parts))
	for i, sp := range sess.parts {
		tps[i] = sp.TopicPartition
	}
	ss.mu.Unlock()
	for _, tp := range tps {
		if sp := ss.m.Led(sess.key.group, tp, ss.broker); sp != nil {
			sp.ReleaseMember(sess.key.member)
		}
	}
}

// SessionInfo is a snapshot of one share session, for inspection.
type SessionInfo struct {
	Group, Member string
	// Epoch is the epoch the member's next ShareFetch or ShareAcknowledge must carry.
	Epoch int32
	// Partitions are the session's partitions, in the order they joined it.
	Partitions []TopicPartition
}

// Snapshot returns the broker's share sessions, sorted by group then member.
func (ss *Sessions) Snapshot() []SessionInfo {
	ss.mu.Lock()
	var out []SessionInfo
	for _, sess := range ss.sessions {
		info := SessionInfo{Group: sess.key.group, Member: sess.key.member, Epoch: sess.epoch}
		for _, sp := range sess.parts {
			info.Partitions = append(info.Partitions, sp.TopicPartition)
		}
		out = append(out, info)
	}
	ss.mu.Unlock()
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Member, b.Member)
	})
	return out
}

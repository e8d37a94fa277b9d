package server

import (
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/share"
)

// shareSessionKey identifies a share session on a broker (Kafka's ShareSessionKey).
type shareSessionKey struct{ group, member string }

// topicPartitionKey is a partition named by topic id, as share requests name them.
type topicPartitionKey struct {
	topic     [16]byte
	partition int32
}

// shareSession is one member's share session on one broker: the partitions its ShareFetches
// read, the epoch its next request must carry, and the connection that opened it.
type shareSession struct {
	key   shareSessionKey
	epoch int32
	conn  *conn
	parts []*sessionPart // in the order they joined the session
	index map[topicPartitionKey]*sessionPart
	// buf holds the records of the session's last ShareFetch response; the next ShareFetch on
	// the same connection reuses it, since the response has been written by then.
	buf []byte
}

// sessionPart is one partition of a share session, with what it resolved to.
type sessionPart struct {
	topicPartitionKey
	// needsUpdate is Kafka's requiresUpdateInResponse: the partition is in the next response
	// even without records or errors. It is set when the partition joins an existing session,
	// and after an error, so that a client sees the error clear.
	needsUpdate bool

	// The resolution, valid while gen is the share state's generation: the partition (nil when
	// unknown), why it cannot be fetched here, and the group's share partition of it once a
	// fetch has made it.
	resolved bool
	gen      uint64
	known    bool // the topic id was known when the partition joined the session
	p        *Partition
	sp       *share.Partition
	err      *kerr.Error
}

// shareSessions is one broker's share session cache (Kafka's ShareSessionCache): at most
// group.share.max.share.sessions sessions, each evicted when its connection closes.
type shareSessions struct {
	s      *shareState
	broker int32

	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
	watched  map[*conn]struct{} // connections whose close is hooked
}

func newShareSessions(s *shareState, broker int32) *shareSessions {
	return &shareSessions{
		s:        s,
		broker:   broker,
		sessions: make(map[shareSessionKey]*shareSession),
		watched:  make(map[*conn]struct{}),
	}
}

// nextShareEpoch is ShareRequestMetadata.nextEpoch: epochs count up and wrap from MaxInt32 to 1.
func nextShareEpoch(epoch int32) int32 {
	if epoch == math.MaxInt32 {
		return 1
	}
	return epoch + 1
}

// fetchContext is what a ShareFetch reads after the session rules have run: the partitions
// to fetch, or none for the final fetch of a session.
type fetchContext struct {
	sess       *shareSession
	final      bool
	subsequent bool   // the session existed before this request (epoch > 0)
	gen        uint64 // the share state's generation the targets were resolved at
	// targets are the session's partitions, resolved; the slice is the fetch's own.
	targets []shareTarget
}

// openFetch applies a ShareFetch's session rules (SharePartitionManager.newContext):
//
//   - epoch 0 with acknowledgements is INVALID_REQUEST; otherwise any session of the member is
//     dropped, without releasing its records, and a new one is made of the request's partitions
//     with epoch 1, unless the broker already has group.share.max.share.sessions sessions
//     (SHARE_SESSION_LIMIT_REACHED);
//   - epoch -1 needs a session (SHARE_SESSION_NOT_FOUND) and reads nothing;
//   - any other epoch needs a session (SHARE_SESSION_NOT_FOUND) whose epoch it equals
//     (INVALID_SHARE_SESSION_EPOCH); the request's partitions join the session, its forgotten
//     ones leave it, and the epoch moves on.
func (ss *shareSessions) openFetch(cn *conn, group, member string, req *kmsg.ShareFetchRequest, hasAcks bool) (fetchContext, error) {
	key := shareSessionKey{group, member}
	epoch := req.ShareSessionEpoch
	maxSessions := 0
	if epoch == 0 {
		maxSessions = ss.s.c.configs.Snapshot().MaxShareSessions
	}
	gen := ss.s.generation()

	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch epoch {
	case 0:
		if hasAcks {
			return fetchContext{}, kerr.InvalidRequest
		}
		old := ss.sessions[key]
		delete(ss.sessions, key)
		if len(ss.sessions) >= maxSessions {
			return fetchContext{}, kerr.ShareSessionLimitReached
		}
		sess := &shareSession{key: key, epoch: 1, conn: cn, index: make(map[topicPartitionKey]*sessionPart)}
		if old != nil && old.conn == cn {
			sess.buf = old.buf
		}
		ss.addParts(sess, req.Topics, false)
		ss.sessions[key] = sess
		ss.watchLocked(cn)
		return fetchContext{sess: sess, gen: gen, targets: ss.resolveLocked(sess, gen)}, nil
	case -1:
		sess := ss.sessions[key]
		if sess == nil {
			return fetchContext{}, kerr.ShareSessionNotFound
		}
		return fetchContext{sess: sess, final: true}, nil
	}
	sess := ss.sessions[key]
	if sess == nil {
		return fetchContext{}, kerr.ShareSessionNotFound
	}
	if sess.epoch != epoch {
		return fetchContext{}, kerr.InvalidShareSessionEpoch
	}
	ss.addParts(sess, req.Topics, true)
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			ss.removePart(sess, topicPartitionKey{ft.TopicID, p})
		}
	}
	sess.epoch = nextShareEpoch(sess.epoch)
	return fetchContext{sess: sess, subsequent: true, gen: gen, targets: ss.resolveLocked(sess, gen)}, nil
}

// openAcknowledge applies a ShareAcknowledge's session rules
// (SharePartitionManager.acknowledgeSessionUpdate): epoch 0 is INVALID_SHARE_SESSION_EPOCH; a
// missing session SHARE_SESSION_NOT_FOUND; -1 leaves the epoch alone; any other epoch must equal
// the session's (INVALID_SHARE_SESSION_EPOCH) and moves it on.
func (ss *shareSessions) openAcknowledge(group, member string, epoch int32) error {
	if epoch == 0 {
		return kerr.InvalidShareSessionEpoch
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.sessions[shareSessionKey{group, member}]
	switch {
	case sess == nil:
		return kerr.ShareSessionNotFound
	case epoch == -1:
		return nil
	case sess.epoch != epoch:
		return kerr.InvalidShareSessionEpoch
	}
	sess.epoch = nextShareEpoch(sess.epoch)
	return nil
}

// addParts adds the request's partitions that the session lacks, in request order; later means
// they join an existing session and so must be in the next response.
func (ss *shareSessions) addParts(sess *shareSession, topics []kmsg.ShareFetchRequestTopic, later bool) {
	for i := range topics {
		t := &topics[i]
		for j := range t.Partitions {
			k := topicPartitionKey{t.TopicID, t.Partitions[j].Partition}
			if _, ok := sess.index[k]; ok {
				continue
			}
			sp := &sessionPart{topicPartitionKey: k, needsUpdate: later}
			sp.known = ss.s.c.topicByID(k.topic) != nil
			sess.index[k] = sp
			sess.parts = append(sess.parts, sp)
		}
	}
}

func (ss *shareSessions) removePart(sess *shareSession, k topicPartitionKey) {
	sp, ok := sess.index[k]
	if !ok {
		return
	}
	delete(sess.index, k)
	sess.parts = slices.DeleteFunc(sess.parts, func(p *sessionPart) bool { return p == sp })
}

// resolveLocked resolves every partition of the session that needs it and returns the fetch's
// own copy of the session's partitions with their resolution.
//
// A partition whose topic id was unknown when it joined is UNKNOWN_TOPIC_ID for as long as it
// stays (Kafka keeps its unknown name); a topic deleted since, or a partition index the topic
// lacks, is UNKNOWN_TOPIC_OR_PARTITION; a partition led by another broker
// NOT_LEADER_OR_FOLLOWER.
func (ss *shareSessions) resolveLocked(sess *shareSession, gen uint64) []shareTarget {
	c := ss.s.c
	targets := make([]shareTarget, len(sess.parts))
	for i, sp := range sess.parts {
		if !sp.resolved || sp.gen != gen || sp.err != nil || sp.sp == nil {
			sp.resolved, sp.gen, sp.p, sp.sp, sp.err = true, gen, nil, nil, nil
			ss.resolveLockedPart(c, sess.key.group, sp)
		}
		targets[i] = shareTarget{entry: sp, topicPartitionKey: sp.topicPartitionKey, p: sp.p, sp: sp.sp, err: sp.err}
	}
	return targets
}

func (ss *shareSessions) resolveLockedPart(c *Cluster, group string, sp *sessionPart) {
	if !sp.known {
		sp.err = kerr.UnknownTopicID
		return
	}
	t := c.topicByID(sp.topic)
	if t == nil {
		sp.err = kerr.UnknownTopicOrPartition
		return
	}
	p := c.partition(t, sp.partition)
	switch {
	case p == nil:
		sp.err = kerr.UnknownTopicOrPartition
	case p.Leader != ss.broker:
		sp.p, sp.err = p, kerr.NotLeaderForPartition
	default:
		// The share partition, if a fetch of the group made it already; the fetch makes it
		// otherwise, after the request's acknowledgements, which find none (as with Kafka).
		sp.p, sp.sp = p, ss.s.get(group, p.Topic.ID, p.Index)
	}
}

// mustRespondLocked decides which fetched partitions a subsequent ShareFetch of the session
// answers, as Kafka's CachedSharePartition.maybeUpdateResponseData: those with records, with an
// error, or that need an update (they joined, or had an error last time). An error makes the
// partition need an update, so that the client sees it clear; an update sent without error
// clears it.
func (ss *shareSessions) mustRespondLocked(t *shareTarget) bool {
	respond := t.end > t.start || t.entry.needsUpdate
	if t.err != nil {
		t.entry.needsUpdate = true
		return true
	}
	t.entry.needsUpdate = false
	return respond
}

// watchLocked makes cn's close evict the sessions it opened, once per connection.
func (ss *shareSessions) watchLocked(cn *conn) {
	if _, ok := ss.watched[cn]; ok {
		return
	}
	ss.watched[cn] = struct{}{}
	cn.OnClose(func() { ss.connClosed(cn) })
}

// connClosed evicts every session opened on cn and releases its member's records, as Kafka's
// ShareSessionCache.ClientConnectionDisconnectListener does.
func (ss *shareSessions) connClosed(cn *conn) {
	var gone []*shareSession
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

// release removes a member's session and releases the records it holds in the session's
// partitions (SharePartitionManager.releaseSession, for epoch -1).
func (ss *shareSessions) release(group, member string) {
	key := shareSessionKey{group, member}
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
func (ss *shareSessions) releaseParts(sess *shareSession) {
	ss.mu.Lock()
	keys := make([]topicPartitionKey, len(sess.parts))
	for i, sp := range sess.parts {
		keys[i] = sp.topicPartitionKey
	}
	ss.mu.Unlock()
	for _, k := range keys {
		if sp := ss.s.led(sess.key.group, k.topic, k.partition, ss.broker); sp != nil {
			sp.ReleaseMember(sess.key.member)
		}
	}
}

// ShareSessionState is a snapshot of one share session, for inspection.
type ShareSessionState struct {
	Group, Member string
	// Epoch is the epoch the member's next ShareFetch or ShareAcknowledge must carry.
	Epoch      int32
	Partitions []TopicPartitionIndexes
}

// TopicPartitionIndexes are partitions of one topic; Topic is empty for an unknown topic id.
type TopicPartitionIndexes struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// ShareSessions returns the share sessions of a broker, sorted by group then member; nil for an
// unknown broker.
func (c *Cluster) ShareSessions(broker int32) []ShareSessionState {
	if broker < 0 || int(broker) >= len(c.shares.sessions) {
		return nil
	}
	ss := c.shares.sessions[broker]
	ss.mu.Lock()
	var out []ShareSessionState
	for _, sess := range ss.sessions {
		st := ShareSessionState{Group: sess.key.group, Member: sess.key.member, Epoch: sess.epoch}
		for _, sp := range sess.parts {
			i := slices.IndexFunc(st.Partitions, func(tp TopicPartitionIndexes) bool { return tp.TopicID == sp.topic })
			if i < 0 {
				st.Partitions = append(st.Partitions, TopicPartitionIndexes{TopicID: sp.topic})
				i = len(st.Partitions) - 1
			}
			st.Partitions[i].Partitions = append(st.Partitions[i].Partitions, sp.partition)
		}
		out = append(out, st)
	}
	ss.mu.Unlock()
	for i := range out {
		for j := range out[i].Partitions {
			tp := &out[i].Partitions[j]
			if t := c.topicByID(tp.TopicID); t != nil {
				tp.Topic = t.Name
			}
			slices.Sort(tp.Partitions)
		}
	}
	slices.SortFunc(out, func(a, b ShareSessionState) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Member, b.Member)
	})
	return out
}

package server

import (
	"cmp"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/share"
)

// noShareRecords is the Records of a partition without records: Kafka's ShareFetchResponse
// turns null records into an empty record set. It is shared and never written.
var noShareRecords = []byte{}

// maxRetainedShareBuf caps the records buffer a session keeps for its next fetch.
const maxRetainedShareBuf = 1 << 20

// shareTarget is one partition of a ShareFetch: its session entry, what it resolved to, and what
// the fetch acquired from it.
type shareTarget struct {
	entry *sessionPart
	topicPartitionKey
	p   *Partition       // nil when the topic or partition is unknown
	sp  *share.Partition // nil on err, and until the fetch creates it
	err *kerr.Error

	ranges     []share.AcquiredRange
	start, end int      // the records of its first acquisition, in the fetch's buffer
	more       [][2]int // the records of later ones (a fetch waiting for MinBytes)
}

// shareFetch is one ShareFetch's acquisition in progress.
type shareFetch struct {
	group, member string
	targets       []shareTarget
	gen           uint64 // the share state's generation the targets were resolved at
	fetchable     int    // targets without an error
	rotate        int    // the target to start at (Kafka rotates partitions by session epoch)
	mode          share.AcquireMode
	batchSize     int
	perPart       int // the bytes each acquisition may give (Kafka's uniform split of MaxBytes)
	bytesLeft     int
	recordsLeft   int
	bytes         int // record bytes acquired
	buf           []byte
}

// handleShareFetch answers ShareFetch v1-2 in Kafka's order (KafkaApis.handleShareFetchRequest):
//
//  1. A null group id, then a member id that is null, empty or longer than 36 characters, are
//     INVALID_REQUEST with Kafka's message. Membership of the group is not checked, as with Kafka.
//  2. Version 2 with IsRenewAck needs MaxBytes, MinBytes, MaxRecords and MaxWaitMs all 0: each
//     that is not adds "<name> must be set to 0, " to the INVALID_REQUEST message, which ends
//     with "if isRenewAck is true.".
//  3. The session rules of shareSessions.openFetch; SHARE_SESSION_LIMIT_REACHED is sent only
//     once MaxWaitMs has passed on the cluster clock, as Kafka's idle timer task does.
//  4. Piggybacked acknowledgements, applied as applyShareAcks says; RENEW needs version 2 and
//     IsRenewAck. Each partition's result is its AcknowledgeErrorCode and
//     AcknowledgeErrorMessage, in the partition's fetch entry or in one of its own.
//  5. The fetch, skipped for IsRenewAck (a renewed lock must not run out during a long poll)
//     and for epoch -1. MaxRecords or MaxBytes of 0 fetch nothing at once. Otherwise each
//     session partition this broker leads acquires records for the member (share.Partition
//     Acquire), starting at the partition the session epoch rotates to, within MaxRecords
//     (soft in batch-optimized mode), BatchSize, and MaxBytes split evenly between the
//     partitions (at least one batch each); ShareAcquireMode picks batch-optimized (0) or
//     record-limit (1), version 1 always the former, and an unknown mode fails the request with
//     UNKNOWN_SERVER_ERROR. The group's share partition of each partition is made here, on
//     its first fetch. While the records acquired come to less than MinBytes and MaxWaitMs is
//     positive, the fetch waits on the cluster clock and tries again whenever a partition's
//     log grows or records become available again (a release, an expired lock, a closed
//     session). A single timer times the wait, stopped when MinBytes ends it early. Kafka
//     acquires nothing until MinBytes is there; this fetch keeps what it acquired while it
//     waits for more, so those records' locks start earlier. A partition whose leader moves
//     meanwhile (Cluster.MoveLeader) wakes the fetch and is answered NOT_LEADER_OR_FOLLOWER,
//     without the records acquired from it, which its new leader holds AVAILABLE.
//  6. Epoch -1 closes the member's session after the response is built, releasing its records
//     in the session's partitions.
//
// The response lists, as Kafka does: on a new session every partition the fetch looked at;
// afterwards only those with records, with an error, or added to the session since the last
// response; and every partition whose acknowledgements were processed. Partitions with unknown
// topic ids are UNKNOWN_TOPIC_ID, unknown topics or partitions UNKNOWN_TOPIC_OR_PARTITION, and
// partitions led elsewhere NOT_LEADER_OR_FOLLOWER with the leader in CurrentLeader and its
// address in NodeEndpoints; per-partition error messages are left out, as Kafka leaves them.
// AcquisitionLockTimeoutMs is the group's share.record.lock.duration.ms (0 on top-level
// errors). Kafka's own top-level error responses carry no ErrorMessage; this one sends Kafka's
// message text, which clients only display.
//
// A client that closes its connection while the fetch waits is noticed at once: the connection
// closes, which ends the wait and evicts the member's sessions on this connection.
func (b *Broker) handleShareFetch(cn *conn, req *kmsg.ShareFetchRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
		return resp
	}
	if err := shareIDsError(req.GroupID, req.MemberID); err != nil {
		return fail(err)
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew {
		if msg := renewLimitsMessage(req); msg != "" {
			return fail(errorf(kerr.InvalidRequest, "%s", msg))
		}
	}
	group, member := *req.GroupID, *req.MemberID
	acks, hasAcks := shareFetchAcks(req)
	ss := c.shares.sessions[b.id]
	fc, err := ss.openFetch(cn, group, member, req, hasAcks)
	if errors.Is(err, kerr.ShareSessionLimitReached) {
		b.idle(cn, req.MaxWaitMillis)
		return fail(err)
	}
	if err != nil {
		return fail(err)
	}
	var outcomes []ackOutcome
	if hasAcks {
		outcomes = b.applyShareAcks(group, member, acks, maxAckType(req.Version), renew)
	}

	f := shareFetch{group: group, member: member, targets: fc.targets, gen: fc.gen}
	fetching := !renew && !fc.final
	if fetching && req.Version >= 2 && req.ShareAcquireMode != 0 && req.ShareAcquireMode != 1 {
		return fail(errorf(kerr.UnknownServerError, "Unknown share acquire mode id: %d", req.ShareAcquireMode))
	}
	// The fetch reads nothing when asked for nothing (SharePartitionManager.processShareFetch).
	polled := fetching && req.MaxRecords > 0 && req.MaxBytes > 0
	if polled {
		ownBuf := fc.sess.conn == cn
		if ownBuf {
			f.buf = fc.sess.buf[:0]
		}
		b.pollShare(cn, req, &f)
		if ownBuf && cap(f.buf) <= maxRetainedShareBuf {
			fc.sess.buf = f.buf
		}
	}
	if fetching {
		b.shareFetchResponse(resp, &fc, &f, polled)
	}
	mergeAckOutcomes(resp, outcomes)
	if fc.final {
		ss.release(group, member)
	}
	resp.AcquisitionLockTimeoutMillis = c.shareLockDurationMs(group)
	return resp
}

// renewLimitsMessage is Kafka's INVALID_REQUEST message for a renew-only ShareFetch that asks
// for data, or "" when it asks for none.
func renewLimitsMessage(req *kmsg.ShareFetchRequest) string {
	var sb strings.Builder
	for _, f := range []struct {
		name string
		v    int32
	}{{"maxBytes", req.MaxBytes}, {"minBytes", req.MinBytes}, {"maxRecords", req.MaxRecords}, {"maxWaitMs", req.MaxWaitMillis}} {
		if f.v != 0 {
			sb.WriteString(f.name + " must be set to 0, ")
		}
	}
	if sb.Len() == 0 {
		return ""
	}
	sb.WriteString("if isRenewAck is true.")
	return sb.String()
}

// pollShare acquires records for the fetch and, while they come to less than MinBytes, waits
// for more as handleShareFetch describes.
func (b *Broker) pollShare(cn *conn, req *kmsg.ShareFetchRequest, f *shareFetch) {
	c := b.c
	for i := range f.targets {
		t := &f.targets[i]
		if t.err != nil {
			continue
		}
		if t.sp == nil {
			if t.sp = c.shares.getOrCreate(f.group, t.p); t.sp == nil {
				t.err = kerr.UnknownTopicOrPartition
				continue
			}
		}
		f.fetchable++
	}
	b.recheckShareTargets(f)
	if f.fetchable == 0 {
		return
	}
	maxBytes := min(int(req.MaxBytes), maxFetchBytes)
	minBytes := min(int(req.MinBytes), maxBytes)
	f.perPart = max(maxBytes/f.fetchable, 1)
	f.bytesLeft = maxBytes
	f.recordsLeft = int(req.MaxRecords)
	f.batchSize = int(req.BatchSize)
	if req.Version >= 2 {
		f.mode = share.AcquireMode(req.ShareAcquireMode)
	}
	f.rotate = int(uint32(req.ShareSessionEpoch) % uint32(len(f.targets)))

	f.acquire()
	if req.MaxWaitMillis <= 0 || f.satisfied(minBytes) {
		return
	}
	expired := make(chan struct{})
	timer := c.clock.AfterFunc(time.Duration(req.MaxWaitMillis)*time.Millisecond, func() { close(expired) })
	defer timer.Stop()
	stopWatch := watchDrop(cn)
	defer stopWatch()
	w := newShareWaiter(expired, cn.done, c.closed)
	for {
		// Ask for the wake-ups before trying, so that a change in between is not missed.
		w.reset()
		for i := range f.targets {
			if t := &f.targets[i]; t.err == nil {
				w.add(t.p.Log.Notify())
				w.add(t.sp.Notify())
			}
		}
		f.acquire()
		if f.satisfied(minBytes) {
			return
		}
		switch w.wait() {
		case waitExpired:
			f.acquire()
			return
		case waitClosed:
			return
		}
		b.recheckShareTargets(f)
	}
}

// recheckShareTargets follows the topic deletions and leader moves since the fetch's targets
// were resolved: their share partitions are closed or fenced, and would wake the fetch forever.
// A target whose topic is gone becomes UNKNOWN_TOPIC_OR_PARTITION; one led by another broker
// now, or whose share partition was handed over meanwhile, NOT_LEADER_OR_FOLLOWER with the
// current leader, as Kafka completes a waiting share fetch at once when its broker stops
// leading a partition. What such a target acquired is not sent: its new leader holds it.
func (b *Broker) recheckShareTargets(f *shareFetch) {
	c := b.c
	gen := c.shares.generation()
	if gen == f.gen {
		return
	}
	f.gen = gen
	for i := range f.targets {
		t := &f.targets[i]
		if t.err != nil {
			continue
		}
		cur := c.current(t.p)
		switch {
		case c.topicByID(t.topic) != t.p.Topic:
			t.err = kerr.UnknownTopicOrPartition
		case cur.Leader != b.id || c.shares.led(f.group, t.topic, t.partition, b.id) != t.sp:
			t.p, t.err = cur, kerr.NotLeaderForPartition
		default:
			continue
		}
		f.fetchable--
	}
}

// satisfied reports whether the fetch may answer: it has MinBytes, or can take nothing more.
func (f *shareFetch) satisfied(minBytes int) bool {
	return f.bytes >= minBytes || f.bytesLeft <= 0 || f.recordsLeft <= 0 || f.fetchable == 0
}

// acquire tries every partition once, from the rotated start, within what is left of the
// fetch's limits.
func (f *shareFetch) acquire() {
	n := len(f.targets)
	for k := range n {
		if f.recordsLeft <= 0 || f.bytesLeft <= 0 {
			return
		}
		t := &f.targets[(f.rotate+k)%n]
		if t.err != nil {
			continue
		}
		start := len(f.buf)
		ranges, buf, err := t.sp.Acquire(f.buf, f.member, f.recordsLeft, f.batchSize, min(f.perPart, f.bytesLeft), f.mode)
		f.buf = buf
		if err != nil {
			t.err = kerrOf(err)
			f.fetchable--
			continue
		}
		if len(ranges) == 0 {
			continue
		}
		if t.end == t.start {
			t.ranges, t.start, t.end = ranges, start, len(buf)
		} else {
			t.ranges = slices.Concat(t.ranges, ranges)
			t.more = append(t.more, [2]int{start, len(buf)})
		}
		got := len(buf) - start
		f.bytes += got
		f.bytesLeft -= got
		for _, r := range ranges {
			f.recordsLeft -= int(r.LastOffset - r.FirstOffset + 1)
		}
	}
}

// records returns a target's records: those of its one acquisition as they are in the buffer,
// or, after several, every batch once in offset order with the ranges sorted to match.
func (f *shareFetch) records(t *shareTarget) []byte {
	if len(t.more) == 0 {
		return f.buf[t.start:t.end:t.end]
	}
	type batch struct {
		base int64
		b    []byte
	}
	var batches []batch
	size := 0
	for _, span := range append([][2]int{{t.start, t.end}}, t.more...) {
		for b := f.buf[span[0]:span[1]]; len(b) >= 12; {
			n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
			batches = append(batches, batch{int64(binary.BigEndian.Uint64(b)), b[:n]})
			size += n
			b = b[n:]
		}
	}
	slices.SortStableFunc(batches, func(a, b batch) int { return cmp.Compare(a.base, b.base) })
	out := make([]byte, 0, size)
	for i, b := range batches {
		if i == 0 || b.base != batches[i-1].base {
			out = append(out, b.b...)
		}
	}
	slices.SortFunc(t.ranges, func(a, b share.AcquiredRange) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// shareFetchResponse lists the fetch's partitions in the response, as handleShareFetch says.
// polled is whether the fetch ran: when it did not (MaxRecords or MaxBytes of 0), only
// partitions of unknown topics are answered, as Kafka answers those before fetching.
func (b *Broker) shareFetchResponse(resp *kmsg.ShareFetchResponse, fc *fetchContext, f *shareFetch, polled bool) {
	ss := b.c.shares.sessions[b.id]
	include := make([]bool, len(f.targets))
	ss.mu.Lock()
	for i := range f.targets {
		t := &f.targets[i]
		switch {
		case !polled && (t.err == nil || t.err == kerr.NotLeaderForPartition):
			continue
		case fc.subsequent:
			include[i] = ss.mustRespondLocked(t)
		default:
			include[i] = true
		}
	}
	ss.mu.Unlock()
	for i := range f.targets {
		if !include[i] {
			continue
		}
		t := &f.targets[i]
		rp := appendShareFetchPartition(resp, t.topic, t.partition)
		rp.Records = noShareRecords
		if t.err != nil {
			rp.ErrorCode = t.err.Code
			if t.err == kerr.NotLeaderForPartition {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = t.p.Leader, t.p.LeaderEpoch
				b.c.appendShareNodeEndpoint(resp, t.p.Leader)
			}
			continue
		}
		if t.end > t.start {
			rp.Records = f.records(t)
			rp.AcquiredRecords = make([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, len(t.ranges))
			for j, r := range t.ranges {
				rp.AcquiredRecords[j] = kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, DeliveryCount: r.DeliveryCount}
			}
		}
	}
}

// appendShareFetchPartition adds a partition to its topic in the response, adding the topic
// after the others if it is new, and returns it. Topics keep the order they first appear in.
func appendShareFetchPartition(resp *kmsg.ShareFetchResponse, topic [16]byte, partition int32) *kmsg.ShareFetchResponseTopicPartition {
	i := len(resp.Topics) - 1
	for ; i >= 0 && resp.Topics[i].TopicID != topic; i-- {
	}
	if i < 0 {
		resp.Topics = append(resp.Topics, kmsg.ShareFetchResponseTopic{TopicID: topic})
		i = len(resp.Topics) - 1
	}
	rt := &resp.Topics[i]
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchResponseTopicPartition())
	rp := &rt.Partitions[len(rt.Partitions)-1]
	rp.Partition = partition
	return rp
}

// mergeAckOutcomes puts each partition's acknowledgement result in its fetch entry, or in an
// entry of its own with no records (Kafka's combineShareFetchAndShareAcknowledgeResponses).
func mergeAckOutcomes(resp *kmsg.ShareFetchResponse, outcomes []ackOutcome) {
	for _, o := range outcomes {
		var rp *kmsg.ShareFetchResponseTopicPartition
	find:
		for i := range resp.Topics {
			if resp.Topics[i].TopicID != o.topic {
				continue
			}
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == o.partition {
					rp = &resp.Topics[i].Partitions[j]
					break find
				}
			}
		}
		if rp == nil {
			rp = appendShareFetchPartition(resp, o.topic, o.partition)
			rp.Records = noShareRecords
		}
		rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = o.code, o.msg
	}
}

// appendShareNodeEndpoint adds the address of node id to the response unless it is there.
func (c *Cluster) appendShareNodeEndpoint(resp *kmsg.ShareFetchResponse, id int32) {
	for _, have := range resp.NodeEndpoints {
		if have.NodeID == id {
			return
		}
	}
	if nb := c.broker(id); nb != nil {
		resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: nb.host, Port: nb.port})
	}
}

// idle waits maxWaitMs on the cluster clock, or until the connection or the cluster closes.
func (b *Broker) idle(cn *conn, maxWaitMs int32) {
	if maxWaitMs <= 0 {
		return
	}
	stopWatch := watchDrop(cn)
	defer stopWatch()
	b.sleep(cn, time.Duration(maxWaitMs)*time.Millisecond)
}

// watchDrop notices a client closing its connection while one of its requests waits, as Kafka's
// network layer does, and closes the connection at once: that wakes the waiting request, and
// the connection's close then evicts its share sessions and releases their records. Requests
// are handled one at a time, so nothing else reads the connection meanwhile; bytes that arrive
// (a pipelined request) stay buffered for the next read. stop ends the watch and returns once
// the watcher is gone.
func watchDrop(cn *conn) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := cn.r.Peek(1); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				cn.close()
			}
		}
	}()
	return func() {
		_ = cn.nc.SetReadDeadline(time.Unix(1, 0)) // in the past: Peek returns at once
		<-done
		_ = cn.nc.SetReadDeadline(time.Time{})
	}
}

// shareWaiter waits for the first of: any of a fetch's wake-ups, its deadline, its connection's
// close, the cluster's close.
type shareWaiter struct {
	fixed [3]<-chan struct{} // expired, connection done, cluster closed
	wakes []<-chan struct{}
	cases []reflect.SelectCase
}

func newShareWaiter(expired, connDone, closed <-chan struct{}) *shareWaiter {
	return &shareWaiter{fixed: [3]<-chan struct{}{expired, connDone, closed}}
}

func (w *shareWaiter) reset() { w.wakes = w.wakes[:0] }

func (w *shareWaiter) add(ch <-chan struct{}) { w.wakes = append(w.wakes, ch) }

func (w *shareWaiter) wait() waitResult {
	if len(w.wakes) == 2 {
		select {
		case <-w.wakes[0]:
			return waitWoken
		case <-w.wakes[1]:
			return waitWoken
		case <-w.fixed[0]:
			return waitExpired
		case <-w.fixed[1]:
			return waitClosed
		case <-w.fixed[2]:
			return waitClosed
		}
	}
	w.cases = w.cases[:0]
	for _, ch := range w.fixed {
		w.cases = append(w.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	for _, ch := range w.wakes {
		w.cases = append(w.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	switch chosen, _, _ := reflect.Select(w.cases); chosen {
	case 0:
		return waitExpired
	case 1, 2:
		return waitClosed
	}
	return waitWoken
}

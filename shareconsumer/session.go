package shareconsumer

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
)

// node is the consumer's share session with one broker (one per member and leader, as Kafka
// has it) and the work queued for it. At most one request is in flight per node: a goroutine
// runs while the node has work (busy), sends one request at a time, and ends when the work does.
type node struct {
	id int32
	// epoch is the share session epoch of the next request: 0 opens a session (a ShareFetch
	// with the full partition list), then +1 after every answered request of either kind,
	// wrapping from MaxInt32 to 1; -1 closes it.
	epoch int32
	// sessParts are the partitions the broker's session holds, as the consumer told it.
	sessParts map[tidp]struct{}

	busy      bool
	piggyback *ackJob       // the acknowledgements on the ShareFetch in flight, if any
	sending   *ackJob       // the ShareAcknowledge in flight, if any
	pause     time.Duration // wait this long before the next request (after a failure)
	jobs      []*ackJob
	pending   map[TopicPartition]*pendingPart
	// fetchNames and decoded are the memory of the ShareFetch in flight (the topic names it
	// asks for, its decoded partitions), used again by the next: a node has one request in
	// flight at a time. Two maps fewer per ShareFetch.
	fetchNames  map[[16]byte]string
	decoded     map[tidp]decodedPart
	broker      *kgo.Broker // the handle requests to this node go through, made once
	fetchedPoll uint64      // the Poll that last sent this node a ShareFetch
	// fetchedAhead is Consumer.returned when this node was last sent a ShareFetch: FetchAhead
	// sends one per leader after each Poll that returned records.
	fetchedAhead uint64
	unsupported  error                           // RecordLimitAcquire and the broker lacks ShareFetch v2
	grant        int                             // Process: the records the ShareFetch in flight may bring
	poolPending  int                             // Process: its acknowledgements among pending
	spare        map[TopicPartition]*pendingPart // taken, kept for their memory
	// queuedRenews counts the renews among pending, not sent yet.
	queuedRenews int
	// versionsStale: kgo connected to the broker anew since its ApiVersions were read; they
	// are read again before the next ShareFetch.
	versionsStale bool
	// fetchErr is why the last ShareFetch failed (nil: it was answered); fetchedEmpty, that it
	// was answered with no records since the assignment last changed. Status reads them.
	fetchErr     error
	fetchedEmpty bool
}

// tidp names a partition by topic id, as share requests do.
type tidp struct {
	id [16]byte
	p  int32
}

// nextEpoch is Kafka's ShareRequestMetadata.nextEpoch.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return -1
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// isSessionError reports the codes after which a share session must be opened anew.
func isSessionError(code int16) bool {
	switch code {
	case kerr.ShareSessionNotFound.Code, kerr.InvalidShareSessionEpoch.Code, kerr.ShareSessionLimitReached.Code:
		return true
	}
	return false
}

// resetSessionLocked makes the next request to n open a new share session.
func (n *node) resetSessionLocked() {
	n.epoch = 0
	n.sessParts = nil
}

// requestCtx is the context of share requests: the kgo client's own rather than the
// consumer's. kgo watches any context but its own with a context.AfterFunc per request (two
// allocations a ShareFetch, 0.063 -> 0.049 allocations per record in BenchmarkAcceptLoop). Its
// own ends in kgo's Close, after kgo's last client-metrics push (up to a second), where the
// consumer's ends just before that Close: requests still in flight then end later, Close does
// not, since it waits for kgo's Close either way. By then the sessions are closed, so only a
// Close whose context ran out first leaves requests in flight.
func (c *Consumer) requestCtx() context.Context { return c.cl.Context() }

// kgoBroker returns the kgo handle of n's broker, made once.
func (n *node) kgoBroker(cl *kgo.Client) *kgo.Broker {
	if n.broker == nil {
		n.broker = cl.Broker(int(n.id))
	}
	return n.broker
}

func (c *Consumer) nodeLocked(id int32) *node {
	n := c.nodes[id]
	if n == nil {
		n = &node{id: id, pending: make(map[TopicPartition]*pendingPart)}
		c.nodes[id] = n
		c.nodeOrder = nil
	}
	return n
}

// sortedNodesLocked returns the nodes sorted by id. The slice is shared and must not be
// changed; it stays valid while nodes are added (a new node makes a new slice), so a caller
// may add nodes while it ranges over it. Building it once per added node rather than per call
// saves an allocation on every ShareFetch.
func (c *Consumer) sortedNodesLocked() []*node {
	if c.nodeOrder == nil {
		ns := make([]*node, 0, len(c.nodes))
		for _, n := range c.nodes {
			ns = append(ns, n)
		}
		slices.SortFunc(ns, func(a, b *node) int { return cmp64(int64(a.id), int64(b.id)) })
		c.nodeOrder = ns
	}
	return c.nodeOrder
}

// leaderLocked returns the leader of tp as the consumer knows it.
func (c *Consumer) leaderLocked(tp TopicPartition) (int32, bool) {
	id, ok := c.byName[tp.Topic]
	if !ok {
		return -1, false
	}
	tm := c.topics[id]
	if tm == nil {
		return -1, false
	}
	li, ok := tm.leaders[tp.Partition]
	if !ok || li.node < 0 {
		return -1, false
	}
	return li.node, true
}

// partsLedLocked returns the assigned partitions whose leader is node, in name order.
func (c *Consumer) partsLedLocked(node int32) []*assignedPart {
	var out []*assignedPart
	for _, ap := range c.assigned {
		if l, ok := c.leaderLocked(ap.tp); ok && l == node {
			out = append(out, ap)
		}
	}
	slices.SortFunc(out, func(a, b *assignedPart) int { return compareTP(a.tp, b.tp) })
	return out
}

// limitNodeLocked returns the leader that RecordLimitAcquire fetches now, choosing the first
// leader of an assigned partition when the current one leads none.
func (c *Consumer) limitNodeLocked() int32 {
	leaders := c.assignedLeadersLocked()
	if len(leaders) == 0 {
		return -1
	}
	if slices.Contains(leaders, c.limitNode) {
		return c.limitNode
	}
	c.limitNode = leaders[0]
	return c.limitNode
}

// rotateLimitNodeLocked moves RecordLimitAcquire on to the next leader, after an empty fetch.
func (c *Consumer) rotateLimitNodeLocked() {
	leaders := c.assignedLeadersLocked()
	if len(leaders) == 0 {
		return
	}
	i, _ := slices.BinarySearch(leaders, c.limitNode+1)
	c.limitNode = leaders[i%len(leaders)]
}

// assignedLeadersLocked returns the leaders of the assigned partitions, sorted, in memory it
// uses again at the next call (several calls each ShareFetch): callers use the answer before
// they call it again.
func (c *Consumer) assignedLeadersLocked() []int32 {
	ls := c.leadersBuf[:0]
	for _, ap := range c.assigned {
		if l, ok := c.leaderLocked(ap.tp); ok && !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	slices.Sort(ls)
	c.leadersBuf = ls
	return ls
}

// wantFetchLocked reports whether n should be sent a ShareFetch now: a Poll is waiting and
// renews for n are queued; or no renewed record waits for
// a Poll or, with a Poll waiting, for its renew's answer, and either a Poll is waiting with
// nothing to return or, with FetchAhead, a Poll returned records since n's last fetch and
// fewer than MaxPollRecords are held, and n leads an assigned partition (and, with
// RecordLimitAcquire, it is the leader whose turn it is).
func (c *Consumer) wantFetchLocked(n *node) bool {
	if c.stopped || c.closed.Load() || c.fatal != nil || len(c.pollErrs) > 0 || n.unsupported != nil {
		return false
	}
	if c.pollWaiting && n.queuedRenews > 0 {
		// A renew fetch; or, when the session must be opened anew, the opening fetch, on
		// which the renews fail (acknowledgements cannot travel on it).
		return true
	}
	if c.renews.Len() > 0 && (c.renews.Ready() > 0 || c.pollWaiting) {
		// Renewed records go first: a Poll returns them, or waits for their renews' answers.
		return false
	}
	switch {
	case c.pool != nil:
		carried := 0
		if n.epoch != 0 {
			carried = n.poolPending
		}
		if !c.pollWaiting || len(c.buffer) > 0 || n.grant > 0 || c.poolGrantLocked(carried) == 0 {
			return false
		}
	case c.pollWaiting && len(c.buffer) == 0:
	case c.cfg.fetchAhead && c.returned > 0 && n.fetchedAhead != c.returned && c.bufRecords < c.cfg.maxPollRecords && len(c.subscription) > 0:
	default:
		return false
	}
	if c.cfg.recordLimit {
		return c.limitNodeLocked() == n.id
	}
	for _, ap := range c.assigned {
		if l, ok := c.leaderLocked(ap.tp); ok && l == n.id {
			return true
		}
	}
	return false
}

// unsupportedLocked returns the error of a leader of an assigned partition that cannot serve
// the consumer's acquire mode.
func (c *Consumer) unsupportedLocked() error {
	for _, l := range c.assignedLeadersLocked() {
		if n := c.nodes[l]; n != nil && n.unsupported != nil {
			return n.unsupported
		}
	}
	return nil
}

// kickLocked starts the goroutine of every node that has work and none running.
func (c *Consumer) kickLocked() {
	if c.stopped {
		return
	}
	if c.pollWaiting {
		for _, l := range c.assignedLeadersLocked() {
			c.nodeLocked(l)
		}
	}
	for _, n := range c.nodes {
		if !n.busy && (len(n.jobs) > 0 || c.wantFetchLocked(n)) {
			n.busy = true
			c.wg.Add(1)
			go c.runNode(n)
		}
	}
	c.noteLocked()
}

// runNode sends n's requests, one at a time, until n has no work left.
func (c *Consumer) runNode(n *node) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		work := c.nextWorkLocked(n)
		if work == nil {
			n.busy = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		work()
		c.mu.Lock()
		pause := n.pause
		n.pause = 0
		if c.closed.Load() {
			pause = 0
		}
		c.mu.Unlock()
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.closing:
				t.Stop()
			}
		}
	}
}

// nextWorkLocked returns n's next request, ready to send, or nil when n has no work. Queued
// acknowledgements go first, then a ShareFetch if one is wanted.
func (c *Consumer) nextWorkLocked(n *node) func() {
	for {
		if c.stopped {
			for _, j := range n.jobs {
				c.failPartsLocked(j, j.parts, kerr.NetworkException.Code, msgClosing)
				c.answeredLocked(j)
				c.finishJobLocked(j)
			}
			n.jobs = nil
			return nil
		}
		if len(n.jobs) > 0 {
			if n.versionsStale && anyRenew(n.jobs[0].parts) {
				// The broker may have been replaced since Acknowledge checked: make sure it
				// still takes RENEW before sending one.
				n.versionsStale = false
				return func() { c.loadVersions(n.id) }
			}
			j := n.jobs[0]
			n.jobs[0] = nil
			n.jobs = n.jobs[1:]
			if work := c.buildAckLocked(n, j); work != nil {
				return work
			}
			c.answeredLocked(j) // nothing was left to send
			continue
		}
		if !c.wantFetchLocked(n) {
			return nil
		}
		// What the broker supports is known before its first ShareFetch, so that Acknowledge
		// can refuse a RENEW it would not take.
		v, ok := c.versions.Get(n.id)
		if !ok || n.versionsStale {
			n.versionsStale = false
			return func() { c.loadVersions(n.id) }
		}
		if c.cfg.recordLimit {
			if !v.SupportsRecordLimitAcquire() {
				max, _ := v.Max(kmsg.ShareFetch)
				n.unsupported = fmt.Errorf("%w: broker %d supports ShareFetch up to v%d", errors.ErrRecordLimitUnsupported, n.id, max)
				c.wake()
				continue
			}
		}
		return c.buildFetchLocked(n)
	}
}

// loadVersions asks node for its ApiVersions, as the apiversions package describes, and
// records them.
func (c *Consumer) loadVersions(node int32) {
	if _, err := c.versionsFor(c.ctx, node); err != nil {
		c.log(kgo.LogLevelWarn, "asking a broker for its ApiVersions failed", "broker", node, "err", err)
		c.mu.Lock()
		c.nodeLocked(node).pause = retryBackoff
		c.mu.Unlock()
	}
}

func (c *Consumer) versionsFor(ctx context.Context, node int32) (apiversions.Versions, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kshare", softwareVersion()
	if vs := c.cl.OptValues(kgo.SoftwareNameAndVersion); len(vs) == 2 {
		name, _ := vs[0].(string)
		version, _ := vs[1].(string)
		if name != "" && version != "" {
			req.ClientSoftwareName, req.ClientSoftwareVersion = name, version
		}
	}
	resp, err := c.cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return apiversions.Versions{}, err
	}
	v, err := apiversions.FromResponse(resp.(*kmsg.ApiVersionsResponse))
	if err != nil {
		return apiversions.Versions{}, err
	}
	v = v.Cap(c.caps)
	c.versions.Set(node, v)
	return v, nil
}

// screenLocked fails, without sending them, the parts that cannot go to n: those of a
// partition whose leader moved elsewhere (NOT_LEADER_OR_FOLLOWER: the locks went with the old
// leadership) and, when n has no open session, all of them (NETWORK_EXCEPTION), as Kafka's
// client does. It returns the parts that can go.
func (c *Consumer) screenLocked(n *node, j *ackJob, parts []*ackPart) []*ackPart {
	keep := parts[:0]
	for _, p := range parts {
		switch l, ok := c.leaderLocked(p.tp); {
		case ok && l != n.id:
			c.finishPartLocked(j, p, ackError(p, kerr.NotLeaderForPartition.Code,
				fmt.Sprintf("the partition's leader moved from broker %d to broker %d; the records' acquisition locks went with it", n.id, l)))
		case n.epoch == 0:
			c.finishPartLocked(j, p, ackError(p, kerr.NetworkException.Code, msgEpochZero))
		default:
			keep = append(keep, p)
		}
	}
	return keep
}

// buildAckLocked makes j's ShareAcknowledge, or returns nil when nothing is left to send.
func (c *Consumer) buildAckLocked(n *node, j *ackJob) func() {
	if j.kind == jobClose {
		j.parts = c.takeAcksLocked(n, j)
		if n.epoch == 0 {
			c.failPartsLocked(j, j.parts, kerr.NetworkException.Code, "no share session was open with the leader")
			c.finishJobLocked(j)
			return nil
		}
	}
	parts := c.screenLocked(n, j, j.parts)
	if j.kind == jobClose {
		parts = c.dropRenewsLocked(j, parts)
	}
	parts = c.stripUnsupportedRenewsLocked(n, j, parts)
	if len(parts) == 0 && j.kind != jobClose {
		return nil
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = &c.cfg.group, &c.memberID
	req.ShareSessionEpoch = n.epoch
	if j.kind == jobClose {
		req.ShareSessionEpoch = -1
	}
	if anyRenew(parts) {
		req.IsRenewAck = true
		j.sent = time.Now()
		c.markRenewsSentLocked(parts, j.sent)
		if j.kind == jobLease {
			c.procStats.renewRequests.Add(1)
		}
	}
	for _, p := range parts {
		ti := len(req.Topics) - 1
		if ti < 0 || req.Topics[ti].TopicID != p.id {
			t := kmsg.NewShareAcknowledgeRequestTopic()
			t.TopicID = p.id
			req.Topics = append(req.Topics, t)
			ti++
		}
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.AcknowledgementBatches = make([]kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch, len(p.batches))
		for i, b := range p.batches {
			rp.AcknowledgementBatches[i] = kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.Wire()}
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	j.parts = parts // those sent: a CommitSync that adopts j waits for these
	n.sending = j
	return func() {
		kresp, err := n.kgoBroker(c.cl).Request(c.requestCtx(), req)
		resp, _ := kresp.(*kmsg.ShareAcknowledgeResponse)
		c.mu.Lock()
		defer c.mu.Unlock()
		n.sending = nil
		c.applyAckLocked(n, j, parts, req, resp, err)
		c.kickLocked()
	}
}

// retriableAck reports whether CommitSync sends acknowledgements refused with code again.
// NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH are not retried, since the locks are gone
// after a leader change, nor are unknown topics and partitions.
func retriableAck(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		return false
	}
	ke, ok := kerr.ErrorForCode(code).(*kerr.Error)
	return ok && ke.Retriable
}

// applyAckLocked processes the answer to a ShareAcknowledge.
func (c *Consumer) applyAckLocked(n *node, j *ackJob, parts []*ackPart, req *kmsg.ShareAcknowledgeRequest, resp *kmsg.ShareAcknowledgeResponse, err error) {
	defer c.finishJobLocked(j)
	c.answeredLocked(j)
	closing := req.ShareSessionEpoch == -1
	var retry []*ackPart
	switch {
	case err != nil:
		c.log(kgo.LogLevelWarn, "ShareAcknowledge failed", "broker", n.id, "err", err)
		c.sessionResetLocked(n)
		n.pause = retryBackoff
		c.failPartsLocked(j, parts, kerr.NetworkException.Code, err.Error())
		c.triggerMetadataLocked() // as after a failed ShareFetch
	case resp.ErrorCode != 0:
		msg := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage).Error()
		c.log(kgo.LogLevelWarn, "ShareAcknowledge refused", "broker", n.id, "err", msg)
		n.pause = retryBackoff
		if isSessionError(resp.ErrorCode) {
			c.sessionResetLocked(n)
			c.failPartsLocked(j, parts, kerr.NetworkException.Code, "the share session was reset: "+msg)
			break
		}
		n.epoch = nextEpoch(n.epoch)
		for _, p := range parts {
			if c.mayRetryLocked(j, resp.ErrorCode) {
				retry = append(retry, p)
				continue
			}
			c.finishPartLocked(j, p, ackError(p, resp.ErrorCode, deref(resp.ErrorMessage)))
		}
	default:
		if !closing {
			n.epoch = nextEpoch(n.epoch)
		}
		j.lockTimeout = resp.AcquisitionLockTimeoutMillis
		if lock := c.reportLockLocked(resp.AcquisitionLockTimeoutMillis); lock.ms > 0 {
			c.lockNext = lock // shown from the next Poll, as Kafka's client does
		}
		type result struct {
			code int16
			msg  *string
		}
		results := make(map[tidp]result)
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				results[tidp{t.TopicID, rp.Partition}] = result{rp.ErrorCode, rp.ErrorMessage}
				if rp.ErrorCode == kerr.NotLeaderForPartition.Code || rp.ErrorCode == kerr.FencedLeaderEpoch.Code {
					c.leaderHintLocked(t.TopicID, rp.Partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch)
				}
			}
		}
		for _, p := range parts {
			r, ok := results[tidp{p.id, p.tp.Partition}]
			switch {
			case !ok:
				c.finishPartLocked(j, p, ackError(p, kerr.InvalidRecordState.Code, msgInvalidResponse))
			case r.code != 0 && c.mayRetryLocked(j, r.code):
				retry = append(retry, p)
			default:
				c.finishPartLocked(j, p, ackError(p, r.code, deref(r.msg)))
			}
		}
	}
	if closing {
		n.resetSessionLocked()
	}
	if len(retry) > 0 {
		n.pause = retryBackoff
		n.jobs = slices.Insert(n.jobs, 0, &ackJob{kind: j.kind, parts: retry, commit: j.commit})
	}
}

// mayRetryLocked reports whether a part of j refused with code is sent again: only for
// CommitSync, while its ctx lasts, for retriable codes.
func (c *Consumer) mayRetryLocked(j *ackJob, code int16) bool {
	return j.kind == jobSync && j.commit.ctx.Err() == nil && !j.commit.abandoned && !c.closed.Load() && retriableAck(code)
}

// closeSessionLocked queues the ShareAcknowledge that closes n's share session, with n's
// waiting acknowledgements. A node that never opened a session, and is not opening one, has
// nothing to close: its acknowledgements fail.
func (c *Consumer) closeSessionLocked(n *node, w *commitWait) {
	if n.epoch == 0 && !n.busy {
		parts := c.takeAcksLocked(n, nil)
		c.failPartsLocked(&ackJob{kind: jobAsync}, parts, kerr.NetworkException.Code, "no share session was open with the leader")
		return
	}
	c.enqueueLocked(n, &ackJob{kind: jobClose, commit: w})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

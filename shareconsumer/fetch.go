package shareconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
)

// This file sends each session's requests: one goroutine per leader while it has work, one
// request at a time, acknowledgements queued first, then a ShareFetch when admission allows
// one; and it applies the answers.

// kickLocked starts the goroutine of every session that has work and none running.
func (c *Consumer) kickLocked() {
	if c.life.stopped {
		return
	}
	if c.admit.waiting {
		for _, l := range c.member.leaders() {
			c.sessions.get(l)
		}
	}
	for _, s := range c.sessions.sorted() {
		if !s.busy && (len(s.jobs) > 0 || c.wantFetchLocked(s)) {
			s.busy = true
			if s.wake == nil {
				s.wake = make(chan struct{}, 1)
				c.life.wg.Add(1)
				go c.runSession(s)
			} else {
				s.wake <- struct{}{}
			}
		}
	}
	c.noteLocked(time.Now())
}

// kick is kickLocked for a caller without the lock.
func (c *Consumer) kick() {
	c.mu.Lock()
	c.kickLocked()
	c.mu.Unlock()
}

// wantFetchLocked reports whether s should be sent a ShareFetch now, as admission decides.
func (c *Consumer) wantFetchLocked(s *session) bool {
	if c.life.stopped || c.life.closed.Load() || c.member.fatal != nil || len(c.poll.errs) > 0 || s.unsupported != nil || !c.member.leads(s.node) {
		return false
	}
	var pv pollView
	if c.admit.workers == 0 {
		pv = c.ledger.pollView() // Process's rules do not look at Poll's records
	}
	return c.admit.mayFetch(s, pv, c.admitHeld(), c.member.leaders()) > 0
}

// runSession sends s's requests, one at a time, while s has work, and waits for more until the
// consumer closes. One goroutine per leader lives that long, rather than one per burst of
// work: a ShareFetch round trip would otherwise pay for a goroutine and its stack's growth.
func (c *Consumer) runSession(s *session) {
	defer c.life.wg.Done()
	for {
		c.mu.Lock()
		work := c.nextWorkLocked(s)
		if work == nil {
			s.busy = false
			c.mu.Unlock()
			c.fireLockLost()
			select {
			case <-s.wake:
				continue
			case <-c.life.ctx.Done():
				return
			}
		}
		c.mu.Unlock()
		work()
		c.fireLockLost() // locks the answer lost (a session reset, a refused renew)
		c.mu.Lock()
		pause := s.pause
		s.pause = 0
		if c.life.closed.Load() {
			pause = 0
		}
		c.mu.Unlock()
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.life.closing:
				t.Stop()
			}
		}
	}
}

// nextWorkLocked returns s's next request, ready to send, or nil when s has no work. Queued
// acknowledgements go first, then a ShareFetch if one is wanted.
func (c *Consumer) nextWorkLocked(s *session) func() {
	for {
		now := time.Now()
		if c.life.stopped {
			s.failQueued(&c.acks, now)
			return nil
		}
		if len(s.jobs) > 0 {
			j := s.jobs[0]
			if s.versionsStale && (j.kind == jobLease || anyRenew(j.parts)) {
				// The broker may have been replaced since Acknowledge checked: make sure it
				// still takes RENEW before sending one.
				s.versionsStale = false
				return func() { c.loadVersions(s.node) }
			}
			s.jobs[0] = nil
			s.jobs = s.jobs[1:]
			if j.kind == jobLease {
				j.parts = c.ledger.renewParts(s.node, now)
			}
			if work := c.ackWorkLocked(s, j, now); work != nil {
				return work
			}
			continue
		}
		if !c.wantFetchLocked(s) {
			return nil
		}
		// What the broker supports is known before its first ShareFetch, so that Acknowledge
		// can refuse a RENEW it would not take.
		v, ok := c.versions.Get(s.node)
		if !ok || s.versionsStale {
			s.versionsStale = false
			return func() { c.loadVersions(s.node) }
		}
		if c.cfg.recordLimit && !v.SupportsRecordLimitAcquire() {
			max, _ := v.Max(kmsg.ShareFetch)
			s.unsupported = fmt.Errorf("%w: broker %d supports ShareFetch up to v%d", errors.ErrRecordLimitUnsupported, s.node, max)
			c.poll.wake()
			continue
		}
		return c.fetchWorkLocked(s, v, now)
	}
}

// requestParamsLocked returns what s's next request needs besides the session. Consumer.mu is held.
func (c *Consumer) requestParamsLocked(s *session) requestParams {
	v, _ := c.versions.Get(s.node)
	return requestParams{
		group: &c.cfg.group, member: &c.member.memberID,
		renewOK:  v.SupportsRenew(),
		leaderOf: c.member.leaderOf,
	}
}

// fetchWorkLocked builds s's next ShareFetch, sized by admission, and returns the work that sends it
// and applies its answer.
func (c *Consumer) fetchWorkLocked(s *session, v apiversions.Versions, now time.Time) func() {
	rp := c.requestParamsLocked(s)
	lim := c.admit.limits(s, v, c.admitHeld(), c.member.leaders(), c.locks.duration())
	rp.maxWait, rp.minBytes, rp.maxBytes, rp.maxRecords, rp.acquireMode = lim.maxWait, c.cfg.fetchMinBytes, c.cfg.fetchMaxBytes, lim.records, lim.acquireMode
	req, job, names := s.fetchRequest(c.member.partsLedBy(s.node), rp, &c.acks, now)
	if len(job.parts) > 0 {
		s.piggyback = job
	}
	s.fetching = true
	if !job.renewFetch {
		c.admit.fetchSent(s, lim.grant)
	}
	if len(job.parts) > 0 {
		job.events = c.hooks.newRequestEvents(s.node, "ShareFetch")
	}
	return func() {
		sent := time.Now()
		kresp, err := s.kgoBroker(c.cl).Request(c.requestCtx(), req)
		resp, _ := kresp.(*kmsg.ShareFetchResponse)
		// The hooks' latency ends with the answer, before decoding; without hooks the clock is
		// not read for it.
		var got time.Time
		if len(c.hooks.shareFetch) > 0 || job.events != nil {
			got = time.Now()
		}
		var decoded map[tidp]decodedPart
		if err == nil && resp.ErrorCode == 0 {
			decoded = c.decodeResponse(resp, names, sent, s.decoded)
			s.decoded = decoded
		}
		if len(c.hooks.shareFetch) > 0 {
			c.hooks.onShareFetch(shareFetchEvent(s.node, resp, err, names, decoded, got.Sub(sent)))
		}
		answered := time.Now()
		c.mu.Lock()
		s.piggyback, s.fetching = nil, false
		c.admit.fetchAnswered(s, answered.Sub(sent), c.ledger.lease.settled.Load(), answered)
		c.applyFetchLocked(s, job, names, resp, err, decoded, sent, answered)
		c.kickLocked()
		ev := job.events // read under the lock, as the ShareAcknowledge path does
		c.mu.Unlock()
		if ev != nil {
			var code int16
			var msg *string
			if resp != nil {
				code, msg = resp.ErrorCode, resp.ErrorMessage
			}
			c.hooks.fireRequest(ev, got.Sub(sent), requestErr(err, code, msg))
		}
	}
}

// requestCtx is the context of share requests: the kgo client's own rather than the
// consumer's. kgo watches any context but its own with a context.AfterFunc per request (two
// allocations a ShareFetch, 0.063 -> 0.049 allocations per record in BenchmarkAcceptLoop). Its
// own ends in kgo's Close, after kgo's last client-metrics push (up to a second), where the
// consumer's ends just before that Close: requests still in flight then end later, Close does
// not, since it waits for kgo's Close either way. By then the sessions are closed, so only a
// Close whose context ran out first leaves requests in flight.
func (c *Consumer) requestCtx() context.Context { return c.cl.Context() }

// decodeResponse decodes the records of every partition of resp, outside the lock, into out
// (emptied first; nil makes a new map) and returns it.
func (c *Consumer) decodeResponse(resp *kmsg.ShareFetchResponse, names map[[16]byte]string, sent time.Time, out map[tidp]decodedPart) map[tidp]decodedPart {
	var deadline time.Time
	if resp.AcquisitionLockTimeoutMillis > 0 {
		deadline = sent.Add(time.Duration(resp.AcquisitionLockTimeoutMillis) * time.Millisecond)
	}
	if out == nil {
		out = make(map[tidp]decodedPart)
	}
	clear(out)
	for _, t := range resp.Topics {
		name, ok := names[t.TopicID]
		if !ok {
			continue
		}
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if rp.ErrorCode != 0 || len(rp.AcquiredRecords) == 0 {
				continue
			}
			out[tidp{t.TopicID, rp.Partition}] = c.dec.decodePartition(name, rp.Partition, rp.Records, rp.AcquiredRecords, deadline)
		}
	}
	return out
}

// applyFetchLocked processes the answer to a ShareFetch sent at sent: the session's epoch, the
// outcome of the acknowledgements it carried, fetch errors and leader changes, gaps, and the
// records, which go to the ledger for Poll, or for Process to its pool.
func (c *Consumer) applyFetchLocked(s *session, job *ackJob, names map[[16]byte]string, resp *kmsg.ShareFetchResponse, err error, decoded map[tidp]decodedPart, sent, now time.Time) {
	ans := s.applyFetch(job, resp, err, &c.acks, now)
	switch ans.kind {
	case answerFailed:
		s.fetchErr = err
		if c.life.ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "ShareFetch failed; the share session will be opened anew", "broker", s.node, "err", err)
			c.health.setErr(err, now)
		}
		c.sessionResetLocked(s)
		s.pause = retryBackoff
		// The broker may be gone for good, its partitions led elsewhere now: look again, as
		// Kafka's client asks for metadata when a connection drops.
		c.triggerMetadataLocked()
		return
	case answerSessionLost:
		s.fetchErr = nil
		c.health.setErr(ans.err, now)
		c.log(kgo.LogLevelInfo, "share session lost; opening it anew", "broker", s.node, "err", ans.err)
		c.sessionResetLocked(s)
		return
	case answerRefused:
		s.fetchErr = nil
		c.health.setErr(ans.err, now)
		c.log(kgo.LogLevelWarn, "ShareFetch refused", "broker", s.node, "err", ans.err)
		s.pause = retryBackoff
		switch code := resp.ErrorCode; {
		case code == kerr.GroupAuthorizationFailed.Code:
			c.groupDeniedLocked(resp.ErrorMessage)
		case code == kerr.TopicAuthorizationFailed.Code:
			// Kafka answers it per partition; a broker that refuses the whole request so is
			// taken as refusing each topic it names.
			for _, t := range resp.Topics {
				if name, ok := names[t.TopicID]; ok && len(t.Partitions) > 0 {
					c.topicDeniedLocked(s, name, t.Partitions[0].Partition, ans.err)
				}
			}
		default:
			if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); !ok || !ke.Retriable {
				c.poll.addErr(&errors.BrokerError{Broker: s.node, Err: ans.err})
			}
		}
		return
	}
	s.fetchErr = nil
	lock := c.locks.report(resp.AcquisitionLockTimeoutMillis)
	if job.renewFetch {
		if lock.ms > 0 {
			c.locks.next = lock
		}
		return // it brings no records; the Poll waiting for the renews returns them
	}
	if c.member.left {
		return // the member left for want of Polls: the session's close releases these records
	}

	got, failed := false, false
	var taken []takenPart
	for _, t := range resp.Topics {
		name, known := names[t.TopicID]
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if ans.last[tidp{t.TopicID, rp.Partition}] != rp {
				continue
			}
			tp := TopicPartition{name, rp.Partition}
			if rp.ErrorCode != 0 {
				failed = true
				c.fetchErrorLocked(s, t.TopicID, tp, rp)
				continue
			}
			if len(c.health.denied) > 0 {
				c.health.allow(name, true)
			}
			if len(rp.AcquiredRecords) == 0 {
				continue
			}
			if !known {
				c.log(kgo.LogLevelWarn, "ShareFetch returned records of a topic id the consumer did not ask for; leaving them to their lock's expiry", "broker", s.node, "topic_id", t.TopicID)
				continue
			}
			d := decoded[tidp{t.TopicID, rp.Partition}]
			if d.invalid != nil {
				c.log(kgo.LogLevelError, "ShareFetch answer refused; leaving its offsets to their lock's expiry", "broker", s.node, "topic", tp.Topic, "partition", tp.Partition, "err", d.invalid)
				c.poll.addErr(d.invalid)
				failed = true // the next fetch of this leader waits a pause, as after a partition error
				continue
			}
			if d.unfetched > 0 {
				c.log(kgo.LogLevelWarn, "ShareFetch acquired offsets outside the records it returned; leaving them to their lock's expiry", "broker", s.node, "topic", tp.Topic, "partition", tp.Partition, "offsets", d.unfetched)
			}
			part := c.ledger.part(tp, t.TopicID, s)
			for _, g := range d.gaps {
				s.addAcks(part, g.first, g.last, acktype.Gap)
			}
			if len(d.chunks) > 0 {
				taken = append(taken, takenPart{part, d.chunks})
			}
		}
	}
	got = len(taken) > 0
	if got {
		c.taker.take(s, taken, sent, lock, now)
	}
	s.fetchedEmpty = !got && !failed
	switch {
	case got:
	case failed:
		s.pause = retryBackoff
	case c.cfg.fetchMaxWait == 0:
		// The broker does not wait for records, so neither would the next fetch: pause a
		// little rather than spin.
		s.pause = idlePause
	}
	if !got && c.cfg.recordLimit {
		c.admit.rotate(c.member.leaders())
	}
}

// takenPart is one partition's records of a ShareFetch answer, in chunks split where a corrupt
// batch sits.
type takenPart struct {
	part   *heldPart
	chunks []chunk
}

// recordTaker is where the records of a ShareFetch answer go: the ledger's buffer for Poll, or
// Process's pool. Consumer.mu is held; take never blocks.
type recordTaker interface {
	take(s *session, parts []takenPart, sent time.Time, lock lockReport, now time.Time)
}

// pollTaker holds fetched records in the ledger for Poll, and wakes a waiting Poll.
type pollTaker struct{ c *Consumer }

func (pt pollTaker) take(_ *session, parts []takenPart, _ time.Time, lock lockReport, _ time.Time) {
	for _, tp := range parts {
		for _, ch := range tp.chunks {
			pt.c.ledger.hold(tp.part, ch.recs, ch.corrupt, lock)
		}
	}
	pt.c.poll.wake()
}

// poolPart is one partition's records of a ShareFetch answer for Process.
type poolPart struct {
	part *heldPart
	recs []*Record
}

// queueRenews queues a renew of every Process record held from each of nodes, for their
// sessions to build when they send it.
func (c *Consumer) queueRenews(nodes []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		if c.life.stopped {
			c.ledger.renewDropped(n)
			continue
		}
		c.sessions.get(n).enqueue(&ackJob{kind: jobLease})
	}
	c.kickLocked()
}

// fetchErrorLocked handles a partition a ShareFetch could not fetch.
func (c *Consumer) fetchErrorLocked(s *session, id [16]byte, tp TopicPartition, rp *kmsg.ShareFetchResponseTopicPartition) {
	code := rp.ErrorCode
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code:
		if mv, ok := c.member.hint(leaderHint{id, rp.Partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch}); ok {
			c.leaderMovedLocked(mv)
		}
		c.triggerMetadataLocked()
		return
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		c.triggerMetadataLocked()
		return
	}
	err := errors.FromKafka(code, rp.ErrorMessage)
	if code == kerr.TopicAuthorizationFailed.Code {
		c.topicDeniedLocked(s, tp.Topic, tp.Partition, err)
		return
	}
	c.log(kgo.LogLevelWarn, "ShareFetch could not fetch a partition", "broker", s.node, "topic", tp.Topic, "partition", tp.Partition, "err", err)
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); !ok || !ke.Retriable {
		c.poll.addErr(&errors.PartitionError{Topic: tp.Topic, Partition: tp.Partition, Err: err})
	}
}

// topicDeniedLocked takes a broker's TOPIC_AUTHORIZATION_FAILED for a partition of topic. As
// Kafka's client, which throws TopicAuthorizationException naming the topic from poll, the next
// Poll gets a *errors.PartitionError wrapping a *errors.TopicAuthorizationError, but once, when
// the topic becomes refused, not at every fetch; Status lists the topic until a fetch of it
// succeeds. The consumer goes on fetching the
// topic's partitions with the others (after a pause, when nothing else came), so that records
// come as soon as the ACLs allow them.
func (c *Consumer) topicDeniedLocked(s *session, topic string, partition int32, kafkaErr error) {
	err := &errors.TopicAuthorizationError{Topics: []string{topic}, Err: kafkaErr}
	if !c.health.deny(topic, err, true) {
		return
	}
	c.log(kgo.LogLevelWarn, "not authorized to read a topic; the other topics are fetched", "broker", s.node, "topic", topic, "err", kafkaErr)
	c.health.setErr(err, time.Now())
	c.poll.addErr(&errors.PartitionError{Topic: topic, Partition: partition, Err: err})
}

// groupDeniedLocked takes GROUP_AUTHORIZATION_FAILED in a ShareFetch or ShareAcknowledge answer:
// the member may not read its group (Kafka checks READ on the group in ShareGroupHeartbeat,
// ShareFetch and ShareAcknowledge alike). The consumer fails as when the heartbeat says so:
// Poll and Process return the *errors.FatalError from now on.
func (c *Consumer) groupDeniedLocked(message *string) {
	if c.member.fatal != nil {
		return
	}
	c.member.fatal = &errors.FatalError{Group: c.cfg.group, Err: kerr.GroupAuthorizationFailed, Message: deref(message)}
	c.log(kgo.LogLevelError, "the broker refused the member its group", "err", c.member.fatal)
	c.health.setErr(c.member.fatal, time.Now())
	c.assignmentChangedLocked(c.member.assign(nil))
	c.poll.wake()
}

// leaderMovedLocked forgets the records held from a partition's old leader: their locks stayed
// with it. Renewed records waiting for a Poll are dropped; Process's are lost.
func (c *Consumer) leaderMovedLocked(mv leaderMove) {
	if n := c.ledger.dropRenewsOf(mv.tp); n > 0 {
		c.log(kgo.LogLevelInfo, "dropped renewed records: their partition's leader moved, and their acquisition locks with it", "topic", mv.tp.Topic, "partition", mv.tp.Partition, "records", n)
		c.poll.wake()
	}
	c.ledger.losePartition(mv.from, mv.tp)
}

// sessionResetLocked makes the next request to s open a new share session; the records Process
// holds from its leader are lost (LockSessionReset): their renews and acknowledgements cannot
// travel on the opening request.
func (c *Consumer) sessionResetLocked(s *session) {
	s.reset()
	c.ledger.loseNode(s.node, errors.LockSessionReset)
}

// ackWorkLocked builds j's ShareAcknowledge and returns the work that sends it and applies its
// answer, or nil when nothing was left to send.
func (c *Consumer) ackWorkLocked(s *session, j *ackJob, now time.Time) func() {
	req := s.ackRequest(j, c.requestParamsLocked(s), &c.acks, now)
	if req == nil {
		return nil
	}
	if j.kind == jobLease && req.IsRenewAck {
		c.ledger.renewSentOut()
	}
	s.sending = j
	if len(j.parts) > 0 {
		j.events = c.hooks.newRequestEvents(s.node, "ShareAcknowledge")
	}
	return func() {
		var sent time.Time
		if j.events != nil {
			sent = time.Now()
		}
		kresp, err := s.kgoBroker(c.cl).Request(c.requestCtx(), req)
		resp, _ := kresp.(*kmsg.ShareAcknowledgeResponse)
		now := time.Now()
		if ev := j.events; ev != nil {
			defer func() {
				var code int16
				var msg *string
				if resp != nil {
					code, msg = resp.ErrorCode, resp.ErrorMessage
				}
				c.hooks.fireRequest(ev, now.Sub(sent), requestErr(err, code, msg))
			}()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		s.sending = nil
		retry := func(code int16) bool {
			return j.commit != nil && j.commit.ctx.Err() == nil && !j.commit.abandoned && !c.life.closed.Load() && retriableAck(code)
		}
		ans := s.applyAck(j, req, resp, err, retry, &c.acks, now)
		switch ans.kind {
		case answerFailed:
			c.log(kgo.LogLevelWarn, "ShareAcknowledge failed", "broker", s.node, "err", err)
			c.sessionResetLocked(s)
			s.pause = retryBackoff
			c.triggerMetadataLocked() // as after a failed ShareFetch
		case answerSessionLost:
			c.log(kgo.LogLevelWarn, "ShareAcknowledge refused", "broker", s.node, "err", ans.err)
			s.pause = retryBackoff
			c.sessionResetLocked(s)
		case answerRefused:
			c.log(kgo.LogLevelWarn, "ShareAcknowledge refused", "broker", s.node, "err", ans.err)
			s.pause = retryBackoff
			if resp.ErrorCode == kerr.GroupAuthorizationFailed.Code {
				c.groupDeniedLocked(resp.ErrorMessage)
			}
		default:
			if lock := c.locks.report(resp.AcquisitionLockTimeoutMillis); lock.ms > 0 {
				c.locks.next = lock // shown from the next Poll, as Kafka's client does
			}
			for _, h := range ans.hints {
				if mv, ok := c.member.hint(h); ok {
					c.leaderMovedLocked(mv)
				}
			}
		}
		c.kickLocked()
	}
}

// loadVersions asks node for its ApiVersions, as the apiversions package describes, and
// records them.
func (c *Consumer) loadVersions(node int32) {
	if _, err := c.versionsFor(c.life.ctx, node); err != nil {
		c.log(kgo.LogLevelWarn, "asking a broker for its ApiVersions failed", "broker", node, "err", err)
		c.mu.Lock()
		c.sessions.get(node).pause = retryBackoff
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

// flushUnfetchedLocked, at the end of a Poll, sends the acknowledgements of every leader this
// Poll sent no ShareFetch to, and that FetchAhead is not about to fetch from, in a
// ShareAcknowledge, so that none waits for a Poll that may not come.
func (c *Consumer) flushUnfetchedLocked() {
	for _, s := range c.sessions.sorted() {
		if s.fetchedPoll != c.admit.pollSeq && !c.wantFetchLocked(s) {
			s.flush(&c.acks, time.Now())
		}
	}
	c.kickLocked()
}

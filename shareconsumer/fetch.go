package shareconsumer

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// bufItem is records acquired and not yet returned by Poll (or a corrupt batch to report),
// with where they came from.
type bufItem struct {
	node    int32
	tp      TopicPartition
	id      [16]byte
	recs    []*Record
	corrupt *errors.CorruptBatchError
	lock    lockReport // the lock duration the fetch's answer reported
}

// buildFetchLocked makes n's next ShareFetch. On an open session it carries n's waiting
// acknowledgements, lists the partitions the session gains (and those with acknowledgements)
// in Topics and those it loses in ForgottenTopicsData. On a new session (epoch 0) it lists
// every partition n leads for the consumer, and the acknowledgements waiting for n fail, since
// they cannot travel on it.
func (c *Consumer) buildFetchLocked(n *node) func() {
	req, job, names := c.fetchRequestLocked(n)
	if len(job.parts) > 0 {
		n.piggyback = job
	}
	return func() {
		sent := time.Now()
		kresp, err := n.kgoBroker(c.cl).Request(c.requestCtx(), req)
		resp, _ := kresp.(*kmsg.ShareFetchResponse)
		var decoded map[tidp]decodedPart
		if err == nil && resp.ErrorCode == 0 {
			decoded = c.decodeResponse(resp, names, sent, n.decoded)
			n.decoded = decoded
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		n.piggyback = nil
		n.grant = 0
		c.answeredLocked(job)
		c.applyFetchLocked(n, job, names, resp, err, decoded)
		c.kickLocked()
	}
}

// fetchRequestLocked makes the ShareFetch of buildFetchLocked, the acknowledgements it carries,
// and the names of the topic ids it names.
//
// When the acknowledgements include renews, it is a renew fetch, as KIP-1222 has it: IsRenewAck
// set, MaxBytes, MinBytes, MaxRecords and MaxWaitMs 0 (the broker returns no records, so that a
// renewed lock does not run out during a long poll), and only the partitions with
// acknowledgements listed; the session's other changes wait for the next fetch.
func (c *Consumer) fetchRequestLocked(n *node) (*kmsg.ShareFetchRequest, *ackJob, map[[16]byte]string) {
	n.fetchedPoll = c.pollSeq
	n.fetchedAhead = c.returned
	want := c.partsLedLocked(n.id)
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &c.cfg.group, &c.memberID
	req.ShareSessionEpoch = n.epoch
	req.MaxWaitMillis = int32(c.cfg.fetchMaxWait / time.Millisecond)
	if c.cfg.fetchAhead && !c.pollWaiting {
		// A FetchAhead fetch takes what is there: waiting at the broker would hold up the
		// acknowledgements queued behind it, and a Poll that finds nothing fetches anyway.
		req.MaxWaitMillis = 0
	}
	req.MinBytes = c.cfg.fetchMinBytes
	req.MaxBytes = c.cfg.fetchMaxBytes
	req.MaxRecords = int32(c.cfg.maxPollRecords)
	req.BatchSize = int32(c.cfg.maxPollRecords)
	if c.cfg.recordLimit {
		req.ShareAcquireMode = 1
	}
	job := &ackJob{kind: jobPiggyback}
	if n.fetchNames == nil {
		n.fetchNames = make(map[[16]byte]string)
	}
	names := n.fetchNames
	clear(names)
	topicIndex := make(map[[16]byte]int)
	partIndex := make(map[tidp]int)
	// add lists a partition in Topics, once; the pointer it returns is valid until the next add.
	add := func(id [16]byte, name string, p int32) *kmsg.ShareFetchRequestTopicPartition {
		names[id] = name
		ti, ok := topicIndex[id]
		if !ok {
			t := kmsg.NewShareFetchRequestTopic()
			t.TopicID = id
			req.Topics = append(req.Topics, t)
			ti = len(req.Topics) - 1
			topicIndex[id] = ti
		}
		ps := &req.Topics[ti].Partitions
		if pi, ok := partIndex[tidp{id, p}]; ok {
			return &(*ps)[pi]
		}
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		*ps = append(*ps, rp)
		partIndex[tidp{id, p}] = len(*ps) - 1
		return &(*ps)[len(*ps)-1]
	}

	for _, ap := range want {
		names[ap.id] = ap.tp.Topic
	}
	// Most fetches keep the session's partitions: then its set is used as it is.
	wantSet := n.sessParts
	if !sameParts(want, n.sessParts) {
		wantSet = make(map[tidp]struct{}, len(want))
		for _, ap := range want {
			wantSet[tidp{ap.id, ap.tp.Partition}] = struct{}{}
		}
	}
	if n.epoch == 0 {
		if parts := c.takeAcksLocked(n, nil); len(parts) > 0 {
			c.failPartsLocked(job, parts, kerr.NetworkException.Code, msgEpochZero)
		}
		for _, ap := range want {
			add(ap.id, ap.tp.Topic, ap.tp.Partition)
		}
	} else {
		job.parts = c.stripUnsupportedRenewsLocked(n, job, c.screenLocked(n, job, c.takeAcksLocked(n, job)))
		forgotten := make(map[[16]byte][]int32)
		if anyRenew(job.parts) {
			req.IsRenewAck, job.renewFetch = true, true
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 0, 0, 0, 0
			wantSet = n.sessParts // the session keeps its partitions until the next fetch
			c.markRenewsSentLocked(job.parts, time.Now())
		} else {
			for _, ap := range want {
				if _, ok := n.sessParts[tidp{ap.id, ap.tp.Partition}]; !ok {
					add(ap.id, ap.tp.Topic, ap.tp.Partition)
				}
			}
			for k := range n.sessParts {
				if _, ok := wantSet[k]; !ok {
					forgotten[k.id] = append(forgotten[k.id], k.p)
				}
			}
		}
		for _, p := range job.parts {
			rp := add(p.id, p.tp.Topic, p.tp.Partition)
			for _, b := range p.batches {
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.Wire()})
			}
			k := tidp{p.id, p.tp.Partition}
			_, inWant := wantSet[k]
			_, inSess := n.sessParts[k]
			if !inWant && !inSess {
				// Acknowledged only: it joins the session with this request and leaves it at once.
				forgotten[k.id] = append(forgotten[k.id], k.p)
			}
		}
		for id, ps := range forgotten {
			req.ForgottenTopicsData = append(req.ForgottenTopicsData, kmsg.ShareFetchRequestForgottenTopicsData{TopicID: id, Partitions: ps})
		}
	}
	n.sessParts = wantSet
	if c.pool != nil && !job.renewFetch {
		c.poolFetchLocked(n, req, job.poolAcks)
	}
	slices.SortFunc(req.ForgottenTopicsData, func(a, b kmsg.ShareFetchRequestForgottenTopicsData) int {
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	for i := range req.ForgottenTopicsData {
		slices.Sort(req.ForgottenTopicsData[i].Partitions)
	}
	return req, job, names
}

// sameParts reports whether want lists exactly the partitions of set (want has no duplicates).
func sameParts(want []*assignedPart, set map[tidp]struct{}) bool {
	if set == nil || len(want) != len(set) {
		return false
	}
	for _, ap := range want {
		if _, ok := set[tidp{ap.id, ap.tp.Partition}]; !ok {
			return false
		}
	}
	return true
}

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

// applyFetchLocked processes the answer to a ShareFetch: the session epoch, the outcome of the
// acknowledgements it carried, fetch errors and leader changes, gaps, and the records, which go
// to the buffer for Poll.
func (c *Consumer) applyFetchLocked(n *node, job *ackJob, names map[[16]byte]string, resp *kmsg.ShareFetchResponse, err error, decoded map[tidp]decodedPart) {
	switch {
	case err != nil:
		n.fetchErr = err
		if c.ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "ShareFetch failed; the share session will be opened anew", "broker", n.id, "err", err)
			c.errLocked(err)
		}
		c.sessionResetLocked(n)
		n.pause = retryBackoff
		c.failPartsLocked(job, job.parts, kerr.NetworkException.Code, err.Error())
		// The broker may be gone for good, its partitions led elsewhere now: look again, as
		// Kafka's client asks for metadata when a connection drops.
		c.triggerMetadataLocked()
		return
	case resp.ErrorCode != 0:
		kerrMsg := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		n.fetchErr = nil
		c.errLocked(kerrMsg)
		if isSessionError(resp.ErrorCode) {
			c.log(kgo.LogLevelInfo, "share session lost; opening it anew", "broker", n.id, "err", kerrMsg)
			c.sessionResetLocked(n)
			c.failPartsLocked(job, job.parts, kerr.NetworkException.Code, "the share session was reset: "+kerrMsg.Error())
			return
		}
		c.log(kgo.LogLevelWarn, "ShareFetch refused", "broker", n.id, "err", kerrMsg)
		n.epoch = nextEpoch(n.epoch)
		n.pause = retryBackoff
		c.failPartsLocked(job, job.parts, resp.ErrorCode, deref(resp.ErrorMessage))
		if ke, ok := kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error); !ok || !ke.Retriable {
			c.addPollErrLocked(&errors.BrokerError{Broker: n.id, Err: kerrMsg})
		}
		return
	}
	n.epoch = nextEpoch(n.epoch)
	n.fetchErr = nil

	// The acknowledgements it carried.
	job.lockTimeout = resp.AcquisitionLockTimeoutMillis
	lock := c.reportLockLocked(resp.AcquisitionLockTimeoutMillis)
	if job.renewFetch && lock.ms > 0 {
		c.lockNext = lock
	}
	// A partition the answer names twice counts once, as its last entry, as in Kafka's client.
	last := make(map[tidp]*kmsg.ShareFetchResponseTopicPartition)
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			last[tidp{t.TopicID, t.Partitions[i].Partition}] = &t.Partitions[i]
		}
	}
	for _, p := range job.parts {
		if rp, ok := last[tidp{p.id, p.tp.Partition}]; ok {
			c.finishPartLocked(job, p, ackError(p, rp.AcknowledgeErrorCode, deref(rp.AcknowledgeErrorMessage)))
		} else {
			c.finishPartLocked(job, p, ackError(p, kerr.InvalidRecordState.Code, msgInvalidResponse))
		}
	}
	if job.renewFetch {
		return // it brings no records; the Poll waiting for the renews returns them
	}
	if c.health.left {
		return // the member left for want of Polls: the session's close releases these records
	}

	got, failed := false, false
	for _, t := range resp.Topics {
		name, known := names[t.TopicID]
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if last[tidp{t.TopicID, rp.Partition}] != rp {
				continue
			}
			tp := TopicPartition{name, rp.Partition}
			if rp.ErrorCode != 0 {
				failed = true
				c.fetchErrorLocked(n, t.TopicID, tp, rp)
				continue
			}
			if len(rp.AcquiredRecords) == 0 {
				continue
			}
			if !known {
				c.log(kgo.LogLevelWarn, "ShareFetch returned records of a topic id the consumer did not ask for; leaving them to their lock's expiry", "broker", n.id, "topic_id", t.TopicID)
				continue
			}
			d := decoded[tidp{t.TopicID, rp.Partition}]
			if d.invalid != nil {
				c.log(kgo.LogLevelError, "ShareFetch answer refused; leaving its offsets to their lock's expiry", "broker", n.id, "topic", tp.Topic, "partition", tp.Partition, "err", d.invalid)
				c.addPollErrLocked(d.invalid)
				failed = true // the next fetch of this leader waits a pause, as after a partition error
				continue
			}
			if d.unfetched > 0 {
				c.log(kgo.LogLevelWarn, "ShareFetch acquired offsets outside the records it returned; leaving them to their lock's expiry", "broker", n.id, "topic", tp.Topic, "partition", tp.Partition, "offsets", d.unfetched)
			}
			if len(d.gaps) > 0 {
				acc := c.pendingLocked(n.id, tp, t.TopicID)
				for _, g := range d.gaps {
					for o := g.first; o <= g.last; o++ {
						acc.Add(o, acktype.Gap)
					}
				}
			}
			for _, ch := range d.chunks {
				if c.renews.Len() > 0 {
					// A fresh delivery of a renewed record replaces it: its lock was lost.
					for _, r := range ch.recs {
						c.renews.Remove(renewKey(tp, r.Offset))
					}
				}
				c.buffer = append(c.buffer, bufItem{node: n.id, tp: tp, id: t.TopicID, recs: ch.recs, corrupt: ch.corrupt, lock: lock})
				c.bufRecords += len(ch.recs)
				got = true
			}
		}
	}
	n.fetchedEmpty = !got && !failed
	switch {
	case got:
		c.wake()
	case failed:
		n.pause = retryBackoff
	case c.cfg.fetchMaxWait == 0:
		// The broker does not wait for records, so neither would the next fetch: pause a
		// little rather than spin.
		n.pause = idlePause
	}
	if !got && c.cfg.recordLimit {
		c.rotateLimitNodeLocked()
	}
}

// fetchErrorLocked handles a partition a ShareFetch could not fetch.
func (c *Consumer) fetchErrorLocked(n *node, id [16]byte, tp TopicPartition, rp *kmsg.ShareFetchResponseTopicPartition) {
	code := rp.ErrorCode
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code:
		c.leaderHintLocked(id, rp.Partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch)
		c.triggerMetadataLocked()
		return
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		c.triggerMetadataLocked()
		return
	}
	err := errors.FromKafka(code, rp.ErrorMessage)
	c.log(kgo.LogLevelWarn, "ShareFetch could not fetch a partition", "broker", n.id, "topic", tp.Topic, "partition", tp.Partition, "err", err)
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); !ok || !ke.Retriable {
		c.addPollErrLocked(&errors.PartitionError{Topic: tp.Topic, Partition: tp.Partition, Err: err})
	}
}

// leaderHintLocked follows a leader a broker named in CurrentLeader, when it is newer than what
// the consumer knows.
func (c *Consumer) leaderHintLocked(id [16]byte, partition, leader, epoch int32) {
	tm := c.topics[id]
	if tm == nil || leader < 0 {
		return
	}
	if cur, ok := tm.leaders[partition]; ok && epoch < cur.epoch {
		return
	}
	c.setLeaderLocked(tm, partition, leaderInfo{node: leader, epoch: epoch})
}

// setLeaderLocked records the leader of a partition. When it is another broker than before,
// the renewed records of the partition are dropped: their locks stayed with the old leader.
func (c *Consumer) setLeaderLocked(tm *topicMeta, partition int32, li leaderInfo) {
	if cur, ok := tm.leaders[partition]; ok && cur.node != li.node {
		tp := TopicPartition{tm.name, partition}
		c.dropRenewsOfPartitionLocked(tp)
		if c.pool != nil {
			c.pool.loseWhere(func(h *heldRecord) bool { return h.tp == tp && h.node == cur.node }, errors.LockLeaderMoved)
		}
	}
	tm.leaders[partition] = li
}

// drainLocked takes up to MaxPollRecords records for Poll, renewed records first, then from the
// buffer (drainBufferLocked). A corrupt batch is reported on its own: its offsets enter the
// in-flight set, acknowledged as Reject until the application says otherwise.
func (c *Consumer) drainLocked() ([]*Record, error) {
	max := c.cfg.maxPollRecords
	out := c.takeRenewedLocked(max, nil)
	err := c.drainBufferLocked(max-len(out), len(out) > 0, func(it *bufItem, r *Record) {
		if out == nil {
			out = make([]*Record, 0, min(c.bufRecords, max))
		}
		c.inflight.add(it.tp, it.id, it.node, r.Offset, r, false, 0)
		out = append(out, r)
	}, func(it *bufItem) {
		for _, o := range it.corrupt.Offsets {
			c.inflight.add(it.tp, it.id, it.node, o, nil, true, acktype.Reject)
		}
	})
	return out, err
}

// drainBufferLocked takes up to max records from the buffer, in arrival order, giving each to
// take, and dropping those whose lock has run out by the local estimate. It stops before a
// corrupt batch when records were taken (taken says whether the caller already has some);
// otherwise it gives the batch to corrupt, removes it and returns its error.
func (c *Consumer) drainBufferLocked(max int, taken bool, take func(it *bufItem, r *Record), corrupt func(it *bufItem)) error {
	now := time.Now()
	dropped, n := 0, 0
	defer func() {
		if dropped > 0 {
			c.log(kgo.LogLevelInfo, "dropped held records whose acquisition lock ran out before they could be handed out", "records", dropped)
		}
	}()
	for len(c.buffer) > 0 && n < max {
		it := &c.buffer[0]
		if it.corrupt != nil {
			if taken || n > 0 {
				break
			}
			corrupt(it)
			ce := it.corrupt
			c.popBufferLocked()
			return ce
		}
		k := min(len(it.recs), max-n)
		for _, r := range it.recs[:k] {
			if !r.LockDeadline.IsZero() && !now.Before(r.LockDeadline) {
				dropped++
				continue
			}
			take(it, r)
			n++
		}
		c.showLockLocked(it.lock)
		c.bufRecords -= k
		it.recs = it.recs[k:]
		if len(it.recs) == 0 {
			c.popBufferLocked()
		}
	}
	return nil
}

func (c *Consumer) popBufferLocked() {
	c.buffer[0] = bufItem{}
	c.buffer = c.buffer[1:]
	if len(c.buffer) == 0 {
		c.buffer = nil
	}
}

// releaseBufferLocked releases every held record, for Unsubscribe: the broker may give them to
// another member at once. Corrupt batches are rejected, as Poll would have.
func (c *Consumer) releaseBufferLocked() {
	for _, it := range c.buffer {
		acc := c.pendingLocked(it.node, it.tp, it.id)
		if it.corrupt != nil {
			for _, o := range it.corrupt.Offsets {
				acc.Add(o, acktype.Reject)
			}
			continue
		}
		for _, r := range it.recs {
			acc.Add(r.Offset, acktype.Release)
		}
	}
	c.buffer, c.bufRecords = nil, 0
}

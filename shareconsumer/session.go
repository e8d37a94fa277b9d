package shareconsumer

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// session is the consumer's share session with one partition leader (one per member and
// leader, as Kafka has it): its epoch, the partitions it holds, the acknowledgements waiting
// for it, and the requests queued and in flight. It builds the ShareFetch and ShareAcknowledge
// requests and applies their answers; the consumer sends them, one at a time, and reports the
// outcomes (outcomes) and records. It reads no clock: every call that needs the time takes it.
//
// Guarded by Consumer.mu, except the inbox, which Process's workers fill with a lock of its own.
type session struct {
	node int32
	// epoch is the share session epoch of the next request: 0 opens a session (a ShareFetch
	// with the full partition list), then +1 after every answered request of either kind,
	// wrapping from MaxInt32 to 1; -1 closes it.
	epoch int32
	// parts are the partitions the broker's session holds, as the consumer told it.
	parts map[tidp]struct{}

	// pending are the acknowledgements waiting for the next request, by partition; spare are
	// accumulators taken before, kept for their memory. inbox holds those of Process's workers
	// until a request is built. queuedRenews counts the renews among pending; pollRenews is
	// what they are for.
	pending      map[TopicPartition]*pendingPart
	spare        map[TopicPartition]*pendingPart
	inbox        ackInbox
	inboxSpare   []inboxAck // the inbox's other slice (ackInbox.swap)
	queuedRenews int
	pollRenews   renewer

	jobs      []*ackJob     // ShareAcknowledges queued behind the request in flight
	busy      bool          // the session's goroutine has work
	wake      chan struct{} // wakes the session's goroutine, made when it starts
	piggyback *ackJob       // the acknowledgements on the ShareFetch in flight, if any
	sending   *ackJob       // the ShareAcknowledge in flight, if any
	fetching  bool          // a ShareFetch is in flight
	grant     int           // the records the ShareFetch in flight may bring (Process)
	pause     time.Duration

	// fetchNames and decoded are the memory of the ShareFetch in flight (the topic names it
	// asks for, its decoded partitions), used again by the next: two maps fewer per ShareFetch.
	fetchNames map[[16]byte]string
	decoded    map[tidp]decodedPart
	broker     *kgo.Broker // the handle requests go through, made once

	// versionsStale: kgo connected to the broker anew since its ApiVersions were read; they
	// are read again before the next ShareFetch. unsupported: RecordLimitAcquire and the
	// broker lacks ShareFetch v2.
	versionsStale bool
	unsupported   error

	// fetchedPoll is the Poll that last sent this session a ShareFetch; fetchedAhead, the
	// count of Polls that returned records then (FetchAhead fetches once per such Poll).
	fetchedPoll, fetchedAhead uint64
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

func newSession(node int32, pollRenews renewer) *session {
	return &session{node: node, pending: make(map[TopicPartition]*pendingPart), pollRenews: pollRenews}
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

// reset makes the next request open a new share session.
func (s *session) reset() {
	s.epoch = 0
	s.parts = nil
}

// kgoBroker returns the kgo handle of the session's broker, made once.
func (s *session) kgoBroker(cl *kgo.Client) *kgo.Broker {
	if s.broker == nil {
		s.broker = cl.Broker(int(s.node))
	}
	return s.broker
}

// addAck records an acknowledgement for the next request.
func (s *session) addAck(part *heldPart, off int64, t acktype.Type) { s.addAcks(part, off, off, t) }

// addAcks records acknowledgements of the offsets first to last, all t, for the next request.
func (s *session) addAcks(part *heldPart, first, last int64, t acktype.Type) {
	s.pendingOf(part).acc.AddRange(first, last, t)
}

// pendingOf returns part's waiting acknowledgements.
func (s *session) pendingOf(part *heldPart) *pendingPart {
	pp := s.pending[part.tp]
	if pp == nil {
		// An accumulator taken before is used again, with the memory it grew.
		if pp = s.spare[part.tp]; pp != nil {
			delete(s.spare, part.tp)
			pp.id = part.id
		} else {
			pp = &pendingPart{id: part.id}
		}
		s.pending[part.tp] = pp
	}
	return pp
}

// addInbox records an acknowledgement of Process. Two of one offset are of two deliveries: the
// earlier one's lock ran out before its acknowledgement left, and the broker delivered the record
// again. Sending the earlier one would apply it to the later delivery, so it fails instead
// (INVALID_RECORD_STATE, reported to o), and the later one's is kept.
func (s *session) addInbox(a inboxAck, o *outcomes, now time.Time) {
	pp := s.pendingOf(a.part)
	if prevT, dup := pp.acc.Get(a.off); dup {
		prevDC := pp.dcs[a.off]
		if prevDC == 0 {
			prevDC = 1
		}
		if a.dc < prevDC {
			s.supersede(a.part, a.off, a.t, o, now)
			return
		}
		s.supersede(a.part, a.off, prevT, o, now)
	}
	if a.dc > 1 {
		if pp.dcs == nil {
			pp.dcs = make(map[int64]int16)
		}
		pp.dcs[a.off] = a.dc
	}
	pp.acc.AddRange(a.off, a.off, a.t)
}

// supersede reports an acknowledgement of t for part's offset off as failed, unsent.
func (s *session) supersede(part *heldPart, off int64, t acktype.Type, o *outcomes, now time.Time) {
	p := &ackPart{tp: part.tp, id: part.id, batches: []acktype.Batch{{FirstOffset: off, LastOffset: off, Types: []acktype.Type{t}}}}
	o.finish(&ackJob{kind: jobAsync}, p, ackError(p, kerr.InvalidRecordState.Code, msgSuperseded), now)
}

// hasAcks reports whether acknowledgements wait for the next request.
func (s *session) hasAcks() bool { return len(s.pending) > 0 || s.inbox.len() > 0 }

// takeAcks takes every acknowledgement waiting, the inbox's included (addInbox, which reports
// superseded ones to o), by partition in name order.
func (s *session) takeAcks(o *outcomes, now time.Time) []*ackPart {
	s.inboxSpare = s.inbox.swap(s.inboxSpare)
	acks := s.inboxSpare
	for i := 0; i < len(acks); {
		// A worker hands over runs of consecutive offsets: a run none of whose offsets has an
		// acknowledgement yet goes in at once.
		a := acks[i]
		k := i + 1
		for k < len(acks) && acks[k].part == a.part && acks[k].t == a.t && acks[k].off == acks[k-1].off+1 && acks[k].dc <= 1 {
			k++
		}
		if pp := s.pendingOf(a.part); a.dc <= 1 && !pp.acc.Overlaps(a.off, acks[k-1].off) {
			pp.acc.AddRange(a.off, acks[k-1].off, a.t)
		} else {
			for _, b := range acks[i:k] {
				s.addInbox(b, o, now)
			}
		}
		i = k
	}
	if len(s.pending) == 0 {
		s.queuedRenews = 0
		return nil
	}
	parts := make([]*ackPart, 0, len(s.pending))
	for _, tp := range sortedTPs(s.pending) {
		pp := s.pending[tp]
		delete(s.pending, tp)
		if s.spare == nil {
			s.spare = make(map[TopicPartition]*pendingPart)
		}
		s.spare[tp] = pp
		clear(pp.dcs)
		if batches := pp.acc.Take(); len(batches) > 0 {
			p := &ackPart{tp: tp, id: pp.id, batches: batches}
			if s.queuedRenews > 0 && hasRenew(batches) {
				p.renews, p.renewOf = true, s.pollRenews
			}
			parts = append(parts, p)
		}
	}
	s.queuedRenews = 0
	return parts
}

// requestParams is what a request needs besides the session: who asks, the limits of a
// ShareFetch, where partitions are led now, and whether the leader takes RENEW.
type requestParams struct {
	group, member *string
	maxWait       int32
	minBytes      int32
	maxBytes      int32
	maxRecords    int32
	acquireMode   int8
	renewOK       bool
	leaderOf      func(TopicPartition) (int32, bool)
}

// screen fails, without sending them, the parts that cannot go to the leader: those of a
// partition whose leader moved elsewhere (NOT_LEADER_OR_FOLLOWER: the locks went with the old
// leadership) and, when no session is open, all of them (NETWORK_EXCEPTION), as Kafka's client
// does. It returns the parts that can go.
func (s *session) screen(j *ackJob, parts []*ackPart, rp requestParams, o *outcomes, now time.Time) []*ackPart {
	keep := parts[:0]
	for _, p := range parts {
		switch l, ok := rp.leaderOf(p.tp); {
		case ok && l != s.node:
			o.finish(j, p, ackError(p, kerr.NotLeaderForPartition.Code,
				fmt.Sprintf("the partition's leader moved from broker %d to broker %d; the records' acquisition locks went with it", s.node, l)), now)
		case s.epoch == 0:
			o.finish(j, p, ackError(p, kerr.NetworkException.Code, msgEpochZero), now)
		default:
			keep = append(keep, p)
		}
	}
	return keep
}

// stripUnsupportedRenews takes the renews out of parts when the leader does not take RENEW
// (the broker was replaced by an older one since Acknowledge checked), failing them with
// UNSUPPORTED_VERSION, so that type 4 is never sent on a version that does not know it. The
// other acknowledgements of the same parts go on.
func (s *session) stripUnsupportedRenews(j *ackJob, parts []*ackPart, rp requestParams, o *outcomes, now time.Time) []*ackPart {
	if rp.renewOK || !anyRenew(parts) {
		return parts
	}
	return o.failRenews(j, parts, kerr.UnsupportedVersion.Code,
		fmt.Sprintf("broker %d no longer supports ShareFetch v2 and ShareAcknowledge v2, which RENEW needs", s.node), now)
}

// fetchRequest makes the next ShareFetch for want, the partitions the consumer fetches from
// this leader, with the acknowledgements it carries (the job) and the names of the topic ids it
// names. On an open session it carries the waiting acknowledgements, lists the partitions the
// session gains (and those with acknowledgements) in Topics and those it loses in
// ForgottenTopicsData. On a new session (epoch 0) it lists every partition in want, and the
// waiting acknowledgements fail, since they cannot travel on it.
//
// When the acknowledgements include renews it is a renew fetch, as KIP-1222 has it: IsRenewAck
// set, MaxBytes, MinBytes, MaxRecords and MaxWaitMs 0 (the broker returns no records, so that a
// renewed lock does not run out during a long poll), and only the partitions with
// acknowledgements listed; the session's other changes wait for the next fetch.
func (s *session) fetchRequest(want []*assignedPart, rp requestParams, o *outcomes, now time.Time) (*kmsg.ShareFetchRequest, *ackJob, map[[16]byte]string) {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = rp.group, rp.member
	req.ShareSessionEpoch = s.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = rp.maxWait, rp.minBytes, rp.maxBytes
	req.MaxRecords, req.BatchSize = rp.maxRecords, rp.maxRecords
	req.ShareAcquireMode = rp.acquireMode
	job := &ackJob{kind: jobPiggyback}
	if s.fetchNames == nil {
		s.fetchNames = make(map[[16]byte]string)
	}
	names := s.fetchNames
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
		part := kmsg.NewShareFetchRequestTopicPartition()
		part.Partition = p
		*ps = append(*ps, part)
		partIndex[tidp{id, p}] = len(*ps) - 1
		return &(*ps)[len(*ps)-1]
	}

	for _, ap := range want {
		names[ap.id] = ap.tp.Topic
	}
	// Most fetches keep the session's partitions: then its set is used as it is.
	wantSet := s.parts
	if !sameParts(want, s.parts) {
		wantSet = make(map[tidp]struct{}, len(want))
		for _, ap := range want {
			wantSet[tidp{ap.id, ap.tp.Partition}] = struct{}{}
		}
	}
	if s.epoch == 0 {
		if parts := s.takeAcks(o, now); len(parts) > 0 {
			o.fail(job, parts, kerr.NetworkException.Code, msgEpochZero, now)
		}
		for _, ap := range want {
			add(ap.id, ap.tp.Topic, ap.tp.Partition)
		}
	} else {
		job.parts = s.stripUnsupportedRenews(job, s.screen(job, s.takeAcks(o, now), rp, o, now), rp, o, now)
		forgotten := make(map[[16]byte][]int32)
		if anyRenew(job.parts) {
			req.IsRenewAck, job.renewFetch = true, true
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 0, 0, 0, 0
			wantSet = s.parts // the session keeps its partitions until the next fetch
			renewsSent(job.parts, now)
		} else {
			for _, ap := range want {
				if _, ok := s.parts[tidp{ap.id, ap.tp.Partition}]; !ok {
					add(ap.id, ap.tp.Topic, ap.tp.Partition)
				}
			}
			for k := range s.parts {
				if _, ok := wantSet[k]; !ok {
					forgotten[k.id] = append(forgotten[k.id], k.p)
				}
			}
		}
		for _, p := range job.parts {
			part := add(p.id, p.tp.Topic, p.tp.Partition)
			for _, b := range p.batches {
				part.AcknowledgementBatches = append(part.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.Wire()})
			}
			k := tidp{p.id, p.tp.Partition}
			_, inWant := wantSet[k]
			_, inSess := s.parts[k]
			if !inWant && !inSess {
				// Acknowledged only: it joins the session with this request and leaves it at once.
				forgotten[k.id] = append(forgotten[k.id], k.p)
			}
		}
		for id, ps := range forgotten {
			req.ForgottenTopicsData = append(req.ForgottenTopicsData, kmsg.ShareFetchRequestForgottenTopicsData{TopicID: id, Partitions: ps})
		}
	}
	s.parts = wantSet
	slices.SortFunc(req.ForgottenTopicsData, func(a, b kmsg.ShareFetchRequestForgottenTopicsData) int {
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	for i := range req.ForgottenTopicsData {
		slices.Sort(req.ForgottenTopicsData[i].Partitions)
	}
	return req, job, names
}

// renewsSent tells the renews of parts that they leave now.
func renewsSent(parts []*ackPart, now time.Time) {
	for _, p := range parts {
		if p.renews && p.renewOf != nil {
			p.renewOf.renewSent(p, now)
		}
	}
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

// answerKind is how a request was answered, as far as the session is concerned.
type answerKind uint8

const (
	answerOK          answerKind = iota
	answerFailed                 // the request failed (a dropped connection): the session is gone
	answerSessionLost            // the broker lost the session (SHARE_SESSION_NOT_FOUND, ...)
	answerRefused                // the broker refused the whole request with another code
)

// fetchAnswer is what the session made of a ShareFetch's answer.
type fetchAnswer struct {
	kind answerKind
	err  error // the request's error, or the top-level code as a *errors.KafkaError
	// last has each partition of the answer once, as its last entry, as in Kafka's client.
	last map[tidp]*kmsg.ShareFetchResponseTopicPartition
}

// applyFetch takes the answer to a ShareFetch that carried j: the session's epoch, and the
// outcome of j's acknowledgements.
func (s *session) applyFetch(j *ackJob, resp *kmsg.ShareFetchResponse, err error, o *outcomes, now time.Time) fetchAnswer {
	switch {
	case err != nil:
		s.reset()
		o.fail(j, j.parts, kerr.NetworkException.Code, err.Error(), now)
		return fetchAnswer{kind: answerFailed, err: err}
	case resp.ErrorCode != 0:
		kerrMsg := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		if isSessionError(resp.ErrorCode) {
			s.reset()
			o.fail(j, j.parts, kerr.NetworkException.Code, "the share session was reset: "+kerrMsg.Error(), now)
			return fetchAnswer{kind: answerSessionLost, err: kerrMsg}
		}
		s.epoch = nextEpoch(s.epoch)
		o.fail(j, j.parts, resp.ErrorCode, deref(resp.ErrorMessage), now)
		return fetchAnswer{kind: answerRefused, err: kerrMsg}
	}
	s.epoch = nextEpoch(s.epoch)
	j.lockTimeout = resp.AcquisitionLockTimeoutMillis
	last := make(map[tidp]*kmsg.ShareFetchResponseTopicPartition)
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			last[tidp{t.TopicID, t.Partitions[i].Partition}] = &t.Partitions[i]
		}
	}
	for _, p := range j.parts {
		if rp, ok := last[tidp{p.id, p.tp.Partition}]; ok {
			o.finish(j, p, ackError(p, rp.AcknowledgeErrorCode, deref(rp.AcknowledgeErrorMessage)), now)
		} else {
			o.finish(j, p, ackError(p, kerr.InvalidRecordState.Code, msgInvalidResponse), now)
		}
	}
	return fetchAnswer{last: last}
}

// ackRequest makes j's ShareAcknowledge, or returns nil when nothing is left to send. A close
// job takes every waiting acknowledgement and closes the session (epoch -1), without its
// renews (the close releases those records); the session must be open.
func (s *session) ackRequest(j *ackJob, rp requestParams, o *outcomes, now time.Time) *kmsg.ShareAcknowledgeRequest {
	if j.kind == jobClose {
		j.parts = s.takeAcks(o, now)
		if s.epoch == 0 {
			o.fail(j, j.parts, kerr.NetworkException.Code, msgNoSession, now)
			o.finishJob(j)
			return nil
		}
	}
	parts := s.screen(j, j.parts, rp, o, now)
	if j.kind == jobClose && anyRenew(parts) {
		parts = o.failRenews(j, parts, kerr.NetworkException.Code, msgClosing+"; the share session's close releases the renewed records", now)
	}
	parts = s.stripUnsupportedRenews(j, parts, rp, o, now)
	if len(parts) == 0 && j.kind != jobClose {
		return nil
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = rp.group, rp.member
	req.ShareSessionEpoch = s.epoch
	if j.kind == jobClose {
		req.ShareSessionEpoch = -1
	}
	if anyRenew(parts) {
		req.IsRenewAck = true
		renewsSent(parts, now)
	}
	for _, p := range parts {
		ti := len(req.Topics) - 1
		if ti < 0 || req.Topics[ti].TopicID != p.id {
			t := kmsg.NewShareAcknowledgeRequestTopic()
			t.TopicID = p.id
			req.Topics = append(req.Topics, t)
			ti++
		}
		part := kmsg.NewShareAcknowledgeRequestTopicPartition()
		part.Partition = p.tp.Partition
		part.AcknowledgementBatches = make([]kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch, len(p.batches))
		for i, b := range p.batches {
			part.AcknowledgementBatches[i] = kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.Wire()}
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, part)
	}
	j.parts = parts // those sent: a CommitSync that adopts j waits for these
	return req
}

// leaderHint is a leader a broker named for a partition it no longer leads.
type leaderHint struct {
	id        [16]byte
	partition int32
	leader    int32
	epoch     int32
}

// ackAnswer is what the session made of a ShareAcknowledge's answer.
type ackAnswer struct {
	kind  answerKind
	err   error
	hints []leaderHint
}

// applyAck takes the answer to j's ShareAcknowledge, req. Parts refused with a retriable code
// are queued again, first, for CommitSync while its context lasts (retry says so). A close
// leaves the session closed.
func (s *session) applyAck(j *ackJob, req *kmsg.ShareAcknowledgeRequest, resp *kmsg.ShareAcknowledgeResponse, err error, retry func(code int16) bool, o *outcomes, now time.Time) ackAnswer {
	defer o.finishJob(j)
	closing := req.ShareSessionEpoch == -1
	var again []*ackPart
	var ans ackAnswer
	switch {
	case err != nil:
		s.reset()
		o.fail(j, j.parts, kerr.NetworkException.Code, err.Error(), now)
		ans = ackAnswer{kind: answerFailed, err: err}
	case resp.ErrorCode != 0:
		kerrMsg := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		if isSessionError(resp.ErrorCode) {
			s.reset()
			o.fail(j, j.parts, kerr.NetworkException.Code, "the share session was reset: "+kerrMsg.Error(), now)
			ans = ackAnswer{kind: answerSessionLost, err: kerrMsg}
			break
		}
		s.epoch = nextEpoch(s.epoch)
		for _, p := range j.parts {
			if j.kind == jobSync && retry(resp.ErrorCode) {
				if j.events != nil {
					j.events.acked(p, ackError(p, resp.ErrorCode, deref(resp.ErrorMessage)))
				}
				again = append(again, p)
				continue
			}
			o.finish(j, p, ackError(p, resp.ErrorCode, deref(resp.ErrorMessage)), now)
		}
		ans = ackAnswer{kind: answerRefused, err: kerrMsg}
	default:
		if !closing {
			s.epoch = nextEpoch(s.epoch)
		}
		j.lockTimeout = resp.AcquisitionLockTimeoutMillis
		type result struct {
			code int16
			msg  *string
		}
		results := make(map[tidp]result)
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				results[tidp{t.TopicID, rp.Partition}] = result{rp.ErrorCode, rp.ErrorMessage}
				if rp.ErrorCode == kerr.NotLeaderForPartition.Code || rp.ErrorCode == kerr.FencedLeaderEpoch.Code {
					ans.hints = append(ans.hints, leaderHint{t.TopicID, rp.Partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch})
				}
			}
		}
		for _, p := range j.parts {
			r, ok := results[tidp{p.id, p.tp.Partition}]
			switch {
			case !ok:
				o.finish(j, p, ackError(p, kerr.InvalidRecordState.Code, msgInvalidResponse), now)
			case r.code != 0 && j.kind == jobSync && retry(r.code):
				if j.events != nil {
					j.events.acked(p, ackError(p, r.code, deref(r.msg)))
				}
				again = append(again, p)
			default:
				o.finish(j, p, ackError(p, r.code, deref(r.msg)), now)
			}
		}
	}
	if closing {
		s.reset()
	}
	if len(again) > 0 {
		s.pause = retryBackoff
		s.jobs = slices.Insert(s.jobs, 0, &ackJob{kind: j.kind, parts: again, commit: j.commit})
	}
	return ans
}

// enqueue queues a ShareAcknowledge job; the session's goroutine sends it when the request
// before it is answered. A CommitSync job waits for its parts, a close job for itself.
func (s *session) enqueue(j *ackJob) {
	switch {
	case j.kind == jobSync && len(j.parts) == 0, j.kind == jobAsync && len(j.parts) == 0:
		return
	case j.kind == jobSync:
		for _, p := range j.parts {
			j.commit.addPart(p)
		}
	case j.kind == jobClose && j.commit != nil:
		j.commit.remaining++
	}
	s.jobs = append(s.jobs, j)
}

// flush queues the waiting acknowledgements in a ShareAcknowledge.
func (s *session) flush(o *outcomes, now time.Time) {
	if s.hasAcks() {
		s.enqueue(&ackJob{kind: jobAsync, parts: s.takeAcks(o, now)})
	}
}

// close queues the ShareAcknowledge that closes the session, with the waiting
// acknowledgements; w counts it. A session never opened, and not being opened, has nothing to
// close: its acknowledgements fail.
func (s *session) close(w *commitWait, o *outcomes, now time.Time) {
	if s.epoch == 0 && !s.busy {
		o.fail(&ackJob{kind: jobAsync}, s.takeAcks(o, now), kerr.NetworkException.Code, msgNoSession, now)
		return
	}
	s.enqueue(&ackJob{kind: jobClose, commit: w})
}

// failQueued fails every queued job and waiting acknowledgement: the consumer stopped.
func (s *session) failQueued(o *outcomes, now time.Time) {
	for _, j := range s.jobs {
		o.fail(j, j.parts, kerr.NetworkException.Code, msgClosing, now)
		o.finishJob(j)
	}
	s.jobs = nil
	o.fail(&ackJob{kind: jobAsync}, s.takeAcks(o, now), kerr.NetworkException.Code, msgClosing, now)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

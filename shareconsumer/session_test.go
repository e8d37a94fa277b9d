package shareconsumer

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// tTopic is the id of topic "t" in the tests that drive sessions, the ledger and consumers
// directly.
var tTopic = [16]byte{1}

// tOffline returns a consumer whose brokers do not exist, for tests of behaviour that spans
// the consumer's types; it knows topic "t" (id 1) with partitions 0-3 led by broker 0. Its
// metadata goroutine never runs (one is marked as running), so that nothing changes its state
// behind the test's back; asking for metadata sets member.metaAgain. When the test ends, its
// sessions are forgotten (nothing is sent at Close) and it is closed.
func tOffline(t *testing.T, opts ...Opt) *Consumer {
	t.Helper()
	c, err := New(append([]Opt{ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Group("g"), OnAcknowledgementCommit(func(AcknowledgementCommit) {})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.mu.Lock()
		for _, s := range c.sessions.byNode {
			s.reset()
			s.jobs, s.piggyback, s.sending, s.busy = nil, nil, nil, false
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.member.metaRunning = true
	c.member.topics[tTopic] = &topicMeta{name: "t", id: tTopic, leaders: map[int32]leaderInfo{0: {0, 1}, 1: {0, 1}, 2: {0, 1}, 3: {0, 1}}}
	c.member.byName["t"] = tTopic
	return c
}

func tPart(p int32, first, last int64, ty acktype.Type) *ackPart {
	return &ackPart{tp: TopicPartition{"t", p}, id: tTopic, batches: []acktype.Batch{{FirstOffset: first, LastOffset: last, Types: []acktype.Type{ty}}}}
}

// tHeld returns the part of topic "t" partition p whose records came from broker node, for
// acknowledgements added to a session directly.
func tHeld(p, node int32) *heldPart {
	return &heldPart{tp: TopicPartition{"t", p}, id: tTopic, node: node, inbox: &ackInbox{}, hi: -1}
}

// tOutcomes returns outcomes that collect every completion, as with an OnAcknowledgementCommit
// callback.
func tOutcomes() *outcomes { return &outcomes{onCommit: func(AcknowledgementCommit) {}} }

// tParams returns the parameters of a request from member "m" of group "g" to a leader that
// takes RENEW, with leaders where partitions are led (by default, partitions 0-3 of "t" by
// broker 0).
func tParams(leaders map[TopicPartition]int32) requestParams {
	if leaders == nil {
		leaders = map[TopicPartition]int32{{"t", 0}: 0, {"t", 1}: 0, {"t", 2}: 0, {"t", 3}: 0}
	}
	group, member := "g", "m"
	return requestParams{group: &group, member: &member, renewOK: true, leaderOf: func(tp TopicPartition) (int32, bool) {
		l, ok := leaders[tp]
		return l, ok
	}}
}

func tWant(id [16]byte, topic string, ps ...int32) []*assignedPart {
	var out []*assignedPart
	for _, p := range ps {
		out = append(out, &assignedPart{tp: TopicPartition{topic, p}, id: id})
	}
	return out
}

func TestNextEpoch(t *testing.T) {
	t.Parallel()
	assert.EqualValues(t, 1, nextEpoch(0))
	assert.EqualValues(t, 8, nextEpoch(7))
	assert.EqualValues(t, 1, nextEpoch(math.MaxInt32))
	assert.EqualValues(t, -1, nextEpoch(-1))
}

func TestApplyAckResponse(t *testing.T) {
	t.Parallel()
	o := tOutcomes()
	now := time.Now()
	s := newSession(0, nil)
	s.epoch = 3
	ok, retry, missing, moved := tPart(0, 0, 1, acktype.Accept), tPart(1, 5, 5, acktype.Release), tPart(2, 7, 9, acktype.Reject), tPart(3, 2, 2, acktype.Accept)
	w := newCommitWait(context.Background())
	j := &ackJob{kind: jobSync, parts: []*ackPart{ok, retry, missing, moved}, commit: w}
	s.enqueue(j)
	s.jobs = nil // sent

	resp := kmsg.NewPtrShareAcknowledgeResponse()
	rt := kmsg.NewShareAcknowledgeResponseTopic()
	rt.TopicID = tTopic
	for _, pc := range []struct {
		p    int32
		code int16
	}{{0, 0}, {1, kerr.KafkaStorageError.Code}, {3, kerr.NotLeaderForPartition.Code}} {
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition, rp.ErrorCode = pc.p, pc.code
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.ShareSessionEpoch = 3
	ans := s.applyAck(j, req, resp, nil, retriableAck, o, now)

	assert.Equal(t, answerOK, ans.kind)
	assert.Equal(t, []leaderHint{{tTopic, 3, -1, -1}}, ans.hints, "the consumer follows the leader a NOT_LEADER_OR_FOLLOWER names")
	assert.EqualValues(t, 4, s.epoch)
	assert.NoError(t, w.results[TopicPartition{"t", 0}])
	var ae *errors.AckError
	require.ErrorAs(t, w.results[TopicPartition{"t", 2}], &ae)
	assert.ErrorIs(t, ae, kerr.InvalidRecordState)
	assert.Equal(t, "Acknowledgement not successful due to invalid response from broker", ae.Message)
	assert.Equal(t, []int64{7, 8, 9}, ae.Offsets)
	assert.ErrorIs(t, w.results[TopicPartition{"t", 3}], kerr.NotLeaderForPartition, "not retried")
	_, done := w.results[TopicPartition{"t", 1}]
	assert.False(t, done, "a retriable error is retried")
	require.Len(t, s.jobs, 1)
	assert.Equal(t, []*ackPart{retry}, s.jobs[0].parts)
	assert.Equal(t, retryBackoff, s.pause)
	assert.Equal(t, 1, w.remaining)

	// The retry finds the session reset: it fails without being sent.
	s.reset()
	rj := s.jobs[0]
	s.jobs = nil
	assert.Nil(t, s.ackRequest(rj, tParams(nil), o, now))
	assert.ErrorIs(t, w.results[TopicPartition{"t", 1}], kerr.NetworkException)
	assert.Equal(t, 0, w.remaining)
	select {
	case <-w.done:
	default:
		t.Fatal("the commit is not done")
	}
	assert.Len(t, o.completions, 4, "one per partition, after retries")
}

func TestApplyAckSessionError(t *testing.T) {
	t.Parallel()
	o := tOutcomes()
	s := newSession(0, nil)
	s.epoch = 5
	s.parts = map[tidp]struct{}{{tTopic, 0}: {}}
	j := &ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 0, 0, acktype.Accept)}}
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.ShareSessionEpoch = 5
	ans := s.applyAck(j, req, resp, nil, retriableAck, o, time.Now())
	assert.Equal(t, answerSessionLost, ans.kind)
	assert.ErrorIs(t, ans.err, kerr.InvalidShareSessionEpoch)
	assert.EqualValues(t, 0, s.epoch, "the next request opens a new session")
	assert.Nil(t, s.parts)
	require.Len(t, o.completions, 1)
	assert.ErrorIs(t, o.completions[0].Err, kerr.NetworkException)
	assert.Contains(t, o.completions[0].Err.Error(), "INVALID_SHARE_SESSION_EPOCH")
}

func TestFetchOnNewSessionFailsAcks(t *testing.T) {
	t.Parallel()
	o := tOutcomes()
	s := newSession(0, nil)
	s.addAck(tHeld(0, 0), 4, acktype.Accept)
	req, job, _ := s.fetchRequest(tWant(tTopic, "t", 0), tParams(nil), o, time.Now())
	require.Len(t, o.completions, 1, "acknowledgements never travel on an epoch-0 request")
	assert.ErrorIs(t, o.completions[0].Err, kerr.NetworkException)
	assert.Equal(t, []int64{4}, o.completions[0].Offsets)
	assert.Empty(t, job.parts)
	assert.EqualValues(t, 0, req.ShareSessionEpoch)
	require.Len(t, req.Topics, 1)
	require.Len(t, req.Topics[0].Partitions, 1)
	assert.Empty(t, req.Topics[0].Partitions[0].AcknowledgementBatches)
	assert.Equal(t, map[tidp]struct{}{{tTopic, 0}: {}}, s.parts)
}

func TestFetchRequestShape(t *testing.T) {
	t.Parallel()
	// The limits a Poll's ShareFetch is sent with come from the options, through admission.
	cfg := defaultCfg()
	for _, o := range []Opt{MaxPollRecords(10), FetchMaxWait(250e6), FetchMinBytes(3), FetchMaxBytes(1000)} {
		o.apply(&cfg)
	}
	a := newAdmission(cfg)
	s := newSession(0, nil)
	lim := a.limits(s, tVersionsOf(t, 2), heldView{}, []int32{0}, 0)
	rp := tParams(nil)
	rp.maxWait, rp.minBytes, rp.maxBytes, rp.maxRecords, rp.acquireMode = lim.maxWait, cfg.fetchMinBytes, cfg.fetchMaxBytes, lim.records, lim.acquireMode

	o := tOutcomes()
	id := tTopic
	s.epoch = 7
	s.parts = map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}
	s.addAck(tHeld(0, 0), 1, acktype.Accept)
	s.addAck(tHeld(2, 0), 2, acktype.Release)

	req, job, names := s.fetchRequest(tWant(id, "t", 0, 1), rp, o, time.Now())
	assert.Equal(t, map[[16]byte]string{id: "t"}, names)
	assert.EqualValues(t, 7, req.ShareSessionEpoch)
	assert.EqualValues(t, 250, req.MaxWaitMillis)
	assert.EqualValues(t, 3, req.MinBytes)
	assert.EqualValues(t, 1000, req.MaxBytes)
	assert.EqualValues(t, 10, req.MaxRecords)
	assert.EqualValues(t, 10, req.BatchSize)
	assert.EqualValues(t, 0, req.ShareAcquireMode)
	assert.False(t, req.IsRenewAck)
	assert.Equal(t, "g", *req.GroupID)
	assert.Equal(t, "m", *req.MemberID)
	// Partition 1 joins the session; 0 carries its acknowledgement; 2 is acknowledged only, so
	// it joins and leaves at once; 3 leaves.
	require.Len(t, req.Topics, 1)
	assert.Equal(t, id, req.Topics[0].TopicID)
	ps := req.Topics[0].Partitions
	require.Len(t, ps, 3)
	assert.EqualValues(t, 1, ps[0].Partition)
	assert.Empty(t, ps[0].AcknowledgementBatches)
	assert.EqualValues(t, 0, ps[1].Partition)
	assert.Equal(t, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []int8{1}}}, ps[1].AcknowledgementBatches)
	assert.EqualValues(t, 2, ps[2].Partition)
	assert.Equal(t, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 2, LastOffset: 2, AcknowledgeTypes: []int8{2}}}, ps[2].AcknowledgementBatches)
	assert.Equal(t, []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: []int32{2, 3}}}, req.ForgottenTopicsData)
	assert.Len(t, job.parts, 2)
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 1}: {}}, s.parts)
	assert.False(t, s.hasAcks(), "the acknowledgements were taken")
	assert.Empty(t, o.completions)

	// Record-limit mode asks for it. The session keeps its partitions: nothing joins or leaves.
	cfg.recordLimit = true
	a = newAdmission(cfg)
	lim = a.limits(s, tVersionsOf(t, 2), heldView{}, []int32{0}, 0)
	assert.EqualValues(t, 10, lim.records, "exactly MaxPollRecords")
	rp.acquireMode = lim.acquireMode
	s.epoch++
	req, _, names = s.fetchRequest(tWant(id, "t", 0, 1), rp, o, time.Now())
	assert.EqualValues(t, 1, req.ShareAcquireMode)
	assert.Empty(t, req.Topics)
	assert.Empty(t, req.ForgottenTopicsData)
	assert.Equal(t, map[[16]byte]string{id: "t"}, names)
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 1}: {}}, s.parts)

	// The next fetch, whose memory the earlier ones used: partitions 0 and 1 leave, a topic
	// joins, and the names are only those this fetch asks for.
	other := [16]byte{2}
	s.epoch++
	req, _, names = s.fetchRequest(tWant(other, "u", 0), rp, o, time.Now())
	assert.Equal(t, map[[16]byte]string{other: "u"}, names)
	require.Len(t, req.Topics, 1)
	assert.Equal(t, other, req.Topics[0].TopicID)
	assert.Equal(t, []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: []int32{0, 1}}}, req.ForgottenTopicsData)
	assert.Equal(t, map[tidp]struct{}{{other, 0}: {}}, s.parts)
}

// TestFetchErrorHintsLeader applies ShareFetch answers to a consumer: a piggybacked
// acknowledgement the answer does not name fails with INVALID_RECORD_STATE, and a partition
// refused with NOT_LEADER_OR_FOLLOWER moves to the leader the broker named, and asks for
// metadata.
func TestFetchErrorHintsLeader(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions.get(0)
	s.epoch = 2
	resp := kmsg.NewPtrShareFetchResponse()
	rt := kmsg.NewShareFetchResponseTopic()
	rt.TopicID = tTopic
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition, rp.ErrorCode = 2, kerr.NotLeaderForPartition.Code
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 4, 9
	rt.Partitions = append(rt.Partitions, rp)
	names := map[[16]byte]string{tTopic: "t"}
	now := time.Now()
	// A piggybacked acknowledgement the response does not answer.
	lost := tPart(1, 3, 3, acktype.Accept)
	c.applyFetchLocked(s, &ackJob{kind: jobPiggyback, parts: []*ackPart{lost}}, names, resp, nil, nil, now, now)
	resp.Topics = append(resp.Topics, rt)
	c.applyFetchLocked(s, &ackJob{kind: jobPiggyback}, names, resp, nil, nil, now, now)
	l, ok := c.member.leaderOf(TopicPartition{"t", 2})
	require.True(t, ok)
	assert.EqualValues(t, 4, l)
	assert.EqualValues(t, 4, s.epoch)
	require.Len(t, c.acks.completions, 1)
	assert.ErrorIs(t, c.acks.completions[0].Err, kerr.InvalidRecordState)
	assert.True(t, c.member.metaAgain, "a metadata refresh follows")
}

// tBuffer puts records and corrupt batches in c's ledger for Poll, as a ShareFetch from broker
// 0 of partition 0 of "t" would.
func tBuffer(c *Consumer, items ...bufItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	part := c.ledger.part(TopicPartition{"t", 0}, tTopic, c.sessions.get(0))
	for _, it := range items {
		c.ledger.hold(part, it.recs, it.corrupt, it.lock)
	}
}

// tHold keeps broker 0's requests from being sent: its queue can be looked at. tOffline's
// cleanup lets go of it before Close.
func tHold(c *Consumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions.get(0).busy = true
}

// tQueued returns the acknowledgements queued or waiting for broker 0, by offset.
func tQueued(c *Consumer) map[int64]acktype.Type {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]acktype.Type{}
	s := c.sessions.get(0)
	for _, j := range s.jobs {
		for _, p := range j.parts {
			for o, ty := range batchTypes(p.batches) {
				out[o] = ty
			}
		}
	}
	for _, pp := range s.pending {
		acc := pp.acc // a copy: what waits stays
		for o, ty := range batchTypes(acc.Take()) {
			out[o] = ty
		}
	}
	return out
}

func tRecs(offsets ...int64) []*Record {
	var out []*Record
	for _, o := range offsets {
		out = append(out, &Record{Topic: "t", Partition: 0, Offset: o, DeliveryCount: 1})
	}
	return out
}

// TestPollReportsCorruptBatch returns the records before a corrupt batch, then the batch as
// Poll's error, whose offsets the consumer rejects unless the application (explicit mode) says
// otherwise, then the records after it.
func TestPollReportsCorruptBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		explicit bool
	}{{"implicit", false}, {"explicit", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []Opt
			if tc.explicit {
				opts = append(opts, ExplicitAcknowledgement())
			}
			c := tOffline(t, opts...)
			tHold(c)
			require.NoError(t, c.Subscribe("t"))
			ce := &errors.CorruptBatchError{Topic: "t", Partition: 0, Offsets: []int64{2, 3}, Err: errTruncated}
			tBuffer(c, bufItem{recs: tRecs(0, 1)}, bufItem{corrupt: ce}, bufItem{recs: tRecs(4)})

			recs, err := c.Poll(tCtx(t))
			require.NoError(t, err)
			assert.Equal(t, []int64{0, 1}, offsetsOf(recs), "the records before the batch first")
			if tc.explicit {
				for _, r := range recs {
					require.NoError(t, c.Acknowledge(r, acktype.Accept))
				}
				assert.ErrorIs(t, c.AcknowledgeOffset("t", 0, 1, acktype.Release), errors.ErrCannotAcknowledge, "a record that was returned")
			}
			_, err = c.Poll(tCtx(t))
			require.ErrorIs(t, err, kerr.CorruptMessage)
			var got *errors.CorruptBatchError
			require.ErrorAs(t, err, &got)
			assert.Equal(t, ce, got)
			assert.Contains(t, err.Error(), "offsets 2-3")
			if tc.explicit {
				require.NoError(t, c.AcknowledgeOffset("t", 0, 3, acktype.Release), "the application overrides the reject")
				assert.ErrorIs(t, c.AcknowledgeOffset("t", 0, 9, acktype.Release), errors.ErrCannotAcknowledge)
			} else {
				assert.ErrorIs(t, c.AcknowledgeOffset("t", 0, 3, acktype.Release), errors.ErrImplicitMode)
			}
			// The next Poll is not held up by the batch (its offsets count as acknowledged), and
			// the consumer's reject is kept by implicit acknowledgement.
			recs, err = c.Poll(tCtx(t))
			require.NoError(t, err)
			assert.Equal(t, []int64{4}, offsetsOf(recs))
			want := map[int64]acktype.Type{0: acktype.Accept, 1: acktype.Accept, 2: acktype.Reject, 3: acktype.Reject}
			if tc.explicit {
				want[3] = acktype.Release
			}
			assert.Equal(t, want, tQueued(c))
		})
	}
}

func TestPollDropsExpiredRecords(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tHold(c)
	require.NoError(t, c.Subscribe("t"))
	expired := tRecs(0, 1)
	for _, r := range expired {
		r.LockDeadline = time.Now().Add(-time.Second)
	}
	fresh := tRecs(2)
	fresh[0].LockDeadline = time.Now().Add(time.Hour)
	tBuffer(c, bufItem{recs: expired, lock: lockReport{15000, 1}}, bufItem{recs: fresh, lock: lockReport{15000, 1}})
	recs, err := c.Poll(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []int64{2}, offsetsOf(recs))
	ms, ok := c.AcquisitionLockTimeoutMs()
	assert.True(t, ok)
	assert.EqualValues(t, 15000, ms)
}

func TestUnsubscribeReleasesHeldRecords(t *testing.T) {
	t.Parallel()
	c := tOffline(t, MaxPollRecords(1))
	tHold(c)
	require.NoError(t, c.Subscribe("t"))
	tBuffer(c, bufItem{recs: tRecs(0, 1, 2)})
	recs, err := c.Poll(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, offsetsOf(recs))
	require.NoError(t, c.Unsubscribe())
	pv := c.ledger.pollView()
	n, any := pv.buffered, pv.anyBuffered
	assert.Zero(t, n)
	assert.False(t, any)
	// The held records are released at once; the one Poll returned is the application's.
	assert.Equal(t, map[int64]acktype.Type{1: acktype.Release, 2: acktype.Release}, tQueued(c))
}

// TestCommitSyncAdoptsEarlierAcks checks that CommitSync answers for acknowledgements sent
// before it whose outcome is not in yet: queued behind a request in flight, or on it.
func TestCommitSyncAdoptsEarlierAcks(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tHold(c) // the request in flight never ends
	c.mu.Lock()
	s := c.sessions.get(0)
	s.epoch = 2
	s.enqueue(&ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 0, 1, acktype.Accept)}})
	s.piggyback = &ackJob{kind: jobPiggyback, parts: []*ackPart{tPart(1, 5, 5, acktype.Reject)}}
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := c.CommitSync(ctx)
	require.NoError(t, err)
	require.Len(t, res, 2)
	var ae *errors.AckError
	require.ErrorAs(t, res[TopicPartition{"t", 0}], &ae)
	assert.ErrorIs(t, ae, kerr.RequestTimedOut)
	assert.Equal(t, []int64{0, 1}, ae.Offsets)
	require.ErrorAs(t, res[TopicPartition{"t", 1}], &ae)
	assert.Equal(t, []int64{5}, ae.Offsets)
}

func TestCommitSyncNothingToSend(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	start := time.Now()
	res, err := c.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.NotNil(t, res)
	assert.Empty(t, res)
	assert.Less(t, time.Since(start), time.Second)
}

// Two acknowledgements of Process for one offset are of two deliveries: the earlier delivery's
// lock ran out before its acknowledgement left, and the record was delivered again. Whatever
// order the workers handed them over in, the later delivery's is sent and the earlier one fails
// unsent, reported with INVALID_RECORD_STATE.
func TestTakeAcksKeepsTheLaterDeliverysAcknowledgement(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		name  string
		inbox []inboxAck
	}{
		{"earlier first", []inboxAck{{off: 7, t: acktype.Release, dc: 1}, {off: 8, t: acktype.Accept, dc: 1}, {off: 7, t: acktype.Accept, dc: 2}}},
		{"later first", []inboxAck{{off: 7, t: acktype.Accept, dc: 2}, {off: 8, t: acktype.Accept, dc: 1}, {off: 7, t: acktype.Release, dc: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tOutcomes()
			s := newSession(0, nil)
			part := tHeld(0, 0)
			part.inbox = &s.inbox
			for _, a := range tc.inbox {
				a.part = part
				s.inbox.add(a)
			}
			parts := s.takeAcks(o, now)
			require.Len(t, parts, 1)
			assert.Equal(t, map[int64]acktype.Type{7: acktype.Accept, 8: acktype.Accept}, batchTypes(parts[0].batches))
			require.Len(t, o.completions, 1, "the superseded acknowledgement is reported")
			c := o.completions[0]
			assert.Equal(t, []int64{7}, c.Offsets)
			assert.ErrorIs(t, c.Err, kerr.InvalidRecordState)
			assert.Contains(t, c.Err.Error(), "delivered again")
			assert.Empty(t, s.takeAcks(o, now), "nothing is left behind")
		})
	}
}

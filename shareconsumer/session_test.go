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

// tOffline returns a consumer whose brokers do not exist, for tests that drive its state
// directly; it knows topic "t" (id 1) with partitions 0-3 led by broker 0.
func tOffline(t *testing.T, opts ...Opt) *Consumer {
	t.Helper()
	c, err := New(append([]Opt{ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Group("g"), OnAcknowledgementCommit(func(AcknowledgementCommit) {})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	id := [16]byte{1}
	c.topics[id] = &topicMeta{name: "t", id: id, leaders: map[int32]leaderInfo{0: {0, 1}, 1: {0, 1}, 2: {0, 1}, 3: {0, 1}}}
	c.byName["t"] = id
	return c
}

func tPart(p int32, first, last int64, ty acktype.Type) *ackPart {
	return &ackPart{tp: TopicPartition{"t", p}, id: [16]byte{1}, batches: []acktype.Batch{{FirstOffset: first, LastOffset: last, Types: []acktype.Type{ty}}}}
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
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeLocked(0)
	n.epoch = 3
	ok, retry, missing, moved := tPart(0, 0, 1, acktype.Accept), tPart(1, 5, 5, acktype.Release), tPart(2, 7, 9, acktype.Reject), tPart(3, 2, 2, acktype.Accept)
	w := &commitWait{ctx: context.Background(), results: map[TopicPartition]error{}, done: make(chan struct{})}
	j := &ackJob{kind: jobSync, parts: []*ackPart{ok, retry, missing, moved}, commit: w}
	c.enqueueLocked(n, j)
	n.jobs = nil

	resp := kmsg.NewPtrShareAcknowledgeResponse()
	rt := kmsg.NewShareAcknowledgeResponseTopic()
	rt.TopicID = [16]byte{1}
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
	c.applyAckLocked(n, j, j.parts, req, resp, nil)

	assert.EqualValues(t, 4, n.epoch)
	assert.NoError(t, w.results[TopicPartition{"t", 0}])
	var ae *errors.AckError
	require.ErrorAs(t, w.results[TopicPartition{"t", 2}], &ae)
	assert.ErrorIs(t, ae, kerr.InvalidRecordState)
	assert.Equal(t, "Acknowledgement not successful due to invalid response from broker", ae.Message)
	assert.Equal(t, []int64{7, 8, 9}, ae.Offsets)
	assert.ErrorIs(t, w.results[TopicPartition{"t", 3}], kerr.NotLeaderForPartition, "not retried")
	_, done := w.results[TopicPartition{"t", 1}]
	assert.False(t, done, "a retriable error is retried")
	require.Len(t, n.jobs, 1)
	assert.Equal(t, []*ackPart{retry}, n.jobs[0].parts)
	assert.Equal(t, retryBackoff, n.pause)
	assert.Equal(t, 1, w.remaining)

	// The retry finds the session reset: it fails without being sent.
	n.resetSessionLocked()
	rj := n.jobs[0]
	n.jobs = nil
	assert.Nil(t, c.buildAckLocked(n, rj))
	assert.ErrorIs(t, w.results[TopicPartition{"t", 1}], kerr.NetworkException)
	assert.Equal(t, 0, w.remaining)
	select {
	case <-w.done:
	default:
		t.Fatal("the commit is not done")
	}
	assert.Len(t, c.completions, 4, "one per partition, after retries")
}

func TestApplyAckSessionError(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeLocked(0)
	n.epoch = 5
	n.sessParts = map[tidp]struct{}{{[16]byte{1}, 0}: {}}
	j := &ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 0, 0, acktype.Accept)}}
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.ShareSessionEpoch = 5
	c.applyAckLocked(n, j, j.parts, req, resp, nil)
	assert.EqualValues(t, 0, n.epoch, "the next request opens a new session")
	assert.Nil(t, n.sessParts)
	require.Len(t, c.completions, 1)
	assert.ErrorIs(t, c.completions[0].Err, kerr.NetworkException)
	assert.Contains(t, c.completions[0].Err.Error(), "INVALID_SHARE_SESSION_EPOCH")
}

func TestFetchOnNewSessionFailsAcks(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assigned[TopicPartition{"t", 0}] = &assignedPart{tp: TopicPartition{"t", 0}, id: [16]byte{1}}
	n := c.nodeLocked(0)
	c.pendingLocked(0, TopicPartition{"t", 0}, [16]byte{1}).Add(4, acktype.Accept)
	work := c.buildFetchLocked(n)
	require.NotNil(t, work)
	require.Len(t, c.completions, 1, "acknowledgements never travel on an epoch-0 request")
	assert.ErrorIs(t, c.completions[0].Err, kerr.NetworkException)
	assert.Equal(t, []int64{4}, c.completions[0].Offsets)
	assert.Equal(t, map[tidp]struct{}{{[16]byte{1}, 0}: {}}, n.sessParts)
}

func TestFetchRequestShape(t *testing.T) {
	t.Parallel()
	c := tOffline(t, MaxPollRecords(10), FetchMaxWait(250e6), FetchMinBytes(3), FetchMaxBytes(1000))
	c.mu.Lock()
	defer c.mu.Unlock()
	id := [16]byte{1}
	for _, p := range []int32{0, 1} {
		c.assigned[TopicPartition{"t", p}] = &assignedPart{tp: TopicPartition{"t", p}, id: id}
	}
	n := c.nodeLocked(0)
	n.epoch = 7
	n.sessParts = map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}
	c.pendingLocked(0, TopicPartition{"t", 0}, id).Add(1, acktype.Accept)
	c.pendingLocked(0, TopicPartition{"t", 2}, id).Add(2, acktype.Release)

	req, job, names := c.fetchRequestLocked(n)
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
	assert.Equal(t, c.memberID, *req.MemberID)
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
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 1}: {}}, n.sessParts)
	assert.Empty(t, n.pending, "the acknowledgements were taken")

	// Record-limit mode asks for it. The session keeps its partitions: nothing joins or leaves.
	c.cfg.recordLimit = true
	n.epoch++
	req, _, names = c.fetchRequestLocked(n)
	assert.EqualValues(t, 1, req.ShareAcquireMode)
	assert.Empty(t, req.Topics)
	assert.Empty(t, req.ForgottenTopicsData)
	assert.Equal(t, map[[16]byte]string{id: "t"}, names)
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 1}: {}}, n.sessParts)

	// The next fetch, whose memory the earlier ones used: partition 1 leaves, a topic joins,
	// and the names are only those this fetch asks for.
	other := [16]byte{2}
	c.topics[other] = &topicMeta{name: "u", id: other, leaders: map[int32]leaderInfo{0: {0, 1}}}
	c.byName["u"] = other
	delete(c.assigned, TopicPartition{"t", 1})
	delete(c.assigned, TopicPartition{"t", 0})
	c.assigned[TopicPartition{"u", 0}] = &assignedPart{tp: TopicPartition{"u", 0}, id: other}
	n.epoch++
	req, _, names = c.fetchRequestLocked(n)
	assert.Equal(t, map[[16]byte]string{other: "u"}, names)
	require.Len(t, req.Topics, 1)
	assert.Equal(t, other, req.Topics[0].TopicID)
	assert.Equal(t, []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: []int32{0, 1}}}, req.ForgottenTopicsData)
	assert.Equal(t, map[tidp]struct{}{{other, 0}: {}}, n.sessParts)
}

func TestFetchErrorHintsLeader(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeLocked(0)
	n.epoch = 2
	resp := kmsg.NewPtrShareFetchResponse()
	rt := kmsg.NewShareFetchResponseTopic()
	rt.TopicID = [16]byte{1}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition, rp.ErrorCode = 2, kerr.NotLeaderForPartition.Code
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 4, 9
	rt.Partitions = append(rt.Partitions, rp)
	// A piggybacked acknowledgement the response does not answer.
	lost := tPart(1, 3, 3, acktype.Accept)
	c.applyFetchLocked(n, &ackJob{kind: jobPiggyback, parts: []*ackPart{lost}}, map[[16]byte]string{{1}: "t"}, resp, nil, nil)
	resp.Topics = append(resp.Topics, rt)
	c.applyFetchLocked(n, &ackJob{kind: jobPiggyback}, map[[16]byte]string{{1}: "t"}, resp, nil, nil)
	l, ok := c.leaderLocked(TopicPartition{"t", 2})
	require.True(t, ok)
	assert.EqualValues(t, 4, l)
	assert.EqualValues(t, 4, n.epoch)
	require.Len(t, c.completions, 1)
	assert.ErrorIs(t, c.completions[0].Err, kerr.InvalidRecordState)
	assert.True(t, c.metaRunning, "a metadata refresh follows")
}

// tBuffer puts records and a corrupt batch in c's buffer, as a ShareFetch from broker 0 would.
func tBuffer(c *Consumer, items ...bufItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		it.tp, it.id = TopicPartition{"t", 0}, [16]byte{1}
		c.buffer = append(c.buffer, it)
		c.bufRecords += len(it.recs)
	}
}

// tHold keeps broker 0's requests from being sent: its queue can be looked at.
func tHold(t *testing.T, c *Consumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodeLocked(0).busy = true
	t.Cleanup(func() { // before Close, which sends what is queued
		c.mu.Lock()
		defer c.mu.Unlock()
		c.nodeLocked(0).busy = false
		c.kickLocked()
	})
}

// tQueued returns the acknowledgements queued or waiting for broker 0, by offset.
func tQueued(c *Consumer) map[int64]acktype.Type {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]acktype.Type{}
	add := func(bs []acktype.Batch) {
		for _, b := range bs {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if len(b.Types) == 1 {
					out[o] = b.Types[0]
				} else {
					out[o] = b.Types[o-b.FirstOffset]
				}
			}
		}
	}
	n := c.nodeLocked(0)
	for _, j := range n.jobs {
		for _, p := range j.parts {
			add(p.batches)
		}
	}
	for _, pp := range n.pending {
		acc := pp.acc
		add(acc.Take())
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

func TestPollReportsCorruptBatch(t *testing.T) {
	t.Parallel()
	for _, explicit := range []bool{false, true} {
		var opts []Opt
		if explicit {
			opts = append(opts, ExplicitAcknowledgement())
		}
		c := tOffline(t, opts...)
		tHold(t, c)
		require.NoError(t, c.Subscribe("t"))
		ce := &errors.CorruptBatchError{Topic: "t", Partition: 0, Offsets: []int64{2, 3}, Err: errTruncated}
		tBuffer(c, bufItem{recs: tRecs(0, 1)}, bufItem{corrupt: ce}, bufItem{recs: tRecs(4)})

		recs, err := c.Poll(tCtx(t))
		require.NoError(t, err)
		assert.Equal(t, []int64{0, 1}, offsetsOf(recs), "the records before the batch first")
		if explicit {
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
		if explicit {
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
		if explicit {
			want[3] = acktype.Release
		}
		assert.Equal(t, want, tQueued(c), "explicit=%v", explicit)
	}
}

func TestPollDropsExpiredRecords(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
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
	tHold(t, c)
	require.NoError(t, c.Subscribe("t"))
	tBuffer(c, bufItem{node: 0, recs: tRecs(0, 1, 2)})
	recs, err := c.Poll(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, offsetsOf(recs))
	require.NoError(t, c.Unsubscribe())
	c.mu.Lock()
	assert.Empty(t, c.buffer)
	c.mu.Unlock()
	// The held records are released at once; the one Poll returned is the application's.
	assert.Equal(t, map[int64]acktype.Type{1: acktype.Release, 2: acktype.Release}, tQueued(c))
}

// TestCommitSyncAdoptsEarlierAcks checks that CommitSync answers for acknowledgements sent
// before it whose outcome is not in yet: queued behind a request in flight, or on it.
func TestCommitSyncAdoptsEarlierAcks(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tHold(t, c) // the request in flight never ends
	c.mu.Lock()
	n := c.nodeLocked(0)
	n.epoch = 2
	c.enqueueLocked(n, &ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 0, 1, acktype.Accept)}})
	n.piggyback = &ackJob{kind: jobPiggyback, parts: []*ackPart{tPart(1, 5, 5, acktype.Reject)}}
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

	c.mu.Lock()
	n.epoch, n.jobs, n.piggyback = 0, nil, nil // nothing to send at Close
	c.mu.Unlock()
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

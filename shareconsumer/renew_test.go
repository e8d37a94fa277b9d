package shareconsumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
	"github.com/kshare/kshare/testbroker"
)

// tRenewGate checks the up-front version gate: RENEW fails at once with
// ErrUnsupportedAcknowledgeType and records nothing (the record is still unacknowledged, so an
// explicit-mode Poll refuses to go on), while accept, release and reject still work.
func tRenewGate(t *testing.T, c *testbroker.Cluster, cons *Consumer, wantInMsg string) {
	t.Helper()
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b", "c"})
	recs := tPollN(t, cons, 3)
	for _, r := range recs {
		err := cons.Acknowledge(r, acktype.Renew)
		require.ErrorIs(t, err, errors.ErrUnsupportedAcknowledgeType, "offset %d", r.Offset)
		assert.Contains(t, err.Error(), wantInMsg)
	}
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords, "the refused renews recorded nothing")
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))
	require.NoError(t, cons.Acknowledge(recs[1], acktype.Release))
	require.NoError(t, cons.Acknowledge(recs[2], acktype.Reject))
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, map[TopicPartition]error{{"t", 0}: nil}, res)
	assert.Equal(t, map[int64]testbroker.ShareRecordState{0: testbroker.ShareAcknowledged, 1: testbroker.ShareAvailable, 2: testbroker.ShareArchived}, states(c, "g", "t", 0))
}

// TestRenewRefusedByKafka41Leader runs against a cluster that speaks ShareFetch and
// ShareAcknowledge v1 only, as Kafka 4.1 does.
func TestRenewRefusedByKafka41Leader(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.Kafka41())
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	tRenewGate(t, c, cons, "supports ShareFetch v1 and ShareAcknowledge v1")
}

// TestRenewRefusedByClientCap caps the client at ShareAcknowledge v1 with kgo.MaxVersions, on
// a broker that takes v2: what the client will send decides.
func TestRenewRefusedByClientCap(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.ShareAcknowledge.Int16(), 1)
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement(), ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.MaxVersions(v)))
	tRenewGate(t, c, cons, "ShareAcknowledge v1")
}

// tVersionsOf returns the versions of a broker that takes ShareFetch and ShareAcknowledge up to
// version max.
func tVersionsOf(t *testing.T, max int16) apiversions.Versions {
	t.Helper()
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Int16(), MinVersion: 1, MaxVersion: max})
	}
	v, err := apiversions.FromResponse(resp)
	require.NoError(t, err)
	return v
}

// tVersions records that node takes ShareFetch and ShareAcknowledge up to version max.
func tVersions(t *testing.T, c *Consumer, node int32, max int16) {
	t.Helper()
	c.versions.Set(node, tVersionsOf(t, max))
}

// tAcked hands recs out to a Poll from part, has the application acknowledge each with the
// type acks gives its offset, and takes the acknowledgements for sending, as the next Poll or
// commit does: renews go to the ledger's renew buffer and count in their session's renews.
// Consumer.mu is held.
func tAcked(t *testing.T, c *Consumer, part *heldPart, acks map[int64]acktype.Type) {
	t.Helper()
	c.ledger.mu.Lock()
	for off := range acks {
		c.ledger.polled.add(part, off, &Record{Topic: part.tp.Topic, Partition: part.tp.Partition, Offset: off, DeliveryCount: 1}, false, 0)
	}
	c.ledger.mu.Unlock()
	for off, ty := range acks {
		held, err := c.ledger.acknowledge(part.tp, off, ty, false, nil)
		require.True(t, held)
		require.NoError(t, err)
	}
	c.ledger.moveAcked(&c.sessions)
}

// tRenewState returns where the renew of tp/off is in the ledger's renew buffer (0: not held).
func tRenewState(c *Consumer, tp TopicPartition, off int64) renewbuffer.State {
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	_, s, _, _ := c.ledger.renews.Get(renewKey(tp, off))
	return s
}

func tRenewsHeld(c *Consumer) int {
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	return c.ledger.renews.Len()
}

// TestRenewFetchShape checks the ShareFetch that carries renews: IsRenewAck, every limit 0,
// and only the partitions with acknowledgements (the session's other changes wait).
func TestRenewFetchShape(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tVersions(t, c, 0, 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := tTopic
	tp := TopicPartition{"t", 0}
	s := c.sessions.get(0)
	s.epoch = 3
	s.parts = map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}
	tAcked(t, c, c.ledger.part(tp, id, s), map[int64]acktype.Type{4: acktype.Accept, 5: acktype.Renew})
	require.Equal(t, 1, s.queuedRenews)
	require.Equal(t, renewbuffer.Queued, tRenewState(c, tp, 5))

	rp := c.requestParamsLocked(s)
	rp.maxWait, rp.minBytes, rp.maxBytes, rp.maxRecords = 250, 1, 1000, 10
	req, job, _ := s.fetchRequest(tWant(id, "t", 0, 1), rp, &c.acks, time.Now())
	assert.True(t, req.IsRenewAck)
	assert.True(t, job.renewFetch)
	assert.Zero(t, req.MaxWaitMillis)
	assert.Zero(t, req.MinBytes)
	assert.Zero(t, req.MaxBytes)
	assert.Zero(t, req.MaxRecords)
	assert.Zero(t, req.BatchSize)
	require.Len(t, req.Topics, 1)
	require.Len(t, req.Topics[0].Partitions, 1, "partition 1 joins with the next fetch")
	assert.Equal(t, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 4, LastOffset: 5, AcknowledgeTypes: []int8{1, 4}}},
		req.Topics[0].Partitions[0].AcknowledgementBatches)
	assert.Empty(t, req.ForgottenTopicsData, "partition 3 leaves with the next fetch")
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}, s.parts)
	assert.Equal(t, renewbuffer.Sent, tRenewState(c, tp, 5))
	assert.Zero(t, s.queuedRenews)
}

// TestRenewStrippedWhenLeaderLostSupport sends the acknowledgements of a part that renews
// to a broker found, since Acknowledge, not to take RENEW: the renew fails with
// UNSUPPORTED_VERSION without being sent, and the accept of the same partition still goes.
func TestRenewStrippedWhenLeaderLostSupport(t *testing.T) {
	t.Parallel()
	var got []AcknowledgementCommit
	c := tOffline(t, OnAcknowledgementCommit(func(ac AcknowledgementCommit) { got = append(got, ac) }))
	tVersions(t, c, 0, 1)

	c.mu.Lock()
	id := tTopic
	tp := TopicPartition{"t", 0}
	s := c.sessions.get(0)
	s.epoch = 3
	tAcked(t, c, c.ledger.part(tp, id, s), map[int64]acktype.Type{4: acktype.Accept, 5: acktype.Renew})
	rp := c.requestParamsLocked(s)
	rp.maxRecords = 500
	req, job, _ := s.fetchRequest(tWant(id, "t", 0), rp, &c.acks, time.Now())
	c.mu.Unlock()

	assert.False(t, req.IsRenewAck)
	assert.NotZero(t, req.MaxRecords, "an ordinary fetch")
	require.Len(t, job.parts, 1)
	assert.Equal(t, []acktype.Batch{{FirstOffset: 4, LastOffset: 4, Types: []acktype.Type{acktype.Accept}}}, job.parts[0].batches)
	c.runCallbacks()
	require.Len(t, got, 1)
	assert.Equal(t, []int64{5}, got[0].Offsets)
	assert.ErrorIs(t, got[0].Err, kerr.UnsupportedVersion)
	assert.Zero(t, tRenewsHeld(c), "the renewed record is dropped")
}

// TestRenewedRecordsDroppedOnLeaderMove drops the renewed records of a partition whose leader
// moved to another broker, and keeps those of other partitions.
func TestRenewedRecordsDroppedOnLeaderMove(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := tTopic
	s := c.sessions.get(0)
	for p := range int32(2) {
		tp := TopicPartition{"t", p}
		part := c.ledger.part(tp, id, s)
		c.ledger.mu.Lock()
		c.ledger.renews.Add(renewKey(tp, 1), &renewEntry{rec: &Record{Topic: "t", Partition: p, Offset: 1}, part: part})
		c.ledger.mu.Unlock()
	}
	// A ShareFetch answer refuses partition 0, naming its leader.
	notLeader := func(leader, epoch int32) {
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = 0, kerr.NotLeaderForPartition.Code
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
		c.fetchErrorLocked(s, id, TopicPartition{"t", 0}, &rp)
	}
	notLeader(0, 2)
	assert.Equal(t, 2, tRenewsHeld(c), "same leader, newer epoch: the locks stay")
	notLeader(1, 3)
	assert.Equal(t, 1, tRenewsHeld(c))
	assert.Equal(t, renewbuffer.Queued, tRenewState(c, TopicPartition{"t", 1}, 1))
}

// TestRedeliveryReplacesRenewedRecord has a ShareFetch deliver an offset the consumer holds as
// renewed (its lock was lost meanwhile): the fresh delivery replaces the held record, and the
// late answer to the renew changes nothing.
func TestRedeliveryReplacesRenewedRecord(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tVersions(t, c, 0, 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := tTopic
	tp := TopicPartition{"t", 0}
	s := c.sessions.get(0)
	s.epoch = 2
	tAcked(t, c, c.ledger.part(tp, id, s), map[int64]acktype.Type{7: acktype.Renew})
	_, renewJob, names := s.fetchRequest(tWant(id, "t", 0), c.requestParamsLocked(s), &c.acks, time.Now())
	require.True(t, renewJob.renewFetch)

	fresh := &Record{Topic: "t", Partition: 0, Offset: 7, DeliveryCount: 2}
	resp := kmsg.NewPtrShareFetchResponse()
	rt := kmsg.NewShareFetchResponseTopic()
	rt.TopicID = id
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 7, LastOffset: 7, DeliveryCount: 2}}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	decoded := map[tidp]decodedPart{{id, 0}: {chunks: []chunk{{recs: []*Record{fresh}}}}}
	now := time.Now()
	c.applyFetchLocked(s, &ackJob{kind: jobPiggyback}, names, resp, nil, decoded, now, now)
	assert.Zero(t, tRenewsHeld(c), "the held record gave way to the new delivery")
	c.ledger.mu.Lock()
	require.Len(t, c.ledger.buffer, 1)
	assert.Same(t, fresh, c.ledger.buffer[0].recs[0])
	c.ledger.mu.Unlock()

	// The renew's answer: partition 0's renew succeeded.
	renewResp := kmsg.NewPtrShareFetchResponse()
	rt = kmsg.NewShareFetchResponseTopic()
	rt.TopicID = id
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchResponseTopicPartition())
	renewResp.Topics = append(renewResp.Topics, rt)
	c.applyFetchLocked(s, renewJob, names, renewResp, nil, nil, now, now)
	assert.Zero(t, tRenewsHeld(c), "the late answer to the renew changes nothing")
	recs, _, _, _, _ := c.ledger.take(now, 10)
	require.Len(t, recs, 1, "the fresh delivery only")
	assert.Same(t, fresh, recs[0])
}

// TestUnsubscribeReleasesRenewedRecords releases the renewed records waiting for a Poll when
// the consumer unsubscribes, as it releases the other records it holds.
func TestUnsubscribeReleasesRenewedRecords(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 1)
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Renew))
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	require.NoError(t, res[TopicPartition{"t", 0}])
	require.NoError(t, cons.Unsubscribe())
	require.Eventually(t, func() bool {
		r, ok := c.ShareRecord("g", "t", 0, 0)
		return ok && r.State == testbroker.ShareAvailable
	}, 10*time.Second, time.Millisecond)
}

// TestRenewAfterPartitionRevoked renews records of a partition the group has since assigned to
// another member: the records are still this consumer's, the renews succeed, the records come
// back, and the final acceptance goes through; the other member never gets them.
func TestRenewAfterPartitionRevoked(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 2))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	tProduce(t, c, "t", 1, []string{"b"})
	a := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, a, 2)

	b := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.member.assigned) == 1
	}, 10*time.Second, time.Millisecond, "a loses a partition to b")
	for _, r := range recs {
		require.NoError(t, a.Acknowledge(r, acktype.Renew))
	}
	got := tPollN(t, a, 2)
	assert.ElementsMatch(t, recs, got, "both come back, the revoked partition's too")
	for _, r := range got {
		require.NoError(t, a.Acknowledge(r, acktype.Accept))
	}
	res, err := a.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, map[TopicPartition]error{{"t", 0}: nil, {"t", 1}: nil}, res)
	for p := range int32(2) {
		start, _, ok := c.SharePartitionOffsets("g", "t", p)
		require.True(t, ok)
		assert.EqualValues(t, 1, start, "partition %d", p)
	}
	recsB, err := b.Poll(ctxWithTimeout(tCtx(t), 200*time.Millisecond))
	assert.Empty(t, recsB)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestUnsubscribeReleasesRenewsInFlight unsubscribes while a renew is recorded but not sent:
// the renew goes with the commit, and once answered the record is released, not held for a
// Poll that can no longer return it.
func TestUnsubscribeReleasesRenewsInFlight(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 1)
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Renew))
	require.NoError(t, cons.Unsubscribe())
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	require.NoError(t, res[TopicPartition{"t", 0}])
	require.Eventually(t, func() bool {
		r, ok := c.ShareRecord("g", "t", 0, 0)
		return ok && r.State == testbroker.ShareAvailable
	}, 10*time.Second, time.Millisecond, "released")
	assert.Zero(t, tRenewsHeld(cons))
}

// TestRenewAckWaitsForStaleVersions queues a ShareAcknowledge carrying a renew for a broker
// kgo has reconnected to: its ApiVersions are read again before the renew is sent.
func TestRenewAckWaitsForStaleVersions(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tVersions(t, c, 0, 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions.get(0)
	s.epoch, s.versionsStale = 2, true
	j := &ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 1, 1, acktype.Renew)}}
	j.parts[0].renews = true
	s.jobs = append(s.jobs, j)
	work := c.nextWorkLocked(s)
	require.NotNil(t, work)
	assert.False(t, s.versionsStale)
	assert.Equal(t, []*ackJob{j}, s.jobs, "the job waits for the versions")
}

// TestAcquisitionLockTimeoutFromAcknowledge changes the lock duration and commits plain
// acknowledgements: the value the ShareAcknowledge answer carries shows from the next Poll.
func TestAcquisitionLockTimeoutFromAcknowledge(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"))
	tEarliest(t, c, "g")
	tGroupConfig(t, c, "g", "share.record.lock.duration.ms", "15000")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 1)
	ms, _ := cons.AcquisitionLockTimeoutMs()
	require.EqualValues(t, 15000, ms)
	tGroupConfig(t, c, "g", "share.record.lock.duration.ms", "20000")
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	require.NoError(t, res[TopicPartition{"t", 0}])
	ms, _ = cons.AcquisitionLockTimeoutMs()
	assert.EqualValues(t, 15000, ms, "until the next Poll")
	_, err = cons.Poll(ctxWithTimeout(tCtx(t), 50*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	ms, _ = cons.AcquisitionLockTimeoutMs()
	assert.EqualValues(t, 20000, ms)
}

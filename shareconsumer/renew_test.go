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

// tVersions records that node takes ShareFetch and ShareAcknowledge up to version max.
func tVersions(t *testing.T, c *Consumer, node int32, max int16) {
	t.Helper()
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Int16(), MinVersion: 1, MaxVersion: max})
	}
	v, err := apiversions.FromResponse(resp)
	require.NoError(t, err)
	c.versions.Set(node, v)
}

// TestRenewFetchShape checks the ShareFetch that carries renews: IsRenewAck, every limit 0,
// and only the partitions with acknowledgements (the session's other changes wait).
func TestRenewFetchShape(t *testing.T) {
	t.Parallel()
	c := tOffline(t, MaxPollRecords(10), FetchMaxWait(250e6))
	tVersions(t, c, 0, 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := [16]byte{1}
	for _, p := range []int32{0, 1} {
		c.assigned[TopicPartition{"t", p}] = &assignedPart{tp: TopicPartition{"t", p}, id: id}
	}
	n := c.nodeLocked(0)
	n.epoch = 3
	n.sessParts = map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}
	tp := TopicPartition{"t", 0}
	c.holdRenewLocked(tp, id, curRec{off: 5, rec: &Record{Topic: "t", Partition: 0, Offset: 5}, node: 0})
	c.pendingLocked(0, tp, id).Add(4, acktype.Accept)
	c.pendingLocked(0, tp, id).Add(5, acktype.Renew)

	req, job, _ := c.fetchRequestLocked(n)
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
	assert.Equal(t, map[tidp]struct{}{{id, 0}: {}, {id, 3}: {}}, n.sessParts)
	_, s, _, ok := c.renews.Get(renewKey(tp, 5))
	require.True(t, ok)
	assert.Equal(t, renewbuffer.Sent, s)
	assert.Zero(t, n.queuedRenews)
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
	id := [16]byte{1}
	n := c.nodeLocked(0)
	n.epoch = 3
	tp := TopicPartition{"t", 0}
	c.holdRenewLocked(tp, id, curRec{off: 5, rec: &Record{Topic: "t", Partition: 0, Offset: 5}, node: 0})
	c.pendingLocked(0, tp, id).Add(4, acktype.Accept)
	c.pendingLocked(0, tp, id).Add(5, acktype.Renew)
	req, job, _ := c.fetchRequestLocked(n)
	c.mu.Unlock()

	assert.False(t, req.IsRenewAck)
	assert.NotZero(t, req.MaxRecords, "an ordinary fetch")
	require.Len(t, job.parts, 1)
	assert.Equal(t, []acktype.Batch{{FirstOffset: 4, LastOffset: 4, Types: []acktype.Type{acktype.Accept}}}, job.parts[0].batches)
	c.runCallbacks()
	require.Len(t, got, 1)
	assert.Equal(t, []int64{5}, got[0].Offsets)
	assert.ErrorIs(t, got[0].Err, kerr.UnsupportedVersion)
	assert.Zero(t, c.renews.Len(), "the renewed record is dropped")
}

// TestRenewedRecordsDroppedOnLeaderMove drops the renewed records of a partition whose leader
// moved to another broker, and keeps those of other partitions.
func TestRenewedRecordsDroppedOnLeaderMove(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := [16]byte{1}
	for p := range int32(2) {
		tp := TopicPartition{"t", p}
		c.holdRenewLocked(tp, id, curRec{off: 1, rec: &Record{Topic: "t", Partition: p, Offset: 1}, node: 0})
	}
	c.leaderHintLocked(id, 0, 0, 2)
	assert.Equal(t, 2, c.renews.Len(), "same leader, newer epoch: the locks stay")
	c.leaderHintLocked(id, 0, 1, 3)
	assert.Equal(t, 1, c.renews.Len())
	_, _, _, ok := c.renews.Get(renewKey(TopicPartition{"t", 1}, 1))
	assert.True(t, ok)
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
	id := [16]byte{1}
	tp := TopicPartition{"t", 0}
	n := c.nodeLocked(0)
	n.epoch = 2
	c.holdRenewLocked(tp, id, curRec{off: 7, rec: &Record{Topic: "t", Partition: 0, Offset: 7}, node: 0})
	c.pendingLocked(0, tp, id).Add(7, acktype.Renew)
	_, renewJob, _ := c.fetchRequestLocked(n)
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
	c.applyFetchLocked(n, &ackJob{kind: jobPiggyback}, map[[16]byte]string{id: "t"}, resp, nil, decoded)
	assert.Zero(t, c.renews.Len(), "the held record gave way to the new delivery")
	require.Len(t, c.buffer, 1)
	assert.Same(t, fresh, c.buffer[0].recs[0])

	c.finishPartLocked(renewJob, renewJob.parts[0], nil)
	assert.Zero(t, c.renews.Len(), "the late answer to the renew changes nothing")
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
		return len(a.assigned) == 1
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
	cons.mu.Lock()
	defer cons.mu.Unlock()
	assert.Zero(t, cons.renews.Len())
}

// TestFreshDeliveryWinsOverRenewedRecord holds a renewed record whose offset a later fetch
// delivered again: the Poll returns the fresh delivery only, once.
func TestFreshDeliveryWinsOverRenewedRecord(t *testing.T) {
	t.Parallel()
	c := tOffline(t, ExplicitAcknowledgement())
	c.mu.Lock()
	defer c.mu.Unlock()
	id := [16]byte{1}
	tp := TopicPartition{"t", 0}
	old := &Record{Topic: "t", Partition: 0, Offset: 7, DeliveryCount: 1}
	c.holdRenewLocked(tp, id, curRec{off: 7, rec: old, node: 0})
	tk, ok := c.renews.MarkSent(renewKey(tp, 7), time.Now())
	require.True(t, ok)
	require.True(t, c.renews.Complete(renewKey(tp, 7), tk, time.Minute))
	fresh := &Record{Topic: "t", Partition: 0, Offset: 7, DeliveryCount: 2}
	c.buffer = append(c.buffer, bufItem{tp: tp, id: id, recs: []*Record{fresh}})
	c.bufRecords = 1

	got, err := c.drainLocked()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Same(t, fresh, got[0])
}

// TestRenewAckWaitsForStaleVersions queues a ShareAcknowledge carrying a renew for a broker
// kgo has reconnected to: its ApiVersions are read again before the renew is sent.
func TestRenewAckWaitsForStaleVersions(t *testing.T) {
	t.Parallel()
	c := tOffline(t)
	tVersions(t, c, 0, 2)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeLocked(0)
	n.epoch, n.versionsStale = 2, true
	j := &ackJob{kind: jobAsync, parts: []*ackPart{tPart(0, 1, 1, acktype.Renew)}}
	j.parts[0].renews = true
	n.jobs = append(n.jobs, j)
	work := c.nextWorkLocked(n)
	require.NotNil(t, work)
	assert.False(t, n.versionsStale)
	assert.Equal(t, []*ackJob{j}, n.jobs, "the job waits for the versions")
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

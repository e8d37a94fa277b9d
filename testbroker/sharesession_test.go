package testbroker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// sessionEpochs returns each member's session epoch on broker 0.
func sessionEpochs(c *testbroker.Cluster) map[string]int32 {
	out := map[string]int32{}
	for _, s := range c.ShareSessions(0) {
		out[s.Member] = s.Epoch
	}
	return out
}

// TestShareSessionEpochs runs the ShareFetch session rules: epoch 0 opens a session at epoch 1,
// each fetch must carry the session's epoch and moves it on, a missing session or a wrong
// epoch fails the request as a whole, and epoch 0 with acknowledgements is refused.
func TestShareSessionEpochs(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	fetch := func(member string, epoch int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		return request[*kmsg.ShareFetchResponse](t, st.rc, withShareFetchPartition(shareFetchRequest(2, "g", member, epoch), st.tid, 0, acks...))
	}

	assert.Equal(t, kerr.ShareSessionNotFound.Code, fetch("m", 1).ErrorCode, "no session yet")
	assert.Equal(t, kerr.ShareSessionNotFound.Code, fetch("m", -1).ErrorCode, "no session to close")
	resp := fetch("m", 0, fetchAck(0, 0, ackAccept))
	assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, "acknowledgements need a session")
	assert.Nil(t, resp.ErrorMessage)
	assert.Empty(t, st.c.ShareSessions(0))

	require.Zero(t, fetch("m", 0).ErrorCode)
	assert.Equal(t, map[string]int32{"m": 1}, sessionEpochs(st.c))
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, fetch("m", 2).ErrorCode)
	require.Zero(t, fetch("m", 1).ErrorCode)
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, fetch("m", 1).ErrorCode, "an epoch is used once")
	require.Zero(t, fetch("m", 2).ErrorCode)
	assert.Equal(t, map[string]int32{"m": 3}, sessionEpochs(st.c))

	require.Zero(t, fetch("m", 0).ErrorCode, "epoch 0 starts over")
	assert.Equal(t, map[string]int32{"m": 1}, sessionEpochs(st.c))
	require.Zero(t, fetch("other", 0).ErrorCode)
	assert.Equal(t, map[string]int32{"m": 1, "other": 1}, sessionEpochs(st.c), "sessions are per member")
}

// TestShareSessionReopenKeepsRecords reopens a session with epoch 0: the old session goes, but
// the records it acquired stay with the member until their lock expires.
func TestShareSessionReopenKeepsRecords(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a")
	m.take(t)

	m.open(t)
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcquired, r.State)
	assert.Equal(t, "m", r.Member)
	p := m.take(t, fetchAck(0, 0, ackAccept))
	assert.Zero(t, p.AcknowledgeErrorCode, "the new session may acknowledge them")
}

// TestShareSessionFinalFetch closes a session with a ShareFetch of epoch -1: it applies its
// acknowledgements, fetches nothing, and releases the member's other records with their delivery
// count unchanged; a new session acquires them again as their second delivery.
func TestShareSessionFinalFetch(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b", "c")
	require.Equal(t, [][3]int64{{0, 2, 1}}, acquired(m.take(t)))
	st.produce(t, "d")

	m.epoch = -1
	resp := m.fetch(t, m.fetchReq(fetchAck(0, 0, ackAccept)))
	require.Zero(t, resp.ErrorCode)
	p := onlySharePartition(t, resp)
	assert.Zero(t, p.AcknowledgeErrorCode)
	assert.Empty(t, p.AcquiredRecords, "a final fetch fetches nothing")
	assert.Equal(t, int32(30000), resp.AcquisitionLockTimeoutMillis)
	assert.Empty(t, st.c.ShareSessions(0))
	for _, r := range st.c.ShareRecords("g", "t", 0)[1:] {
		assert.Equal(t, testbroker.ShareAvailable, r.State, "offset %d", r.Offset)
		assert.Equal(t, int16(1), r.DeliveryCount, "offset %d", r.Offset)
	}
	assert.Zero(t, st.clk.Pending(), "the released records' lock is stopped")

	resp = m.fetch(t, m.fetchReq())
	assert.Equal(t, kerr.ShareSessionNotFound.Code, resp.ErrorCode, "the session is gone")

	m.epoch = 0
	assert.Equal(t, [][3]int64{{1, 2, 2}, {3, 3, 1}}, acquired(m.take(t)))
}

// TestShareSessionLimit fills the broker's share session cache (group.share.max.share.sessions
// 1): another member's new session is refused with SHARE_SESSION_LIMIT_REACHED, sent only once
// MaxWaitMs has passed on the cluster clock; the member holding the session may reopen it.
func TestShareSessionLimit(t *testing.T) {
	t.Parallel()
	st := startShareTest(t,
		testbroker.BrokerConfig("group.share.max.share.sessions", "1"),
		testbroker.BrokerConfig("group.share.max.size", "1"))
	a, b := st.member(t, "a", 2), st.member(t, "b", 2)
	a.open(t)

	req := b.fetchReq()
	req.MaxWaitMillis = 2000
	got := startShareFetch(t, b.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 1))
	st.clk.Advance(1999 * time.Millisecond)
	requireNoResponse(t, got)
	st.clk.Advance(time.Millisecond)
	resp := awaitShareFetch(t, got)
	assert.Equal(t, kerr.ShareSessionLimitReached.Code, resp.ErrorCode)
	assert.Empty(t, resp.Topics)
	assert.Zero(t, resp.AcquisitionLockTimeoutMillis)

	req.MaxWaitMillis = 0
	assert.Equal(t, kerr.ShareSessionLimitReached.Code, b.fetch(t, req).ErrorCode, "no wait without MaxWaitMs")
	a.open(t)
	assert.Equal(t, map[string]int32{"a": 1}, sessionEpochs(st.c))
}

// TestShareSessionConnectionDrop closes a member's connection: its session is evicted and its
// records become available again, as with Kafka's disconnect listener.
func TestShareSessionConnectionDrop(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b")
	m.take(t)
	require.NoError(t, m.rc.nc.Close())

	require.Eventually(t, func() bool {
		r, _ := st.c.ShareRecord("g", "t", 0, 0)
		return r.State == testbroker.ShareAvailable
	}, 10*time.Second, time.Millisecond)
	assert.Empty(t, st.c.ShareSessions(0))
	for _, r := range st.c.ShareRecords("g", "t", 0) {
		assert.Equal(t, testbroker.ShareAvailable, r.State)
		assert.Equal(t, int16(1), r.DeliveryCount)
	}
}

// TestShareSessionConnectionDropWhileWaiting closes the connection of a member whose ShareFetch
// is waiting for records: the broker notices at once, not when the wait ends, and releases the
// member's records.
func TestShareSessionConnectionDropWhileWaiting(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a")
	m.take(t)

	req := m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 60000, 1
	startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 2), "the lock and the wait")
	require.NoError(t, m.rc.nc.Close())

	require.Eventually(t, func() bool { return len(st.c.ShareSessions(0)) == 0 }, 10*time.Second, time.Millisecond)
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAvailable, r.State)
	assert.Zero(t, st.clk.Pending(), "the wait's timer and the lock are stopped")
}

// TestShareSessionDropSparesOtherConnections opens sessions of members x and m on one
// connection and reopens m's on another; closing the first connection evicts x's session but
// leaves m's new one alone.
func TestShareSessionDropSparesOtherConnections(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	x := st.member(t, "x", 2)
	first := &shareMember{rc: x.rc, group: "g", id: "m", version: 2, tid: st.tid}
	second := st.member(t, "m", 2)
	x.open(t)
	first.open(t)
	second.open(t)
	st.produce(t, "a")
	second.take(t)
	require.NoError(t, x.rc.nc.Close())

	require.Eventually(t, func() bool { return len(st.c.ShareSessions(0)) == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, map[string]int32{"m": 2}, sessionEpochs(st.c))
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcquired, r.State)
}

// TestShareSessionForgottenPartitionKeepsRecords forgets a partition whose records the member
// holds, as a consumer does when the partition is assigned to another member, and as Kafka
// does (ShareSession.update drops it from the session; releaseSession releases only the
// session's partitions): the records stay the member's, another member acquires none of them,
// closing the session releases none, and only the lock's expiry makes them available, to the
// other member as their second delivery. The first member's acceptance then fails.
func TestShareSessionForgottenPartitionKeepsRecords(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	a, b := st.member(t, "a", 2), st.member(t, "b", 2)
	a.open(t)
	st.produce(t, "x", "y")
	require.Equal(t, [][3]int64{{0, 1, 1}}, acquired(a.take(t)))

	req := shareFetchRequest(2, "g", "a", a.epoch)
	req.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: st.tid, Partitions: []int32{0}}}
	require.Zero(t, a.fetch(t, req).ErrorCode)
	require.Len(t, st.c.ShareSessions(0), 1)
	assert.Empty(t, st.c.ShareSessions(0)[0].Partitions, "t/0 left a's session")
	holder := func() []string {
		var out []string
		for _, r := range st.c.ShareRecords("g", "t", 0) {
			out = append(out, r.State.String()+" "+r.Member)
		}
		return out
	}
	assert.Equal(t, []string{"ACQUIRED a", "ACQUIRED a"}, holder(), "forgetting releases nothing")

	resp := b.fetch(t, b.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, acquired(onlySharePartition(t, resp)), "a holds every record")

	a.epoch = -1
	require.Zero(t, a.fetch(t, shareFetchRequest(2, "g", "a", -1)).ErrorCode)
	assert.Equal(t, []string{"ACQUIRED a", "ACQUIRED a"}, holder(), "a's closed session had no partitions to release")

	st.clk.Advance(30 * time.Second)
	assert.Equal(t, [][3]int64{{0, 1, 2}}, acquired(b.take(t)))
	assert.Equal(t, []string{"ACQUIRED b", "ACQUIRED b"}, holder())

	a.open(t)
	req = a.fetchReq(fetchAck(0, 1, ackAccept))
	req.MaxRecords = 0
	p := onlySharePartition(t, a.fetch(t, req))
	assert.Equal(t, kerr.InvalidRecordState.Code, p.AcknowledgeErrorCode)
	assert.Equal(t, "Member is not the owner of batch record", deref(p.AcknowledgeErrorMessage))
}

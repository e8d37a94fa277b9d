package testbroker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

func shareAcknowledgeRequest(version int16, group, member string, epoch int32) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = version
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch = epoch
	return req
}

func withShareAckPartition(req *kmsg.ShareAcknowledgeRequest, tid [16]byte, partition int32, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeRequest {
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	p.Partition, p.AcknowledgementBatches = partition, batches
	for i := range req.Topics {
		if req.Topics[i].TopicID == tid {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
			return req
		}
	}
	req.Topics = append(req.Topics, kmsg.ShareAcknowledgeRequestTopic{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{p}})
	return req
}

func ack(first, last int64, types ...int8) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}
}

// onlyAckPartition returns the single partition of a ShareAcknowledge response.
func onlyAckPartition(t *testing.T, resp *kmsg.ShareAcknowledgeResponse) kmsg.ShareAcknowledgeResponseTopicPartition {
	t.Helper()
	require.Zero(t, resp.ErrorCode, "%v", kerr.ErrorForCode(resp.ErrorCode))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestShareAcknowledgeRequestValidation checks the group and member id rules, with Kafka's
// messages, and the session rules of ShareAcknowledge.
func TestShareAcknowledgeRequestValidation(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	str := func(s string) *string { return &s }

	tests := []struct {
		name    string
		mutate  func(*kmsg.ShareAcknowledgeRequest)
		code    *kerr.Error
		message string
	}{
		{"null group", func(r *kmsg.ShareAcknowledgeRequest) { r.GroupID, r.MemberID = nil, nil }, kerr.InvalidRequest, "Invalid group id in the request."},
		{"null member", func(r *kmsg.ShareAcknowledgeRequest) { r.MemberID = nil }, kerr.InvalidRequest, "Invalid member id in the request."},
		{"empty member", func(r *kmsg.ShareAcknowledgeRequest) { r.MemberID = str("") }, kerr.InvalidRequest, "Invalid member id in the request."},
		{"long member", func(r *kmsg.ShareAcknowledgeRequest) { r.MemberID = str(strings.Repeat("x", 37)) }, kerr.InvalidRequest, "Invalid member id in the request."},
		{"epoch 0", func(r *kmsg.ShareAcknowledgeRequest) { r.ShareSessionEpoch = 0 }, kerr.InvalidShareSessionEpoch, ""},
		{"wrong epoch", func(r *kmsg.ShareAcknowledgeRequest) { r.ShareSessionEpoch = 7 }, kerr.InvalidShareSessionEpoch, ""},
		{"no session", func(r *kmsg.ShareAcknowledgeRequest) { r.MemberID = str("other") }, kerr.ShareSessionNotFound, ""},
		{"no session to close", func(r *kmsg.ShareAcknowledgeRequest) { r.MemberID, r.ShareSessionEpoch = str("other"), -1 }, kerr.ShareSessionNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := withShareAckPartition(shareAcknowledgeRequest(2, "g", "m", m.epoch), st.tid, 0, ack(0, 0, ackAccept))
			tt.mutate(req)
			resp := request[*kmsg.ShareAcknowledgeResponse](t, st.rc, req)
			assert.Equal(t, tt.code.Code, resp.ErrorCode)
			assert.Equal(t, tt.message, deref(resp.ErrorMessage))
			assert.Zero(t, resp.AcquisitionLockTimeoutMillis)
			assert.Empty(t, resp.Topics)
		})
	}
	sessions := st.c.ShareSessions(0)
	require.Len(t, sessions, 1)
	assert.Equal(t, int32(1), sessions[0].Epoch, "no refused request moved the epoch")
}

// TestShareAcknowledge acknowledges records fetched earlier: each request moves the session
// epoch on, a partition without batches succeeds only beside one with batches, and version 2
// carries the lock timeout.
func TestShareAcknowledge(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.Topic("u", 1))
	uid := topicIDOf(t, st.c, "u")
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b", "c")
	m.take(t)

	p := onlyAckPartition(t, m.acknowledge(t, false, ack(0, 0, ackAccept)))
	assert.Zero(t, p.ErrorCode)
	assert.Equal(t, int32(3), m.epoch)
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcknowledged, r.State)

	req := withShareAckPartition(shareAcknowledgeRequest(2, "g", "m", m.epoch), uid, 0)
	resp := request[*kmsg.ShareAcknowledgeResponse](t, m.rc, req)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Topics, "no batches anywhere: nothing to report")
	assert.Equal(t, int32(30000), resp.AcquisitionLockTimeoutMillis)

	req = withShareAckPartition(shareAcknowledgeRequest(2, "g", "m", m.epoch), st.tid, 0, ack(1, 2, ackReject))
	withShareAckPartition(req, uid, 0)
	resp = request[*kmsg.ShareAcknowledgeResponse](t, m.rc, req)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Topics, 2)
	assert.Equal(t, st.tid, resp.Topics[0].TopicID)
	assert.Equal(t, uid, resp.Topics[1].TopicID)
	assert.Zero(t, resp.Topics[1].Partitions[0].ErrorCode, "beside an applied partition, an empty one is reported as success")
	start, end, _ := st.c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, [2]int64{3, 3}, [2]int64{start, end})

	assert.Equal(t, []testbroker.ShareSessionInfo{{Group: "g", Member: "m", Epoch: 5, Partitions: []testbroker.TopicPartitions{{TopicID: st.tid, Topic: "t", Partitions: []int32{0}}}}},
		st.c.ShareSessions(0), "ShareAcknowledge moves the epoch but not the session's partitions")
}

// TestShareAcknowledgeRenew renews locks with ShareAcknowledge v2 and IsRenewAck: the lock runs
// a full duration from the renewal and the response carries the duration; RENEW on v1, or on v2
// without IsRenewAck, fails the partition with INVALID_REQUEST and no message.
func TestShareAcknowledgeRenew(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b")
	m.take(t)
	st.clk.Advance(10 * time.Second)

	resp := m.acknowledge(t, true, ack(0, 1, ackRenew))
	assert.Zero(t, onlyAckPartition(t, resp).ErrorCode)
	assert.Equal(t, int32(30000), resp.AcquisitionLockTimeoutMillis)
	for _, r := range st.c.ShareRecords("g", "t", 0) {
		assert.Equal(t, clockStart.Add(40*time.Second), r.LockDeadline)
		assert.Equal(t, int16(1), r.DeliveryCount)
	}

	p := onlyAckPartition(t, m.acknowledge(t, false, ack(0, 1, ackRenew)))
	assert.Equal(t, kerr.InvalidRequest.Code, p.ErrorCode, "RENEW without IsRenewAck")
	assert.Nil(t, p.ErrorMessage)

	m.version = 1
	p = onlyAckPartition(t, m.acknowledge(t, true, ack(0, 1, ackRenew)))
	assert.Equal(t, kerr.InvalidRequest.Code, p.ErrorCode, "RENEW on v1")
	assert.Nil(t, p.ErrorMessage)

	p = onlyAckPartition(t, m.acknowledge(t, false, ack(0, 1, ackAccept)))
	assert.Zero(t, p.ErrorCode)
}

// TestShareAcknowledgeRenewAnotherMembersRecord renews a record another member holds.
func TestShareAcknowledgeRenewAnotherMembersRecord(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	a, b := st.member(t, "a", 2), st.member(t, "b", 2)
	a.open(t)
	b.open(t)
	st.produce(t, "x")
	a.take(t)

	p := onlyAckPartition(t, b.acknowledge(t, true, ack(0, 0, ackRenew)))
	assert.Equal(t, kerr.InvalidRecordState.Code, p.ErrorCode)
	assert.Equal(t, "Member is not the owner of batch record", deref(p.ErrorMessage))
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, "a", r.Member)
	assert.Equal(t, clockStart.Add(30*time.Second), r.LockDeadline)
}

// TestShareAcknowledgeClosesSession acknowledges with epoch -1: the acknowledgements apply, the
// session closes without moving its epoch, and the member's other records become available
// with their delivery count unchanged.
func TestShareAcknowledgeClosesSession(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b")
	m.take(t)

	m.epoch = -1
	assert.Zero(t, onlyAckPartition(t, m.acknowledge(t, false, ack(0, 0, ackAccept))).ErrorCode)
	assert.Empty(t, st.c.ShareSessions(0))
	r, ok := st.c.ShareRecord("g", "t", 0, 1)
	require.True(t, ok)
	assert.Equal(t, testbroker.ShareAvailable, r.State)
	assert.Equal(t, int16(1), r.DeliveryCount)
	assert.Empty(t, r.Member)
	assert.True(t, r.LockDeadline.IsZero())
}

package testbroker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// deleteRecordsReq asks to delete the records of topic's partition below offset.
func deleteRecordsReq(version int16, topic string, partition int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{
		Topic:      topic,
		Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: partition, Offset: offset}},
	}}
	return req
}

// deleteOne sends one partition's DeleteRecords and returns its answer.
func deleteOne(t *testing.T, rc *rawConn, req *kmsg.DeleteRecordsRequest) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	resp := request[*kmsg.DeleteRecordsResponse](t, rc, req)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// listOne answers one ListOffsets timestamp for partition 0 of topic.
func listOne(t *testing.T, rc *rawConn, topic string, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	resp := request[*kmsg.ListOffsetsResponse](t, rc, listOffsetsAt(10, topic, timestamp, 0))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestDeleteRecords moves the log start offset into the middle of a batch, then to the high
// watermark, and checks what Fetch and ListOffsets see, on every DeleteRecords version.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 2; v++ {
		c := testbroker.StartT(t, testbroker.Topic("t", 1))
		rc := dialRaw(t, c.Addrs()[0])
		t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
		for k := range 3 { // offsets 0-3, 4-7, 8-11; record i at t0 + i ms
			first := t0.Add(time.Duration(4*k) * time.Millisecond)
			require.Zero(t, produceOne(t, rc, "t", 0, timedBatch(t, first, time.Millisecond, 4, kgo.Lz4Compression())).ErrorCode)
		}

		got := deleteOne(t, rc, deleteRecordsReq(v, "t", 0, 6))
		assert.Equal(t, kmsg.DeleteRecordsResponseTopicPartition{Partition: 0, LowWatermark: 6}, got, "v%d", v)

		below := request[*kmsg.FetchResponse](t, rc, fetchRequest("t", 0, 5)).Topics[0].Partitions[0]
		assert.Equal(t, kerr.OffsetOutOfRange.Code, below.ErrorCode, "a fetch below the log start offset")
		at := request[*kmsg.FetchResponse](t, rc, fetchRequest("t", 0, 6)).Topics[0].Partitions[0]
		require.Zero(t, at.ErrorCode)
		assert.Equal(t, int64(6), at.LogStartOffset)
		assert.Equal(t, int64(12), at.HighWatermark)

		assert.Equal(t, int64(6), listOne(t, rc, "t", -2).Offset, "earliest is the log start offset")
		first := listOne(t, rc, "t", t0.UnixMilli())
		assert.Equal(t, []int64{6, t0.UnixMilli() + 6}, []int64{first.Offset, first.Timestamp}, "records below the start are no answer")
		assert.Equal(t, int64(11), listOne(t, rc, "t", -3).Offset)

		got = deleteOne(t, rc, deleteRecordsReq(v, "t", 0, 3))
		assert.Equal(t, int64(6), got.LowWatermark, "the start never moves back")
		assert.Zero(t, got.ErrorCode)

		got = deleteOne(t, rc, deleteRecordsReq(v, "t", 0, -1))
		assert.Equal(t, kmsg.DeleteRecordsResponseTopicPartition{Partition: 0, LowWatermark: 12}, got, "-1 deletes up to the high watermark")
		assert.Equal(t, int64(12), listOne(t, rc, "t", -2).Offset)
		maxTS := listOne(t, rc, "t", -3)
		assert.Equal(t, []int64{-1, -1}, []int64{maxTS.Offset, maxTS.Timestamp}, "an empty log has no largest timestamp")
		info, ok := c.Partition("t", 0)
		require.True(t, ok)
		assert.Equal(t, []int64{12, 12, 12}, []int64{info.LogStartOffset, info.LogEndOffset, info.HighWatermark})
	}
}

func TestDeleteRecordsErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2),
		testbroker.ReplicatedTopic("t", 1, 1),
		testbroker.TopicWithConfigs("compacted", 1, map[string]string{"cleanup.policy": "compact"}),
		testbroker.TopicWithConfigs("both", 1, map[string]string{"cleanup.policy": "compact,delete"}),
		testbroker.Topic("__share_group_state", 1))
	info, ok := c.Partition("t", 0)
	require.True(t, ok)
	leader := dialRaw(t, c.Addrs()[info.Leader])
	require.Zero(t, produceOne(t, leader, "t", 0, plainBatch("a", "b")).ErrorCode)
	other := dialRaw(t, c.Addrs()[1-info.Leader])

	cases := []struct {
		name string
		rc   *rawConn
		req  *kmsg.DeleteRecordsRequest
		code *kerr.Error
	}{
		{"past the high watermark", leader, deleteRecordsReq(2, "t", 0, 3), kerr.OffsetOutOfRange},
		{"a negative offset", leader, deleteRecordsReq(2, "t", 0, -2), kerr.OffsetOutOfRange},
		{"unknown topic", leader, deleteRecordsReq(2, "nope", 0, 1), kerr.UnknownTopicOrPartition},
		{"unknown partition", leader, deleteRecordsReq(2, "t", 1, 1), kerr.UnknownTopicOrPartition},
		{"not the leader", other, deleteRecordsReq(2, "t", 0, 1), kerr.NotLeaderForPartition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := deleteOne(t, tc.rc, tc.req)
			assert.Equal(t, tc.code.Code, got.ErrorCode, "got %v", kerr.ErrorForCode(got.ErrorCode))
			assert.Equal(t, int64(-1), got.LowWatermark)
		})
	}

	t.Run("compaction only", func(t *testing.T) {
		p, _ := c.Partition("compacted", 0)
		got := deleteOne(t, dialRaw(t, c.Addrs()[p.Leader]), deleteRecordsReq(2, "compacted", 0, 0))
		assert.Equal(t, kerr.PolicyViolation.Code, got.ErrorCode)
		p, _ = c.Partition("both", 0)
		got = deleteOne(t, dialRaw(t, c.Addrs()[p.Leader]), deleteRecordsReq(2, "both", 0, 0))
		assert.Zero(t, got.ErrorCode, "compact,delete allows deletion")
	})

	t.Run("internal topic", func(t *testing.T) {
		p, _ := c.Partition("__share_group_state", 0)
		got := deleteOne(t, dialRaw(t, c.Addrs()[p.Leader]), deleteRecordsReq(2, "__share_group_state", 0, 0))
		assert.Equal(t, kerr.InvalidTopicException.Code, got.ErrorCode)
	})

	t.Run("partition named twice", func(t *testing.T) {
		req := deleteRecordsReq(2, "t", 0, 2)
		req.Topics[0].Partitions = append([]kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 3}}, req.Topics[0].Partitions...)
		got := deleteOne(t, leader, req)
		assert.Equal(t, kmsg.DeleteRecordsResponseTopicPartition{Partition: 0, LowWatermark: 2}, got, "answered once, with the last offset")
	})
}

// TestDeleteRecordsFollowers checks that followers take the leader's log start offset from
// their fetches, so that a follower that becomes leader keeps it, and that a client's admin
// API offers and uses DeleteRecords.
func TestDeleteRecordsFollowers(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 1, 3))
	ctx, cl, adm := adminClients(t, c)
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte{byte(i)}}).FirstErr())
	}

	res, err := adm.DeleteRecords(ctx, kadm.Offsets{"t": {0: {Topic: "t", Partition: 0, At: 4}}})
	require.NoError(t, err)
	r, ok := res.Lookup("t", 0)
	require.True(t, ok)
	require.NoError(t, r.Err)
	assert.Equal(t, int64(4), r.LowWatermark)

	// A produce makes the followers' parked fetches answer; each answer carries the leader's
	// log start offset.
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("more")}).FirstErr())
	require.Eventually(t, func() bool {
		info, _ := c.Partition("t", 0)
		for _, r := range info.ReplicaStates {
			if r.LogStartOffset != 4 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every replica's log start offset reaches 4")

	info, _ := c.Partition("t", 0)
	next := (info.Leader + 1) % 3
	require.NoError(t, c.MoveLeader("t", 0, next))
	starts, err := adm.ListStartOffsets(ctx, "t")
	require.NoError(t, err)
	o, ok := starts.Lookup("t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(4), o.Offset, "the new leader's log starts where the old one's did")
}

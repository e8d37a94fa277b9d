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

// listOffsetsAt asks for one timestamp of each of the partitions of topic.
func listOffsetsAt(version int16, topic string, timestamp int64, partitions ...int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	rt := kmsg.ListOffsetsRequestTopic{Topic: topic}
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = timestamp
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	return req
}

// TestListOffsets checks every kind of timestamp against a log of three batches whose
// timestamps are not in offset order.
func TestListOffsets(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	for _, b := range []batchSpec{
		{producerID: -1, timestamp: t0, values: []string{"a"}},                                 // offset 0
		{producerID: -1, timestamp: t0.Add(20 * time.Millisecond), values: []string{"b", "c"}}, // offsets 1-2
		{producerID: -1, timestamp: t0.Add(10 * time.Millisecond), values: []string{"d"}},      // offset 3
	} {
		require.Zero(t, produceOne(t, rc, "t", 0, recordBatch(b)).ErrorCode)
	}

	cases := []struct {
		name        string
		version     int16
		timestamp   int64
		code        *kerr.Error
		offset, ts  int64
		leaderEpoch int32
	}{
		{"earliest", 10, -2, nil, 0, -1, 0},
		{"latest", 10, -1, nil, 4, -1, 0},
		{"latest v1", 1, -1, nil, 4, -1, -1}, // LeaderEpoch is v4+
		{"max timestamp", 10, -3, nil, 1, ms(20 * time.Millisecond), 0},
		{"earliest local", 10, -4, nil, 0, -1, 0},
		{"latest tiered", 10, -5, nil, -1, -1, -1},
		{"first timestamp", 10, ms(0), nil, 0, ms(0), 0},
		{"between batches", 10, ms(5 * time.Millisecond), nil, 1, ms(20 * time.Millisecond), 0},
		{"after a smaller later batch", 10, ms(15 * time.Millisecond), nil, 1, ms(20 * time.Millisecond), 0},
		{"past every timestamp", 10, ms(21 * time.Millisecond), nil, -1, -1, -1},
		{"max timestamp before v7", 6, -3, kerr.UnsupportedVersion, -1, -1, -1},
		{"earliest local before v8", 7, -4, kerr.UnsupportedVersion, -1, -1, -1},
		{"latest tiered before v9", 8, -5, kerr.UnsupportedVersion, -1, -1, -1},
		{"unknown special timestamp", 10, -7, kerr.UnsupportedVersion, -1, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := request[*kmsg.ListOffsetsResponse](t, rc, listOffsetsAt(tc.version, "t", tc.timestamp, 0))
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			p := resp.Topics[0].Partitions[0]
			var code int16
			if tc.code != nil {
				code = tc.code.Code
			}
			assert.Equal(t, code, p.ErrorCode, "got %v", kerr.ErrorForCode(p.ErrorCode))
			assert.Equal(t, tc.offset, p.Offset)
			assert.Equal(t, tc.ts, p.Timestamp)
			assert.Equal(t, tc.leaderEpoch, p.LeaderEpoch)
		})
	}
}

// TestListOffsetsErrors checks the per-partition refusals.
func TestListOffsetsErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	info, ok := c.Partition("t", 0)
	require.True(t, ok)
	leader, other := c.Addrs()[info.Leader], c.Addrs()[(info.Leader+1)%3]

	cases := []struct {
		name string
		addr string
		req  func() *kmsg.ListOffsetsRequest
		code *kerr.Error
	}{
		{"unknown topic", leader, func() *kmsg.ListOffsetsRequest { return listOffsetsAt(10, "nope", -1, 0) }, kerr.UnknownTopicOrPartition},
		{"unknown partition", leader, func() *kmsg.ListOffsetsRequest { return listOffsetsAt(10, "t", -1, 4) }, kerr.UnknownTopicOrPartition},
		{"not the leader", other, func() *kmsg.ListOffsetsRequest { return listOffsetsAt(10, "t", -1, 0) }, kerr.NotLeaderForPartition},
		{"older leader epoch", leader, func() *kmsg.ListOffsetsRequest {
			r := listOffsetsAt(10, "t", -1, 0)
			r.Topics[0].Partitions[0].CurrentLeaderEpoch = -2
			return r
		}, kerr.FencedLeaderEpoch},
		{"newer leader epoch", leader, func() *kmsg.ListOffsetsRequest {
			r := listOffsetsAt(10, "t", -1, 0)
			r.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
			return r
		}, kerr.UnknownLeaderEpoch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := roundTrip[*kmsg.ListOffsetsResponse](t, tc.addr, tc.req())
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			p := resp.Topics[0].Partitions[0]
			assert.Equal(t, tc.code.Code, p.ErrorCode, "got %v", kerr.ErrorForCode(p.ErrorCode))
			assert.Equal(t, int64(-1), p.Offset)
			assert.Equal(t, int64(-1), p.Timestamp)
		})
	}

	t.Run("duplicate partition", func(t *testing.T) {
		resp := roundTrip[*kmsg.ListOffsetsResponse](t, leader, listOffsetsAt(10, "t", -1, 0, 0))
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1, "a partition named twice is answered once")
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].Partitions[0].ErrorCode)
	})
}

package testbroker_test

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// onlyPartition returns the single partition of a fetch response.
func onlyPartition(t *testing.T, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	require.Zero(t, resp.ErrorCode, "got %v", kerr.ErrorForCode(resp.ErrorCode))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestFetchRecords fetches from the middle of the log: the batch holding the fetch offset comes
// whole, with the offsets of the partition.
func TestFetchRecords(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	for _, b := range [][]byte{plainBatch("a"), plainBatch("b", "c"), plainBatch("d")} {
		require.Zero(t, produceOne(t, rc, "t", 0, b).ErrorCode)
	}

	for _, committed := range []bool{false, true} {
		t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
			req := fetchRequest("t", 0, 2)
			if committed {
				req.IsolationLevel = 1
			}
			p := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, req))
			assert.Zero(t, p.ErrorCode)
			assert.Equal(t, int64(4), p.HighWatermark)
			assert.Equal(t, int64(4), p.LastStableOffset)
			assert.Equal(t, int64(0), p.LogStartOffset)
			assert.Equal(t, int32(-1), p.PreferredReadReplica)
			if committed {
				assert.NotNil(t, p.AbortedTransactions, "READ_COMMITTED gets an empty list")
			} else {
				assert.Nil(t, p.AbortedTransactions, "READ_UNCOMMITTED gets null")
			}
			assert.Equal(t, []fetched{{2, "c"}, {3, "d"}}, fetchedRecords(t, p, 2))
			assert.Len(t, fetchedRecords(t, p, 0), 3, "the batch holding offset 2 starts at 1")
		})
	}

	p := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchRequest("t", 0, 4)))
	assert.Zero(t, p.ErrorCode, "fetching at the log end offset is no error")
	assert.Empty(t, p.RecordBatches)
}

// TestFetchErrors checks per-partition refusals: every offset of a failed partition is -1.
func TestFetchErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a", "b")).ErrorCode)
	var unknownID [16]byte
	_, _ = rand.Read(unknownID[:])

	cases := []struct {
		name string
		req  func() *kmsg.FetchRequest
		code *kerr.Error
	}{
		{"offset past the end", func() *kmsg.FetchRequest { return fetchRequest("t", 0, 3) }, kerr.OffsetOutOfRange},
		{"negative offset", func() *kmsg.FetchRequest { return fetchRequest("t", 0, -1) }, kerr.OffsetOutOfRange},
		{"unknown topic", func() *kmsg.FetchRequest { return fetchRequest("nope", 0, 0) }, kerr.UnknownTopicOrPartition},
		{"unknown partition", func() *kmsg.FetchRequest { return fetchRequest("t", 3, 0) }, kerr.UnknownTopicOrPartition},
		{"unknown topic id", func() *kmsg.FetchRequest {
			r := fetchRequest("", 0, 0)
			r.Version = 13
			r.Topics[0].TopicID = unknownID
			return r
		}, kerr.UnknownTopicID},
		{"newer leader epoch", func() *kmsg.FetchRequest {
			r := fetchRequest("t", 0, 0)
			r.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
			return r
		}, kerr.UnknownLeaderEpoch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, tc.req()))
			assert.Equal(t, tc.code.Code, p.ErrorCode, "got %v", kerr.ErrorForCode(p.ErrorCode))
			assert.Equal(t, int64(-1), p.HighWatermark)
			assert.Equal(t, int64(-1), p.LastStableOffset)
			assert.Equal(t, int64(-1), p.LogStartOffset)
			assert.Empty(t, p.RecordBatches)
		})
	}
}

// TestFetchOrder checks Kafka's response order: the partitions the cluster has, in request
// order, then the unknown ones, with neighbours of one topic in one entry.
func TestFetchOrder(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 2), testbroker.Topic("u", 1))
	req := fetchRequest("t", 9, 0)
	second := req.Topics[0].Partitions[0]
	second.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, second)
	req.Topics = append(req.Topics, fetchRequest("u", 0, 0).Topics...)
	resp := roundTrip[*kmsg.FetchResponse](t, c.Addrs()[0], req)
	var got [][]string
	for _, rt := range resp.Topics {
		var parts []string
		for _, p := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d:%d", rt.Topic, p.Partition, p.ErrorCode))
		}
		got = append(got, parts)
	}
	assert.Equal(t, [][]string{{"t/1:0"}, {"u/0:0"}, {"t/9:3"}}, got)
}

// TestFetchNotLeader fetches from a broker that does not lead the partition. From v16 the
// answer names the leader and its address, as Kafka's does.
func TestFetchNotLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	info, ok := c.Topic("t")
	require.True(t, ok)
	leader := info.Partitions[0].Leader
	other := c.Addrs()[(leader+1)%3]

	req := fetchRequest("", 0, 0)
	req.Version = 16
	req.Topics[0].TopicID = info.ID
	resp := roundTrip[*kmsg.FetchResponse](t, other, req)
	p := onlyPartition(t, resp)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode)
	assert.Equal(t, leader, p.CurrentLeader.LeaderID)
	assert.Equal(t, info.Partitions[0].LeaderEpoch, p.CurrentLeader.LeaderEpoch)
	require.Len(t, resp.Brokers, 1)
	assert.Equal(t, leader, resp.Brokers[0].NodeID)
	assert.Equal(t, c.Addrs()[leader], fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port))

	old := onlyPartition(t, roundTrip[*kmsg.FetchResponse](t, other, fetchRequest("t", 0, 0)))
	assert.Equal(t, kerr.NotLeaderForPartition.Code, old.ErrorCode)
	assert.Equal(t, int32(-1), old.CurrentLeader.LeaderID, "Kafka names the leader from v16 only")
}

// TestFetchSessions checks that sessions are refused the way Kafka refuses them when its cache
// is full: full fetches get session id 0, incremental ones FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	cases := []struct {
		name      string
		id, epoch int32
		code      *kerr.Error
	}{
		{"sessionless", 0, -1, nil},
		{"new session", 0, 0, nil},
		{"close a session", 77, -1, nil},
		{"renew a session", 77, 0, nil},
		{"incremental", 77, 1, kerr.FetchSessionIDNotFound},
		{"incremental without id", 0, 3, kerr.FetchSessionIDNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := fetchRequest("t", 0, 0)
			req.SessionID, req.SessionEpoch = tc.id, tc.epoch
			resp := request[*kmsg.FetchResponse](t, rc, req)
			assert.Zero(t, resp.SessionID)
			if tc.code != nil {
				assert.Equal(t, tc.code.Code, resp.ErrorCode)
				assert.Empty(t, resp.Topics)
				return
			}
			assert.Zero(t, onlyPartition(t, resp).ErrorCode)
		})
	}
}

// TestFetchSizeLimits checks PartitionMaxBytes and MaxBytes: the first partition with data
// gets at least one batch, later ones only what fits (KIP-74).
func TestFetchSizeLimits(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 2))
	rc := dialRaw(t, c.Addrs()[0])
	size := len(plainBatch("x"))
	for p := range int32(2) {
		for range 2 {
			require.Zero(t, produceOne(t, rc, "t", p, plainBatch("x")).ErrorCode)
		}
	}
	cases := []struct {
		name                   string
		maxBytes, partMax      int
		wantBytes0, wantBytes1 int
	}{
		{"no limits", 1 << 20, 1 << 20, 2 * size, 2 * size},
		{"partition limit below a batch", 1 << 20, 1, size, 0},
		{"partition limit of one batch", 1 << 20, size, size, size},
		{"response limit of one batch", size, 1 << 20, size, 0},
		{"response limit of three batches", 3 * size, 1 << 20, 2 * size, size},
		{"response limit zero", 0, 1 << 20, size, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := fetchRequest("t", 0, 0)
			req.MaxBytes = int32(tc.maxBytes)
			req.Topics[0].Partitions[0].PartitionMaxBytes = int32(tc.partMax)
			second := req.Topics[0].Partitions[0]
			second.Partition = 1
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, second)
			resp := request[*kmsg.FetchResponse](t, rc, req)
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 2)
			assert.Len(t, resp.Topics[0].Partitions[0].RecordBatches, tc.wantBytes0)
			assert.Len(t, resp.Topics[0].Partitions[1].RecordBatches, tc.wantBytes1)
		})
	}
}

type fetchResult struct {
	resp *kmsg.FetchResponse
	err  error
}

// startFetch sends a fetch and receives its response in a goroutine of its own.
func startFetch(t *testing.T, rc *rawConn, req *kmsg.FetchRequest) <-chan fetchResult {
	t.Helper()
	corr := rc.send(t, req)
	got := make(chan fetchResult, 1)
	go func() {
		resp, err := receive[*kmsg.FetchResponse](rc, req, corr)
		got <- fetchResult{resp, err}
	}()
	return got
}

// awaitFetch returns the response of a fetch started with startFetch, failing the test if none
// comes within ten seconds of real time.
func awaitFetch(t *testing.T, got <-chan fetchResult) *kmsg.FetchResponse {
	t.Helper()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r.resp
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch response")
		return nil
	}
}

// longPollRequest is a fetch at offset 0 that waits up to a second for a byte.
func longPollRequest() *kmsg.FetchRequest {
	req := fetchRequest("t", 0, 0)
	req.MaxWaitMillis = 1000
	req.MinBytes = 1
	return req
}

var clockStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// TestFetchLongPollExpires checks that a fetch with nothing to return waits exactly MaxWait on
// the cluster clock: not a millisecond less, and answers once the clock passes it.
func TestFetchLongPollExpires(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), longPollRequest())

	require.True(t, clk.WaitPending(t.Context().Done(), 1), "the fetch parks on the clock")
	clk.Advance(999 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("the fetch answered before its deadline")
	default:
	}
	require.Equal(t, 1, clk.Pending())

	clk.Advance(time.Millisecond)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
	assert.Equal(t, int64(0), p.HighWatermark)
	assert.Zero(t, clk.Pending())
}

// TestFetchLongPollWokenByProduce checks that a waiting fetch answers as soon as a produce
// brings data, and stops its timer.
func TestFetchLongPollWokenByProduce(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), longPollRequest())
	require.True(t, clk.WaitPending(t.Context().Done(), 1))

	require.Zero(t, produceOne(t, dialRaw(t, c.Addrs()[0]), "t", 0, plainBatch("hello", "world")).ErrorCode)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Zero(t, p.ErrorCode)
	assert.Equal(t, int64(2), p.HighWatermark)
	assert.Equal(t, []fetched{{0, "hello"}, {1, "world"}}, fetchedRecords(t, p, 0))
	assert.Zero(t, clk.Pending(), "the deadline timer is stopped")
}

// TestFetchLongPollMinBytes checks that data short of MinBytes does not end the wait, and is
// returned when the deadline passes.
func TestFetchLongPollMinBytes(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	req := longPollRequest()
	req.MinBytes = 1 << 20
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), req)
	require.True(t, clk.WaitPending(t.Context().Done(), 1))

	require.Zero(t, produceOne(t, dialRaw(t, c.Addrs()[0]), "t", 0, plainBatch("small")).ErrorCode)
	require.Equal(t, 1, clk.Pending(), "the fetch still waits")
	clk.Advance(time.Second)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Equal(t, []fetched{{0, "small"}}, fetchedRecords(t, p, 0))
}

// TestFetchLongPollClusterClose checks that closing the cluster ends a waiting fetch: Close
// returns only once every goroutine of the cluster has.
func TestFetchLongPollClusterClose(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), longPollRequest())
	require.True(t, clk.WaitPending(t.Context().Done(), 1))
	c.Close()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch outlived the cluster")
	}
	assert.Zero(t, clk.Pending(), "the deadline timer is stopped")
}

package testbroker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

func metadataRequest(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &t
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func listOffsetsRequest(topic string, partitions ...int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.ListOffsetsRequestTopic{Topic: topic}
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	return req
}

// listOffsetsCodes returns the error code of every partition of a ListOffsets response.
func listOffsetsCodes(resp kmsg.Response) []int16 {
	var codes []int16
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func injectFault(t *testing.T, c *testbroker.Cluster, f testbroker.Fault) testbroker.FaultID {
	t.Helper()
	id, err := c.InjectFault(f)
	require.NoError(t, err)
	return id
}

func TestFaultAnswersMatchingRequestsWithItsError(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 2), testbroker.Topic("payments", 1))
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Metadata}, Err: kerr.LeaderNotAvailable, Times: 1})
	conn := dialRawKafka(t, c.Addrs()[0])

	resp := conn.roundTrip(metadataRequest("orders", "payments")).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 2)
	for i, name := range []string{"orders", "payments"} {
		assert.Equal(t, name, *resp.Topics[i].Topic)
		assert.Equal(t, kerr.LeaderNotAvailable.Code, resp.Topics[i].ErrorCode)
		assert.Empty(t, resp.Topics[i].Partitions)
	}

	resp = conn.roundTrip(metadataRequest("orders")).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Len(t, resp.Topics[0].Partitions, 2)
}

func TestFaultMatchesByTopic(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 2), testbroker.Topic("payments", 1))
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Topic: "orders", Err: kerr.NotLeaderForPartition})
	conn := dialRawKafka(t, c.Addrs()[0])

	resp := conn.roundTrip(listOffsetsRequest("orders", 0, 1)).(*kmsg.ListOffsetsResponse)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, "orders", resp.Topics[0].Topic)
	assert.Equal(t, []int16{kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code}, listOffsetsCodes(resp))
	assert.Equal(t, int64(-1), resp.Topics[0].Partitions[0].Offset)

	other := conn.roundTrip(listOffsetsRequest("payments", 0))
	assert.Equal(t, []int16{0}, listOffsetsCodes(other), "a request that does not name the topic is served")
	assert.Equal(t, 1, c.ActiveFaults(), "a fault without Times stays")
}

// TestFaultMatchesTopicByID: Fetch v13+ names topics by id; the fault still matches by name and
// the error response echoes the ids.
func TestFaultMatchesTopicByID(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 2))
	orders, ok := c.Topic("orders")
	require.True(t, ok)
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Fetch}, Topic: "orders", Err: kerr.NotLeaderForPartition})

	req := kmsg.NewPtrFetchRequest()
	req.Version = 16
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = orders.ID
	for p := range int32(2) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp := dialRawKafka(t, c.Addrs()[0]).roundTrip(req).(*kmsg.FetchResponse)

	assert.Equal(t, kerr.NotLeaderForPartition.Code, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, orders.ID, resp.Topics[0].TopicID)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for i, p := range resp.Topics[0].Partitions {
		assert.Equal(t, int32(i), p.Partition)
		assert.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode)
		assert.Equal(t, int32(-1), p.CurrentLeader.LeaderID, "no leader is suggested")
	}
}

func TestFaultMatchesByGroup(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	injectFault(t, c, testbroker.Fault{Group: "payments-workers", Err: kerr.CoordinatorNotAvailable})
	conn := dialRawKafka(t, c.Addrs()[0])

	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorKeys = []string{"payments-workers", "other"}
	resp := conn.roundTrip(req).(*kmsg.FindCoordinatorResponse)
	require.Len(t, resp.Coordinators, 2)
	for i, key := range req.CoordinatorKeys {
		assert.Equal(t, key, resp.Coordinators[i].Key)
		assert.Equal(t, kerr.CoordinatorNotAvailable.Code, resp.Coordinators[i].ErrorCode)
		assert.Equal(t, int32(-1), resp.Coordinators[i].NodeID)
	}

	// A request that names no group is not matched.
	assert.Zero(t, conn.roundTrip(metadataRequest()).(*kmsg.MetadataResponse).ErrorCode)
	conn.requireAlive()
}

func TestFaultMatchesByBroker(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("orders", 2))
	injectFault(t, c, testbroker.Fault{Brokers: []int32{1}, APIs: []kmsg.Key{kmsg.Metadata}, Err: kerr.BrokerNotAvailable})

	ok := dialRawKafka(t, c.Addrs()[0]).roundTrip(metadataRequest("orders")).(*kmsg.MetadataResponse)
	assert.Zero(t, ok.Topics[0].ErrorCode)
	failed := dialRawKafka(t, c.Addrs()[1]).roundTrip(metadataRequest("orders")).(*kmsg.MetadataResponse)
	assert.Equal(t, kerr.BrokerNotAvailable.Code, failed.Topics[0].ErrorCode)
}

func TestFaultTimes(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1))
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.UnknownLeaderEpoch, Times: 2})
	conn := dialRawKafka(t, c.Addrs()[0])

	for i := range 2 {
		require.Equal(t, 1, c.ActiveFaults(), "before request %d", i)
		assert.Equal(t, []int16{kerr.UnknownLeaderEpoch.Code}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))))
	}
	assert.Zero(t, c.ActiveFaults())
	assert.Equal(t, []int16{0}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))))
}

func TestFaultRemoveAndClear(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1))
	first := injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.UnknownLeaderEpoch})
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.FencedLeaderEpoch})
	conn := dialRawKafka(t, c.Addrs()[0])

	assert.Equal(t, []int16{kerr.UnknownLeaderEpoch.Code}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))), "the first fault added wins")
	assert.True(t, c.RemoveFault(first))
	assert.False(t, c.RemoveFault(first))
	assert.Equal(t, []int16{kerr.FencedLeaderEpoch.Code}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))))
	c.ClearFaults()
	assert.Zero(t, c.ActiveFaults())
	assert.Equal(t, []int16{0}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))))
}

func TestInjectFaultThatDoesNothing(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Times: 3})
	require.ErrorIs(t, err, testbroker.ErrEmptyFault)
	assert.Zero(t, c.ActiveFaults())
}

func TestFaultDropConnection(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := testbroker.StartT(t, testbroker.Topic("orders", 1), loggerTo(&logs))
	addr := c.Addrs()[0]
	other := dialRawKafka(t, addr)
	other.requireAlive()
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Metadata}, DropConnection: true, Times: 1})

	dropped := dialRawKafka(t, addr)
	dropped.send(metadataRequest("orders"))
	dropped.requireClosed()
	assert.Contains(t, logs.String(), "dropping connection (injected fault)")

	other.requireAlive()
	resp := other.roundTrip(metadataRequest("orders")).(*kmsg.MetadataResponse)
	assert.Zero(t, resp.Topics[0].ErrorCode, "the fault was used up")
}

// TestFaultDelay holds a request on the manual clock: nothing is answered until the clock has
// moved by the whole delay.
func TestFaultDelay(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	c := testbroker.StartT(t, testbroker.Topic("orders", 1), testbroker.WithManualClock(time.Unix(1_700_000_000, 0)))
	clk := c.ManualClock()
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.ListOffsets}, Delay: delay, Err: kerr.RequestTimedOut, Times: 1})
	conn := dialRawKafka(t, c.Addrs()[0])

	corr := conn.send(listOffsetsRequest("orders", 0))
	require.True(t, clk.WaitPending(t.Context().Done(), 1), "the request was never parked")
	clk.Advance(delay - time.Millisecond)
	require.Equal(t, 1, clk.Pending(), "released before the delay was over")
	clk.Advance(time.Millisecond)

	resp := kmsg.NewPtrListOffsetsResponse()
	resp.Version = 7
	conn.receive(corr, resp)
	assert.Equal(t, []int16{kerr.RequestTimedOut.Code}, listOffsetsCodes(resp))
	assert.Equal(t, []int16{0}, listOffsetsCodes(conn.roundTrip(listOffsetsRequest("orders", 0))))
}

// TestFaultDelayAlone delays a request that is then processed normally.
func TestFaultDelayAlone(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1), testbroker.WithManualClock(time.Unix(1_700_000_000, 0)))
	clk := c.ManualClock()
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Metadata}, Delay: time.Minute})
	conn := dialRawKafka(t, c.Addrs()[0])

	corr := conn.send(metadataRequest("orders"))
	require.True(t, clk.WaitPending(t.Context().Done(), 1))
	clk.Advance(time.Minute)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	conn.receive(corr, resp)
	require.Len(t, resp.Topics, 1)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Len(t, resp.Topics[0].Partitions, 1)
}

// TestFaultDelayedRequestOnDroppedConnection: dropping the connection releases the parked
// request at once; its timer is cancelled.
func TestFaultDelayedRequestOnDroppedConnection(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(time.Unix(1_700_000_000, 0)))
	clk := c.ManualClock()
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Metadata}, Delay: time.Hour})
	conn := dialRawKafka(t, c.Addrs()[0])

	conn.send(metadataRequest())
	require.True(t, clk.WaitPending(t.Context().Done(), 1))
	c.DropConnections(-1)
	conn.requireClosed()
	require.Eventually(t, func() bool { return clk.Pending() == 0 }, 10*time.Second, time.Millisecond)
	dialRawKafka(t, c.Addrs()[0]).requireAlive()
}

// TestFaultOnAcksZeroProduceClosesConnection: a request that takes no response cannot carry an
// error, so Kafka closes the connection instead.
func TestFaultOnAcksZeroProduceClosesConnection(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := testbroker.StartT(t, testbroker.Topic("orders", 1), loggerTo(&logs))
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Err: kerr.NotLeaderForPartition})
	conn := dialRawKafka(t, c.Addrs()[0])

	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 0
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{}}}}}
	conn.send(req)
	conn.requireClosed()
	assert.Contains(t, logs.String(), "NOT_LEADER_FOR_PARTITION for a Produce request that takes no response")
}

// TestFranzGoRecoversFromInjectedProduceErrors: franz-go retries NOT_LEADER_OR_FOLLOWER after
// refreshing metadata, so every record lands once the fault is used up.
func TestFranzGoRecoversFromInjectedProduceErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1))
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Topic: "orders", Err: kerr.NotLeaderForPartition, Times: 3})
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Addrs()...),
		kgo.DefaultProduceTopic("orders"),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }),
		kgo.MetadataMinAge(10*time.Millisecond), // each NOT_LEADER_OR_FOLLOWER refreshes metadata first
	)
	require.NoError(t, err)
	defer cl.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const n = 10
	var records []*kgo.Record
	for i := range n {
		records = append(records, &kgo.Record{Value: []byte("record-" + strconv.Itoa(i))})
	}
	require.NoError(t, cl.ProduceSync(ctx, records...).FirstErr())

	assert.Zero(t, c.ActiveFaults(), "every injected error was seen")
	p, ok := c.Partition("orders", 0)
	require.True(t, ok)
	assert.Equal(t, int64(n), p.LogEndOffset)
	assert.Equal(t, int64(n), p.HighWatermark)
}

package testbroker_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// allTopics returns the topics of a Metadata request for every topic, by name.
func allTopics(t *testing.T, rc *rawConn) map[string]kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	out := map[string]kmsg.MetadataResponseTopic{}
	for _, mt := range request[*kmsg.MetadataResponse](t, rc, req).Topics {
		out[*mt.Topic] = mt
	}
	return out
}

// findCoordinator asks where key's coordinator of the given type is, with FindCoordinator v6.
func findCoordinator(t *testing.T, rc *rawConn, typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType, req.CoordinatorKeys = 6, typ, []string{key}
	resp := request[*kmsg.FindCoordinatorResponse](t, rc, req)
	require.Len(t, resp.Coordinators, 1)
	return resp.Coordinators[0]
}

// TestInternalTopicsInMetadata follows Kafka's internal topics from first use: none exists in a
// new cluster; the first FindCoordinator for a group creates __consumer_offsets, the first for
// a share partition's state __share_group_state, a Metadata request that may auto-create
// __transaction_state creates it; each is listed with every topic, flagged internal, with the
// partition count its config gives, partition p led by broker p mod N, where the coordinators
// of its keys are.
func TestInternalTopicsInMetadata(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("orders", 1),
		testbroker.BrokerConfig("offsets.topic.num.partitions", "6"))
	rc := dialRaw(t, c.Addrs()[0])

	topics := allTopics(t, rc)
	assert.Len(t, topics, 1, "no internal topic before its first use")
	assert.False(t, topics["orders"].IsInternal)

	coord := findCoordinator(t, rc, 0, "g1")
	require.Zero(t, coord.ErrorCode)
	topics = allTopics(t, rc)
	offsets, ok := topics["__consumer_offsets"]
	require.True(t, ok, "the first group lookup creates __consumer_offsets")
	assert.True(t, offsets.IsInternal)
	assert.Zero(t, offsets.ErrorCode)
	require.Len(t, offsets.Partitions, 6)
	for _, p := range offsets.Partitions {
		assert.Equal(t, p.Partition%3, p.Leader, "partition %d", p.Partition)
		assert.Equal(t, []int32{p.Partition % 3}, p.Replicas, "replication factor 1 (offsets.topic.replication.factor)")
	}
	h := javaHash("g1")
	if h < 0 {
		h = -h
	}
	assert.Equal(t, offsets.Partitions[h%6].Leader, coord.NodeID, "the group's partition leads it")

	orders := topicIDOf(t, c, "orders")
	shareKey := "sg:" + base64.RawURLEncoding.EncodeToString(orders[:]) + ":0"
	require.Zero(t, findCoordinator(t, rc, 2, shareKey).ErrorCode)
	state, ok := allTopics(t, rc)["__share_group_state"]
	require.True(t, ok, "the first share-state lookup creates __share_group_state")
	assert.True(t, state.IsInternal)
	assert.Len(t, state.Partitions, 50, "share.coordinator.state.topic.num.partitions")

	req := metadataRequest("__transaction_state")
	req.AllowAutoTopicCreation = true
	resp := request[*kmsg.MetadataResponse](t, rc, req)
	require.Len(t, resp.Topics, 1)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.True(t, resp.Topics[0].IsInternal)
	assert.Len(t, resp.Topics[0].Partitions, 50, "transaction.state.log.num.partitions")
	assert.Len(t, allTopics(t, rc), 4)
}

// TestInternalTopicsRefuseProduce produces to __consumer_offsets as a client: every partition
// is refused with INVALID_TOPIC_EXCEPTION and Kafka's message, and nothing is appended.
func TestInternalTopicsRefuseProduce(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, findCoordinator(t, rc, 0, "g").ErrorCode)

	p := produceOne(t, rc, "__consumer_offsets", 3, plainBatch("x"))
	assert.Equal(t, kerr.InvalidTopicException.Code, p.ErrorCode)
	require.NotNil(t, p.ErrorMessage)
	assert.Equal(t, "Cannot append to internal topic __consumer_offsets", *p.ErrorMessage)
	assert.Equal(t, int64(-1), p.BaseOffset)

	f := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchRequest("__consumer_offsets", 3, 0)))
	assert.Zero(t, f.ErrorCode, "consumers may read internal topics")
	assert.Zero(t, f.HighWatermark, "nothing was appended")
	assert.Empty(t, f.RecordBatches)
}

// TestInternalTopicsSkippedByClients checks what clients see: kadm lists topics without the
// internal ones unless asked, and DescribeConfigs shows the configs Kafka gives
// __consumer_offsets.
func TestInternalTopicsSkippedByClients(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1))
	ctx, cl, adm := adminClients(t, c)
	_, err := adm.FetchOffsets(ctx, "g") // looks the group's coordinator up
	require.NoError(t, err)

	listed, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"orders"}, listed.Names())
	withInternal, err := adm.ListTopicsWithInternal(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"orders", "__consumer_offsets"}, withInternal.Names())

	res := describeConfigs(t, ctx, cl, kmsg.ConfigResourceTypeTopic, "__consumer_offsets", "cleanup.policy", "segment.bytes")
	require.Zero(t, res.ErrorCode)
	got := map[string]string{}
	for _, cfg := range res.Configs {
		got[cfg.Name] = *cfg.Value
	}
	assert.Equal(t, map[string]string{"cleanup.policy": "compact", "segment.bytes": "104857600"}, got)
}

// TestInternalTopicsTransactionStateOnFirstLookup: the first FindCoordinator for a transactional
// id creates __transaction_state, and the coordinator it names leads the id's partition.
func TestInternalTopicsTransactionStateOnFirstLookup(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3),
		testbroker.BrokerConfig("transaction.state.log.num.partitions", "7"))
	rc := dialRaw(t, c.Addrs()[0])
	_, ok := allTopics(t, rc)["__transaction_state"]
	require.False(t, ok, "no __transaction_state before the first transactional lookup")

	coord := findCoordinator(t, rc, 1, "tx-1")
	require.Zero(t, coord.ErrorCode)
	state, ok := allTopics(t, rc)["__transaction_state"]
	require.True(t, ok, "the first transactional lookup creates __transaction_state")
	assert.True(t, state.IsInternal)
	require.Len(t, state.Partitions, 7)
	h := javaHash("tx-1")
	if h < 0 {
		h = -h
	}
	assert.Equal(t, state.Partitions[h%7].Leader, coord.NodeID, "the id's partition leads it")
}

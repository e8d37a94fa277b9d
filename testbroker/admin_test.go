package testbroker_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// adminClients returns a franz-go client and an admin client on it, both closed when the test
// ends, and a context that bounds the test.
func adminClients(t *testing.T, c *testbroker.Cluster) (context.Context, *kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, cl, kadm.NewClient(cl)
}

// rawCreateTopic is one CreateTopics entry.
func rawCreateTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func createTopicsRequest(version int16, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.Topics, req.ValidateOnly, req.TimeoutMillis = version, topics, validateOnly, 10000
	return req
}

// TestCreateTopicsWithKadm creates topics through kadm with explicit counts, with -1 for the
// broker defaults (num.partitions=3 here) and with configs, and checks what the response, the
// metadata and the inspection API say about them.
func TestCreateTopicsWithKadm(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.BrokerConfig("num.partitions", "3"),
		testbroker.BrokerConfig("default.replication.factor", "2"))
	ctx, _, adm := adminClients(t, c)

	resp, err := adm.CreateTopic(ctx, 4, 3, nil, "explicit")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	assert.Equal(t, int32(4), resp.NumPartitions)
	assert.Equal(t, int16(3), resp.ReplicationFactor)
	assert.NotEqual(t, kadm.TopicID{}, resp.ID)

	resp, err = adm.CreateTopic(ctx, -1, -1, map[string]*string{
		"retention.ms":           kmsg.StringPtr("1000"),
		"message.timestamp.type": kmsg.StringPtr("LogAppendTime"),
	}, "defaults")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	assert.Equal(t, int32(3), resp.NumPartitions)
	assert.Equal(t, int16(2), resp.ReplicationFactor)
	require.Contains(t, resp.Configs, "retention.ms")
	assert.Equal(t, "1000", *resp.Configs["retention.ms"].Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, resp.Configs["retention.ms"].Source)
	assert.Equal(t, "delete", *resp.Configs["cleanup.policy"].Value)
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, resp.Configs["cleanup.policy"].Source)

	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.True(t, topics.Has("explicit"))
	require.True(t, topics.Has("defaults"))
	explicit := topics["explicit"]
	assert.Equal(t, kadm.TopicID(resp.ID), topics["defaults"].ID)
	require.Len(t, explicit.Partitions, 4)
	for p, d := range explicit.Partitions {
		assert.Len(t, d.Replicas, 3, "partition %d", p)
		assert.Equal(t, d.Replicas[0], d.Leader, "partition %d is led by its first replica", p)
	}
	info, ok := c.Topic("defaults")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"}, info.Configs)
	assert.Len(t, info.Partitions, 3)
}

// TestCreateTopicsErrors checks each refusal's code and message, which are Kafka's controller's.
func TestCreateTopicsErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("taken", 1), testbroker.Topic("with_underscore", 1))
	ctx, cl, _ := adminClients(t, c)

	nullConfig := rawCreateTopic("null-config", 1, 1)
	nullConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms"}}
	cases := []struct {
		name  string
		topic kmsg.CreateTopicsRequestTopic
		err   *kerr.Error
		msg   string
	}{
		{"exists", rawCreateTopic("taken", 1, 1), kerr.TopicAlreadyExists, "Topic 'taken' already exists."},
		{"empty name", rawCreateTopic("", 1, 1), kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed"},
		{"illegal character", rawCreateTopic("a/b", 1, 1), kerr.InvalidTopicException,
			"Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"collision", rawCreateTopic("with.underscore", 1, 1), kerr.InvalidTopicException,
			"Topic 'with.underscore' collides with existing topic: with_underscore"},
		{"zero partitions", rawCreateTopic("p0", 0, 1), kerr.InvalidPartitions,
			"Number of partitions was set to an invalid non-positive value."},
		{"zero replication factor", rawCreateTopic("rf0", 1, 0), kerr.InvalidReplicationFactor,
			"Replication factor must be larger than 0, or -1 to use the default value."},
		{"replication factor above brokers", rawCreateTopic("rf3", 1, 3), kerr.InvalidReplicationFactor,
			"Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{"unknown config", rawCreateTopic("cfg", 1, 1, "no.such.config", "1"), kerr.InvalidConfig,
			"Unknown topic config name: no.such.config"},
		{"config not a number", rawCreateTopic("cfg", 1, 1, "retention.ms", "soon"), kerr.InvalidConfig,
			"Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"config out of range", rawCreateTopic("cfg", 1, 1, "min.insync.replicas", "0"), kerr.InvalidConfig,
			"Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"config not allowed", rawCreateTopic("cfg", 1, 1, "message.timestamp.type", "WallClock"), kerr.InvalidConfig,
			"Invalid value WallClock for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"null config", nullConfig, kerr.InvalidConfig, "Null value not supported for topic configs: retention.ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := createTopicsRequest(7, false, tc.topic).RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Len(t, resp.Topics, 1)
			got := resp.Topics[0]
			assert.Equal(t, tc.err.Code, got.ErrorCode, kerr.ErrorForCode(got.ErrorCode))
			require.NotNil(t, got.ErrorMessage)
			assert.Equal(t, tc.msg, *got.ErrorMessage)
			assert.Equal(t, int32(-1), got.NumPartitions)
		})
	}
	_, exists := c.Topic("cfg")
	assert.False(t, exists)
}

// TestCreateTopicsDuplicateInRequest: a name listed twice gets one INVALID_REQUEST result and
// is not created; the other topics of the request are.
func TestCreateTopicsDuplicateInRequest(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	ctx, cl, _ := adminClients(t, c)
	resp, err := createTopicsRequest(7, false, rawCreateTopic("twice", 1, 1), rawCreateTopic("once", 1, 1),
		rawCreateTopic("twice", 2, 1)).RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 2)
	assert.Equal(t, "once", resp.Topics[0].Topic)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Equal(t, "twice", resp.Topics[1].Topic)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[1].ErrorCode)
	assert.Equal(t, "Duplicate topic name.", *resp.Topics[1].ErrorMessage)
	_, created := c.Topic("twice")
	assert.False(t, created)
}

// TestCreateTopicsValidateOnly runs every check, answers as for a creation, and creates nothing.
func TestCreateTopicsValidateOnly(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	ctx, _, adm := adminClients(t, c)
	resps, err := adm.ValidateCreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("5")}, "dry")
	require.NoError(t, err)
	require.NoError(t, resps["dry"].Err)
	assert.Equal(t, int32(2), resps["dry"].NumPartitions)
	assert.Equal(t, "5", *resps["dry"].Configs["retention.ms"].Value)
	_, created := c.Topic("dry")
	assert.False(t, created)

	resps, err = adm.ValidateCreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("x")}, "dry")
	require.NoError(t, err)
	assert.ErrorIs(t, resps["dry"].Err, kerr.InvalidConfig)
}

// TestCreateTopicsManualAssignment honours replica assignments, each partition led by its first
// replica, and refuses assignments Kafka refuses.
func TestCreateTopicsManualAssignment(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3))
	ctx, cl, _ := adminClients(t, c)
	assigned := func(name string, partitions int32, rf int16, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := rawCreateTopic(name, partitions, rf)
		for i, r := range replicas {
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: r})
		}
		return rt
	}
	resp, err := createTopicsRequest(7, false, assigned("manual", -1, -1, []int32{2, 0}, []int32{1, 2})).RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode)
	info, ok := c.Topic("manual")
	require.True(t, ok)
	require.Len(t, info.Partitions, 2)
	assert.Equal(t, int32(2), info.Partitions[0].Leader)
	assert.Equal(t, []int32{2, 0}, info.Partitions[0].Replicas)
	assert.Equal(t, int32(1), info.Partitions[1].Leader)

	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		err   *kerr.Error
		msg   string
	}{
		{assigned("a", -1, 2, []int32{0, 1}), kerr.InvalidRequest,
			"A manual partition assignment was specified, but replication factor was not set to -1."},
		{assigned("b", 1, -1, []int32{0, 1}), kerr.InvalidRequest,
			"A manual partition assignment was specified, but numPartitions was not set to -1."},
		{assigned("c", -1, -1, []int32{0, 7}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 7, but no such broker is registered."},
		{assigned("d", -1, -1, []int32{1, 1}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 1 more than once."},
		{assigned("e", -1, -1, []int32{0, 1}, []int32{2}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
	}
	for _, tc := range cases {
		resp, err := createTopicsRequest(7, false, tc.topic).RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, tc.err.Code, resp.Topics[0].ErrorCode, tc.msg)
		assert.Equal(t, tc.msg, *resp.Topics[0].ErrorMessage)
	}
}

// TestCreatePartitions grows a topic through kadm, and checks Kafka's refusals.
func TestCreatePartitions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("grow", 3))
	ctx, _, adm := adminClients(t, c)

	resps, err := adm.CreatePartitions(ctx, 2, "grow")
	require.NoError(t, err)
	require.NoError(t, resps["grow"].Err)
	info, _ := c.Topic("grow")
	require.Len(t, info.Partitions, 5)
	for _, p := range info.Partitions {
		assert.Equal(t, p.Replicas[0], p.Leader)
	}
	assert.NotEqual(t, info.Partitions[3].Leader, info.Partitions[4].Leader, "new partitions are spread")
	topics, err := adm.ListTopics(ctx, "grow")
	require.NoError(t, err)
	assert.Len(t, topics["grow"].Partitions, 5)

	resps, err = adm.ValidateUpdatePartitions(ctx, 9, "grow")
	require.NoError(t, err)
	require.NoError(t, resps["grow"].Err)
	info, _ = c.Topic("grow")
	assert.Len(t, info.Partitions, 5, "validate-only adds nothing")

	cases := []struct {
		set   int
		topic string
		err   *kerr.Error
		msg   string
	}{
		{5, "grow", kerr.InvalidPartitions, "Topic already has 5 partition(s)."},
		{2, "grow", kerr.InvalidPartitions, "The topic grow currently has 5 partition(s); 2 would not be an increase."},
		{4, "missing", kerr.UnknownTopicOrPartition, ""},
	}
	for _, tc := range cases {
		resps, err := adm.UpdatePartitions(ctx, tc.set, tc.topic)
		require.NoError(t, err)
		assert.ErrorIs(t, resps[tc.topic].Err, tc.err)
		assert.Equal(t, tc.msg, resps[tc.topic].ErrMessage)
	}
}

// TestCreatePartitionsThenProduce: a partition added to a LogAppendTime topic has a log that
// stamps the append time, like the topic's first partitions.
func TestCreatePartitionsThenProduce(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.TopicWithConfigs("stamped", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}))
	ctx, _, adm := adminClients(t, c)
	resps, err := adm.CreatePartitions(ctx, 1, "stamped")
	require.NoError(t, err)
	require.NoError(t, resps["stamped"].Err)

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	created := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: "stamped", Partition: 1, Value: []byte("v"), Timestamp: created}).FirstErr())

	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"stamped": {1: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer consumer.Close()
	fetches := consumer.PollRecords(ctx, 1)
	require.NoError(t, fetches.Err())
	recs := fetches.Records()
	require.Len(t, recs, 1)
	assert.NotEqual(t, created.UnixMilli(), recs[0].Timestamp.UnixMilli(), "the broker stamped its own time")
}

// TestDeleteTopics deletes by name through kadm and by id with DeleteTopics v6, and checks the
// errors for unknown and duplicate entries.
func TestDeleteTopics(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("by-name", 2), testbroker.Topic("by-id", 1), testbroker.Topic("dup", 1))
	ctx, cl, adm := adminClients(t, c)

	resps, err := adm.DeleteTopics(ctx, "by-name")
	require.NoError(t, err)
	require.NoError(t, resps["by-name"].Err)
	_, exists := c.Topic("by-name")
	assert.False(t, exists)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	assert.False(t, topics.Has("by-name"))

	byID, _ := c.Topic("by-id")
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = 6, 10000
	unknownID := [16]byte{1, 2, 3}
	for _, e := range []struct {
		name *string
		id   [16]byte
	}{{nil, byID.ID}, {nil, unknownID}, {kmsg.StringPtr("nope"), [16]byte{}}, {kmsg.StringPtr("dup"), [16]byte{}},
		{kmsg.StringPtr("dup"), [16]byte{}}, {nil, [16]byte{}}} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic, rt.TopicID = e.name, e.id
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 5)
	type result struct {
		name string
		id   [16]byte
		code int16
		msg  string
	}
	var got []result
	for _, rt := range resp.Topics {
		r := result{id: rt.TopicID, code: rt.ErrorCode}
		if rt.Topic != nil {
			r.name = *rt.Topic
		}
		if rt.ErrorMessage != nil {
			r.msg = *rt.ErrorMessage
		}
		got = append(got, r)
	}
	assert.ElementsMatch(t, []result{
		{name: "by-id", id: byID.ID},
		{id: unknownID, code: kerr.UnknownTopicID.Code, msg: kerr.UnknownTopicID.Description},
		{name: "nope", code: kerr.UnknownTopicOrPartition.Code, msg: kerr.UnknownTopicOrPartition.Description},
		{name: "dup", code: kerr.InvalidRequest.Code, msg: "Duplicate topic name."},
		{code: kerr.InvalidRequest.Code, msg: "Neither topic name nor id were specified."},
	}, got)
	_, exists = c.Topic("by-id")
	assert.False(t, exists)
	_, exists = c.Topic("dup")
	assert.True(t, exists)

	// A deleted name can be created again, as a new topic.
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "by-name")
	require.NoError(t, err)
	require.NoError(t, created.Err)
}

// TestDeleteTopicsDisabled: with delete.topic.enable=false nothing is deleted.
func TestDeleteTopicsDisabled(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.BrokerConfig("delete.topic.enable", "false"), testbroker.Topic("kept", 1))
	ctx, _, adm := adminClients(t, c)
	resps, err := adm.DeleteTopics(ctx, "kept")
	require.NoError(t, err)
	assert.ErrorIs(t, resps["kept"].Err, kerr.TopicDeletionDisabled)
	_, exists := c.Topic("kept")
	assert.True(t, exists)
}

// TestDeletedTopicFetch: a consumer of a topic deleted under it gets an error for it on its
// next fetch rather than hanging or crashing the broker.
func TestDeletedTopicFetch(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("gone", 1))
	ctx, _, adm := adminClients(t, c)
	rc := dialRaw(t, c.Addrs()[0])
	info, _ := c.Topic("gone")

	resps, err := adm.DeleteTopics(ctx, "gone")
	require.NoError(t, err)
	require.NoError(t, resps["gone"].Err)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch = 13, -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = info.ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp := request[*kmsg.FetchResponse](t, rc, fetch)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[0].Partitions[0].ErrorCode)
}

// TestDescribeCluster lists every broker and the cluster id, and refuses controller endpoints.
func TestDescribeCluster(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ClusterID("describe-me"))
	for _, version := range []int16{0, 1, 2} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = version
		resp := roundTrip[*kmsg.DescribeClusterResponse](t, c.Addrs()[1], req)
		require.Zero(t, resp.ErrorCode, "v%d", version)
		assert.Equal(t, "describe-me", resp.ClusterID)
		require.Len(t, resp.Brokers, 3)
		for i, b := range resp.Brokers {
			assert.Equal(t, int32(i), b.NodeID)
			assert.Equal(t, c.Addrs()[i], net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	resp := roundTrip[*kmsg.DescribeClusterResponse](t, c.Addrs()[0], req)
	assert.Equal(t, kerr.MismatchedEndpointType.Code, resp.ErrorCode)
	assert.Equal(t, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER", *resp.ErrorMessage)
}

// javaHash is Java's String.hashCode, to compute Kafka's coordinator choice independently.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// TestFindCoordinator checks that a group's coordinator is the leader of the group's
// __consumer_offsets partition (abs(hashCode) mod 50, led by broker p mod N), the same from
// every broker and every version, that a transactional id's is placed the same way over
// __transaction_state, and that malformed share keys are refused.
func TestFindCoordinator(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3))
	groups := []string{"g", "orders", "payments-consumers", "ü-group", ""}
	want := func(key string) int32 {
		h := javaHash(key)
		if h < 0 {
			h = -h
		}
		return h % 50 % 3
	}
	for _, addr := range c.Addrs() {
		for _, g := range groups {
			v3 := kmsg.NewPtrFindCoordinatorRequest()
			v3.Version, v3.CoordinatorKey = 3, g
			r3 := roundTrip[*kmsg.FindCoordinatorResponse](t, addr, v3)
			require.Zero(t, r3.ErrorCode)
			assert.Equal(t, want(g), r3.NodeID, "group %q", g)
			assert.Equal(t, c.Addrs()[r3.NodeID], net.JoinHostPort(r3.Host, strconv.Itoa(int(r3.Port))))
		}
		v6 := kmsg.NewPtrFindCoordinatorRequest()
		v6.Version, v6.CoordinatorKeys = 6, groups
		r6 := roundTrip[*kmsg.FindCoordinatorResponse](t, addr, v6)
		require.Len(t, r6.Coordinators, len(groups))
		for i, rc := range r6.Coordinators {
			assert.Equal(t, groups[i], rc.Key)
			assert.Zero(t, rc.ErrorCode)
			assert.Equal(t, want(groups[i]), rc.NodeID)
		}
	}

	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.Version, txn.CoordinatorType, txn.CoordinatorKeys = 4, 1, []string{"txn-id", "orders"}
	rt := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], txn)
	for i, rc := range rt.Coordinators {
		assert.Zero(t, rc.ErrorCode)
		assert.Equal(t, want(txn.CoordinatorKeys[i]), rc.NodeID, "a transactional id's coordinator leads its __transaction_state partition")
	}

	share := kmsg.NewPtrFindCoordinatorRequest()
	share.Version, share.CoordinatorType = 6, 2
	share.CoordinatorKeys = []string{"grp:AAAAAAAAAAAAAAAAAAAAAQ:3", "grp:not-a-uuid:3", "grp:AAAAAAAAAAAAAAAAAAAAAQ"}
	rs := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], share)
	require.Len(t, rs.Coordinators, 3)
	assert.Zero(t, rs.Coordinators[0].ErrorCode)
	assert.Equal(t, want("grp:AAAAAAAAAAAAAAAAAAAAAQ:3"), rs.Coordinators[0].NodeID)
	assert.Equal(t, kerr.InvalidRequest.Code, rs.Coordinators[1].ErrorCode)
	assert.Equal(t, kerr.InvalidRequest.Code, rs.Coordinators[2].ErrorCode)

	share.Version = 5
	rs = roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], share)
	assert.Equal(t, kerr.InvalidRequest.Code, rs.Coordinators[0].ErrorCode, "share keys need v6")
}

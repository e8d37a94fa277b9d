package testbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kshare/kshare/testbroker"
)

// aclCluster starts a cluster with SASL PLAIN users admin (a super user), alice and bob, and
// the authorizer on.
func aclCluster(t *testing.T, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.SASL("PLAIN"),
		testbroker.User("admin", "admin-secret"),
		testbroker.User("alice", "alice-secret"),
		testbroker.User("bob", "bob-secret"),
		testbroker.BrokerConfig("authorizer.class.name", testbroker.StandardAuthorizer),
		testbroker.BrokerConfig("super.users", "User:admin"),
	}, opts...)...)
}

// userClient connects to c as user (password "<user>-secret").
func userClient(t *testing.T, c *testbroker.Cluster, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func aclContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createACLs creates b's ACLs as admin and fails the test on any error.
func createACLs(t *testing.T, ctx context.Context, admin *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := admin.CreateACLs(ctx, b)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ErrMessage)
	}
}

func metadataTopics(t *testing.T, ctx context.Context, cl *kgo.Client, topics ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		for _, n := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		out[*rt.Topic] = rt.ErrorCode
	}
	return out
}

func produceCode(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) error {
	t.Helper()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func TestACLsTopics(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1),
		testbroker.Topic("pub-a", 1), testbroker.Topic("pub-secret", 1))
	ctx := aclContext(t)
	admin := kadm.NewClient(userClient(t, c, "admin"))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").
		Operations(kadm.OpRead, kadm.OpWrite))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:*").AllowHosts().Topics("pub-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	createACLs(t, ctx, admin, kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("pub-secret").
		Operations(kadm.OpRead))
	alice := userClient(t, c, "alice", kgo.RecordPartitioner(kgo.ManualPartitioner()))

	t.Run("produce needs WRITE per topic", func(t *testing.T) {
		require.NoError(t, produceCode(t, ctx, alice, "t"))
		assert.ErrorIs(t, produceCode(t, ctx, alice, "secret"), kerr.TopicAuthorizationFailed)
		assert.ErrorIs(t, produceCode(t, ctx, alice, "pub-a"), kerr.TopicAuthorizationFailed, "READ does not imply WRITE")
	})
	t.Run("metadata hides what alice may not describe", func(t *testing.T) {
		all := metadataTopics(t, ctx, alice)
		assert.Equal(t, map[string]int16{"t": 0, "pub-a": 0, "pub-secret": 0}, all,
			"a DENY of READ does not deny DESCRIBE; secret is hidden")
		named := metadataTopics(t, ctx, alice, "secret", "missing", "t")
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, named["secret"])
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, named["missing"], "existence is not disclosed")
		assert.Equal(t, int16(0), named["t"])
	})
	t.Run("fetch: prefixed allow, a DENY beats it", func(t *testing.T) {
		topics, err := admin.ListTopics(ctx)
		require.NoError(t, err)
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.ReplicaID = 1<<20, -1
		for _, n := range []string{"pub-a", "pub-secret", "secret"} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = n, topics[n].ID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		got := map[[16]byte]int16{}
		for _, rt := range resp.Topics {
			got[rt.TopicID] = rt.Partitions[0].ErrorCode
		}
		assert.Equal(t, map[[16]byte]int16{topics["pub-a"].ID: 0, topics["pub-secret"].ID: kerr.TopicAuthorizationFailed.Code,
			topics["secret"].ID: kerr.TopicAuthorizationFailed.Code}, got)
	})
	t.Run("super user", func(t *testing.T) {
		require.NoError(t, produceCode(t, ctx, userClient(t, c, "admin"), "secret"))
	})
}

func TestACLsHosts(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1))
	ctx := aclContext(t)
	admin := kadm.NewClient(userClient(t, c, "admin"))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:bob").AllowHosts("10.9.9.9").Topics("t").Operations(kadm.OpDescribe))
	bob := userClient(t, c, "bob")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, metadataTopics(t, ctx, bob, "t")["t"], "allowed from another host only")
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:bob").AllowHosts("127.0.0.1").Topics("t").Operations(kadm.OpDescribe))
	assert.Equal(t, int16(0), metadataTopics(t, ctx, bob, "t")["t"])
}

func TestACLsAllowEveryoneIfNoACLFound(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("free", 1),
		testbroker.BrokerConfig("allow.everyone.if.no.acl.found", "true"))
	ctx := aclContext(t)
	bob := userClient(t, c, "bob")
	require.NoError(t, produceCode(t, ctx, bob, "free"), "no ACL on the topic")
	createACLs(t, ctx, kadm.NewClient(userClient(t, c, "admin")),
		kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("free").Operations(kadm.OpWrite))
	assert.ErrorIs(t, produceCode(t, ctx, bob, "free"), kerr.TopicAuthorizationFailed, "an ACL for someone else")
}

// aclShareHeartbeat joins group as a new member subscribed to topics and returns the response.
// It goes to broker 0, the only one, without a FindCoordinator first: a client that may not
// describe the group would fail there.
func aclShareHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, group string, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = group, "AAAAAAAAAAAAAAAAAAAAAA", topics
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	require.NoError(t, err)
	return resp
}

func TestACLsGroups(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1))
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)
	for _, g := range []string{"g-a", "h-b"} {
		require.Zero(t, aclShareHeartbeat(t, ctx, adminCl, g, "t").ErrorCode)
	}
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("g-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpRead))
	alice := userClient(t, c, "alice")

	t.Run("a missing group ACL", func(t *testing.T) {
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, aclShareHeartbeat(t, ctx, alice, "h-b", "t").ErrorCode)
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "other", "consumer", 30000, 30000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp, err := join.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.ErrorCode)

		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKeys = []string{"h-b"}
		findResp, err := find.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, findResp.Coordinators[0].ErrorCode)
		assert.Equal(t, "Group authorization failed.", *findResp.Coordinators[0].ErrorMessage)
	})
	t.Run("a missing topic ACL on the subscription", func(t *testing.T) {
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, aclShareHeartbeat(t, ctx, alice, "g-1", "t", "secret").ErrorCode)
	})
	t.Run("share fetch answers per topic", func(t *testing.T) {
		hb := aclShareHeartbeat(t, ctx, alice, "g-1", "t")
		require.Zero(t, hb.ErrorCode)
		topics, err := admin.ListTopics(ctx, "t", "secret")
		require.NoError(t, err)
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr("g-1"), hb.MemberID
		req.MaxBytes, req.MaxRecords, req.BatchSize = 1<<20, 100, 100
		for _, n := range []string{"t", "secret"} {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = topics[n].ID
			rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Zero(t, resp.ErrorCode)
		got := map[[16]byte]int16{}
		for _, rt := range resp.Topics {
			got[rt.TopicID] = rt.Partitions[0].ErrorCode
		}
		assert.Equal(t, map[[16]byte]int16{topics["t"].ID: 0, topics["secret"].ID: kerr.TopicAuthorizationFailed.Code}, got)

		ack := kmsg.NewPtrShareAcknowledgeRequest()
		ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("g-1"), hb.MemberID, 1
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = topics["secret"].ID
		rt.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
			AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}
		ack.Topics = append(ack.Topics, rt)
		ackResp, err := ack.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Len(t, ackResp.Topics, 1)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, ackResp.Topics[0].Partitions[0].ErrorCode)

		// The batches are checked before READ on the topic, as Kafka does.
		ack.ShareSessionEpoch = 2
		ack.Topics[0].Partitions[0].AcknowledgementBatches[0].FirstOffset = 5
		ackResp, err = ack.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Zero(t, ackResp.ErrorCode)
		require.Len(t, ackResp.Topics, 1)
		assert.Equal(t, kerr.InvalidRequest.Code, ackResp.Topics[0].Partitions[0].ErrorCode, "a batch whose first offset is past its last")
	})
	t.Run("share-group admin APIs", func(t *testing.T) {
		describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		for _, g := range []string{"g-a", "h-b"} {
			rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			rg.GroupID = g
			rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}
			describe.Groups = append(describe.Groups, rg)
		}
		described, err := describe.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Len(t, described.Groups, 2)
		assert.Zero(t, described.Groups[0].ErrorCode)
		codes := map[string]int16{}
		for _, rt := range described.Groups[0].Topics {
			codes[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		assert.Equal(t, map[string]int16{"t": 0, "secret": kerr.TopicAuthorizationFailed.Code}, codes)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, described.Groups[1].ErrorCode)

		alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		alter.GroupID = "h-b"
		altered, err := alter.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, altered.ErrorCode)

		del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		del.GroupID = "g-a"
		del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
		deleted, err := del.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, deleted.ErrorCode, "READ does not imply DELETE")
	})
	t.Run("consumer group heartbeat", func(t *testing.T) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = "other", "AAAAAAAAAAAAAAAAAAAAAA", 30000, []string{"t"}
		resp, err := req.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.ErrorCode)
		req.Group, req.SubscribedTopicNames = "g-c", []string{"secret"}
		resp, err = req.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.ErrorCode)
	})
	t.Run("ListGroups and describes show only what alice may describe", func(t *testing.T) {
		listed, err := kadm.NewClient(alice).ListGroups(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"g-a", "g-1"}, listed.Groups())
		allListed, err := admin.ListGroups(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"g-a", "g-1", "h-b"}, allListed.Groups(), "a super user sees every group")

		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs, req.IncludeAuthorizedOperations = []string{"g-a", "h-b"}, true
		resp, err := req.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Len(t, resp.Groups, 2)
		assert.Zero(t, resp.Groups[0].ErrorCode)
		assert.Equal(t, int32(1<<3|1<<8), resp.Groups[0].AuthorizedOperations, "READ, and DESCRIBE it implies")
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.Groups[1].ErrorCode)

		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"h-b"}
		dgResp, err := dg.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, dgResp.Groups[0].ErrorCode)
	})
}

func TestACLsAdminAPIs(t *testing.T) {
	c := aclCluster(t)
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)
	b := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead, kadm.OpWrite)
	createACLs(t, ctx, admin, b)

	described, err := admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternMatch).
		Allow().AllowHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	var ops []kadm.ACLOperation
	for _, d := range described {
		require.NoError(t, d.Err)
		for _, acl := range d.Described {
			assert.Equal(t, "orders-", acl.Name)
			assert.Equal(t, kadm.ACLPatternPrefixed, acl.Pattern)
			assert.Equal(t, "User:alice", acl.Principal)
			ops = append(ops, acl.Operation)
		}
	}
	assert.ElementsMatch(t, []kadm.ACLOperation{kadm.OpRead, kadm.OpWrite}, ops)

	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeMatch
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	bad := cr
	bad.ResourcePatternType, bad.Principal = kmsg.ACLResourcePatternTypeLiteral, "alice"
	create.Creations = []kmsg.CreateACLsRequestCreation{cr, bad}
	createResp, err := create.RequestWith(ctx, adminCl)
	require.NoError(t, err)
	require.Len(t, createResp.Results, 2)
	assert.Equal(t, kerr.InvalidRequest.Code, createResp.Results[0].ErrorCode)
	assert.Equal(t, "Invalid patternType MATCH", *createResp.Results[0].ErrorMessage)
	assert.Equal(t, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)",
		*createResp.Results[1].ErrorMessage)

	aliceResp, err := create.RequestWith(ctx, userClient(t, c, "alice"))
	require.NoError(t, err)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, aliceResp.Results[0].ErrorCode, "CreateAcls needs ALTER on the cluster")

	deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAny))
	require.NoError(t, err)
	n := 0
	for _, d := range deleted {
		require.NoError(t, d.Err)
		n += len(d.Deleted)
	}
	assert.Equal(t, 2, n)
	described, err = admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().AllowHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	for _, d := range described {
		assert.Empty(t, d.Described)
	}
}

func TestACLsWithoutAuthorizer(t *testing.T) {
	c := testbroker.StartT(t)
	ctx := aclContext(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{kmsg.NewCreateACLsRequestCreation()}
	createResp, err := create.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.SecurityDisabled.Code, createResp.Results[0].ErrorCode)
	assert.Equal(t, "No Authorizer is configured.", *createResp.Results[0].ErrorMessage)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describeResp, err := describe.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.SecurityDisabled.Code, describeResp.ErrorCode)
	assert.Equal(t, "No Authorizer is configured on the broker", *describeResp.ErrorMessage)
}

func TestACLsUnknownAuthorizerClass(t *testing.T) {
	_, err := testbroker.Start(testbroker.BrokerConfig("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Class kafka.security.authorizer.AclAuthorizer could not be found.")
}

// TestACLsReplication checks that the replica fetchers, authenticated as the inter-broker user,
// are super users: acks=all needs the follower to fetch.
func TestACLsReplication(t *testing.T) {
	c := aclCluster(t, testbroker.NumBrokers(2), testbroker.ReplicatedTopic("r", 1, 2))
	ctx := aclContext(t)
	admin := userClient(t, c, "admin", kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, produceCode(t, ctx, admin, "r"))
}

func TestACLsTopicAdministration(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1), testbroker.Topic("mine-x", 1))
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("mine-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate, kadm.OpDelete, kadm.OpAlterConfigs))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpDescribe))
	aliceCl := userClient(t, c, "alice")
	alice := kadm.NewClient(aliceCl)

	t.Run("create topics needs CREATE", func(t *testing.T) {
		res, err := alice.CreateTopics(ctx, 1, 1, nil, "mine-new", "other")
		require.NoError(t, err)
		assert.NoError(t, res["mine-new"].Err)
		assert.ErrorIs(t, res["other"].Err, kerr.TopicAuthorizationFailed)
		assert.Equal(t, "Authorization failed.", res["other"].ErrMessage)
	})
	t.Run("delete topics needs DELETE; by id the name is not disclosed", func(t *testing.T) {
		topics, err := admin.ListTopics(ctx, "secret", "t")
		require.NoError(t, err)
		req := kmsg.NewPtrDeleteTopicsRequest()
		for _, id := range [][16]byte{topics["secret"].ID, topics["t"].ID} {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.TopicID = id
			req.Topics = append(req.Topics, rt)
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("mine-x")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, aliceCl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 3)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].ErrorCode)
		assert.Nil(t, resp.Topics[0].Topic, "secret may not even be described")
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[1].ErrorCode)
		assert.Equal(t, "t", *resp.Topics[1].Topic, "t may be described")
		assert.Zero(t, resp.Topics[2].ErrorCode)
	})
	t.Run("malformed delete entries are answered before authorization", func(t *testing.T) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		for _, name := range []*string{kmsg.StringPtr("secret"), kmsg.StringPtr("secret"), nil} {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, aliceCl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 2)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].ErrorCode)
		assert.Equal(t, "Duplicate topic name.", *resp.Topics[0].ErrorMessage)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[1].ErrorCode)
		assert.Equal(t, "Neither topic name nor id were specified.", *resp.Topics[1].ErrorMessage)
	})
	t.Run("configs", func(t *testing.T) {
		describe := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "t"}, {kmsg.ConfigResourceTypeTopic, "mine-new"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			describe.Resources = append(describe.Resources, rr)
		}
		described, err := describe.RequestWith(ctx, aliceCl.Broker(0))
		require.NoError(t, err)
		require.Len(t, described.Resources, 3)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, described.Resources[0].ErrorCode, "DESCRIBE does not imply DESCRIBE_CONFIGS")
		assert.Equal(t, "Topic authorization failed.", *described.Resources[0].ErrorMessage)
		assert.Zero(t, described.Resources[1].ErrorCode, "ALTER_CONFIGS implies DESCRIBE_CONFIGS")
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, described.Resources[2].ErrorCode)

		alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, name := range []string{"mine-new", "t"} {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
			alter.Resources = append(alter.Resources, rr)
		}
		altered, err := alter.RequestWith(ctx, aliceCl.Broker(0))
		require.NoError(t, err)
		require.Len(t, altered.Resources, 2)
		assert.Zero(t, altered.Resources[0].ErrorCode)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, altered.Resources[1].ErrorCode)
	})
	t.Run("idempotent producer needs WRITE on some topic", func(t *testing.T) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		resp, err := req.RequestWith(ctx, aliceCl)
		require.NoError(t, err)
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.ErrorCode)
		resp, err = req.RequestWith(ctx, adminCl)
		require.NoError(t, err)
		assert.Zero(t, resp.ErrorCode)
	})
}

func TestACLsCommittedOffsets(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1))
	ctx := aclContext(t)
	admin := kadm.NewClient(userClient(t, c, "admin"))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("g").Operations(kadm.OpRead))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpRead))
	aliceCl := userClient(t, c, "alice")

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	for _, n := range []string{"t", "secret"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = n
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}
		commit.Topics = append(commit.Topics, rt)
	}
	commit.Version = 8 // by name
	commitResp, err := commit.RequestWith(ctx, aliceCl.Broker(0))
	require.NoError(t, err)
	got := map[string]int16{}
	for _, rt := range commitResp.Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	assert.Equal(t, map[string]int16{"t": 0, "secret": kerr.TopicAuthorizationFailed.Code}, got)

	commit.Group = "other"
	commitResp, err = commit.RequestWith(ctx, aliceCl.Broker(0))
	require.NoError(t, err)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, commitResp.Topics[0].Partitions[0].ErrorCode)

	fetched, err := kadm.NewClient(aliceCl).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	var topics []string
	for _, o := range fetched.Sorted() {
		topics = append(topics, o.Topic)
	}
	assert.Equal(t, []string{"t"}, topics, "a fetch of all offsets leaves out what alice may not describe")
}

func TestACLsTransactions(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1))
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)
	aliceCl := userClient(t, c, "alice")
	initPID := func(cl *kgo.Client) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
		resp, err := req.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		return resp
	}
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, initPID(aliceCl).ErrorCode)

	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().TransactionalIDs("tx").Operations(kadm.OpWrite))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpWrite))
	pid := initPID(aliceCl)
	require.Zero(t, pid.ErrorCode)

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "tx", pid.ProducerID, pid.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}
	// A client capped at Kafka 3.0 sends v3, the producer's own form.
	addResp, err := add.RequestWith(ctx, userClient(t, c, "alice", kgo.MaxVersions(kversion.V3_0_0())).Broker(0))
	require.NoError(t, err)
	got := map[string]int16{}
	for _, rt := range addResp.Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	assert.Equal(t, map[string]int16{"t": kerr.OperationNotAttempted.Code, "secret": kerr.TopicAuthorizationFailed.Code}, got)

	listed, err := admin.ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"tx"}, listed.TransactionalIDs())
	listed, err = kadm.NewClient(userClient(t, c, "bob")).ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, listed.TransactionalIDs(), "bob may not describe tx")

	producers := kmsg.NewPtrDescribeProducersRequest()
	producers.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "secret", Partitions: []int32{0}}}
	producersResp, err := producers.RequestWith(ctx, aliceCl.Broker(0))
	require.NoError(t, err)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, producersResp.Topics[0].Partitions[0].ErrorCode)
}

// TestACLsScramCredentials: AlterUserScramCredentials needs CLUSTER ALTER and
// DescribeUserScramCredentials CLUSTER DESCRIBE, answered as Kafka's getErrorResponse does.
func TestACLsScramCredentials(t *testing.T) {
	c := aclCluster(t)
	ctx := aclContext(t)
	alice := userClient(t, c, "alice")

	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, user := range []string{"zed", "carol"} {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, 1, 4096
		u.Salt, u.SaltedPassword = []byte("salt"), []byte("salted")
		alter.Upsertions = append(alter.Upsertions, u)
	}
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "carol", 2
	alter.Deletions = append(alter.Deletions, d)
	altered, err := alter.RequestWith(ctx, alice)
	require.NoError(t, err)
	require.Len(t, altered.Results, 2, "each user once")
	assert.Equal(t, "carol", altered.Results[0].User)
	assert.Equal(t, "zed", altered.Results[1].User)
	for _, r := range altered.Results {
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, r.ErrorCode)
		assert.Nil(t, r.ErrorMessage)
	}

	describe := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
	u.Name = "alice"
	describe.Users = append(describe.Users, u)
	described, err := describe.RequestWith(ctx, alice)
	require.NoError(t, err)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, described.ErrorCode)
	require.NotNil(t, described.ErrorMessage)
	assert.Equal(t, "Cluster authorization failed.", *described.ErrorMessage)
	require.Len(t, described.Results, 1)
	assert.Equal(t, "", described.Results[0].User, "Kafka leaves the user name out")
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, described.Results[0].ErrorCode)

	admin := kadm.NewClient(userClient(t, c, "admin"))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Clusters().
		Operations(kadm.OpAlter, kadm.OpDescribe))
	altered, err = alter.RequestWith(ctx, alice)
	require.NoError(t, err)
	for _, r := range altered.Results {
		if r.User == "zed" {
			assert.Zero(t, r.ErrorCode, "CLUSTER ALTER lets alice upsert")
		}
	}
	described, err = describe.RequestWith(ctx, alice)
	require.NoError(t, err)
	assert.Zero(t, described.ErrorCode)
}

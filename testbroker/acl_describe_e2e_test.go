package testbroker_test

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/testbroker"
)

// msgAssignedTopicsDenied is Kafka's message for a described group assigned a topic the
// client may not describe (KafkaApis.handleConsumerGroupDescribe, handleShareGroupDescribe).
const msgAssignedTopicsDenied = "The group has described topic(s) that the client is not authorized to describe."

// authorizedOperationsOmitted is the schema's value of authorized operations not computed.
const authorizedOperationsOmitted = -2147483648

// aclConsumerHeartbeat sends req to broker 0 of cl, the only one, and requires success.
func aclConsumerHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode, deref(resp.ErrorMessage))
	return resp
}

// assignedTopics returns the topic names of an assignment.
func assignedTopics(tps []kmsg.AssignmentTopicPartition) []string {
	var out []string
	for _, tp := range tps {
		out = append(out, tp.Topic)
	}
	return out
}

// TestACLsDescribeGroupsAssignedTopics: ConsumerGroupDescribe and ShareGroupDescribe answer a
// group whose members are assigned (or, for a consumer group, targeted with) a topic the
// client may not DESCRIBE with TOPIC_AUTHORIZATION_FAILED, Kafka's message and no members;
// a topic only subscribed to is not checked, and a super user sees every group whole.
func TestACLsDescribeGroupsAssignedTopics(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1))
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)

	aclConsumerHeartbeat(t, ctx, adminCl, consumerJoinRequest("cg-open", "m1", "t"))
	aclConsumerHeartbeat(t, ctx, adminCl, consumerJoinRequest("cg-secret", "m1", "secret"))
	aclConsumerHeartbeat(t, ctx, adminCl, consumerJoinRequest("cg-subscribed", "m1", "t", "missing"))
	// cg-target's member moves from t to secret: it must revoke t-0 before it gets secret-0,
	// so secret is in its target assignment only.
	aclConsumerHeartbeat(t, ctx, adminCl, consumerJoinRequest("cg-target", "m1", "t"))
	topics, err := admin.ListTopics(ctx, "t")
	require.NoError(t, err)
	move := consumerBeatRequest("cg-target", "m1", 1)
	move.SubscribedTopicNames = []string{"secret"}
	move.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topics["t"].ID, Partitions: []int32{0}}}
	aclConsumerHeartbeat(t, ctx, adminCl, move)
	target, ok := c.ConsumerGroup("cg-target")
	require.True(t, ok)
	require.Len(t, target.Members, 1)
	for _, tp := range target.Members[0].Assignment {
		require.NotEqual(t, "secret", tp.Topic, "secret is not yet assigned")
	}
	require.Len(t, target.Members[0].TargetAssignment, 1)
	require.Equal(t, "secret", target.Members[0].TargetAssignment[0].Topic)

	for g, topics := range map[string][]string{"sg-open": {"t"}, "sg-secret": {"secret"}, "sg-subscribed": {"t", "missing"}} {
		require.Zero(t, aclShareHeartbeat(t, ctx, adminCl, g, topics...).ErrorCode)
	}
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("cg-", "sg-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpDescribe))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpDescribe))
	alice := userClient(t, c, "alice")

	consumerGroups := []string{"cg-open", "cg-secret", "cg-subscribed", "cg-target"}
	describeConsumer := func(cl *kgo.Client) map[string]kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups, req.IncludeAuthorizedOperations = consumerGroups, true
		resp, err := req.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		out := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
		for _, g := range resp.Groups {
			out[g.Group] = g
		}
		require.Len(t, out, len(consumerGroups))
		return out
	}
	t.Run("ConsumerGroupDescribe", func(t *testing.T) {
		got := describeConsumer(alice)
		for _, id := range []string{"cg-secret", "cg-target"} {
			g := got[id]
			assert.Equal(t, kerr.TopicAuthorizationFailed.Code, g.ErrorCode, id)
			assert.Equal(t, msgAssignedTopicsDenied, deref(g.ErrorMessage), id)
			assert.Empty(t, g.Members, id)
			assert.Empty(t, g.State, id)
			assert.Zero(t, g.Epoch, id)
			assert.Empty(t, g.AssignorName, id)
			assert.Equal(t, int32(authorizedOperationsOmitted), g.AuthorizedOperations, id)
		}
		open := got["cg-open"]
		require.Zero(t, open.ErrorCode)
		require.Len(t, open.Members, 1)
		assert.Equal(t, []string{"t"}, assignedTopics(open.Members[0].Assignment.TopicPartitions))
		assert.Equal(t, int32(1<<8), open.AuthorizedOperations)
		subscribed := got["cg-subscribed"]
		require.Zero(t, subscribed.ErrorCode, "a subscribed topic is not checked")
		require.Len(t, subscribed.Members, 1)
		assert.ElementsMatch(t, []string{"t", "missing"}, subscribed.Members[0].SubscribedTopics)

		for id, g := range describeConsumer(adminCl) {
			assert.Zero(t, g.ErrorCode, id)
			assert.Len(t, g.Members, 1, id)
		}
	})

	shareGroups := []string{"sg-open", "sg-secret", "sg-subscribed"}
	describeShare := func(cl *kgo.Client) map[string]kmsg.ShareGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs, req.IncludeAuthorizedOperations = shareGroups, true
		resp, err := req.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		out := map[string]kmsg.ShareGroupDescribeResponseGroup{}
		for _, g := range resp.Groups {
			out[g.GroupID] = g
		}
		require.Len(t, out, len(shareGroups))
		return out
	}
	t.Run("ShareGroupDescribe", func(t *testing.T) {
		got := describeShare(alice)
		secret := got["sg-secret"]
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, secret.ErrorCode)
		assert.Equal(t, msgAssignedTopicsDenied, deref(secret.ErrorMessage))
		assert.Empty(t, secret.Members)
		assert.Empty(t, secret.GroupState)
		assert.Empty(t, secret.Assignor)
		assert.Equal(t, int32(authorizedOperationsOmitted), secret.AuthorizedOperations)
		open := got["sg-open"]
		require.Zero(t, open.ErrorCode)
		require.Len(t, open.Members, 1)
		require.Len(t, open.Members[0].Assignment.TopicPartitions, 1)
		assert.Equal(t, "t", open.Members[0].Assignment.TopicPartitions[0].Topic)
		subscribed := got["sg-subscribed"]
		require.Zero(t, subscribed.ErrorCode, "a subscribed topic is not checked")
		require.Len(t, subscribed.Members, 1)
		assert.True(t, slices.Contains(subscribed.Members[0].SubscribedTopicNames, "missing"))

		for id, g := range describeShare(adminCl) {
			assert.Zero(t, g.ErrorCode, id)
			assert.Len(t, g.Members, 1, id)
		}
	})
}

// TestACLsClusterAuthorizedOperations: Metadata (v8-10) and DescribeCluster answer the
// cluster's authorized operations 0 to a client that may not DESCRIBE the cluster, the
// operations it may perform once it may, and the schema's default when not asked.
func TestACLsClusterAuthorizedOperations(t *testing.T) {
	c := aclCluster(t)
	ctx := aclContext(t)
	// Metadata v10 is the last with cluster authorized operations.
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(3, 10)
	alice10 := userClient(t, c, "alice", kgo.MaxVersions(v10))
	alice := userClient(t, c, "alice")
	ops := func(cl *kgo.Client, maxMetadata int16, include bool) (metadata, cluster int32) {
		t.Helper()
		meta := kmsg.NewPtrMetadataRequest()
		meta.Topics, meta.IncludeClusterAuthorizedOperations = []kmsg.MetadataRequestTopic{}, include
		mresp, err := meta.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		require.Equal(t, maxMetadata, mresp.Version)
		describe := kmsg.NewPtrDescribeClusterRequest()
		describe.IncludeClusterAuthorizedOperations = include
		dresp, err := describe.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		require.Zero(t, dresp.ErrorCode)
		return mresp.AuthorizedOperations, dresp.ClusterAuthorizedOperations
	}

	m, d := ops(alice10, 10, true)
	assert.Zero(t, m, "Metadata: DESCRIBE on the cluster denied")
	assert.Zero(t, d, "DescribeCluster: DESCRIBE on the cluster denied")
	m, d = ops(alice10, 10, false)
	assert.Equal(t, int32(authorizedOperationsOmitted), m)
	assert.Equal(t, int32(authorizedOperationsOmitted), d)

	createACLs(t, ctx, kadm.NewClient(userClient(t, c, "admin")),
		kadm.NewACLs().Allow("User:alice").AllowHosts().Clusters().Operations(kadm.OpDescribe, kadm.OpIdempotentWrite))
	m, d = ops(alice10, 10, true)
	assert.Equal(t, int32(1<<8|1<<12), m)
	assert.Equal(t, int32(1<<8|1<<12), d)
	m, d = ops(alice, 13, true)
	assert.Equal(t, int32(authorizedOperationsOmitted), m, "Metadata v11+ has no cluster authorized operations")
	assert.Equal(t, int32(1<<8|1<<12), d)
}

// TestACLsJoinGroupDenied: a JoinGroup without READ on the group is answered as Kafka's
// JoinGroupRequest.getErrorResponse answers it, with an empty member id whatever the request
// sent.
func TestACLsJoinGroupDenied(t *testing.T) {
	c := aclCluster(t)
	ctx := aclContext(t)
	// Kafka 2.3 clients send JoinGroup v5, whose protocol name is not nullable.
	for version, alice := range map[int16]*kgo.Client{5: userClient(t, c, "alice", kgo.MaxVersions(kversion.V2_3_0())), 9: userClient(t, c, "alice")} {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = "g", "consumer-1-0b5d2f6e", "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp, err := join.RequestWith(ctx, alice.Broker(0))
		require.NoError(t, err)
		require.Equal(t, version, resp.Version)
		assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.ErrorCode, "v%d", version)
		assert.Empty(t, resp.MemberID, "v%d", version)
		assert.Equal(t, int32(-1), resp.Generation, "v%d", version)
		assert.Empty(t, resp.LeaderID, "v%d", version)
		assert.Empty(t, resp.Members, "v%d", version)
		if version < 7 {
			assert.Equal(t, "", deref(resp.Protocol), "v%d: not nullable", version)
		} else {
			assert.Nil(t, resp.Protocol, "v%d", version)
		}
	}
}

// TestACLsFindCoordinatorDeniedCreatesNoTopic: a FindCoordinator the principal may not make
// creates no internal topic; the first allowed one does. A share key sent below v6 is
// INVALID_REQUEST before CLUSTER_ACTION is checked, as in KafkaApis.getCoordinator.
func TestACLsFindCoordinatorDeniedCreatesNoTopic(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1))
	ctx := aclContext(t)
	alice := userClient(t, c, "alice")
	topics, err := kadm.NewClient(userClient(t, c, "admin")).ListTopics(ctx, "t")
	require.NoError(t, err)
	tid := topics["t"].ID
	shareKey := "g:" + base64.RawURLEncoding.EncodeToString(tid[:]) + ":0"

	find := func(cl *kgo.Client, typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
		t.Helper()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = typ, []string{key}
		resp, err := req.RequestWith(ctx, cl.Broker(0))
		require.NoError(t, err)
		require.Len(t, resp.Coordinators, 1)
		return resp.Coordinators[0]
	}
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, find(alice, 0, "g").ErrorCode)
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, find(alice, 1, "txn").ErrorCode)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, find(alice, 2, shareKey).ErrorCode)
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(10, 5)
	assert.Equal(t, kerr.InvalidRequest.Code, find(userClient(t, c, "alice", kgo.MaxVersions(v5)), 2, shareKey).ErrorCode,
		"share keys need v6, checked before CLUSTER_ACTION")
	internal := func() []string {
		var names []string
		for _, ti := range c.Topics() {
			if ti.Name != "t" {
				names = append(names, ti.Name)
			}
		}
		return names
	}
	assert.Empty(t, internal(), "a denied lookup creates no internal topic")

	adminCl := userClient(t, c, "admin")
	require.Zero(t, find(adminCl, 0, "g").ErrorCode)
	require.Zero(t, find(adminCl, 1, "txn").ErrorCode)
	require.Zero(t, find(adminCl, 2, shareKey).ErrorCode)
	assert.ElementsMatch(t, []string{"__consumer_offsets", "__transaction_state", "__share_group_state"}, internal())
}

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

// consumerJoinRequest builds a ConsumerGroupHeartbeat v1 that joins group with topics.
func consumerJoinRequest(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// consumerBeatRequest builds a ConsumerGroupHeartbeat v1 at epoch that changes nothing.
func consumerBeatRequest(group, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	return req
}

func consumerHeartbeat(t *testing.T, rc *rawConn, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	return request[*kmsg.ConsumerGroupHeartbeatResponse](t, rc, req)
}

func describeConsumerGroups(t *testing.T, rc *rawConn, includeOps bool, groups ...string) []kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups, req.IncludeAuthorizedOperations = 1, groups, includeOps
	resp := request[*kmsg.ConsumerGroupDescribeResponse](t, rc, req)
	require.Len(t, resp.Groups, len(groups))
	return resp.Groups
}

// TestConsumerGroupHeartbeatWire joins, describes and leaves a consumer group with raw
// requests, and checks validation over the wire.
func TestConsumerGroupHeartbeatWire(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 3))
	rc := dialRaw(t, c.Addrs()[0])
	tid := topicIDOf(t, c, "t")

	resp := consumerHeartbeat(t, rc, consumerJoinRequest("g", "m1", "t"))
	require.Zero(t, resp.ErrorCode, deref(resp.ErrorMessage))
	assert.Equal(t, "m1", deref(resp.MemberID))
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis, "group.consumer.heartbeat.interval.ms")
	require.NotNil(t, resp.Assignment)
	require.Len(t, resp.Assignment.Topics, 1)
	assert.Equal(t, tid, resp.Assignment.Topics[0].TopicID)
	assert.Equal(t, []int32{0, 1, 2}, resp.Assignment.Topics[0].Partitions)

	keep := consumerHeartbeat(t, rc, consumerBeatRequest("g", "m1", 1))
	require.Zero(t, keep.ErrorCode)
	assert.Nil(t, keep.Assignment, "nothing changed")

	g := describeConsumerGroups(t, rc, true, "g")[0]
	require.Zero(t, g.ErrorCode)
	assert.Equal(t, "Stable", g.State)
	assert.Equal(t, int32(1), g.Epoch)
	assert.Equal(t, int32(1), g.AssignmentEpoch)
	assert.Equal(t, "uniform", g.AssignorName)
	assert.Equal(t, int32(1<<3|1<<6|1<<8|1<<10|1<<11), g.AuthorizedOperations)
	require.Len(t, g.Members, 1)
	m := g.Members[0]
	assert.Equal(t, "m1", m.MemberID)
	assert.Equal(t, "raw-test", m.ClientID)
	assert.Equal(t, []string{"t"}, m.SubscribedTopics)
	assert.Equal(t, int8(1), m.MemberType)
	require.Len(t, m.Assignment.TopicPartitions, 1)
	assert.Equal(t, "t", m.Assignment.TopicPartitions[0].Topic)
	assert.Equal(t, m.Assignment, m.TargetAssignment)

	invalid := consumerJoinRequest("g", "m2", "t")
	invalid.RebalanceTimeoutMillis = -1
	bad := consumerHeartbeat(t, rc, invalid)
	assert.Equal(t, kerr.InvalidRequest.Code, bad.ErrorCode)
	assert.Equal(t, "RebalanceTimeoutMs must be provided in first request.", deref(bad.ErrorMessage))
	regex := consumerJoinRequest("g", "m2")
	regex.SubscribedTopicNames, regex.SubscribedTopicRegex = nil, kmsg.StringPtr("(")
	bad = consumerHeartbeat(t, rc, regex)
	assert.Equal(t, kerr.InvalidRegularExpression.Code, bad.ErrorCode)
	assert.Equal(t, "SubscribedTopicRegex `(` is not a valid regular expression: missing closing ).", deref(bad.ErrorMessage))

	left := consumerHeartbeat(t, rc, consumerBeatRequest("g", "m1", -1))
	require.Zero(t, left.ErrorCode)
	assert.Equal(t, int32(-1), left.MemberEpoch)
	info, ok := c.ConsumerGroup("g")
	require.True(t, ok)
	assert.Equal(t, "Empty", info.State)
	assert.Equal(t, int32(2), info.GroupEpoch)
}

// TestConsumerGroupWrongType sends every consumer group RPC to a share group and to missing
// groups, and checks Kafka's codes and messages. (The classic group cases are tested in
// internal/group: this worktree has no classic group protocol to create one with.)
func TestConsumerGroupWrongType(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "sg", "s1", 0, "t"))

	tests := []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		msg  string
	}{
		{"join a share group", consumerJoinRequest("sg", "m1", "t"), "Group sg is not a consumer group."},
		{"heartbeat a share group", consumerBeatRequest("sg", "m1", 3), "Group sg is not a consumer group."},
		{"leave a share group", consumerBeatRequest("sg", "m1", -1), "Group sg is not a consumer group."},
		{"heartbeat a missing group", consumerBeatRequest("nope", "m1", 3), "Consumer group nope not found."},
		{"leave a missing group", consumerBeatRequest("nope", "m1", -1), "Group nope not found."},
	}
	for _, tt := range tests {
		resp := consumerHeartbeat(t, rc, tt.req)
		assert.Equal(t, kerr.GroupIDNotFound.Code, resp.ErrorCode, tt.name)
		assert.Equal(t, tt.msg, deref(resp.ErrorMessage), tt.name)
	}
	_, ok := c.ConsumerGroup("nope")
	assert.False(t, ok, "no heartbeat above created a group")

	groups := describeConsumerGroups(t, rc, false, "sg", "nope", "")
	assert.Equal(t, kerr.GroupIDNotFound.Code, groups[0].ErrorCode)
	assert.Equal(t, "Group sg is not a consumer group.", deref(groups[0].ErrorMessage))
	assert.Equal(t, kerr.GroupIDNotFound.Code, groups[1].ErrorCode)
	assert.Equal(t, "Group nope not found.", deref(groups[1].ErrorMessage))
	assert.Equal(t, kerr.InvalidGroupID.Code, groups[2].ErrorCode)
	assert.Equal(t, int32(-2147483648), groups[0].AuthorizedOperations)

	// And the other way round: a share heartbeat on a consumer group.
	require.Zero(t, consumerHeartbeat(t, rc, consumerJoinRequest("cg", "m1", "t")).ErrorCode)
	share := shareHeartbeat(t, rc, "cg", "s1", 0, "t")
	assert.Equal(t, kerr.GroupIDNotFound.Code, share.ErrorCode)
	assert.Equal(t, "Group cg is not a share group.", deref(share.ErrorMessage))
	sd := describeShareGroups(t, rc, false, "cg")[0]
	assert.Equal(t, "Group cg is not a share group.", deref(sd.ErrorMessage))
}

// TestConsumerGroupNotCoordinator sends the heartbeat to every broker: only the coordinator
// answers, the others say NOT_COORDINATOR after validating the request.
func TestConsumerGroupNotCoordinator(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 3))
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKeys = 4, []string{"g"}
	found := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], find)
	coordinator := found.Coordinators[0].NodeID
	for node, addr := range c.Addrs() {
		rc := dialRaw(t, addr)
		resp := consumerHeartbeat(t, rc, consumerJoinRequest("g", "m-"+addr, "t"))
		described := describeConsumerGroups(t, rc, false, "g")[0]
		if int32(node) == coordinator {
			assert.Zero(t, resp.ErrorCode)
			assert.Zero(t, described.ErrorCode)
			continue
		}
		assert.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode, "broker %d", node)
		assert.Equal(t, kerr.NotCoordinator.Code, described.ErrorCode, "broker %d", node)
		invalid := consumerHeartbeat(t, rc, consumerBeatRequest("g", "", 3))
		assert.Equal(t, kerr.InvalidRequest.Code, invalid.ErrorCode, "validation comes first")
	}
}

// TestConsumerGroupSessionTimeoutOnClusterClock expires a member on the manual clock, with
// the session timeout of the group's config.
func TestConsumerGroupSessionTimeoutOnClusterClock(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1), testbroker.WithManualClock(time.Unix(1_700_000_000, 0)))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, consumerHeartbeat(t, rc, consumerJoinRequest("g", "m1", "t")).ErrorCode)
	c.ManualClock().Advance(44 * time.Second)
	require.Zero(t, consumerHeartbeat(t, rc, consumerBeatRequest("g", "m1", 1)).ErrorCode)
	c.ManualClock().Advance(44 * time.Second)
	info, _ := c.ConsumerGroup("g")
	assert.Len(t, info.Members, 1, "the heartbeat restarted the 45s session")
	c.ManualClock().Advance(2 * time.Second)
	info, _ = c.ConsumerGroup("g")
	assert.Empty(t, info.Members)
	resp := consumerHeartbeat(t, rc, consumerBeatRequest("g", "m1", 1))
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode)
	assert.Equal(t, "Member m1 is not a member of group g.", deref(resp.ErrorMessage))
}

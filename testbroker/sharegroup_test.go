package testbroker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// shareHeartbeatRequest builds a ShareGroupHeartbeat v1; no topics means a null
// SubscribedTopicNames.
func shareHeartbeatRequest(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	return req
}

func shareHeartbeat(t *testing.T, rc *rawConn, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	return request[*kmsg.ShareGroupHeartbeatResponse](t, rc, shareHeartbeatRequest(group, member, epoch, topics...))
}

// requireHeartbeatOK fails the test with the error the heartbeat got, if any.
func requireHeartbeatOK(t *testing.T, resp *kmsg.ShareGroupHeartbeatResponse) {
	t.Helper()
	require.Zero(t, resp.ErrorCode, "%v: %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func describeShareGroups(t *testing.T, rc *rawConn, includeOps bool, groups ...string) []kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version, req.GroupIDs, req.IncludeAuthorizedOperations = 1, groups, includeOps
	resp := request[*kmsg.ShareGroupDescribeResponse](t, rc, req)
	require.Len(t, resp.Groups, len(groups))
	return resp.Groups
}

// assigned flattens a heartbeat assignment to partitions by topic id.
func assigned(a *kmsg.ShareGroupHeartbeatResponseAssignment) map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	for _, tp := range a.TopicPartitions {
		out[tp.TopicID] = tp.Partitions
	}
	return out
}

func topicIDOf(t *testing.T, c *testbroker.Cluster, name string) [16]byte {
	t.Helper()
	info, ok := c.Topic(name)
	require.True(t, ok, name)
	return info.ID
}

// TestShareGroupHeartbeatValidation sends every malformed heartbeat Kafka's coordinator refuses
// before looking at the group, and checks the code and the exact message.
func TestShareGroupHeartbeatValidation(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])

	withRack := func(rack string) *kmsg.ShareGroupHeartbeatRequest {
		req := shareHeartbeatRequest("g", "m", 0, "t")
		req.RackID = &rack
		return req
	}
	tests := []struct {
		name    string
		req     *kmsg.ShareGroupHeartbeatRequest
		code    *kerr.Error
		message string
	}{
		{"empty member id", shareHeartbeatRequest("g", "", 0, "t"), kerr.InvalidRequest, "MemberId can't be empty."},
		{"blank member id", shareHeartbeatRequest("g", "  ", 3), kerr.InvalidRequest, "MemberId can't be empty."},
		{"empty group id", shareHeartbeatRequest("", "m", 0, "t"), kerr.InvalidRequest, "GroupId can't be empty."},
		{"empty rack id", withRack(""), kerr.InvalidRequest, "RackId can't be empty."},
		{"blank rack id", withRack(" "), kerr.InvalidRequest, "RackId can't be empty."},
		{"join without topics", shareHeartbeatRequest("g", "m", 0), kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."},
		{"epoch -2", shareHeartbeatRequest("g", "m", -2), kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"unknown group", shareHeartbeatRequest("g", "m", 1), kerr.GroupIDNotFound, "Share group g not found."},
		{"leave unknown group", shareHeartbeatRequest("g", "m", -1), kerr.GroupIDNotFound, "Group g not found."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request[*kmsg.ShareGroupHeartbeatResponse](t, rc, tt.req)
			assert.Equal(t, tt.code.Code, resp.ErrorCode)
			assert.Equal(t, tt.message, deref(resp.ErrorMessage))
			assert.Nil(t, resp.MemberID)
			assert.Nil(t, resp.Assignment)
		})
	}
	assert.Empty(t, c.ShareGroups(), "no refused heartbeat creates a group")
}

// TestShareGroupJoinHeartbeatLeave runs a member's life: the join gets an epoch, the default
// heartbeat interval and every partition; a plain heartbeat gets no assignment, a full one
// does; the leave echoes epoch -1 and a second leave is UNKNOWN_MEMBER_ID.
func TestShareGroupJoinHeartbeatLeave(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 3))
	rc := dialRaw(t, c.Addrs()[0])
	tid := topicIDOf(t, c, "t")

	resp := shareHeartbeat(t, rc, "g", "m1", 0, "t", "missing")
	requireHeartbeatOK(t, resp)
	assert.Equal(t, "m1", deref(resp.MemberID))
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis, "group.share.heartbeat.interval.ms")
	require.NotNil(t, resp.Assignment)
	assert.Equal(t, map[[16]byte][]int32{tid: {0, 1, 2}}, assigned(resp.Assignment), "a topic that does not exist is not assigned")

	resp = shareHeartbeat(t, rc, "g", "m1", 1)
	requireHeartbeatOK(t, resp)
	assert.Nil(t, resp.Assignment, "nothing changed")
	resp = shareHeartbeat(t, rc, "g", "m1", 1, "t", "missing")
	requireHeartbeatOK(t, resp)
	require.NotNil(t, resp.Assignment, "a full request gets the assignment")

	resp = shareHeartbeat(t, rc, "g", "unknown", 1)
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode)
	assert.Equal(t, "Member unknown is not a member of group g.", deref(resp.ErrorMessage))

	resp = shareHeartbeat(t, rc, "g", "m1", -1)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, "m1", deref(resp.MemberID))
	assert.Equal(t, int32(-1), resp.MemberEpoch)
	assert.Nil(t, resp.Assignment)
	info, ok := c.ShareGroup("g")
	require.True(t, ok)
	assert.Equal(t, "Empty", info.State)
	assert.Equal(t, int32(2), info.GroupEpoch)

	resp = shareHeartbeat(t, rc, "g", "m1", -1)
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode)
	assert.Equal(t, "Member m1 is not a member of group g.", deref(resp.ErrorMessage))
	assert.Equal(t, []string{"g"}, c.ShareGroups(), "an empty share group stays")
}

// TestShareGroupSpreadAndFencing joins three members to a 4-partition topic: each joiner bumps
// the group epoch, the others take their share at their next heartbeat, and epochs that are
// neither current nor previous are fenced.
func TestShareGroupSpreadAndFencing(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 4))
	rc := dialRaw(t, c.Addrs()[0])
	tid := topicIDOf(t, c, "t")

	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "a", 0, "t"))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "b", 0, "t"))
	resp := shareHeartbeat(t, rc, "g", "c", 0, "t")
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[[16]byte][]int32{tid: {2}}, assigned(resp.Assignment))

	resp = shareHeartbeat(t, rc, "g", "a", 1)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[[16]byte][]int32{tid: {0, 3}}, assigned(resp.Assignment))
	resp = shareHeartbeat(t, rc, "g", "b", 2)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, map[[16]byte][]int32{tid: {1}}, assigned(resp.Assignment))

	resp = shareHeartbeat(t, rc, "g", "a", 4)
	assert.Equal(t, kerr.FencedMemberEpoch.Code, resp.ErrorCode)
	assert.Equal(t, "The share group member has a greater member epoch (4) than the one known by the group coordinator (3). The member must abandon all its partitions and rejoin.", deref(resp.ErrorMessage))
	resp = shareHeartbeat(t, rc, "g", "a", 2)
	assert.Equal(t, kerr.FencedMemberEpoch.Code, resp.ErrorCode)
	assert.Equal(t, "The share group member has a smaller member epoch (2) than the one known by the group coordinator (3), and it does not match the previous member epoch (1). The member must abandon all its partitions and rejoin.", deref(resp.ErrorMessage))
	resp = shareHeartbeat(t, rc, "g", "a", 1)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(3), resp.MemberEpoch, "the previous epoch is accepted: its response may have been lost")
}

// TestShareGroupMaxSize refuses a member past group.share.max.size, while members already in
// the group keep heartbeating.
func TestShareGroupMaxSize(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1), testbroker.BrokerConfig("group.share.max.size", "2"))
	rc := dialRaw(t, c.Addrs()[0])
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "a", 0, "t"))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "b", 0, "t"))

	resp := shareHeartbeat(t, rc, "g", "c", 0, "t")
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode)
	assert.Equal(t, "The share group has reached its maximum capacity of 2 members.", deref(resp.ErrorMessage))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "a", 1))
	info, _ := c.ShareGroup("g")
	assert.Len(t, info.Members, 2)
}

// TestShareGroupHeartbeatIntervalFromGroupConfig: share.heartbeat.interval.ms set for the group
// with IncrementalAlterConfigs overrides the broker's 5000 in the next response.
func TestShareGroupHeartbeatIntervalFromGroupConfig(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	resp := shareHeartbeat(t, rc, "g", "a", 0, "t")
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis)

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	r.Configs = append(r.Configs, setOp("share.heartbeat.interval.ms", "7000"))
	alter.Resources = append(alter.Resources, r)
	alterResp := request[*kmsg.IncrementalAlterConfigsResponse](t, rc, alter)
	require.Len(t, alterResp.Resources, 1)
	require.Zero(t, alterResp.Resources[0].ErrorCode, deref(alterResp.Resources[0].ErrorMessage))

	resp = shareHeartbeat(t, rc, "g", "a", 1)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(7000), resp.HeartbeatIntervalMillis)
	resp = shareHeartbeat(t, rc, "other", "a", 0, "t")
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis, "other groups keep the broker's value")
}

// TestShareGroupNewPartitionsReachMember: partitions added to a subscribed topic, and a
// subscribed topic created after the join, reach the member at its next heartbeat with a new
// epoch.
func TestShareGroupNewPartitionsReachMember(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	tid := topicIDOf(t, c, "t")
	resp := shareHeartbeat(t, rc, "g", "a", 0, "t", "later")
	requireHeartbeatOK(t, resp)
	assert.Equal(t, map[[16]byte][]int32{tid: {0}}, assigned(resp.Assignment))

	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.Version, grow.TimeoutMillis = 3, 5000
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = "t", 3
	grow.Topics = append(grow.Topics, gt)
	growResp := request[*kmsg.CreatePartitionsResponse](t, rc, grow)
	require.Len(t, growResp.Topics, 1)
	require.Zero(t, growResp.Topics[0].ErrorCode)

	resp = shareHeartbeat(t, rc, "g", "a", 1)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(2), resp.MemberEpoch)
	require.NotNil(t, resp.Assignment)
	assert.Equal(t, map[[16]byte][]int32{tid: {0, 1, 2}}, assigned(resp.Assignment))

	require.NoError(t, c.CreateTopic("later", 2, nil))
	resp = shareHeartbeat(t, rc, "g", "a", 2)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[[16]byte][]int32{tid: {0, 1, 2}, topicIDOf(t, c, "later"): {0, 1}}, assigned(resp.Assignment))

	resp = shareHeartbeat(t, rc, "g", "a", 3)
	requireHeartbeatOK(t, resp)
	assert.Nil(t, resp.Assignment, "no change, no assignment")
}

// TestShareGroupNotCoordinator sends a heartbeat and a describe to every broker of a 3-broker
// cluster: only the coordinator FindCoordinator names serves them; the others answer
// NOT_COORDINATOR, after validating the heartbeat.
func TestShareGroupNotCoordinator(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 3))
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKeys = 4, []string{"g"}
	found := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], find)
	require.Len(t, found.Coordinators, 1)
	coordinator := found.Coordinators[0].NodeID

	for node, addr := range c.Addrs() {
		rc := dialRaw(t, addr)
		resp := shareHeartbeat(t, rc, "g", "m-"+addr, 0, "t")
		described := describeShareGroups(t, rc, false, "g")[0]
		if int32(node) == coordinator {
			requireHeartbeatOK(t, resp)
			assert.Zero(t, described.ErrorCode)
			continue
		}
		assert.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode, "broker %d", node)
		assert.Nil(t, resp.ErrorMessage)
		assert.Equal(t, kerr.NotCoordinator.Code, described.ErrorCode, "broker %d", node)
		invalid := shareHeartbeat(t, rc, "g", "m", -2)
		assert.Equal(t, kerr.InvalidRequest.Code, invalid.ErrorCode, "validation comes first")
	}
	info, ok := c.ShareGroup("g")
	require.True(t, ok)
	assert.Len(t, info.Members, 1)
}

// TestShareGroupDescribe describes a group with two members, a missing group and an empty id,
// with and without authorized operations.
func TestShareGroupDescribe(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("a", 2), testbroker.Topic("b", 1))
	rc := dialRaw(t, c.Addrs()[0])
	ta, tb := topicIDOf(t, c, "a"), topicIDOf(t, c, "b")
	join := shareHeartbeatRequest("g", "m1", 0, "b", "a")
	join.RackID = kmsg.StringPtr("rack-1")
	requireHeartbeatOK(t, request[*kmsg.ShareGroupHeartbeatResponse](t, rc, join))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "m2", 0, "a"))

	groups := describeShareGroups(t, rc, false, "g", "missing", "")
	g := groups[0]
	require.Zero(t, g.ErrorCode)
	assert.Nil(t, g.ErrorMessage)
	assert.Equal(t, "g", g.GroupID)
	assert.Equal(t, "Stable", g.GroupState)
	assert.Equal(t, int32(2), g.GroupEpoch)
	assert.Equal(t, int32(2), g.AssignmentEpoch)
	assert.Equal(t, "simple", g.Assignor)
	assert.Equal(t, int32(-2147483648), g.AuthorizedOperations)
	require.Len(t, g.Members, 2)

	m1, m2 := g.Members[0], g.Members[1]
	assert.Equal(t, "m1", m1.MemberID)
	assert.Equal(t, "rack-1", deref(m1.RackID))
	assert.Equal(t, int32(1), m1.MemberEpoch, "m1 has not heartbeated since m2 joined")
	assert.Equal(t, "raw-test", m1.ClientID)
	assert.Equal(t, "/127.0.0.1", m1.ClientHost)
	assert.Equal(t, []string{"a", "b"}, m1.SubscribedTopicNames)
	assert.Equal(t, []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{
		{TopicID: ta, Topic: "a", Partitions: []int32{0, 1}},
		{TopicID: tb, Topic: "b", Partitions: []int32{0}},
	}, m1.Assignment.TopicPartitions)
	assert.Equal(t, "m2", m2.MemberID)
	assert.Nil(t, m2.RackID)
	assert.Equal(t, int32(2), m2.MemberEpoch)
	assert.Equal(t, []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{
		{TopicID: ta, Topic: "a", Partitions: []int32{1}},
	}, m2.Assignment.TopicPartitions)

	assert.Equal(t, "missing", groups[1].GroupID)
	assert.Equal(t, kerr.GroupIDNotFound.Code, groups[1].ErrorCode)
	assert.Equal(t, "Group missing not found.", deref(groups[1].ErrorMessage))
	assert.Equal(t, kerr.InvalidGroupID.Code, groups[2].ErrorCode)

	withOps := describeShareGroups(t, rc, true, "g")[0]
	assert.Equal(t, int32(3400), withOps.AuthorizedOperations, "READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS")

	info, ok := c.ShareGroup("g")
	require.True(t, ok)
	assert.Equal(t, testbroker.ShareMemberInfo{
		MemberID: "m2", MemberEpoch: 2, PreviousMemberEpoch: 0, ClientID: "raw-test", ClientHost: "/127.0.0.1",
		SubscribedTopicNames: []string{"a"},
		Assignment:           []testbroker.TopicPartitions{{TopicID: ta, Topic: "a", Partitions: []int32{1}}},
	}, info.Members[1])
	_, ok = c.ShareGroup("missing")
	assert.False(t, ok)
}

// TestShareGroupDescribeWithKadm describes a share group through franz-go's admin client on a
// 3-broker cluster: kadm finds the coordinator and decodes what it answers.
func TestShareGroupDescribeWithKadm(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 3))
	ctx, _, adm := adminClients(t, c)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKeys = 4, []string{"g"}
	found := roundTrip[*kmsg.FindCoordinatorResponse](t, c.Addrs()[0], find)
	rc := dialRaw(t, c.Addrs()[found.Coordinators[0].NodeID])
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "m1", 0, "t"))

	described, err := adm.DescribeShareGroups(ctx, "g")
	require.NoError(t, err)
	g := described["g"]
	require.NoError(t, g.Err)
	assert.Equal(t, found.Coordinators[0].NodeID, g.Coordinator.NodeID)
	assert.Equal(t, "Stable", g.GroupState)
	assert.Equal(t, "simple", g.Assignor)
	require.Len(t, g.Members, 1)
	assert.Equal(t, kadm.TopicsSet{"t": {0: {}, 1: {}, 2: {}}}, g.Members[0].Assignment)

	described, err = adm.DescribeShareGroups(ctx, "missing")
	require.NoError(t, err)
	assert.ErrorIs(t, described["missing"].Err, kerr.GroupIDNotFound)
}

// TestShareGroupSessionTimeout runs on the manual clock: a member that stops heartbeating is
// still in the group 1ms before group.share.session.timeout.ms and gone at it, with the group
// epoch bumped; the remaining member takes every partition at its next heartbeat.
func TestShareGroupSessionTimeout(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(time.Unix(0, 0)), testbroker.Topic("t", 2))
	clk := c.ManualClock()
	rc := dialRaw(t, c.Addrs()[0])
	tid := topicIDOf(t, c, "t")
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "quiet", 0, "t"))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "busy", 0, "t"))

	for range 2 { // busy heartbeats every 15s; quiet never again
		clk.Advance(15 * time.Second)
		requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "busy", 2))
	}
	clk.Advance(15*time.Second - time.Millisecond)
	info, _ := c.ShareGroup("g")
	require.Len(t, info.Members, 2, "quiet's session has 1ms left")
	clk.Advance(time.Millisecond)
	info, _ = c.ShareGroup("g")
	require.Len(t, info.Members, 1)
	assert.Equal(t, "busy", info.Members[0].MemberID)
	assert.Equal(t, int32(3), info.GroupEpoch)

	resp := shareHeartbeat(t, rc, "g", "busy", 2)
	requireHeartbeatOK(t, resp)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[[16]byte][]int32{tid: {0, 1}}, assigned(resp.Assignment))
	resp = shareHeartbeat(t, rc, "g", "quiet", 2)
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode)
}

package testbroker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// shareGroupFixture starts a cluster with a share group "sg" of one member "m".
func shareGroupFixture(t *testing.T, opts ...testbroker.Opt) (*testbroker.Cluster, *rawConn) {
	t.Helper()
	c := testbroker.StartT(t, append([]testbroker.Opt{testbroker.Topic("t", 1)}, opts...)...)
	rc := dialRaw(t, c.Addrs()[0])
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "sg", "m", 0, "t"))
	return c, rc
}

// TestClassicRPCsOnShareGroup sends every classic group RPC, at each version where the answer's
// shape changes, to a share group and checks Kafka's exact answer.
func TestClassicRPCsOnShareGroup(t *testing.T) {
	t.Parallel()
	c, rc := shareGroupFixture(t)

	for _, v := range []int16{0, 4, 9} {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.ProtocolType, req.SessionTimeoutMillis = v, "sg", "m", "consumer", 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp := request[*kmsg.JoinGroupResponse](t, rc, req)
		assert.Equal(t, kerr.InconsistentGroupProtocol.Code, resp.ErrorCode, "v%d", v)
		assert.Equal(t, "", resp.MemberID, "v%d", v)
	}
	for _, v := range []int16{0, 5} {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID = v, "sg", "m"
		pt, pn := "consumer", "range"
		req.ProtocolType, req.Protocol = &pt, &pn
		resp := request[*kmsg.SyncGroupResponse](t, rc, req)
		assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode, "v%d", v)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID = 4, "sg", "m"
	assert.Equal(t, kerr.UnknownMemberID.Code, request[*kmsg.HeartbeatResponse](t, rc, hb).ErrorCode)

	for _, v := range []int16{1, 2} { // v0 answers in 6 bytes, below what the raw reader accepts
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group, req.MemberID = v, "sg", "m"
		resp := request[*kmsg.LeaveGroupResponse](t, rc, req)
		assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode, "v%d top level", v)
	}
	for _, v := range []int16{3, 5} {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = v, "sg"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}, {MemberID: "n"}}
		resp := request[*kmsg.LeaveGroupResponse](t, rc, req)
		assert.Zero(t, resp.ErrorCode, "v%d top level", v)
		require.Len(t, resp.Members, 2)
		for _, m := range resp.Members {
			assert.Equal(t, kerr.UnknownMemberID.Code, m.ErrorCode, "v%d %s", v, m.MemberID)
		}
	}

	for _, v := range []int16{0, 5, 6} {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{"sg", "missing"}
		resp := request[*kmsg.DescribeGroupsResponse](t, rc, req)
		require.Len(t, resp.Groups, 2)
		for i, want := range []string{"Group sg is not a classic group.", "Group missing not found."} {
			g := resp.Groups[i]
			assert.Equal(t, "Dead", g.State, "v%d %s", v, g.Group)
			if v >= 6 {
				assert.Equal(t, kerr.GroupIDNotFound.Code, g.ErrorCode)
				assert.Equal(t, want, deref(g.ErrorMessage))
			} else {
				assert.Zero(t, g.ErrorCode, "v%d %s", v, g.Group)
			}
		}
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "sg", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	cresp := request[*kmsg.OffsetCommitResponse](t, rc, commit)
	assert.Equal(t, kerr.GroupIDNotFound.Code, cresp.Topics[0].Partitions[0].ErrorCode)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "sg", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	fresp := request[*kmsg.OffsetFetchResponse](t, rc, fetch)
	require.Len(t, fresp.Groups, 1)
	assert.Zero(t, fresp.Groups[0].ErrorCode, "a share group answers as a missing one")
	assert.Equal(t, int64(-1), fresp.Groups[0].Topics[0].Partitions[0].Offset)

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "sg"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	assert.Equal(t, kerr.GroupIDNotFound.Code, request[*kmsg.OffsetDeleteResponse](t, rc, del).ErrorCode)

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"sg", "missing"}
	dresp := request[*kmsg.DeleteGroupsResponse](t, rc, dg)
	assert.Equal(t, kerr.NonEmptyGroup.Code, dresp.Groups[0].ErrorCode)
	assert.Equal(t, kerr.GroupIDNotFound.Code, dresp.Groups[1].ErrorCode)

	_, ok := c.ShareGroup("sg")
	assert.True(t, ok, "nothing above changed the share group")
}

// TestListGroupsRaw lists groups of each type with ListGroups v5 filters, as Kafka does:
// case-insensitive, an unknown type matches nothing, GroupType lowercase, and a classic group's
// own protocol type.
func TestListGroupsRaw(t *testing.T) {
	t.Parallel()
	// On a manual clock the classic group's initial rebalance delay (Kafka's 3 s, set here)
	// never ends.
	c, rc := shareGroupFixture(t, testbroker.WithManualClock(time.Unix(1000, 0)),
		testbroker.BrokerConfig("group.initial.rebalance.delay.ms", "3000"))

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 3, "connect-cluster", "connect", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "sessioned"}}
	rc.send(t, join) // parked until the rebalance completes; never read
	require.Eventually(t, func() bool { _, ok := c.ClassicGroup("connect-cluster"); return ok }, 10*time.Second, time.Millisecond)

	rc2 := dialRaw(t, c.Addrs()[0])
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "simple", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	require.Zero(t, request[*kmsg.OffsetCommitResponse](t, rc2, commit).Topics[0].Partitions[0].ErrorCode)

	list := func(states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter, req.TypesFilter = 5, states, types
		resp := request[*kmsg.ListGroupsResponse](t, rc2, req)
		require.Zero(t, resp.ErrorCode)
		var out []string
		for _, g := range resp.Groups {
			out = append(out, fmt.Sprintf("%s %s %s %s", g.Group, g.GroupType, g.GroupState, g.ProtocolType))
		}
		return out
	}
	assert.ElementsMatch(t, []string{
		"connect-cluster classic PreparingRebalance connect",
		"sg share Stable share",
		"simple classic Empty ",
	}, list(nil, nil))
	assert.ElementsMatch(t, []string{"connect-cluster classic PreparingRebalance connect", "simple classic Empty "}, list(nil, []string{"Classic"}))
	assert.Equal(t, []string{"sg share Stable share"}, list([]string{"STABLE"}, []string{"share", "Bogus"}))
	assert.Empty(t, list(nil, []string{"bogus"}))
	assert.Equal(t, []string{"simple classic Empty "}, list([]string{"empty"}, nil))
	assert.Equal(t, []testbroker.GroupListing{
		{GroupID: "connect-cluster", Type: "classic", State: "PreparingRebalance", ProtocolType: "connect"},
		{GroupID: "sg", Type: "share", State: "Stable", ProtocolType: "share"},
		{GroupID: "simple", Type: "classic", State: "Empty", ProtocolType: ""},
	}, c.Groups())
}

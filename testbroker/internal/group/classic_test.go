package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
)

const (
	classicSession   = 10 * time.Second
	classicRebalance = 30 * time.Second
	initialDelay     = 3 * time.Second
)

func newClassicFixture(t *testing.T, maxSize int) fixture {
	t.Helper()
	f := fixture{clock: clock.NewManual(time.Unix(1000, 0)), topics: &fakeTopics{byName: map[string]TopicMeta{}}}
	f.c = NewCoordinator(Config{
		Clock:  f.clock,
		Topics: f.topics,
		ShareConfig: func(string) ShareConfig {
			return ShareConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: sessionTimeout, MaxSize: 200}
		},
		ClassicConfig: func() ClassicConfig {
			return ClassicConfig{MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: time.Minute, InitialRebalanceDelay: initialDelay, MaxSize: maxSize}
		},
	})
	f.topics.set("t", 1, 4)
	f.topics.set("u", 2, 1)
	t.Cleanup(f.c.Close)
	return f
}

// consumerMeta is a consumer-protocol subscription to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(member string, protocols ...string) JoinGroup {
	req := JoinGroup{GroupID: "g", MemberID: member, SessionTimeout: classicSession, RebalanceTimeout: classicRebalance,
		ProtocolType: "consumer", Version: 9, ClientID: "cid", ClientHost: "/127.0.0.1"}
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: consumerMeta("t")})
	}
	return req
}

// ready returns the answer on ch, failing if there is none yet.
func ready[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
		require.FailNow(t, "no answer yet")
	}
	var zero T
	return zero
}

func waiting[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		require.FailNow(t, "answered early", "%+v", v)
	default:
	}
}

// newMember runs the v4+ dance: a join without id gets MEMBER_ID_REQUIRED and an id, and the
// rejoin with it parks.
func (f fixture) newMember(t *testing.T, protocols ...string) (string, <-chan JoinGroupResult) {
	t.Helper()
	res := ready(t, f.c.JoinGroup(joinReq("", protocols...)))
	require.ErrorIs(t, res.Err, kerr.MemberIDRequired)
	require.Contains(t, res.MemberID, "cid-")
	return res.MemberID, f.c.JoinGroup(joinReq(res.MemberID, protocols...))
}

func (f fixture) sync(req SyncGroup) <-chan SyncGroupResult {
	req.GroupID = "g"
	return f.c.SyncGroup(req)
}

func (f fixture) classic(t *testing.T) ClassicGroupInfo {
	t.Helper()
	info, err := f.c.ClassicGroup("g")
	require.NoError(t, err)
	return info
}

// stableGroup makes a Stable group of n members (generation 1), the first the leader.
func stableGroup(t *testing.T, f fixture, n int) []string {
	t.Helper()
	var ids []string
	var chs []<-chan JoinGroupResult
	for range n {
		id, ch := f.newMember(t)
		ids, chs = append(ids, id), append(chs, ch)
	}
	// Each member that joins during the initial delay extends it once.
	f.clock.Advance(time.Duration(n) * initialDelay)
	leader := ""
	for _, ch := range chs {
		res := ready(t, ch)
		require.NoError(t, res.Err)
		leader = res.LeaderID
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("a-" + id)
	}
	var syncs []<-chan SyncGroupResult
	for _, id := range ids {
		req := SyncGroup{GenerationID: 1, MemberID: id}
		if id == leader {
			req.Assignments = assign
		}
		syncs = append(syncs, f.sync(req))
	}
	for i, ch := range syncs {
		res := ready(t, ch)
		require.NoError(t, res.Err)
		assert.Equal(t, []byte("a-"+ids[i]), res.Assignment)
	}
	require.Equal(t, "Stable", f.classic(t).State)
	// The leader first, so that tests can tell who leads.
	for i, id := range ids {
		if id == leader {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	return ids
}

// TestClassicJoinSyncHeartbeat walks one member through the whole protocol: MEMBER_ID_REQUIRED,
// the initial rebalance delay, the leader's JoinGroup answer, its SyncGroup and heartbeats.
func TestClassicJoinSyncHeartbeat(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	id, ch := f.newMember(t, "cooperative-sticky", "range")
	assert.Equal(t, "PreparingRebalance", f.classic(t).State)
	f.clock.Advance(initialDelay - time.Millisecond)
	waiting(t, ch)
	f.clock.Advance(time.Millisecond)
	res := ready(t, ch)
	require.NoError(t, res.Err)
	assert.Equal(t, id, res.MemberID)
	assert.Equal(t, id, res.LeaderID)
	assert.Equal(t, int32(1), res.GenerationID)
	assert.Equal(t, "cooperative-sticky", *res.ProtocolName)
	assert.Equal(t, "consumer", *res.ProtocolType)
	require.Len(t, res.Members, 1)
	assert.Equal(t, consumerMeta("t"), res.Members[0].Metadata)
	assert.Equal(t, "CompletingRebalance", f.classic(t).State)

	require.ErrorIs(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: id}), nil)
	sres := ready(t, f.sync(SyncGroup{GenerationID: 1, MemberID: id, Assignments: map[string][]byte{id: []byte("x")}}))
	require.NoError(t, sres.Err)
	assert.Equal(t, []byte("x"), sres.Assignment)
	assert.Equal(t, "cooperative-sticky", *sres.ProtocolName)

	info := f.classic(t)
	assert.Equal(t, "Stable", info.State)
	require.Len(t, info.Members, 1)
	assert.Equal(t, ClassicMemberInfo{MemberID: id, ClientID: "cid", ClientHost: "/127.0.0.1", Metadata: consumerMeta("t"), Assignment: []byte("x")}, info.Members[0])

	for range 3 {
		f.clock.Advance(classicSession - time.Second)
		require.NoError(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: id}))
	}
	assert.Len(t, f.classic(t).Members, 1, "heartbeats keep the member")
	assert.Equal(t, []Listing{{ID: "g", Type: TypeClassic, State: "Stable", ProtocolType: "consumer"}}, f.c.Groups())
}

// TestClassicRebalanceOnJoinAndLeave: a member joining a stable group starts a rebalance that
// the others learn of from their heartbeat; it completes once all rejoined. A leave rebalances
// again.
func TestClassicRebalanceOnJoinAndLeave(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	ids := stableGroup(t, f, 2)
	leader, follower := ids[0], ids[1]

	newID, newCh := f.newMember(t)
	assert.Equal(t, "PreparingRebalance", f.classic(t).State)
	require.ErrorIs(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: follower}), kerr.RebalanceInProgress)
	require.ErrorIs(t, ready(t, f.sync(SyncGroup{GenerationID: 1, MemberID: follower})).Err, kerr.RebalanceInProgress)
	fch := f.c.JoinGroup(joinReq(follower))
	waiting(t, newCh)
	lch := f.c.JoinGroup(joinReq(leader))
	for _, ch := range []<-chan JoinGroupResult{newCh, fch, lch} {
		res := ready(t, ch)
		require.NoError(t, res.Err)
		assert.Equal(t, int32(2), res.GenerationID)
		assert.Equal(t, leader, res.LeaderID)
		if res.MemberID == leader {
			assert.Len(t, res.Members, 3)
		} else {
			assert.Empty(t, res.Members)
		}
	}
	for _, id := range []string{newID, follower} {
		waiting(t, f.sync(SyncGroup{GenerationID: 2, MemberID: id}))
	}
	require.NoError(t, ready(t, f.sync(SyncGroup{GenerationID: 2, MemberID: leader})).Err)
	assert.Equal(t, "Stable", f.classic(t).State)

	errs, err := f.c.LeaveGroup("g", []LeaveMember{{MemberID: newID}, {MemberID: "nobody"}})
	require.NoError(t, err)
	assert.Equal(t, []error{nil, kerr.UnknownMemberID}, errs)
	assert.Equal(t, "PreparingRebalance", f.classic(t).State)
	lch = f.c.JoinGroup(joinReq(leader))
	waiting(t, lch)
	fch = f.c.JoinGroup(joinReq(follower))
	assert.Equal(t, int32(3), ready(t, lch).GenerationID)
	assert.Equal(t, int32(3), ready(t, fch).GenerationID)
	assert.Len(t, f.classic(t).Members, 2)
}

// TestClassicSessionExpiry: a member that stops heartbeating is removed at its session timeout
// and the group rebalances without it; the last member's expiry leaves the group Empty.
func TestClassicSessionExpiry(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	ids := stableGroup(t, f, 2)
	f.clock.Advance(classicSession / 2)
	require.NoError(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: ids[0]}))
	f.clock.Advance(classicSession / 2)
	info := f.classic(t)
	assert.Equal(t, "PreparingRebalance", info.State)
	require.Len(t, info.Members, 1)
	assert.Equal(t, ids[0], info.Members[0].MemberID)
	res := ready(t, f.c.JoinGroup(joinReq(ids[0])))
	require.NoError(t, res.Err)
	assert.Equal(t, int32(2), res.GenerationID)
	require.NoError(t, ready(t, f.sync(SyncGroup{GenerationID: 2, MemberID: ids[0]})).Err)

	f.clock.Advance(classicSession)
	info = f.classic(t)
	assert.Equal(t, "Empty", info.State)
	assert.Equal(t, int32(3), info.GenerationID)
	assert.Empty(t, info.Members)
	require.ErrorIs(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 3, MemberID: ids[0]}), kerr.UnknownMemberID)
}

// TestClassicRebalanceTimeout: a member that does not rejoin within the rebalance timeout is
// removed and the others get the next generation; a pending member that never rejoins with
// its id is dropped at its session timeout.
func TestClassicRebalanceTimeout(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	ids := stableGroup(t, f, 2)
	lch := f.c.JoinGroup(joinReq(ids[0]))
	// The follower heartbeats (so its session holds) but never rejoins.
	for range classicRebalance/(5*time.Second) - 1 {
		f.clock.Advance(5 * time.Second)
		require.ErrorIs(t, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: ids[1]}), kerr.RebalanceInProgress)
	}
	f.clock.Advance(5*time.Second - time.Millisecond)
	waiting(t, lch)
	f.clock.Advance(time.Millisecond)
	res := ready(t, lch)
	require.NoError(t, res.Err)
	assert.Equal(t, int32(2), res.GenerationID)
	require.Len(t, res.Members, 1)
	assert.Len(t, f.classic(t).Members, 1)

	pending := ready(t, f.c.JoinGroup(joinReq("")))
	require.ErrorIs(t, pending.Err, kerr.MemberIDRequired)
	f.clock.Advance(classicSession)
	res = ready(t, f.c.JoinGroup(joinReq(pending.MemberID)))
	require.ErrorIs(t, res.Err, kerr.UnknownMemberID, "the pending member expired")
}

// TestClassicSyncTimeout: members that do not send SyncGroup within the rebalance timeout after
// the join phase are removed.
func TestClassicSyncTimeout(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, ch := f.newMember(t)
	f.clock.Advance(initialDelay)
	require.NoError(t, ready(t, ch).Err)
	f.clock.Advance(classicRebalance)
	assert.Equal(t, "Empty", f.classic(t).State)
}

// TestClassicInitialDelayExtends: members joining during the initial delay extend it, up to the
// rebalance timeout.
func TestClassicInitialDelayExtends(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, a := f.newMember(t)
	f.clock.Advance(2 * time.Second)
	_, b := f.newMember(t)
	f.clock.Advance(time.Second)
	waiting(t, a)
	f.clock.Advance(initialDelay - time.Millisecond)
	waiting(t, b)
	f.clock.Advance(time.Millisecond)
	assert.Equal(t, int32(1), ready(t, a).GenerationID)
	assert.Equal(t, int32(1), ready(t, b).GenerationID)
}

// TestClassicJoinErrors checks every refusal of JoinGroup.
func TestClassicJoinErrors(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 2)
	ids := stableGroup(t, f, 1)

	req := joinReq("")
	req.SessionTimeout = time.Second
	assert.Equal(t, JoinGroupResult{Err: kerr.InvalidSessionTimeout}, ready(t, f.c.JoinGroup(req)))
	req = joinReq("m")
	req.SessionTimeout = 2 * time.Minute
	assert.Equal(t, JoinGroupResult{Err: kerr.InvalidSessionTimeout, MemberID: "m"}, ready(t, f.c.JoinGroup(req)))
	req = joinReq("")
	req.GroupID = ""
	assert.Equal(t, JoinGroupResult{Err: kerr.InvalidGroupID}, ready(t, f.c.JoinGroup(req)))
	req = joinReq("m")
	req.GroupID = "missing"
	assert.Equal(t, JoinGroupResult{Err: kerr.UnknownMemberID, MemberID: "m"}, ready(t, f.c.JoinGroup(req)))
	req = joinReq("")
	req.ProtocolType = "connect"
	assert.Equal(t, JoinGroupResult{Err: kerr.InconsistentGroupProtocol}, ready(t, f.c.JoinGroup(req)))
	assert.Equal(t, JoinGroupResult{Err: kerr.InconsistentGroupProtocol, MemberID: ids[0]}, ready(t, f.c.JoinGroup(joinReq(ids[0], "roundrobin"))))
	assert.Equal(t, JoinGroupResult{Err: kerr.UnknownMemberID, MemberID: "other"}, ready(t, f.c.JoinGroup(joinReq("other"))))
	instance := "i"
	req = joinReq(ids[0])
	req.GroupInstanceID = &instance
	assert.Equal(t, JoinGroupResult{Err: kerr.UnknownMemberID, MemberID: ids[0]}, ready(t, f.c.JoinGroup(req)))

	// An empty group accepts any non-empty protocol type with at least one protocol.
	req = joinReq("")
	req.GroupID, req.ProtocolType = "empty-type", ""
	assert.Equal(t, JoinGroupResult{Err: kerr.InconsistentGroupProtocol}, ready(t, f.c.JoinGroup(req)))

	f.c.Close()
	assert.Equal(t, JoinGroupResult{Err: kerr.CoordinatorNotAvailable}, ready(t, f.c.JoinGroup(joinReq(""))))
}

// TestClassicMaxSize: group.max.size refuses a member beyond it.
func TestClassicMaxSize(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 1)
	ids := stableGroup(t, f, 1)
	assert.Equal(t, JoinGroupResult{Err: kerr.GroupMaxSizeReached}, ready(t, f.c.JoinGroup(joinReq(""))))
	assert.Equal(t, int32(2), ready(t, f.c.JoinGroup(joinReq(ids[0]))).GenerationID, "a member may rejoin a full group")
}

// TestClassicJoinBeforeV4 adds a member without the MEMBER_ID_REQUIRED round trip; a join in
// CompletingRebalance with unchanged metadata gets the same generation again.
func TestClassicJoinBeforeV4(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	req := joinReq("")
	req.Version = 3
	ch := f.c.JoinGroup(req)
	f.clock.Advance(initialDelay)
	res := ready(t, ch)
	require.NoError(t, res.Err)
	again := ready(t, f.c.JoinGroup(joinReq(res.MemberID)))
	require.NoError(t, again.Err)
	assert.Equal(t, res.GenerationID, again.GenerationID)
	assert.Len(t, again.Members, 1, "the leader gets the members again")
}

// TestClassicSyncAndHeartbeatErrors checks the member, generation and protocol checks.
func TestClassicSyncAndHeartbeatErrors(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	ids := stableGroup(t, f, 1)
	other, rng := "other", "range"
	tests := []struct {
		name string
		req  SyncGroup
		want error
	}{
		{"unknown member", SyncGroup{GenerationID: 1, MemberID: "x"}, kerr.UnknownMemberID},
		{"old generation", SyncGroup{GenerationID: 0, MemberID: ids[0]}, kerr.IllegalGeneration},
		{"protocol type", SyncGroup{GenerationID: 1, MemberID: ids[0], ProtocolType: &other}, kerr.InconsistentGroupProtocol},
		{"protocol name", SyncGroup{GenerationID: 1, MemberID: ids[0], ProtocolName: &other}, kerr.InconsistentGroupProtocol},
		{"stable", SyncGroup{GenerationID: 1, MemberID: ids[0], ProtocolName: &rng}, nil},
	}
	for _, tt := range tests {
		res := ready(t, f.sync(tt.req))
		assert.Equal(t, tt.want, res.Err, tt.name)
	}
	res := ready(t, f.c.SyncGroup(SyncGroup{GroupID: "missing", MemberID: ids[0]}))
	assert.Equal(t, kerr.UnknownMemberID, res.Err)
	assert.Equal(t, kerr.InvalidGroupID, ready(t, f.c.SyncGroup(SyncGroup{})).Err)

	assert.Equal(t, kerr.IllegalGeneration, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 2, MemberID: ids[0]}))
	assert.Equal(t, kerr.UnknownMemberID, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: "x"}))
	assert.Equal(t, kerr.UnknownMemberID, f.c.Heartbeat(Heartbeat{GroupID: "missing", GenerationID: 1, MemberID: "x"}))
	assert.Equal(t, kerr.InvalidGroupID, f.c.Heartbeat(Heartbeat{}))
	errs, err := f.c.LeaveGroup("missing", []LeaveMember{{MemberID: "x"}})
	require.NoError(t, err)
	assert.Equal(t, []error{kerr.UnknownMemberID}, errs)
	_, err = f.c.LeaveGroup("", nil)
	assert.Equal(t, kerr.InvalidGroupID, err)
}

// TestClassicStaticMember: a static member that rejoins without its member id replaces its old
// id without a rebalance; the old id is fenced; an admin leave by instance id removes it.
func TestClassicStaticMember(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	instance := "worker-1"
	req := joinReq("")
	req.GroupInstanceID = &instance
	ch := f.c.JoinGroup(req)
	f.clock.Advance(initialDelay)
	first := ready(t, ch)
	require.NoError(t, first.Err)
	assert.Contains(t, first.MemberID, "worker-1-")
	require.NoError(t, ready(t, f.sync(SyncGroup{GenerationID: 1, MemberID: first.MemberID, Assignments: map[string][]byte{first.MemberID: []byte("x")}})).Err)

	second := ready(t, f.c.JoinGroup(req))
	require.NoError(t, second.Err)
	assert.NotEqual(t, first.MemberID, second.MemberID)
	assert.Equal(t, int32(1), second.GenerationID, "no rebalance")
	assert.True(t, second.SkipAssignment)
	assert.Equal(t, "Stable", f.classic(t).State)
	assert.Equal(t, kerr.FencedInstanceID, f.c.Heartbeat(Heartbeat{GroupID: "g", GenerationID: 1, MemberID: first.MemberID, GroupInstanceID: &instance}))
	sres := ready(t, f.sync(SyncGroup{GenerationID: 1, MemberID: second.MemberID, GroupInstanceID: &instance}))
	assert.Equal(t, []byte("x"), sres.Assignment, "the assignment carries over")

	errs, err := f.c.LeaveGroup("g", []LeaveMember{{GroupInstanceID: &instance}})
	require.NoError(t, err)
	assert.Equal(t, []error{nil}, errs)
	assert.Equal(t, "Empty", f.classic(t).State)
}

// TestClassicProtocolVote: the protocol every member supports with the most first choices wins.
func TestClassicProtocolVote(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, a := f.newMember(t, "sticky", "range")
	_, b := f.newMember(t, "range", "sticky", "roundrobin")
	_, c := f.newMember(t, "sticky", "roundrobin", "range")
	f.clock.Advance(3 * initialDelay)
	for _, ch := range []<-chan JoinGroupResult{a, b, c} {
		assert.Equal(t, "sticky", *ready(t, ch).ProtocolName)
	}
}

// TestClassicOnOtherTypes: JoinGroup on a share group is INCONSISTENT_GROUP_PROTOCOL with no
// member id; SyncGroup, Heartbeat and LeaveGroup are UNKNOWN_MEMBER_ID; describing it as a
// classic group is "not a classic group".
func TestClassicOnOtherTypes(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "s", SubscribedTopicNames: []string{"t"}})
	require.NoError(t, err)
	assert.Equal(t, JoinGroupResult{Err: kerr.InconsistentGroupProtocol}, ready(t, f.c.JoinGroup(joinReq(""))))
	assert.Equal(t, JoinGroupResult{Err: kerr.InconsistentGroupProtocol}, ready(t, f.c.JoinGroup(joinReq("s"))))
	assert.Equal(t, kerr.UnknownMemberID, ready(t, f.sync(SyncGroup{MemberID: "s"})).Err)
	assert.Equal(t, kerr.UnknownMemberID, f.c.Heartbeat(Heartbeat{GroupID: "g", MemberID: "s"}))
	errs, err := f.c.LeaveGroup("g", []LeaveMember{{MemberID: "s"}})
	require.NoError(t, err)
	assert.Equal(t, []error{kerr.UnknownMemberID}, errs)
	_, err = f.c.ClassicGroup("g")
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group g is not a classic group.")
	_, err = f.c.ClassicGroup("missing")
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group missing not found.")

	// An empty consumer group is replaced by a classic group, keeping its offsets.
	f.c.mu.Lock()
	grp := &Group{id: "cg", typ: TypeConsumer, kind: newClassicGroup("cg")}
	grp.offsets.set("t", 0, CommittedOffset{Offset: 5, LeaderEpoch: -1})
	f.c.groups["cg"] = grp
	f.c.mu.Unlock()
	req := joinReq("")
	req.GroupID = "cg"
	require.ErrorIs(t, ready(t, f.c.JoinGroup(req)).Err, kerr.MemberIDRequired)
	_, err = f.c.ClassicGroup("cg")
	require.NoError(t, err)
	offsets, ok := f.c.CommittedOffsets("cg")
	require.True(t, ok)
	assert.Equal(t, int64(5), offsets["t"][0].Offset)
}

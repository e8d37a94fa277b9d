package group

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// listedTopics is a fakeTopics that also lists its topics, for regular expressions.
type listedTopics struct{ *fakeTopics }

func (l listedTopics) TopicNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for name := range l.byName {
		names = append(names, name)
	}
	return names
}

const (
	consumerSession   = 45 * time.Second
	consumerRebalance = 30 * time.Second
)

type consumerFixture struct {
	c      *Coordinator
	clock  *clock.Manual
	topics *fakeTopics
}

func newConsumerFixture(t *testing.T, maxSize int) consumerFixture {
	t.Helper()
	f := consumerFixture{clock: clock.NewManual(time.Unix(1000, 0)), topics: &fakeTopics{byName: map[string]TopicMeta{}}}
	f.c = NewCoordinator(Config{
		Clock:  f.clock,
		Topics: listedTopics{f.topics},
		ShareConfig: func(string) ShareConfig {
			return ShareConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: sessionTimeout, MaxSize: 10}
		},
		ConsumerConfig: func(string) ConsumerConfig {
			return ConsumerConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: consumerSession, MaxSize: maxSize, Assignors: []string{"uniform", "range"}}
		},
	})
	t.Cleanup(f.c.Close)
	return f
}

// join is a first heartbeat of a dynamic member subscribing to topics.
func join(member string, topics ...string) ConsumerHeartbeat {
	return ConsumerHeartbeat{
		Version: 1, GroupID: "g", MemberID: member, MemberEpoch: 0, RebalanceTimeout: consumerRebalance,
		SubscribedTopicNames: append([]string{}, topics...), Owned: map[[16]byte][]int32{}, ClientID: "cid", ClientHost: "/127.0.0.1",
	}
}

// beat is a keep-alive heartbeat reporting owned (nil: unchanged).
func beat(member string, epoch int32, owned map[[16]byte][]int32) ConsumerHeartbeat {
	return ConsumerHeartbeat{Version: 1, GroupID: "g", MemberID: member, MemberEpoch: epoch, RebalanceTimeout: -time.Millisecond, Owned: owned, ClientID: "cid", ClientHost: "/127.0.0.1"}
}

func (f consumerFixture) hb(t *testing.T, req ConsumerHeartbeat) ConsumerHeartbeatResult {
	t.Helper()
	res, err := f.c.ConsumerHeartbeat(req)
	require.NoError(t, err)
	return res
}

func (f consumerFixture) group(t *testing.T) ConsumerGroupInfo {
	t.Helper()
	info, err := f.c.ConsumerGroup("g")
	require.NoError(t, err)
	return info
}

func (f consumerFixture) member(t *testing.T, id string) ConsumerMemberInfo {
	t.Helper()
	for _, m := range f.group(t).Members {
		if m.MemberID == id {
			return m
		}
	}
	t.Fatalf("no member %s", id)
	return ConsumerMemberInfo{}
}

// owned flattens a result's assignment into the form a heartbeat reports it.
func ownedOf(tps []TopicPartitions) map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	for _, tp := range tps {
		out[tp.TopicID] = slices.Clone(tp.Partitions)
	}
	return out
}

func countOf(tps []TopicPartitions) int {
	n := 0
	for _, tp := range tps {
		n += len(tp.Partitions)
	}
	return n
}

func requireCode(t *testing.T, err error, code *kerr.Error, message string) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, code), "got %v", err)
	var ge *kafkaerr.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, message, ge.Message)
}

func TestValidateConsumerHeartbeat(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	assignors := []string{"uniform", "range"}
	tests := []struct {
		name string
		edit func(r *ConsumerHeartbeat)
		code *kerr.Error
		msg  string
	}{
		{"blank member id at v1", func(r *ConsumerHeartbeat) { r.MemberID = " " }, kerr.InvalidRequest, "MemberId can't be empty."},
		{"blank group id", func(r *ConsumerHeartbeat) { r.GroupID = "\t" }, kerr.InvalidRequest, "GroupId can't be empty."},
		{"blank instance id", func(r *ConsumerHeartbeat) { r.InstanceID = str(" ") }, kerr.InvalidRequest, "InstanceId can't be empty."},
		{"blank rack id", func(r *ConsumerHeartbeat) { r.RackID = str("") }, kerr.InvalidRequest, "RackId can't be empty."},
		{"no rebalance timeout", func(r *ConsumerHeartbeat) { r.RebalanceTimeout = -time.Millisecond }, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"null owned on join", func(r *ConsumerHeartbeat) { r.Owned = nil }, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"owned on join", func(r *ConsumerHeartbeat) { r.Owned = map[[16]byte][]int32{topicID(1): {0}} }, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"no subscription", func(r *ConsumerHeartbeat) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance", func(r *ConsumerHeartbeat) { r.MemberEpoch = -2 }, kerr.InvalidRequest, "InstanceId can't be null."},
		{"epoch below -2", func(r *ConsumerHeartbeat) { r.MemberEpoch = -3 }, kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"unknown assignor", func(r *ConsumerHeartbeat) { r.ServerAssignor = str("sticky") }, kerr.UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := join("m", "t")
			tt.edit(&req)
			requireCode(t, ValidateConsumerHeartbeat(&req, assignors), tt.code, tt.msg)
		})
	}

	v0 := join("", "t")
	v0.Version = 0
	assert.NoError(t, ValidateConsumerHeartbeat(&v0, assignors), "v0 joins without a member id")
	v0.MemberEpoch = 3
	requireCode(t, ValidateConsumerHeartbeat(&v0, assignors), kerr.InvalidRequest, "MemberId can't be empty.")
	regexOnly := join("m")
	regexOnly.SubscribedTopicNames, regexOnly.SubscribedTopicRegex = nil, str("t.*")
	assert.NoError(t, ValidateConsumerHeartbeat(&regexOnly, assignors))
}

// TestConsumerJoinSecondMemberRevokesThenAssigns follows two members through Kafka's
// reconciliation: the second member waits for partitions the first still owns; the first
// keeps its epoch until it reports the revocation; then both reach the new epoch.
func TestConsumerJoinSecondMemberRevokesThenAssigns(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 4)
	tid := topicID(1)

	r1 := f.hb(t, join("m1", "t"))
	assert.Equal(t, int32(1), r1.MemberEpoch)
	require.True(t, r1.HasAssignment)
	assert.Equal(t, []TopicPartitions{{TopicID: tid, Topic: "t", Partitions: []int32{0, 1, 2, 3}}}, r1.Assignment)
	assert.Equal(t, 5*time.Second, r1.HeartbeatInterval)
	assert.Equal(t, "Stable", f.group(t).State)

	r2 := f.hb(t, join("m2", "t"))
	assert.Equal(t, int32(2), r2.MemberEpoch, "m2 is at the new epoch, waiting for its partitions")
	assert.Empty(t, r2.Assignment)
	assert.Equal(t, "unreleased_partitions", f.member(t, "m2").State)
	g := f.group(t)
	assert.Equal(t, int32(2), g.GroupEpoch)
	assert.Equal(t, int32(2), g.AssignmentEpoch)
	assert.Equal(t, "Reconciling", g.State)
	assert.Equal(t, 2, countOf(f.member(t, "m2").TargetAssignment))

	// m1 still owns everything: it must revoke m2's half first and stays at epoch 1.
	r1 = f.hb(t, beat("m1", 1, map[[16]byte][]int32{tid: {0, 1, 2, 3}}))
	assert.Equal(t, int32(1), r1.MemberEpoch)
	require.True(t, r1.HasAssignment)
	assert.Equal(t, 2, countOf(r1.Assignment))
	m1 := f.member(t, "m1")
	assert.Equal(t, "unrevoked_partitions", m1.State)
	assert.Equal(t, 2, countOf(m1.PendingRevocation))

	// m2 still waits while m1 has not revoked.
	r2 = f.hb(t, beat("m2", 2, map[[16]byte][]int32{}))
	assert.Empty(t, r2.Assignment)

	// m1 acknowledges the revocation by reporting what it kept: it moves to epoch 2.
	r1 = f.hb(t, beat("m1", 1, ownedOf(r1.Assignment)))
	assert.Equal(t, int32(2), r1.MemberEpoch)
	assert.Equal(t, "stable", f.member(t, "m1").State)
	assert.Equal(t, int32(1), f.member(t, "m1").PreviousMemberEpoch)

	// m2 now gets its partitions.
	r2 = f.hb(t, beat("m2", 2, map[[16]byte][]int32{}))
	require.True(t, r2.HasAssignment)
	assert.Equal(t, 2, countOf(r2.Assignment))
	assert.Equal(t, "Stable", f.group(t).State)

	assert.False(t, r1.HasAssignment, "m1's partitions did not change, only its epoch")
	all := append(ownedOf(f.member(t, "m1").Assignment)[tid], ownedOf(r2.Assignment)[tid]...)
	slices.Sort(all)
	assert.Equal(t, []int32{0, 1, 2, 3}, all, "each partition owned once")
}

func TestConsumerLeaveSessionExpiryAndRebalanceTimeout(t *testing.T) {
	t.Parallel()
	t.Run("leave", func(t *testing.T) {
		f := newConsumerFixture(t, 10)
		f.topics.set("t", 1, 2)
		f.hb(t, join("m1", "t"))
		f.hb(t, join("m2", "t"))
		res := f.hb(t, beat("m2", LeaveEpoch, nil))
		assert.Equal(t, ConsumerHeartbeatResult{MemberID: "m2", MemberEpoch: LeaveEpoch}, res)
		g := f.group(t)
		assert.Equal(t, int32(3), g.GroupEpoch)
		assert.Equal(t, "Assigning", g.State, "the target waits for the next heartbeat")
		r1 := f.hb(t, beat("m1", 1, map[[16]byte][]int32{topicID(1): {0, 1}}))
		assert.Equal(t, int32(3), r1.MemberEpoch)
		assert.False(t, r1.HasAssignment, "m1 keeps what it had")
		assert.Equal(t, 2, countOf(f.member(t, "m1").Assignment))
		assert.Equal(t, "Stable", f.group(t).State)
	})
	t.Run("session expiry", func(t *testing.T) {
		f := newConsumerFixture(t, 10)
		f.topics.set("t", 1, 2)
		f.hb(t, join("m1", "t"))
		f.hb(t, join("m2", "t"))
		f.clock.Advance(consumerSession - time.Second)
		f.hb(t, beat("m1", 1, nil))
		f.clock.Advance(2 * time.Second)
		g := f.group(t)
		require.Len(t, g.Members, 1)
		assert.Equal(t, "m1", g.Members[0].MemberID)
		_, err := f.c.ConsumerHeartbeat(beat("m2", 2, nil))
		requireCode(t, err, kerr.UnknownMemberID, "Member m2 is not a member of group g.")
	})
	t.Run("rebalance timeout fences a member that does not revoke", func(t *testing.T) {
		f := newConsumerFixture(t, 10)
		f.topics.set("t", 1, 2)
		f.hb(t, join("m1", "t"))
		f.hb(t, join("m2", "t"))
		f.hb(t, beat("m1", 1, map[[16]byte][]int32{topicID(1): {0, 1}}))
		require.Equal(t, "unrevoked_partitions", f.member(t, "m1").State)
		f.clock.Advance(consumerRebalance - time.Second)
		f.hb(t, beat("m1", 1, nil)) // still owns everything: the timeout keeps running
		f.clock.Advance(2 * time.Second)
		_, err := f.c.ConsumerHeartbeat(beat("m1", 1, nil))
		requireCode(t, err, kerr.UnknownMemberID, "Member m1 is not a member of group g.")
		r2 := f.hb(t, beat("m2", 2, map[[16]byte][]int32{}))
		assert.Equal(t, 2, countOf(r2.Assignment), "m2 takes everything once m1 is fenced")
	})
}

func TestConsumerEpochRules(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 2)
	f.hb(t, join("m1", "t"))
	f.hb(t, join("m2", "t"))
	r1 := f.hb(t, beat("m1", 1, map[[16]byte][]int32{topicID(1): {0, 1}}))
	kept := ownedOf(r1.Assignment)
	r1 = f.hb(t, beat("m1", 1, kept))
	require.Equal(t, int32(2), r1.MemberEpoch)

	// The previous epoch with partitions of the assignment: a lost response, accepted.
	res := f.hb(t, beat("m1", 1, kept))
	assert.Equal(t, int32(2), res.MemberEpoch)

	_, err := f.c.ConsumerHeartbeat(beat("m1", 5, nil))
	requireCode(t, err, kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (5) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin.")
	_, err = f.c.ConsumerHeartbeat(beat("m1", 1, map[[16]byte][]int32{topicID(1): {0, 1}}))
	requireCode(t, err, kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (1) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin.")

	// A fenced member rejoins at epoch 0 with its member id (KAFKA-19233) and gets its
	// assignment again.
	again := f.hb(t, join("m1", "t"))
	assert.Equal(t, int32(2), again.MemberEpoch)
	assert.Equal(t, kept, ownedOf(again.Assignment))
}

func TestConsumerHeartbeatErrors(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	f := newConsumerFixture(t, 1)
	f.topics.set("t", 1, 1)

	_, err := f.c.ConsumerHeartbeat(beat("m", 3, nil))
	requireCode(t, err, kerr.GroupIDNotFound, "Consumer group g not found.")
	_, err = f.c.ConsumerHeartbeat(beat("m", LeaveEpoch, nil))
	requireCode(t, err, kerr.GroupIDNotFound, "Group g not found.")

	f.hb(t, join("m1", "t"))
	_, err = f.c.ConsumerHeartbeat(join("m2", "t"))
	requireCode(t, err, kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of 1 members.")
	_, err = f.c.ConsumerHeartbeat(beat("m9", 1, nil))
	requireCode(t, err, kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of 1 members.")
	f.hb(t, join("m1", "t")) // a member the group has is never refused
	_, err = f.c.ConsumerHeartbeat(beat("m9", LeaveEpoch, nil))
	requireCode(t, err, kerr.UnknownMemberID, "Member m9 is not a member of group g.")

	bad := join("m1")
	bad.SubscribedTopicNames, bad.SubscribedTopicRegex = nil, str("[")
	_, err = f.c.ConsumerHeartbeat(bad)
	requireCode(t, err, kerr.InvalidRegularExpression, "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ].")
	bad.SubscribedTopicRegex = str("t-(x")
	_, err = f.c.ConsumerHeartbeat(bad)
	requireCode(t, err, kerr.InvalidRegularExpression, "SubscribedTopicRegex `t-(x` is not a valid regular expression: missing closing ).")

	unknown := join("m1", "t")
	unknown.ServerAssignor = str("cooperative-sticky")
	_, err = f.c.ConsumerHeartbeat(unknown)
	requireCode(t, err, kerr.UnsupportedAssignor, "ServerAssignor cooperative-sticky is not supported. Supported assignors: uniform, range.")

	f.c.Close()
	_, err = f.c.ConsumerHeartbeat(beat("m1", 1, nil))
	assert.ErrorIs(t, err, kerr.CoordinatorNotAvailable)
}

func TestConsumerStaticMembers(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 2)
	static := func(member string, epoch int32) ConsumerHeartbeat {
		req := join(member, "t")
		req.MemberEpoch, req.InstanceID = epoch, str("i1")
		if epoch != 0 {
			req.Owned, req.SubscribedTopicNames, req.RebalanceTimeout = nil, nil, -time.Millisecond
		}
		return req
	}
	r := f.hb(t, static("a", 0))
	require.Equal(t, int32(1), r.MemberEpoch)

	_, err := f.c.ConsumerHeartbeat(static("b", 0))
	requireCode(t, err, kerr.UnreleasedInstanceID, "Static member b with instance id i1 cannot join the group because the instance id is owned by a member.")
	_, err = f.c.ConsumerHeartbeat(static("b", 1))
	requireCode(t, err, kerr.FencedInstanceID, "Static member b with instance id i1 was fenced by member a.")
	other := static("x", 1)
	other.InstanceID = str("i2")
	_, err = f.c.ConsumerHeartbeat(other)
	requireCode(t, err, kerr.UnknownMemberID, "Instance id i2 is unknown.")

	left := f.hb(t, static("a", staticLeaveEpoch))
	assert.Equal(t, ConsumerHeartbeatResult{MemberID: "a", MemberEpoch: staticLeaveEpoch}, left)
	assert.Equal(t, int32(1), f.group(t).GroupEpoch, "a temporary leave does not bump the epoch")
	assert.Equal(t, int32(-2), f.member(t, "a").MemberEpoch)

	// b takes the instance over with a's partitions, without a rebalance.
	rb := f.hb(t, static("b", 0))
	assert.Equal(t, int32(1), rb.MemberEpoch)
	assert.Equal(t, 2, countOf(rb.Assignment))
	g := f.group(t)
	require.Len(t, g.Members, 1)
	assert.Equal(t, "b", g.Members[0].MemberID)
	assert.Equal(t, int32(1), g.GroupEpoch)

	// The static member's session still runs out.
	f.clock.Advance(consumerSession + time.Second)
	assert.Empty(t, f.group(t).Members)
}

func TestConsumerRegexSubscription(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	f := newConsumerFixture(t, 10)
	f.topics.set("orders-eu", 1, 1)
	f.topics.set("payments", 2, 1)
	req := join("m1")
	req.SubscribedTopicNames, req.SubscribedTopicRegex = nil, str("orders-.*")
	r := f.hb(t, req)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "orders-eu", Partitions: []int32{0}}}, r.Assignment)

	f.topics.set("orders-us", 3, 1)
	r = f.hb(t, beat("m1", 1, ownedOf(r.Assignment)))
	assert.Equal(t, int32(2), r.MemberEpoch, "a new matching topic bumps the epoch")
	assert.Equal(t, 2, countOf(r.Assignment))
	assert.True(t, f.c.groups["g"].consumer.subscribedTo("orders-us"))
	assert.False(t, f.c.groups["g"].consumer.subscribedTo("payments"))
	assert.Equal(t, str("orders-.*"), f.member(t, "m1").SubscribedTopicRegex)
}

// classicStub is a classic group kind standing in for the classic coordinator, which lives
// elsewhere: just its protocol type and member count.
type classicStub struct {
	protocol string
	members  int
	stopped  bool
}

func (s *classicStub) state() string {
	if s.members == 0 {
		return "Empty"
	}
	return "Stable"
}
func (s *classicStub) protocolType() string { return s.protocol }
func (s *classicStub) memberCount() int     { return s.members }
func (s *classicStub) stop()                { s.stopped = true }

func TestConsumerHeartbeatOnOtherGroupTypes(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 1)
	f.topics.set("t", 1, 1)
	addClassic := func(id, protocol string, members int) *Group {
		g := &Group{id: id, typ: TypeClassic, kind: &classicStub{protocol: protocol, members: members}}
		f.c.mu.Lock()
		f.c.groups[id] = g
		f.c.mu.Unlock()
		return g
	}
	forGroup := func(req ConsumerHeartbeat, id string) ConsumerHeartbeat { req.GroupID = id; return req }

	empty := addClassic("empty", "", 0)
	stub := empty.kind.(*classicStub)
	res := f.hb(t, forGroup(join("m1", "t"), "empty"))
	assert.Equal(t, int32(1), res.MemberEpoch)
	assert.True(t, stub.stopped)
	assert.Same(t, empty, f.c.groups["empty"], "the group (and what it holds, such as offsets) stays")
	assert.Equal(t, TypeConsumer, empty.typ)
	assert.Equal(t, "consumer", empty.kind.protocolType())

	addClassic("connect", "connect", 1)
	_, err := f.c.ConsumerHeartbeat(forGroup(join("m1", "t"), "connect"))
	requireCode(t, err, kerr.GroupIDNotFound, "Cannot upgrade classic group connect to consumer group because the group does not use the consumer embedded protocol.")
	addClassic("big", "consumer", 2)
	_, err = f.c.ConsumerHeartbeat(forGroup(join("m1", "t"), "big"))
	requireCode(t, err, kerr.GroupIDNotFound, "Cannot upgrade classic group big to consumer group because the group size exceeds the consumer group maximum size.")
	addClassic("live", "consumer", 1)
	_, err = f.c.ConsumerHeartbeat(forGroup(join("m1", "t"), "live"))
	requireCode(t, err, kerr.GroupIDNotFound, "Cannot upgrade classic group live to consumer group because online upgrade is disabled.")
	_, err = f.c.ConsumerHeartbeat(forGroup(beat("m1", 1, nil), "live"))
	requireCode(t, err, kerr.GroupIDNotFound, "Group live is not a consumer group.")
	_, err = f.c.ConsumerHeartbeat(forGroup(beat("m1", LeaveEpoch, nil), "live"))
	requireCode(t, err, kerr.GroupIDNotFound, "Group live is not a consumer group.")
	_, err = f.c.ConsumerHeartbeat(forGroup(beat("m1", 1, nil), "empty-classic-at-epoch-1"))
	requireCode(t, err, kerr.GroupIDNotFound, "Consumer group empty-classic-at-epoch-1 not found.")

	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "sg", MemberID: "s1", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}})
	require.NoError(t, err)
	for _, req := range []ConsumerHeartbeat{join("m1", "t"), beat("m1", 2, nil), beat("m1", LeaveEpoch, nil)} {
		_, err = f.c.ConsumerHeartbeat(forGroup(req, "sg"))
		requireCode(t, err, kerr.GroupIDNotFound, "Group sg is not a consumer group.")
	}
	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "empty", MemberID: "s1", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}})
	requireCode(t, err, kerr.GroupIDNotFound, "Group empty is not a share group.")

	_, err = f.c.ConsumerGroup("sg")
	requireCode(t, err, kerr.GroupIDNotFound, "Group sg is not a consumer group.")
	_, err = f.c.ConsumerGroup("nope")
	requireCode(t, err, kerr.GroupIDNotFound, "Group nope not found.")
}

func TestConsumerDescribeAssignor(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 4)
	f.hb(t, join("m1", "t"))
	assert.Equal(t, "uniform", f.group(t).AssignorName)
	req := join("m2", "t")
	req.ServerAssignor = str("range")
	f.hb(t, req)
	g := f.group(t)
	assert.Equal(t, "range", g.AssignorName)
	assert.Equal(t, []int32{0, 1}, f.member(t, "m1").TargetAssignment[0].Partitions, "range gives m1 the first half")
	assert.Equal(t, []int32{2, 3}, f.member(t, "m2").TargetAssignment[0].Partitions)
	assert.Equal(t, "/127.0.0.1", f.member(t, "m2").ClientHost)
	assert.Equal(t, "range", f.member(t, "m2").ServerAssignor)
	assert.Equal(t, []string{"t"}, f.member(t, "m2").SubscribedTopicNames)
}

func TestConsumerGeneratesMemberIDAtV0(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 1)
	req := join("", "t")
	req.Version = 0
	res := f.hb(t, req)
	assert.Len(t, res.MemberID, 22, "a Kafka Uuid in base64")
	assert.Equal(t, int32(1), res.MemberEpoch)
}

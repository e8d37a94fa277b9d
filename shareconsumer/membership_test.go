package shareconsumer

import (
	stderrors "errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// Unit tests of membership: the heartbeat state machine and metadata, with no broker and no
// clock.

var (
	mIDa = [16]byte{0xa}
	mIDb = [16]byte{0xb}
	mIDc = [16]byte{0xc}
)

// mPart is one partition of a metadata answer: its leader and leader epoch.
type mPart struct{ p, leader, epoch int32 }

func mTopic(name string, id [16]byte, code int16, parts ...mPart) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID, t.ErrorCode = &name, id, code
	for _, p := range parts {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.p, p.leader, p.epoch
		t.Partitions = append(t.Partitions, mp)
	}
	return t
}

func mMeta(topics ...kmsg.MetadataResponseTopic) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	r.Topics = topics
	return r
}

// mAnswer is a heartbeat answer with code; a successful one has epoch and interval (ms, 0 for
// none) and, when assigned is not nil, that assignment.
func mAnswer(code int16, epoch, intervalMs int32, assigned map[[16]byte][]int32) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	r.ErrorCode, r.MemberEpoch, r.HeartbeatIntervalMillis = code, epoch, intervalMs
	if assigned != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for id, ps := range assigned {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, ps
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		r.Assignment = &a
	}
	return r
}

func mMsg(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	r := mAnswer(code, 0, 0, nil)
	r.ErrorMessage = &msg
	return r
}

// mMember returns a member of group "g" subscribed to topics, knowing the coordinator (7) and,
// from metadata, topics a (partitions 0 and 1, led by 1 and 2) and b (partition 0, led by 2).
func mMember(topics ...string) membership {
	m := newMembership("g", "m1", nil)
	m.subscription = topics
	m.coord = 7
	m.applyMetadata(mMeta(
		mTopic("a", mIDa, 0, mPart{0, 1, 1}, mPart{1, 2, 1}),
		mTopic("b", mIDb, 0, mPart{0, 2, 1}),
	))
	return m
}

// mJoined returns mMember after a successful join at epoch 5 assigned assigned.
func mJoined(t *testing.T, assigned map[[16]byte][]int32, topics ...string) membership {
	t.Helper()
	m := mMember(topics...)
	out := m.applyHeartbeat(m.heartbeat(), mAnswer(0, 5, 1000, assigned), nil)
	require.NoError(t, out.err)
	require.Equal(t, int32(5), m.epoch)
	return m
}

func TestMembershipHeartbeatSuccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		subscribed []string
		assigned   map[[16]byte][]int32 // nil: the answer has no assignment
		intervalMs int32
		// want
		assignment, resolved bool
		parts                []TopicPartition
		next                 time.Duration
	}{
		{name: "assignment, leaders known", subscribed: []string{"a", "b"}, assigned: map[[16]byte][]int32{mIDa: {0, 1}, mIDb: {0}},
			intervalMs: 2000, assignment: true, resolved: true, parts: []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}}, next: 2 * time.Second},
		{name: "assignment, topic unknown", subscribed: []string{"a", "c"}, assigned: map[[16]byte][]int32{mIDa: {1}, mIDc: {0}},
			intervalMs: 2000, assignment: true, resolved: false, parts: []TopicPartition{{"a", 1}}, next: 2 * time.Second},
		{name: "assignment, leader unknown", subscribed: []string{"a"}, assigned: map[[16]byte][]int32{mIDa: {0, 5}},
			intervalMs: 2000, assignment: true, resolved: false, parts: []TopicPartition{{"a", 0}, {"a", 5}}, next: 2 * time.Second},
		{name: "empty assignment", subscribed: []string{"a"}, assigned: map[[16]byte][]int32{},
			intervalMs: 2000, assignment: true, resolved: true, next: 2 * time.Second},
		{name: "no assignment: the interval known stays", subscribed: []string{"a"}, next: 5 * time.Second},
		{name: "an assignment to a member no longer subscribed is ignored", assigned: map[[16]byte][]int32{mIDa: {0}},
			intervalMs: 1500, next: 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := mMember(tc.subscribed...)
			m.failures = 3 // earlier failures are forgotten
			req := m.heartbeat()
			out := m.applyHeartbeat(req, mAnswer(0, 4, tc.intervalMs, tc.assigned), nil)
			assert.NoError(t, out.err)
			assert.NoError(t, out.pollErr)
			assert.False(t, out.fatal || out.fenced || out.coordErr)
			assert.Equal(t, tc.assignment, out.assignment, "assignment")
			assert.Equal(t, tc.resolved, out.resolved, "resolved")
			assert.Equal(t, tc.next, out.next, "next")
			assert.Equal(t, int32(4), m.epoch)
			assert.Equal(t, 0, m.failures)
			assert.Equal(t, int32(7), m.coord)
			assert.Equal(t, tc.subscribed, m.sentSub)
			assert.ElementsMatch(t, tc.parts, sortedTPs(m.assigned))
		})
	}
}

func TestMembershipHeartbeatFencedRejoinsWithAssignmentCleared(t *testing.T) {
	t.Parallel()
	for _, code := range []int16{kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code} {
		t.Run(kerr.ErrorForCode(code).Error(), func(t *testing.T) {
			t.Parallel()
			rack := "r1"
			m := mJoined(t, map[[16]byte][]int32{mIDa: {0, 1}}, "a")
			m.rack = &rack
			require.Len(t, m.assigned, 2)
			out := m.applyHeartbeat(m.heartbeat(), mMsg(code, "fenced"), nil)
			assert.True(t, out.fenced)
			assert.True(t, out.assignment, "the assignment changed: cleared")
			assert.True(t, out.resolved)
			assert.Zero(t, out.next, "rejoin at once")
			var ke *errors.KafkaError
			require.ErrorAs(t, out.err, &ke)
			assert.Equal(t, code, ke.Code)
			assert.Equal(t, "fenced", ke.Message)
			assert.Zero(t, m.epoch)
			assert.Empty(t, m.assigned)
			assert.Zero(t, m.assignedCount())
			assert.Empty(t, m.leaders())

			req := m.heartbeat()
			assert.Zero(t, req.MemberEpoch)
			assert.Equal(t, []string{"a"}, req.SubscribedTopicNames, "a join names the subscription")
			require.NotNil(t, req.RackID, "a join names the rack")
			assert.Equal(t, "r1", *req.RackID)
		})
	}
}

func TestMembershipHeartbeatCoordinatorErrorsBackOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code      int16
		forgotten bool // the coordinator must be found again
		coordErr  bool
	}{
		{kerr.NotCoordinator.Code, true, true},
		{kerr.CoordinatorNotAvailable.Code, true, true},
		{kerr.CoordinatorLoadInProgress.Code, false, true},
		{kerr.UnknownServerError.Code, false, false},
		{kerr.RebalanceInProgress.Code, false, false},
	} {
		t.Run(kerr.ErrorForCode(tc.code).Error(), func(t *testing.T) {
			t.Parallel()
			m := mJoined(t, map[[16]byte][]int32{mIDa: {0}}, "a")
			want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
				1600 * time.Millisecond, 3200 * time.Millisecond, maxBackoff, maxBackoff, maxBackoff}
			for i, w := range want {
				m.coord = 7
				out := m.applyHeartbeat(m.heartbeat(), mAnswer(tc.code, 0, 0, nil), nil)
				assert.Equal(t, w, out.next, "failure %d", i+1)
				assert.Equal(t, tc.coordErr, out.coordErr)
				assert.False(t, out.fatal || out.fenced || out.assignment)
				var ke *errors.KafkaError
				require.ErrorAs(t, out.err, &ke)
				assert.Equal(t, tc.code, ke.Code)
				if tc.forgotten {
					assert.Equal(t, int32(-1), m.coord)
				} else {
					assert.Equal(t, int32(7), m.coord)
				}
			}
			assert.Equal(t, int32(5), m.epoch, "the member stays")
			assert.Len(t, m.assigned, 1, "its assignment too")

			// A success starts the doubling again.
			m.coord = 7
			require.NoError(t, m.applyHeartbeat(m.heartbeat(), mAnswer(0, 5, 0, nil), nil).err)
			assert.Equal(t, retryBackoff, m.applyHeartbeat(m.heartbeat(), mAnswer(tc.code, 0, 0, nil), nil).next)
		})
	}
}

func TestMembershipHeartbeatTopicAuthorizationFailedIsAPollError(t *testing.T) {
	t.Parallel()
	m := mJoined(t, map[[16]byte][]int32{mIDa: {0}}, "a")
	out := m.applyHeartbeat(m.heartbeat(), mMsg(kerr.TopicAuthorizationFailed.Code, "not allowed: a"), nil)
	var ke *errors.KafkaError
	require.ErrorAs(t, out.pollErr, &ke)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, ke.Code)
	assert.Equal(t, "not allowed: a", ke.Message)
	assert.ErrorIs(t, out.pollErr, kerr.TopicAuthorizationFailed)
	assert.Equal(t, time.Second, out.next, "the heartbeat goes on at the interval")
	assert.False(t, out.fatal || out.fenced || out.coordErr || out.assignment)
	assert.Nil(t, m.fatal)
	assert.Equal(t, int32(5), m.epoch)
	assert.Zero(t, m.failures)
}

func TestMembershipHeartbeatFatal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		code         int16
		joining      bool // the heartbeat had epoch 0
		msg          string
		inconsistent bool
	}{
		{name: "group authorization", code: kerr.GroupAuthorizationFailed.Code, msg: "denied"},
		{name: "invalid request", code: kerr.InvalidRequest.Code, msg: "bad"},
		{name: "group full", code: kerr.GroupMaxSizeReached.Code, msg: "full"},
		{name: "group not found, member", code: kerr.GroupIDNotFound.Code, msg: "gone"},
		{name: "group not found, joining", code: kerr.GroupIDNotFound.Code, joining: true, inconsistent: true},
		{name: "group of another type", code: kerr.GroupIDNotFound.Code, msg: "Group g is not a share group.", inconsistent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := mJoined(t, map[[16]byte][]int32{mIDa: {0, 1}}, "a")
			if tc.joining {
				m.epoch = 0
			}
			req := m.heartbeat()
			out := m.applyHeartbeat(req, mMsg(tc.code, tc.msg), nil)
			assert.True(t, out.fatal)
			assert.Equal(t, time.Duration(-1), out.next, "no more heartbeats")
			assert.True(t, out.assignment)
			assert.Empty(t, m.assigned, "the assignment is cleared")
			var fe *errors.FatalError
			require.ErrorAs(t, m.fatal, &fe)
			assert.Equal(t, "g", fe.Group)
			assert.Equal(t, tc.msg, fe.Message)
			assert.ErrorIs(t, fe, kerr.ErrorForCode(tc.code))
			assert.Equal(t, tc.inconsistent, fe.InconsistentGroupType)
			assert.Equal(t, tc.inconsistent, stderrors.Is(m.fatal, errors.ErrInconsistentGroupType))
			var ke *errors.KafkaError
			require.ErrorAs(t, out.err, &ke, "Status shows Kafka's code")
			assert.Equal(t, tc.code, ke.Code)
		})
	}
}

func TestMembershipHeartbeatTransportErrorForgetsCoordinator(t *testing.T) {
	t.Parallel()
	m := mJoined(t, map[[16]byte][]int32{mIDa: {0}}, "a")
	boom := stderrors.New("connection refused")
	out := m.applyHeartbeat(m.heartbeat(), nil, boom)
	assert.Same(t, boom, out.err)
	assert.Equal(t, int32(-1), m.coord)
	assert.Equal(t, retryBackoff, out.next)
	assert.False(t, out.fatal || out.fenced || out.assignment || out.coordErr)
	assert.Equal(t, int32(5), m.epoch, "the member epoch is kept: the coordinator may still know it")
	assert.Len(t, m.assigned, 1)
	assert.Equal(t, 2*retryBackoff, m.applyHeartbeat(m.heartbeat(), nil, boom).next, "failures in a row double the pause")
}

func TestMembershipHeartbeatRequest(t *testing.T) {
	t.Parallel()
	rack := "r1"
	m := mMember("a", "b")
	m.rack = &rack

	req := m.heartbeat()
	assert.Equal(t, "g", req.GroupID)
	assert.Equal(t, "m1", req.MemberID)
	assert.Zero(t, req.MemberEpoch)
	assert.Equal(t, []string{"a", "b"}, req.SubscribedTopicNames, "joining: the subscription")
	require.NotNil(t, req.RackID)
	assert.Equal(t, "r1", *req.RackID, "the rack until the coordinator took it")

	// A failed join changes nothing.
	m.applyHeartbeat(req, nil, stderrors.New("timeout"))
	req = m.heartbeat()
	assert.Equal(t, []string{"a", "b"}, req.SubscribedTopicNames)
	assert.NotNil(t, req.RackID)

	// Joined: neither again.
	require.NoError(t, m.applyHeartbeat(req, mAnswer(0, 1, 0, nil), nil).err)
	req = m.heartbeat()
	assert.Equal(t, int32(1), req.MemberEpoch)
	assert.Nil(t, req.SubscribedTopicNames)
	assert.Nil(t, req.RackID)

	// The subscription changes while a heartbeat naming the old one is in flight: the answer
	// acknowledges the old one, so the new one is sent with the next heartbeat.
	m.subscription = []string{"a", "c"}
	inFlight := m.heartbeat()
	assert.Equal(t, []string{"a", "c"}, inFlight.SubscribedTopicNames)
	assert.Nil(t, inFlight.RackID, "the rack was taken")
	m.subscription = []string{"c"}
	require.NoError(t, m.applyHeartbeat(inFlight, mAnswer(0, 2, 0, nil), nil).err)
	assert.Equal(t, []string{"c"}, m.heartbeat().SubscribedTopicNames)
	require.NoError(t, m.applyHeartbeat(m.heartbeat(), mAnswer(0, 3, 0, nil), nil).err)
	assert.Nil(t, m.heartbeat().SubscribedTopicNames, "acknowledged")

	// A heartbeat without the subscription leaves the acknowledged one alone.
	require.NoError(t, m.applyHeartbeat(m.heartbeat(), mAnswer(0, 3, 0, nil), nil).err)
	assert.Equal(t, []string{"c"}, m.sentSub)

	// Fenced: joining again names both.
	m.applyHeartbeat(m.heartbeat(), mAnswer(kerr.FencedMemberEpoch.Code, 0, 0, nil), nil)
	req = m.heartbeat()
	assert.Zero(t, req.MemberEpoch)
	assert.Equal(t, []string{"c"}, req.SubscribedTopicNames)
	assert.NotNil(t, req.RackID)

	// Without a rack none is ever sent.
	m2 := mMember("a")
	assert.Nil(t, m2.heartbeat().RackID)
}

func TestMembershipLeaving(t *testing.T) {
	t.Parallel()
	m := mJoined(t, nil, "a")
	assert.Equal(t, int32(5), m.leaving())
	assert.Zero(t, m.epoch)
	assert.Nil(t, m.sentSub)
	assert.Zero(t, m.leaving(), "not a member: nothing to send")
	m.epoch = -1
	assert.Zero(t, m.leaving())
}

func TestMembershipApplyMetadata(t *testing.T) {
	t.Parallel()
	m := newMembership("g", "m1", nil)
	m.subscription = []string{"a", "b", "gone", "denied"}

	moves, unknown, known := m.applyMetadata(mMeta(
		mTopic("a", mIDa, 0, mPart{0, 1, 3}, mPart{1, 2, 3}),
		mTopic("b", mIDb, 0, mPart{0, -1, 0}),
		mTopic("gone", [16]byte{}, kerr.UnknownTopicOrPartition.Code),
		mTopic("denied", [16]byte{}, kerr.TopicAuthorizationFailed.Code),
	))
	assert.Empty(t, moves, "a first leader is no move")
	assert.Equal(t, []string{"gone"}, unknown)
	assert.Equal(t, []string{"a", "b"}, known)
	for _, tc := range []struct {
		tp     TopicPartition
		leader int32
		ok     bool
	}{
		{TopicPartition{"a", 0}, 1, true},
		{TopicPartition{"a", 1}, 2, true},
		{TopicPartition{"a", 2}, -1, false},
		{TopicPartition{"b", 0}, -1, false}, // no leader now
		{TopicPartition{"gone", 0}, -1, false},
		{TopicPartition{"denied", 0}, -1, false},
	} {
		l, ok := m.leaderOf(tc.tp)
		assert.Equal(t, tc.ok, ok, "%s", tc.tp)
		assert.Equal(t, tc.leader, l, "%s", tc.tp)
	}
	assert.Equal(t, 3, m.subscribedPartitions())

	moves, unknown, known = m.applyMetadata(mMeta(mTopic("a", mIDa, 0,
		mPart{0, 3, 4}, // moved, newer epoch
		mPart{1, 1, 2}, // an older epoch than known: ignored
	)))
	assert.Equal(t, []leaderMove{{tp: TopicPartition{"a", 0}, from: 1, to: 3}}, moves)
	assert.Empty(t, unknown)
	assert.Equal(t, []string{"a"}, known)
	l, _ := m.leaderOf(TopicPartition{"a", 1})
	assert.Equal(t, int32(2), l, "the older epoch's leader was ignored")

	moves, _, _ = m.applyMetadata(mMeta(mTopic("a", mIDa, 0,
		mPart{0, 3, 4}, // the same
		mPart{1, 2, 5}, // a newer epoch, the same broker
	)))
	assert.Empty(t, moves, "a new epoch on the same broker is no move")
	assert.Equal(t, int32(5), m.topics[mIDa].leaders[1].epoch)

	// A topic deleted and created again: its name leads to the new id; the old one stays known.
	moves, _, _ = m.applyMetadata(mMeta(mTopic("a", mIDc, 0, mPart{0, 2, 0})))
	assert.Empty(t, moves, "another topic: no move")
	assert.Equal(t, mIDc, m.byName["a"])
	l, _ = m.leaderOf(TopicPartition{"a", 0})
	assert.Equal(t, int32(2), l)
	assert.Contains(t, m.topics, mIDa)
}

func TestMembershipHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		hint   leaderHint
		move   bool
		leader int32 // of a-0 afterwards
	}{
		{name: "newer epoch, other broker", hint: leaderHint{mIDa, 0, 3, 6}, move: true, leader: 3},
		{name: "older epoch", hint: leaderHint{mIDa, 0, 3, 4}, leader: 1},
		{name: "same broker", hint: leaderHint{mIDa, 0, 1, 9}, leader: 1},
		{name: "no leader named", hint: leaderHint{mIDa, 0, -1, 9}, leader: 1},
		{name: "unknown topic", hint: leaderHint{mIDc, 0, 3, 9}, leader: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMembership("g", "m1", nil)
			m.applyMetadata(mMeta(mTopic("a", mIDa, 0, mPart{0, 1, 5})))
			mv, ok := m.hint(tc.hint)
			assert.Equal(t, tc.move, ok)
			if tc.move {
				assert.Equal(t, leaderMove{tp: TopicPartition{"a", 0}, from: 1, to: tc.hint.leader}, mv)
			}
			l, _ := m.leaderOf(TopicPartition{"a", 0})
			assert.Equal(t, tc.leader, l)
		})
	}

	// A hint for a partition metadata never named records its leader, with no move.
	m := newMembership("g", "m1", nil)
	m.applyMetadata(mMeta(mTopic("a", mIDa, 0, mPart{0, 1, 5})))
	_, ok := m.hint(leaderHint{mIDa, 7, 2, 1})
	assert.False(t, ok)
	l, known := m.leaderOf(TopicPartition{"a", 7})
	assert.True(t, known)
	assert.Equal(t, int32(2), l)
}

func TestMembershipResolveAndLeaders(t *testing.T) {
	t.Parallel()
	m := newMembership("g", "m1", nil)
	m.subscription = []string{"a", "b"}
	assert.True(t, m.assign(nil), "nothing assigned: resolved")
	assert.Empty(t, m.leaders())

	m.applyMetadata(mMeta(mTopic("b", mIDb, 0, mPart{0, 2, 1}, mPart{1, 1, 1})))
	assert.False(t, m.assign([]kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{
		{TopicID: mIDa, Partitions: []int32{1, 0}},
		{TopicID: mIDb, Partitions: []int32{1, 0}},
	}), "topic a is not known yet")
	assert.Equal(t, 4, m.assignedCount())
	assert.ElementsMatch(t, []TopicPartition{{"b", 0}, {"b", 1}}, sortedTPs(m.assigned))
	assert.Equal(t, []string{"a", "b"}, m.metadataTopics())

	m.applyMetadata(mMeta(mTopic("a", mIDa, 0, mPart{0, 2, 1}, mPart{1, -1, 1})))
	assert.False(t, m.resolve(), "a-1 has no leader")
	m.applyMetadata(mMeta(mTopic("a", mIDa, 0, mPart{1, 3, 2})))
	assert.True(t, m.resolve())
	assert.ElementsMatch(t, []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}}, sortedTPs(m.assigned))

	tps := func(aps []*assignedPart) []TopicPartition {
		var out []TopicPartition
		for _, ap := range aps {
			out = append(out, ap.tp)
		}
		return out
	}
	assert.Equal(t, []TopicPartition{{"a", 0}, {"b", 0}}, tps(m.partsLedBy(2)), "in name order")
	assert.Equal(t, []TopicPartition{{"b", 1}}, tps(m.partsLedBy(1)))
	assert.Equal(t, []TopicPartition{{"a", 1}}, tps(m.partsLedBy(3)))
	assert.Empty(t, m.partsLedBy(9))
	assert.Equal(t, mIDa, m.partsLedBy(3)[0].id)
	assert.Equal(t, []int32{1, 2, 3}, m.leaders(), "sorted, once each")
	assert.True(t, m.leads(3))
	assert.False(t, m.leads(9))

	// Unassigned partitions lead nothing.
	m.assign([]kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{{TopicID: mIDb, Partitions: []int32{1}}})
	assert.Equal(t, []int32{1}, m.leaders())
	assert.False(t, m.leads(2))
	assert.Equal(t, []string{"a", "b"}, m.metadataTopics(), "the subscription's topics")
	m.subscription = nil
	assert.Equal(t, []string{"b"}, m.metadataTopics(), "and the assigned ones")
}

func TestMembershipDescribeDueOncePerEpoch(t *testing.T) {
	t.Parallel()
	m := mJoined(t, map[[16]byte][]int32{}, "a")
	assert.True(t, m.describeDue(), "assigned nothing at epoch 5")
	assert.False(t, m.describeDue(), "once per epoch")
	require.NoError(t, m.applyHeartbeat(m.heartbeat(), mAnswer(0, 6, 0, map[[16]byte][]int32{}), nil).err)
	assert.True(t, m.describeDue(), "a new epoch")
	assert.False(t, m.describeDue())

	require.NoError(t, m.applyHeartbeat(m.heartbeat(), mAnswer(0, 7, 0, map[[16]byte][]int32{mIDa: {0}}), nil).err)
	assert.False(t, m.describeDue(), "assigned something")

	m2 := mMember("a")
	assert.False(t, m2.describeDue(), "not a member yet")
	m3 := mJoined(t, map[[16]byte][]int32{}, "a")
	m3.subscription = nil
	assert.False(t, m3.describeDue(), "not subscribed")
}

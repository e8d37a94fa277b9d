package group

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// fakeTopics is a topic table a test can change between heartbeats.
type fakeTopics struct {
	mu     sync.Mutex
	byName map[string]TopicMeta
}

func (f *fakeTopics) set(name string, id byte, partitions int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byName[name] = TopicMeta{Name: name, ID: topicID(id), Partitions: partitions}
}

func (f *fakeTopics) TopicByName(name string) (TopicMeta, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.byName[name]
	return m, ok
}

func (f *fakeTopics) TopicName(id [16]byte) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.byName {
		if m.ID == id {
			return m.Name, true
		}
	}
	return "", false
}

const sessionTimeout = 45 * time.Second

type fixture struct {
	c      *Coordinator
	clock  *clock.Manual
	topics *fakeTopics
}

func newFixture(t *testing.T, maxSize int) fixture {
	t.Helper()
	f := fixture{clock: clock.NewManual(time.Unix(1000, 0)), topics: &fakeTopics{byName: map[string]TopicMeta{}}}
	f.c = NewCoordinator(Config{
		Clock:  f.clock,
		Topics: f.topics,
		ShareConfig: func(string) ShareConfig {
			return ShareConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: sessionTimeout, MaxSize: maxSize}
		},
	})
	t.Cleanup(f.c.Close)
	return f
}

func (f fixture) heartbeat(t *testing.T, member string, epoch int32, topics ...string) ShareHeartbeatResult {
	t.Helper()
	res, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: member, MemberEpoch: epoch, SubscribedTopicNames: topics, ClientID: "cid", ClientHost: "/127.0.0.1"})
	require.NoError(t, err)
	return res
}

func (f fixture) group(t *testing.T) ShareGroupInfo {
	t.Helper()
	info, err := f.c.ShareGroup("g")
	require.NoError(t, err)
	return info
}

// requireKafkaError checks an error's code and message.
func requireKafkaError(t *testing.T, err error, code *kerr.Error, message string) {
	t.Helper()
	require.ErrorIs(t, err, code)
	var ge *kafkaerr.Error
	require.True(t, errors.As(err, &ge), "%v is a *kafkaerr.Error", err)
	assert.Equal(t, message, ge.Message)
}

// TestShareHeartbeatJoinAndSpread joins two members one after the other: the first takes every
// partition, the second's join bumps the group epoch and takes half, and the first gets its
// smaller assignment (and the new epoch) at its next heartbeat.
func TestShareHeartbeatJoinAndSpread(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 4)

	r := f.heartbeat(t, "a", 0, "t")
	assert.Equal(t, ShareHeartbeatResult{
		MemberID: "a", MemberEpoch: 1, HeartbeatInterval: 5 * time.Second, HasAssignment: true,
		Assignment: []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1, 2, 3}}},
	}, r)

	r = f.heartbeat(t, "b", 0, "t")
	assert.Equal(t, int32(2), r.MemberEpoch)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{1, 3}}}, r.Assignment)

	info := f.group(t)
	assert.Equal(t, "Stable", info.State)
	assert.Equal(t, int32(2), info.GroupEpoch)
	assert.Equal(t, int32(2), info.AssignmentEpoch)
	require.Len(t, info.Members, 2)
	assert.Equal(t, int32(1), info.Members[0].MemberEpoch, "a has not heartbeated since")

	r = f.heartbeat(t, "a", 1)
	assert.Equal(t, int32(2), r.MemberEpoch)
	require.True(t, r.HasAssignment, "the assignment changed")
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 2}}}, r.Assignment)

	r = f.heartbeat(t, "a", 2)
	assert.False(t, r.HasAssignment, "nothing changed and the request is not full")
	assert.Nil(t, r.Assignment)
	r = f.heartbeat(t, "a", 2, "t")
	assert.True(t, r.HasAssignment, "a full request gets the assignment")
	assert.Equal(t, int32(2), f.group(t).GroupEpoch, "an unchanged subscription bumps nothing")
}

// TestShareHeartbeatSessionTimeout fences a member exactly at its session deadline, bumps
// the group epoch, and leaves the other member; a heartbeat restarts the deadline.
func TestShareHeartbeatSessionTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 2)
	f.heartbeat(t, "a", 0, "t")
	f.clock.Advance(10 * time.Second)
	f.heartbeat(t, "b", 0, "t")
	require.Equal(t, int32(2), f.group(t).GroupEpoch)

	f.clock.Advance(sessionTimeout - 10*time.Second - time.Millisecond)
	require.Len(t, f.group(t).Members, 2, "a's session has 1ms left")
	f.clock.Advance(time.Millisecond)
	info := f.group(t)
	require.Len(t, info.Members, 1)
	assert.Equal(t, "b", info.Members[0].MemberID)
	assert.Equal(t, int32(3), info.GroupEpoch, "the fence bumps the group epoch")

	r := f.heartbeat(t, "b", 2)
	assert.Equal(t, int32(3), r.MemberEpoch)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1}}}, r.Assignment)

	// The heartbeat at +45s restarted b's session: b is still there 1ms before +90s.
	f.clock.Advance(sessionTimeout - time.Millisecond)
	require.Len(t, f.group(t).Members, 1)
	f.clock.Advance(time.Millisecond)
	info = f.group(t)
	assert.Empty(t, info.Members)
	assert.Equal(t, "Empty", info.State)
	assert.Equal(t, int32(4), info.GroupEpoch)
	assert.Zero(t, f.clock.Pending(), "no timer is left behind")

	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: 1})
	requireKafkaError(t, err, kerr.UnknownMemberID, "Member a is not a member of group g.")
}

// TestShareHeartbeatLeave removes a member with epoch -1 and echoes -1; a second leave, or a
// leave from a group that does not exist, fails as Kafka's does.
func TestShareHeartbeatLeave(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 1)
	f.heartbeat(t, "a", 0, "t")

	res, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: -1})
	require.NoError(t, err)
	assert.Equal(t, ShareHeartbeatResult{MemberID: "a", MemberEpoch: -1}, res)
	info := f.group(t)
	assert.Empty(t, info.Members)
	assert.Equal(t, "Empty", info.State)
	assert.Equal(t, int32(2), info.GroupEpoch)
	assert.Zero(t, f.clock.Pending(), "the session timer is stopped")

	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: -1})
	requireKafkaError(t, err, kerr.UnknownMemberID, "Member a is not a member of group g.")
	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "nope", MemberID: "a", MemberEpoch: -1})
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group nope not found.")
}

// TestShareHeartbeatEpochs covers the member epoch rules: a greater epoch and a smaller one
// that is not the previous epoch are fenced; the previous epoch and a rejoin with 0 are
// accepted.
func TestShareHeartbeatEpochs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 2)
	f.heartbeat(t, "a", 0, "t") // epoch 1
	f.heartbeat(t, "b", 0, "t") // group epoch 2
	f.heartbeat(t, "c", 0, "t") // group epoch 3
	require.Equal(t, int32(3), f.heartbeat(t, "a", 1).MemberEpoch)

	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: 4})
	requireKafkaError(t, err, kerr.FencedMemberEpoch, "The share group member has a greater member epoch (4) than the one known by the group coordinator (3). The member must abandon all its partitions and rejoin.")
	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: 2})
	requireKafkaError(t, err, kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (2) than the one known by the group coordinator (3), and it does not match the previous member epoch (1). The member must abandon all its partitions and rejoin.")

	r := f.heartbeat(t, "a", 1) // the previous epoch: its response was lost
	assert.Equal(t, int32(3), r.MemberEpoch)
	r = f.heartbeat(t, "a", 0, "t") // rejoin
	assert.Equal(t, int32(3), r.MemberEpoch)
	assert.True(t, r.HasAssignment)
	assert.Equal(t, int32(3), f.group(t).GroupEpoch, "a rejoin with the same subscription bumps nothing")
}

// TestShareHeartbeatErrors checks the request validation and the group-level refusals, with
// Kafka's codes and messages.
func TestShareHeartbeatErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	f.topics.set("t", 1, 1)
	f.heartbeat(t, "a", 0, "t")
	f.heartbeat(t, "b", 0, "t")
	simpleCommit(t, f.c, "classic")

	blank, empty := " \t", ""
	tests := []struct {
		name    string
		req     ShareHeartbeat
		code    *kerr.Error
		message string
	}{
		{"empty member id", ShareHeartbeat{GroupID: "g", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}}, kerr.InvalidRequest, "MemberId can't be empty."},
		{"blank member id", ShareHeartbeat{GroupID: "g", MemberID: blank, MemberEpoch: 1}, kerr.InvalidRequest, "MemberId can't be empty."},
		{"empty group id", ShareHeartbeat{MemberID: "x", MemberEpoch: 1}, kerr.InvalidRequest, "GroupId can't be empty."},
		{"empty rack id", ShareHeartbeat{GroupID: "g", MemberID: "x", MemberEpoch: 1, RackID: &empty}, kerr.InvalidRequest, "RackId can't be empty."},
		{"blank rack id", ShareHeartbeat{GroupID: "g", MemberID: "x", MemberEpoch: 1, RackID: &blank}, kerr.InvalidRequest, "RackId can't be empty."},
		{"join without topics", ShareHeartbeat{GroupID: "g", MemberID: "x"}, kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."},
		{"join with empty topics", ShareHeartbeat{GroupID: "g", MemberID: "x", SubscribedTopicNames: []string{}}, kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."},
		{"epoch -2", ShareHeartbeat{GroupID: "g", MemberID: "x", MemberEpoch: -2}, kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"unknown group", ShareHeartbeat{GroupID: "nope", MemberID: "x", MemberEpoch: 1}, kerr.GroupIDNotFound, "Share group nope not found."},
		{"wrong type", ShareHeartbeat{GroupID: "classic", MemberID: "x", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}}, kerr.GroupIDNotFound, "Group classic is not a share group."},
		{"wrong type leave", ShareHeartbeat{GroupID: "classic", MemberID: "x", MemberEpoch: -1}, kerr.GroupIDNotFound, "Group classic is not a share group."},
		{"full", ShareHeartbeat{GroupID: "g", MemberID: "x", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}}, kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of 2 members."},
		{"full before unknown member", ShareHeartbeat{GroupID: "g", MemberID: "x", MemberEpoch: 5}, kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of 2 members."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.c.ShareHeartbeat(tt.req)
			requireKafkaError(t, err, tt.code, tt.message)
		})
	}
	assert.Len(t, f.group(t).Members, 2)
	assert.Equal(t, []string{"g"}, f.c.ShareGroupIDs(), "no failed join created a group")

	_, err := f.c.ShareGroup("classic")
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group classic is not a share group.")
	_, err = f.c.ShareGroup("nope")
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group nope not found.")

	f.heartbeat(t, "a", 1) // a member of a full group still heartbeats
	f.c.Close()
	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", MemberEpoch: 2})
	require.ErrorIs(t, err, kerr.CoordinatorNotAvailable)
	assert.Zero(t, f.clock.Pending(), "Close stops the session timers")
}

// TestShareHeartbeatMetadata shows topics and partitions created after a join reaching the
// member at its next heartbeat, through a group epoch bump; a deleted topic leaves the
// assignment and the description.
func TestShareHeartbeatMetadata(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 1)
	r := f.heartbeat(t, "a", 0, "t", "later")
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0}}}, r.Assignment)

	r = f.heartbeat(t, "a", 1)
	assert.False(t, r.HasAssignment)

	f.topics.set("t", 1, 2)
	r = f.heartbeat(t, "a", 1)
	assert.Equal(t, int32(2), r.MemberEpoch)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1}}}, r.Assignment)

	f.topics.set("later", 2, 1)
	r = f.heartbeat(t, "a", 2)
	assert.Equal(t, int32(3), r.MemberEpoch)
	assert.Equal(t, []TopicPartitions{
		{TopicID: topicID(2), Topic: "later", Partitions: []int32{0}},
		{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1}},
	}, r.Assignment)

	f.topics.mu.Lock()
	delete(f.topics.byName, "later")
	f.topics.mu.Unlock()
	info := f.group(t)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1}}}, info.Members[0].Assignment,
		"a deleted topic is not described")
	r = f.heartbeat(t, "a", 3)
	assert.Equal(t, int32(4), r.MemberEpoch)
	assert.Equal(t, []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0, 1}}}, r.Assignment)
}

// TestShareGroupInfo checks the snapshot's member details.
func TestShareGroupInfo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	f.topics.set("t", 1, 1)
	rack := "r1"
	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "a", RackID: &rack, SubscribedTopicNames: []string{"t", "u", "t"}, ClientID: "cid", ClientHost: "/10.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, ShareGroupInfo{
		GroupID: "g", State: "Stable", GroupEpoch: 1, AssignmentEpoch: 1,
		Members: []ShareMemberInfo{{
			MemberID: "a", MemberEpoch: 1, RackID: &rack, ClientID: "cid", ClientHost: "/10.0.0.1",
			SubscribedTopicNames: []string{"t", "u"},
			Assignment:           []TopicPartitions{{TopicID: topicID(1), Topic: "t", Partitions: []int32{0}}},
		}},
	}, f.group(t))
	assert.Equal(t, []Listing{{ID: "g", Type: TypeShare, State: "Stable", ProtocolType: "share"}}, f.c.Groups())
}

func TestParseType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want Type
		ok   bool
	}{{"share", TypeShare, true}, {"Share", TypeShare, true}, {"CLASSIC", TypeClassic, true}, {"consumer", TypeConsumer, true}, {"streams", TypeStreams, true}, {"simple", 0, false}} {
		got, ok := ParseType(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	assert.Equal(t, "share", TypeShare.String())
}

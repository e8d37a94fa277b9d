package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// simpleCommit commits offset 1 of t/0 for group without group management (generation -1).
func simpleCommit(t *testing.T, c *Coordinator, group string) {
	t.Helper()
	res := c.CommitOffsets(OffsetCommit{GroupID: group, Member: OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: 9},
		Topics: []OffsetCommitTopic{{Name: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}})
	require.NoError(t, res[0].Partitions[0].Err)
}

func commit(c *Coordinator, group string, m OffsetCommitMember, topic string, partition int32, offset int64) error {
	meta := "m"
	res := c.CommitOffsets(OffsetCommit{GroupID: group, Member: m,
		Topics: []OffsetCommitTopic{{Name: topic, Partitions: []OffsetCommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: 3, Metadata: &meta}}}}})
	return res[0].Partitions[0].Err
}

// TestOffsetsSimpleGroup: a commit without group management creates an empty simple classic
// group whose offsets are fetched back, listed with protocol type "".
func TestOffsetsSimpleGroup(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	simple := OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: 8}
	require.NoError(t, commit(f.c, "g", simple, "t", 2, 42))
	assert.Equal(t, []Listing{{ID: "g", Type: TypeClassic, State: "Empty", ProtocolType: ""}}, f.c.Groups())

	got, err := f.c.FetchOffsets(OffsetFetch{GroupID: "g", Topics: []OffsetFetchTopic{{Name: "t", Partitions: []int32{2, 0}}, {Name: "nope", Partitions: []int32{0}}}})
	require.NoError(t, err)
	now := f.clock.Now()
	assert.Equal(t, []FetchedTopic{
		{Name: "t", Partitions: []FetchedOffset{{Partition: 2, CommittedOffset: CommittedOffset{Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTime: now}}, {Partition: 0, CommittedOffset: CommittedOffset{Offset: -1, LeaderEpoch: -1}}}},
		{Name: "nope", Partitions: []FetchedOffset{{Partition: 0, CommittedOffset: CommittedOffset{Offset: -1, LeaderEpoch: -1}}}},
	}, got)
	all, err := f.c.FetchOffsets(OffsetFetch{GroupID: "g", RequireStable: true})
	require.NoError(t, err)
	assert.Equal(t, []FetchedTopic{{Name: "t", Partitions: []FetchedOffset{{Partition: 2, CommittedOffset: CommittedOffset{Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTime: now}}}}}, all)

	missing, err := f.c.FetchOffsets(OffsetFetch{GroupID: "missing", Topics: []OffsetFetchTopic{{Name: "t", Partitions: []int32{0}}}})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), missing[0].Partitions[0].Offset)
	_, ok := f.c.CommittedOffsets("missing")
	assert.False(t, ok, "a fetch creates nothing")

	assert.ErrorIs(t, commit(f.c, "missing", OffsetCommitMember{GenerationIDOrMemberEpoch: 1, Version: 9}, "t", 0, 1), kerr.GroupIDNotFound)
	assert.ErrorIs(t, commit(f.c, "missing", OffsetCommitMember{GenerationIDOrMemberEpoch: 1, Version: 8}, "t", 0, 1), kerr.IllegalGeneration)
	assert.ErrorIs(t, commit(f.c, "g", simple, "t", 9, 1), kerr.UnknownTopicOrPartition)
	assert.ErrorIs(t, commit(f.c, "other", simple, "nope", 0, 1), kerr.UnknownTopicOrPartition)
	_, ok = f.c.CommittedOffsets("other")
	assert.False(t, ok, "a commit of unknown partitions only creates no group")

	long := string(make([]byte, offsetMetadataMaxSize+1))
	res := f.c.CommitOffsets(OffsetCommit{GroupID: "g", Member: simple, Topics: []OffsetCommitTopic{{Name: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Metadata: &long}}}}})
	assert.ErrorIs(t, res[0].Partitions[0].Err, kerr.OffsetMetadataTooLarge)
}

// TestOffsetsMemberChecks: members of a classic group commit with their generation; offsets
// survive the members leaving.
func TestOffsetsMemberChecks(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, ch := f.newMember(t)
	f.clock.Advance(initialDelay)
	id := ready(t, ch).MemberID
	member := OffsetCommitMember{MemberID: id, GenerationIDOrMemberEpoch: 1, Version: 8}
	assert.ErrorIs(t, commit(f.c, "g", member, "t", 0, 1), kerr.RebalanceInProgress, "CompletingRebalance")
	require.NoError(t, ready(t, f.sync(SyncGroup{GenerationID: 1, MemberID: id})).Err)

	require.NoError(t, commit(f.c, "g", member, "t", 0, 7))
	assert.ErrorIs(t, commit(f.c, "g", OffsetCommitMember{MemberID: id, GenerationIDOrMemberEpoch: 2}, "t", 0, 1), kerr.IllegalGeneration)
	assert.ErrorIs(t, commit(f.c, "g", OffsetCommitMember{MemberID: "x", GenerationIDOrMemberEpoch: 1}, "t", 0, 1), kerr.UnknownMemberID)
	assert.ErrorIs(t, commit(f.c, "g", OffsetCommitMember{GenerationIDOrMemberEpoch: -1}, "t", 0, 1), kerr.UnknownMemberID, "a simple commit to a group with members")

	// A commit keeps the member's session alive.
	f.clock.Advance(classicSession - time.Second)
	require.NoError(t, commit(f.c, "g", member, "t", 1, 8))
	f.clock.Advance(classicSession - time.Second)
	assert.Equal(t, "Stable", f.classic(t).State)

	errs, err := f.c.LeaveGroup("g", []LeaveMember{{MemberID: id}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	assert.Equal(t, "Empty", f.classic(t).State)
	offsets, ok := f.c.CommittedOffsets("g")
	require.True(t, ok)
	assert.Equal(t, int64(7), offsets["t"][0].Offset)
	assert.Equal(t, int64(8), offsets["t"][1].Offset)
}

// TestOffsetDelete: subscribed topics are refused per partition; a non-consumer classic group
// with members refuses the whole request; an empty group's offsets go.
func TestOffsetDelete(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	ids := stableGroup(t, f, 1)
	require.NoError(t, commit(f.c, "g", OffsetCommitMember{MemberID: ids[0], GenerationIDOrMemberEpoch: 1}, "t", 0, 1))
	require.NoError(t, commit(f.c, "g", OffsetCommitMember{MemberID: ids[0], GenerationIDOrMemberEpoch: 1}, "u", 0, 1))
	res, err := f.c.DeleteOffsets("g", []OffsetDeleteTopic{{Name: "t", Partitions: []int32{0}}, {Name: "u", Partitions: []int32{0, 5}}})
	require.NoError(t, err)
	assert.Equal(t, []TopicResults{
		{Name: "t", Partitions: []PartitionResult{{0, kerr.GroupSubscribedToTopic}}},
		{Name: "u", Partitions: []PartitionResult{{0, nil}, {5, kerr.UnknownTopicOrPartition}}},
	}, res)
	offsets, _ := f.c.CommittedOffsets("g")
	assert.Equal(t, map[string]map[int32]CommittedOffset{"t": offsets["t"]}, offsets)

	_, err = f.c.DeleteOffsets("missing", nil)
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group missing not found.")
	_, err = f.c.DeleteOffsets("", nil)
	assert.ErrorIs(t, err, kerr.InvalidGroupID)

	req := joinReq("")
	req.GroupID, req.ProtocolType = "connect", "connect"
	mid := ready(t, f.c.JoinGroup(req)).MemberID
	req.MemberID = mid
	ch := f.c.JoinGroup(req)
	f.clock.Advance(initialDelay)
	require.NoError(t, ready(t, ch).Err)
	_, err = f.c.DeleteOffsets("connect", []OffsetDeleteTopic{{Name: "t", Partitions: []int32{0}}})
	assert.ErrorIs(t, err, kerr.NonEmptyGroup)
	assert.Contains(t, f.c.Groups(), Listing{ID: "connect", Type: TypeClassic, State: "CompletingRebalance", ProtocolType: "connect"})
}

// TestOffsetsOnShareGroup: a share group has no committed offsets: commits and deletes are
// GROUP_ID_NOT_FOUND "not a consumer group", a fetch answers as for a missing group.
func TestOffsetsOnShareGroup(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "s", MemberID: "m", SubscribedTopicNames: []string{"t"}})
	require.NoError(t, err)
	assert.ErrorIs(t, commit(f.c, "s", OffsetCommitMember{GenerationIDOrMemberEpoch: -1}, "t", 0, 1), kerr.GroupIDNotFound)
	_, err = f.c.DeleteOffsets("s", nil)
	requireKafkaError(t, err, kerr.GroupIDNotFound, "Group s is not a consumer group.")
	got, err := f.c.FetchOffsets(OffsetFetch{GroupID: "s", Topics: []OffsetFetchTopic{{Name: "t", Partitions: []int32{0}}}})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), got[0].Partitions[0].Offset)
	all, err := f.c.FetchOffsets(OffsetFetch{GroupID: "s"})
	require.NoError(t, err)
	assert.Empty(t, all)
}

// TestListAndDeleteGroups checks the ListGroups filters and the DeleteGroups rules.
func TestListAndDeleteGroups(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	stableGroup(t, f, 1)
	simpleCommit(t, f.c, "simple")
	_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "share", MemberID: "m", SubscribedTopicNames: []string{"t"}})
	require.NoError(t, err)

	ids := func(states, types []string) []string {
		ls, err := f.c.ListGroups(states, types)
		require.NoError(t, err)
		var out []string
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}
	assert.Equal(t, []string{"g", "share", "simple"}, ids(nil, nil))
	assert.Equal(t, []string{"g", "simple"}, ids(nil, []string{"Classic"}))
	assert.Equal(t, []string{"g", "share"}, ids([]string{" STABLE "}, nil))
	assert.Equal(t, []string{"share"}, ids([]string{"stable"}, []string{"SHARE", "bogus"}))
	assert.Empty(t, ids(nil, []string{"bogus"}))
	assert.Empty(t, ids([]string{"dead"}, nil))

	errs := f.c.DeleteGroups([]string{"g", "share", "simple", "missing"})
	assert.Equal(t, kerr.NonEmptyGroup, errs[0])
	assert.Equal(t, kerr.NonEmptyGroup, errs[1])
	assert.NoError(t, errs[2])
	requireKafkaError(t, errs[3], kerr.GroupIDNotFound, "Group missing not found.")
	_, ok := f.c.CommittedOffsets("simple")
	assert.False(t, ok, "the offsets went with the group")

	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "share", MemberID: "m", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	assert.Equal(t, []error{nil}, f.c.DeleteGroups([]string{"share"}))
	pending := f.clock.Pending()
	errs0, err := f.c.LeaveGroup("g", []LeaveMember{{MemberID: f.classic(t).Members[0].MemberID}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs0)
	assert.Equal(t, []error{nil}, f.c.DeleteGroups([]string{"g"}))
	assert.Less(t, f.clock.Pending(), pending, "deletion stops the group's timers")
	assert.Empty(t, ids(nil, nil))

	f.c.Close()
	_, err = f.c.ListGroups(nil, nil)
	assert.ErrorIs(t, err, kerr.CoordinatorNotAvailable)
}

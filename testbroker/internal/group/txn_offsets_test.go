package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func txnCommit(c *Coordinator, pid int64, group string, m OffsetCommitMember, partition int32, offset int64) error {
	res := c.CommitTxnOffsets(pid, OffsetCommit{GroupID: group, Member: m,
		Topics: []OffsetCommitTopic{{Name: "t", Partitions: []OffsetCommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}})
	return res[0].Partitions[0].Err
}

func fetchOne(t *testing.T, c *Coordinator, group string, partition int32, stable bool) FetchedOffset {
	t.Helper()
	got, err := c.FetchOffsets(OffsetFetch{GroupID: group, RequireStable: stable, Topics: []OffsetFetchTopic{{Name: "t", Partitions: []int32{partition}}}})
	require.NoError(t, err)
	return got[0].Partitions[0]
}

// TestTxnOffsetsPendingUntilCommit: transactional offsets are invisible, and unstable for a
// RequireStable fetch, until the transaction commits; an abort drops them.
func TestTxnOffsetsPendingUntilCommit(t *testing.T) {
	t.Parallel()
	f := newClassicFixture(t, 10)
	simple := OffsetCommitMember{GenerationIDOrMemberEpoch: -1}
	require.NoError(t, commit(f.c, "g", simple, "t", 0, 5))
	require.NoError(t, txnCommit(f.c, 7, "g", simple, 0, 10))
	require.NoError(t, txnCommit(f.c, 8, "g", simple, 1, 20))

	assert.Equal(t, int64(5), fetchOne(t, f.c, "g", 0, false).Offset, "the pending offset is not visible")
	unstable := fetchOne(t, f.c, "g", 0, true)
	assert.ErrorIs(t, unstable.Err, kerr.UnstableOffsetCommit)
	assert.Equal(t, int64(-1), unstable.Offset)

	f.c.EndTxnOffsets("g", 7, true)
	got := fetchOne(t, f.c, "g", 0, true)
	require.NoError(t, got.Err)
	assert.Equal(t, int64(10), got.Offset, "committed by the marker")

	f.c.EndTxnOffsets("g", 8, false)
	got = fetchOne(t, f.c, "g", 1, true)
	require.NoError(t, got.Err)
	assert.Equal(t, int64(-1), got.Offset, "dropped by the abort")
	f.c.EndTxnOffsets("missing", 8, true) // nothing to end
}

// TestTxnOffsetCommitMemberChecks: a transactional commit is checked as Kafka checks one.
func TestTxnOffsetCommitMemberChecks(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 1)
	_, err := f.c.ConsumerHeartbeat(join("m1", "t"))
	require.NoError(t, err)
	assert.ErrorIs(t, txnCommit(f.c, 1, "g", OffsetCommitMember{GenerationIDOrMemberEpoch: -1}, 0, 1), kerr.UnknownMemberID, "no member fields in a group with members")
	assert.NoError(t, txnCommit(f.c, 1, "g", OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 1, Version: 3}, 0, 1), "any version")
	assert.ErrorIs(t, txnCommit(f.c, 1, "g", OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 2, Version: 4}, 0, 1), kerr.IllegalGeneration, "a stale epoch")
	assert.ErrorIs(t, txnCommit(f.c, 1, "g", OffsetCommitMember{MemberID: "x", GenerationIDOrMemberEpoch: 1, Version: 4}, 0, 1), kerr.UnknownMemberID)
	assert.ErrorIs(t, txnCommit(f.c, 1, "missing", OffsetCommitMember{MemberID: "x", GenerationIDOrMemberEpoch: 1, Version: 4}, 0, 1), kerr.IllegalGeneration)
}

package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// TestAlterShareGroupOffsets: the group checks of an alter, and the group it creates.
func TestAlterShareGroupOffsets(t *testing.T) {
	t.Parallel()
	t.Run("missing group is created only when asked", func(t *testing.T) {
		f := newFixture(t, 10)
		applied := 0
		require.NoError(t, f.c.AlterShareGroupOffsets("g", false, func() { applied++ }))
		_, err := f.c.ShareGroup("g")
		assert.ErrorIs(t, err, kerr.GroupIDNotFound, "no topic exists: no group")

		require.NoError(t, f.c.AlterShareGroupOffsets("g", true, func() { applied++ }))
		info := f.group(t)
		assert.Equal(t, "Empty", info.State)
		assert.Equal(t, 2, applied)
	})
	t.Run("group with members", func(t *testing.T) {
		f := newFixture(t, 10)
		f.heartbeat(t, "m1", 0, "t")
		err := f.c.AlterShareGroupOffsets("g", true, func() { t.Fatal("applied to a non-empty group") })
		assertGroupError(t, err, kerr.NonEmptyGroup, "The group is not empty.")
	})
	t.Run("emptied group", func(t *testing.T) {
		f := newFixture(t, 10)
		f.heartbeat(t, "m1", 0, "t")
		_, err := f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "m1", MemberEpoch: LeaveEpoch})
		require.NoError(t, err)
		applied := false
		require.NoError(t, f.c.AlterShareGroupOffsets("g", true, func() { applied = true }))
		assert.True(t, applied)
	})
	t.Run("group of another type", func(t *testing.T) {
		f := newFixture(t, 10)
		f.topics.set("t", 1, 1)
		simpleCommit(t, f.c, "c")
		err := f.c.AlterShareGroupOffsets("c", true, func() { t.Fatal("applied to a classic group") })
		assertGroupError(t, err, kerr.GroupIDNotFound, "Group c is not a share group.")
	})
	t.Run("closed", func(t *testing.T) {
		f := newFixture(t, 10)
		f.c.Close()
		assert.ErrorIs(t, f.c.AlterShareGroupOffsets("g", true, func() {}), kerr.CoordinatorNotAvailable)
	})
}

// TestDeleteShareGroupOffsets: the group checks of a delete, which creates nothing.
func TestDeleteShareGroupOffsets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10)
	err := f.c.DeleteShareGroupOffsets("g", func() { t.Fatal("applied to a missing group") })
	assertGroupError(t, err, kerr.GroupIDNotFound, "Group g not found.")

	f.heartbeat(t, "m1", 0, "t")
	err = f.c.DeleteShareGroupOffsets("g", func() { t.Fatal("applied to a non-empty group") })
	assertGroupError(t, err, kerr.NonEmptyGroup, "The group is not empty.")

	_, err = f.c.ShareHeartbeat(ShareHeartbeat{GroupID: "g", MemberID: "m1", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	applied := false
	require.NoError(t, f.c.DeleteShareGroupOffsets("g", func() { applied = true }))
	assert.True(t, applied)

	f.topics.set("t", 1, 1)
	simpleCommit(t, f.c, "c")
	err = f.c.DeleteShareGroupOffsets("c", func() { t.Fatal("applied to a classic group") })
	assertGroupError(t, err, kerr.GroupIDNotFound, "Group c is not a share group.")
}

func assertGroupError(t *testing.T, err error, code *kerr.Error, message string) {
	t.Helper()
	require.ErrorIs(t, err, code)
	var ge *kafkaerr.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, message, ge.Message)
}

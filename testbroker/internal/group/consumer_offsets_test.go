package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var _ offsetMemberValidator = (*consumerGroup)(nil)
var _ topicSubscriber = (*consumerGroup)(nil)

func TestConsumerGroupOffsetMemberChecks(t *testing.T) {
	t.Parallel()
	f := newConsumerFixture(t, 10)
	f.topics.set("t", 1, 1)
	_, err := f.c.ConsumerHeartbeat(join("m1", "t"))
	require.NoError(t, err)
	g := f.c.groups["g"].consumer
	empty := newConsumerGroup("e")

	assert.NoError(t, empty.validateOffsetCommit(OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: 8}), "an admin commit to an empty group")
	requireCode(t, g.validateOffsetCommit(OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: 9}),
		kerr.UnknownMemberID, "Member  is not a member of group g.")
	requireCode(t, g.validateOffsetCommit(OffsetCommitMember{MemberID: "x", GenerationIDOrMemberEpoch: 1, Version: 9}),
		kerr.UnknownMemberID, "Member x is not a member of group g.")
	requireCode(t, g.validateOffsetCommit(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 1, Version: 8}),
		kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")
	requireCode(t, g.validateOffsetCommit(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 2, Version: 9}),
		kerr.StaleMemberEpoch, "The received member epoch 2 does not match the expected member epoch 1.")
	requireCode(t, g.validateOffsetCommit(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 0, Version: 9}),
		kerr.StaleMemberEpoch, "The received member epoch 0 does not match the expected member epoch 1.")
	assert.NoError(t, g.validateOffsetCommit(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 1, Version: 9}))

	assert.NoError(t, g.validateOffsetFetch(OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: 8}), "a fetch without member")
	requireCode(t, g.validateOffsetFetch(OffsetCommitMember{MemberID: "x", GenerationIDOrMemberEpoch: 1, Version: 9}),
		kerr.UnknownMemberID, "Member x is not a member of group g.")
	requireCode(t, g.validateOffsetFetch(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 3, Version: 9}),
		kerr.StaleMemberEpoch, "The received member epoch 3 does not match the expected member epoch 1.")
	assert.NoError(t, g.validateOffsetFetch(OffsetCommitMember{MemberID: "m1", GenerationIDOrMemberEpoch: 1, Version: 9}))

	assert.True(t, g.subscribedTo("t"))
	assert.False(t, g.subscribedTo("u"))
}

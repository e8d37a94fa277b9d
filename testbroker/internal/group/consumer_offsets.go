package group

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// validateOffsetCommit checks an OffsetCommit's member as Kafka's ConsumerGroup does: a
// commit with a negative epoch (an admin client, or a consumer outside group management) is
// accepted while the group has no members; otherwise the member id must be a member's
// (UNKNOWN_MEMBER_ID "Member <m> is not a member of group <g>."), a version below 9 is
// UNSUPPORTED_VERSION "OffsetCommit version 9 or above must be used by members using the
// modern group protocol" (every member here uses the consumer protocol), and the epoch must be
// the member's (STALE_MEMBER_EPOCH "The received member epoch <e> does not match the expected
// member epoch <m>."). A transactional commit (TxnOffsetCommit) may come from a member at any
// version.
func (g *consumerGroup) validateOffsetCommit(m OffsetCommitMember) error {
	if m.GenerationIDOrMemberEpoch < 0 && len(g.members) == 0 {
		return nil
	}
	member, err := g.offsetMember(m.MemberID)
	if err != nil {
		return err
	}
	if m.Version < 9 && !m.Transactional {
		return kafkaerr.New(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")
	}
	return checkOffsetEpoch(m.GenerationIDOrMemberEpoch, member.epoch)
}

// validateOffsetFetch checks an OffsetFetch's member as Kafka's ConsumerGroup does: a fetch
// without a member id and with a negative epoch (an admin client, or OffsetFetch before v9,
// which carries neither) is accepted; otherwise the member must exist (UNKNOWN_MEMBER_ID) and
// the epoch be its own (STALE_MEMBER_EPOCH). Kafka tells a null member id from an empty one;
// here both are "".
func (g *consumerGroup) validateOffsetFetch(m OffsetCommitMember) error {
	if m.MemberID == "" && m.GenerationIDOrMemberEpoch < 0 {
		return nil
	}
	member, err := g.offsetMember(m.MemberID)
	if err != nil {
		return err
	}
	return checkOffsetEpoch(m.GenerationIDOrMemberEpoch, member.epoch)
}

func (g *consumerGroup) offsetMember(id string) (*consumerMember, error) {
	member := g.members[id]
	if member == nil {
		return nil, kafkaerr.New(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.id)
	}
	return member, nil
}

func checkOffsetEpoch(received, expected int32) error {
	if received != expected {
		return kafkaerr.New(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", received, expected)
	}
	return nil
}

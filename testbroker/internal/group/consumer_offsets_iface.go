package group

// OffsetCommitMember is the member part of an OffsetCommit or OffsetFetch.
type OffsetCommitMember struct {
	MemberID        string
	GroupInstanceID *string
	// GenerationIDOrMemberEpoch is the request's generation (classic) or member epoch (consumer); -1 for a simple commit.
	GenerationIDOrMemberEpoch int32
	// Version is the request's version (OffsetCommit v9+/OffsetFetch v9+ carry member epochs, KIP-848).
	Version int16
}

// offsetMemberValidator is implemented by group kinds whose members commit or fetch offsets.
type offsetMemberValidator interface {
	validateOffsetCommit(m OffsetCommitMember) error
	validateOffsetFetch(m OffsetCommitMember) error
}

// topicSubscriber is implemented by group kinds whose members subscribe to topics (OffsetDelete).
type topicSubscriber interface{ subscribedTo(topic string) bool }

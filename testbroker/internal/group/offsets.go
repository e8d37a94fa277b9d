package group

import (
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// OffsetCommitMember is the member part of an OffsetCommit or OffsetFetch.
type OffsetCommitMember struct {
	MemberID        string
	GroupInstanceID *string
	// GenerationIDOrMemberEpoch is the request's generation (classic) or member epoch (consumer); -1 for a simple commit.
	GenerationIDOrMemberEpoch int32
	// Version is the request's version (OffsetCommit v9+/OffsetFetch v9+ carry member epochs, KIP-848).
	Version int16
	// Transactional marks a TxnOffsetCommit, which Kafka checks more leniently: its member
	// fields are optional (before v3 it has none) and it is not refused during a rebalance.
	Transactional bool
}

// offsetMemberValidator is implemented by group kinds whose members commit or fetch offsets.
type offsetMemberValidator interface {
	validateOffsetCommit(m OffsetCommitMember) error
	validateOffsetFetch(m OffsetCommitMember) error
}

// topicSubscriber is implemented by group kinds whose members subscribe to topics (OffsetDelete).
type topicSubscriber interface{ subscribedTo(topic string) bool }

// CommittedOffset is a committed offset of a group.
type CommittedOffset struct {
	Offset int64
	// LeaderEpoch is -1 when the commit carried none.
	LeaderEpoch int32
	Metadata    string
	// CommitTime is the cluster clock's time of the commit.
	CommitTime time.Time
}

// offsetStore is a group's committed offsets, by topic and partition. The zero value is an
// empty store, so that a group of any kind holds offsets without setup.
type offsetStore struct {
	byTopic map[string]map[int32]CommittedOffset
}

func (s *offsetStore) set(topic string, partition int32, o CommittedOffset) {
	if s.byTopic == nil {
		s.byTopic = make(map[string]map[int32]CommittedOffset)
	}
	ps := s.byTopic[topic]
	if ps == nil {
		ps = make(map[int32]CommittedOffset)
		s.byTopic[strings.Clone(topic)] = ps
	}
	ps[partition] = o
}

func (s *offsetStore) get(topic string, partition int32) (CommittedOffset, bool) {
	o, ok := s.byTopic[topic][partition]
	return o, ok
}

func (s *offsetStore) delete(topic string, partition int32) {
	ps := s.byTopic[topic]
	delete(ps, partition)
	if len(ps) == 0 {
		delete(s.byTopic, topic)
	}
}

// offsetMetadataMaxSize is offset.metadata.max.bytes' default: longer metadata is refused
// with OFFSET_METADATA_TOO_LARGE.
const offsetMetadataMaxSize = 4096

// OffsetCommit is an OffsetCommit request.
type OffsetCommit struct {
	GroupID string
	Member  OffsetCommitMember
	Topics  []OffsetCommitTopic
}

// OffsetCommitTopic is the partitions of one topic in an OffsetCommit.
type OffsetCommitTopic struct {
	Name       string
	Partitions []OffsetCommitPartition
}

// OffsetCommitPartition is one offset to commit.
type OffsetCommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	// Metadata nil commits "".
	Metadata *string
}

// PartitionResult is one partition's answer in the offset RPCs.
type PartitionResult struct {
	Partition int32
	Err       error
}

// TopicResults is one topic's answer in OffsetCommit and OffsetDelete, partitions in request
// order.
type TopicResults struct {
	Name       string
	Partitions []PartitionResult
}

// CommitOffsets runs an OffsetCommit as Kafka's KafkaApis and OffsetMetadataManager do. A
// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, whatever else happens; the
// others take the group's answer, and a commit-wide error fails all of them:
// COORDINATOR_NOT_AVAILABLE after Close; for a missing group, generation -1 creates a simple
// classic group, any other generation is GROUP_ID_NOT_FOUND from v9 and ILLEGAL_GENERATION
// before; then the group kind's member checks (a classic group:
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS in
// CompletingRebalance; a group kind whose members do not commit, a share group, is
// GROUP_ID_NOT_FOUND "Group <id> is not a consumer group."). Metadata over 4096 characters is
// OFFSET_METADATA_TOO_LARGE for its partition. A commit by a member of a Stable or
// PreparingRebalance classic group restarts its session timer.
func (c *Coordinator) CommitOffsets(req OffsetCommit) []TopicResults {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitOffsetsLocked(req, func(g *Group) *offsetStore { return &g.offsets })
}

// commitOffsetsLocked runs an OffsetCommit or TxnOffsetCommit, writing the offsets to the
// store into of the group.
func (c *Coordinator) commitOffsetsLocked(req OffsetCommit, into func(*Group) *offsetStore) []TopicResults {
	out := make([]TopicResults, len(req.Topics))
	known := false
	for i, t := range req.Topics {
		out[i].Name = t.Name
		meta, exists := c.cfg.Topics.TopicByName(t.Name)
		for _, p := range t.Partitions {
			pr := PartitionResult{Partition: p.Partition}
			if !exists || p.Partition < 0 || p.Partition >= meta.Partitions {
				pr.Err = kerr.UnknownTopicOrPartition
			} else {
				known = true
			}
			out[i].Partitions = append(out[i].Partitions, pr)
		}
	}
	if !known {
		return out
	}
	failAll := func(err error) []TopicResults {
		for i := range out {
			for j := range out[i].Partitions {
				if out[i].Partitions[j].Err == nil {
					out[i].Partitions[j].Err = err
				}
			}
		}
		return out
	}
	if c.closed {
		return failAll(kerr.CoordinatorNotAvailable)
	}
	grp, err := c.offsetCommitGroupLocked(&req)
	if err != nil {
		return failAll(err)
	}
	if g, ok := grp.kind.(*classicGroup); ok && (g.phase == classicStable || g.phase == classicPreparingRebalance) {
		if m := g.members[req.Member.MemberID]; m != nil {
			c.armHeartbeat(g, m, m.sessionTimeout)
		}
	}
	now := c.cfg.Clock.Now()
	store := into(grp)
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			pr := &out[i].Partitions[j]
			if pr.Err != nil {
				continue
			}
			metadata := ""
			if p.Metadata != nil {
				metadata = strings.Clone(*p.Metadata)
			}
			if javaLength(metadata) > offsetMetadataMaxSize {
				pr.Err = kerr.OffsetMetadataTooLarge
				continue
			}
			store.set(t.Name, p.Partition, CommittedOffset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: metadata, CommitTime: now})
		}
	}
	return out
}

// javaLength is a string's length as Java's String.length counts it, in UTF-16 units.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// offsetCommitGroupLocked finds (or creates, for a simple commit) the group an OffsetCommit
// commits to, and runs its member checks.
func (c *Coordinator) offsetCommitGroupLocked(req *OffsetCommit) (*Group, error) {
	grp := c.groups[req.GroupID]
	if grp == nil {
		switch {
		case req.Member.GenerationIDOrMemberEpoch < 0:
			grp = &Group{id: strings.Clone(req.GroupID), typ: TypeClassic}
			grp.kind = newClassicGroup(grp.id)
			c.groups[grp.id] = grp
		case req.Member.Version >= 9 && !req.Member.Transactional:
			return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", req.GroupID)
		default:
			return nil, kerr.IllegalGeneration
		}
	}
	v, ok := grp.kind.(offsetMemberValidator)
	if !ok {
		return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.GroupID)
	}
	if err := v.validateOffsetCommit(req.Member); err != nil {
		return nil, err
	}
	return grp, nil
}

// validateOffsetCommit is ClassicGroup's check of a commit's member: a commit without
// generation is accepted by an Empty group; one with a generation, member id or instance id
// must name a member of this generation; one without is UNKNOWN_MEMBER_ID in a group with
// members; and no member commits while the group awaits its assignment. A transactional commit
// without member fields is accepted, and one during the assignment too.
func (g *classicGroup) validateOffsetCommit(m OffsetCommitMember) error {
	if m.GenerationIDOrMemberEpoch < 0 && g.phase == classicEmpty {
		return nil
	}
	if m.GenerationIDOrMemberEpoch >= 0 || m.MemberID != "" || m.GroupInstanceID != nil {
		if err := g.validateMember(m.MemberID, m.GroupInstanceID); err != nil {
			return err
		}
		if m.GenerationIDOrMemberEpoch != g.generation {
			return kerr.IllegalGeneration
		}
	} else if g.phase != classicEmpty && !m.Transactional {
		return kerr.UnknownMemberID
	}
	if g.phase == classicCompletingRebalance && !m.Transactional {
		return kerr.RebalanceInProgress
	}
	return nil
}

// validateOffsetFetch is ClassicGroup's check of a fetch: Kafka refuses only a Dead group,
// which testbroker never keeps, so every fetch passes.
func (g *classicGroup) validateOffsetFetch(OffsetCommitMember) error { return nil }

// OffsetFetch is one group of an OffsetFetch request.
type OffsetFetch struct {
	GroupID string
	// Member is the fetching member (v9+ for consumer groups); MemberID "" and epoch -1 when
	// the fetch is not a member's.
	Member OffsetCommitMember
	// Topics are the partitions to fetch; nil fetches every committed offset.
	Topics []OffsetFetchTopic
	// RequireStable asks for offsets no transaction is about to change: a partition with a
	// pending transactional offset is UNSTABLE_OFFSET_COMMIT.
	RequireStable bool
}

// OffsetFetchTopic is the partitions of one topic to fetch.
type OffsetFetchTopic struct {
	Name       string
	Partitions []int32
}

// FetchedTopic is one topic's fetched offsets.
type FetchedTopic struct {
	Name       string
	Partitions []FetchedOffset
}

// FetchedOffset is one partition's committed offset; Offset -1 (LeaderEpoch -1, Metadata "")
// when none is committed.
type FetchedOffset struct {
	Partition int32
	CommittedOffset
	// Err is UNSTABLE_OFFSET_COMMIT (with Offset -1) when RequireStable asked and a transaction
	// has an offset of the partition pending.
	Err error
}

// FetchOffsets runs one group of an OffsetFetch as OffsetMetadataManager does. After Close it
// is COORDINATOR_NOT_AVAILABLE. A missing group, and a group whose kind refuses the fetch with
// GROUP_ID_NOT_FOUND (a share group), answers every requested partition
// with -1, or no topics for a fetch of all, without error; other member errors of a consumer
// group fail the group. Requested partitions come back in request order; a fetch of all
// lists topics by name and partitions in order.
func (c *Coordinator) FetchOffsets(req OffsetFetch) ([]FetchedTopic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	grp := c.groups[req.GroupID]
	if grp != nil {
		v, ok := grp.kind.(offsetMemberValidator)
		if !ok {
			grp = nil
		} else if err := v.validateOffsetFetch(req.Member); err != nil {
			if !isGroupIDNotFound(err) {
				return nil, err
			}
			grp = nil
		}
	}
	var store offsetStore
	if grp != nil {
		store = grp.offsets
	}
	stable := func(topic string, fo FetchedOffset) FetchedOffset {
		if req.RequireStable && grp != nil && grp.hasPendingTxnOffset(topic, fo.Partition) {
			fo.CommittedOffset, fo.Err = CommittedOffset{Offset: -1, LeaderEpoch: -1}, kerr.UnstableOffsetCommit
		}
		return fo
	}
	if req.Topics == nil {
		out := []FetchedTopic{}
		for _, topic := range slices.Sorted(maps.Keys(store.byTopic)) {
			ft := FetchedTopic{Name: topic}
			for _, p := range slices.Sorted(maps.Keys(store.byTopic[topic])) {
				ft.Partitions = append(ft.Partitions, stable(topic, FetchedOffset{Partition: p, CommittedOffset: store.byTopic[topic][p]}))
			}
			out = append(out, ft)
		}
		return out, nil
	}
	out := make([]FetchedTopic, len(req.Topics))
	for i, t := range req.Topics {
		out[i] = FetchedTopic{Name: t.Name, Partitions: []FetchedOffset{}}
		for _, p := range t.Partitions {
			o, ok := store.get(t.Name, p)
			if !ok {
				o = CommittedOffset{Offset: -1, LeaderEpoch: -1}
			}
			out[i].Partitions = append(out[i].Partitions, stable(t.Name, FetchedOffset{Partition: p, CommittedOffset: o}))
		}
	}
	return out, nil
}

func isGroupIDNotFound(err error) bool {
	ge, ok := err.(*kafkaerr.Error)
	return ok && ge.Code == kerr.GroupIDNotFound
}

// OffsetDeleteTopic is the partitions of one topic whose offsets to delete.
type OffsetDeleteTopic struct {
	Name       string
	Partitions []int32
}

// DeleteOffsets runs an OffsetDelete as Kafka does. The error is the request's:
// COORDINATOR_NOT_AVAILABLE after Close, INVALID_GROUP_ID for an empty id, GROUP_ID_NOT_FOUND
// for a missing group ("Group <id> not found.") and for a group kind without committed
// offsets, a share group ("Group <id> is not a consumer group."), and NON_EMPTY_GROUP for a
// classic group with members that does not use the consumer protocol. Per partition: a
// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, and a topic the group's members
// subscribe to GROUP_SUBSCRIBED_TO_TOPIC; other offsets are deleted (a partition without one
// succeeds too).
func (c *Coordinator) DeleteOffsets(groupID string, topics []OffsetDeleteTopic) ([]TopicResults, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, kerr.CoordinatorNotAvailable
	case groupID == "":
		return nil, kerr.InvalidGroupID
	}
	grp := c.groups[groupID]
	if grp == nil {
		return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", groupID)
	}
	sub, ok := grp.kind.(topicSubscriber)
	if !ok {
		return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s is not a consumer group.", groupID)
	}
	if g, ok := grp.kind.(*classicGroup); ok {
		if g.phase != classicEmpty && !g.usesConsumerProtocol() {
			return nil, kerr.NonEmptyGroup
		}
	}
	out := make([]TopicResults, len(topics))
	for i, t := range topics {
		out[i].Name = t.Name
		meta, exists := c.cfg.Topics.TopicByName(t.Name)
		subscribed := sub.subscribedTo(t.Name)
		for _, p := range t.Partitions {
			pr := PartitionResult{Partition: p}
			switch {
			case !exists || p < 0 || p >= meta.Partitions:
				pr.Err = kerr.UnknownTopicOrPartition
			case subscribed:
				pr.Err = kerr.GroupSubscribedToTopic
			default:
				grp.offsets.delete(t.Name, p)
			}
			out[i].Partitions = append(out[i].Partitions, pr)
		}
	}
	return out, nil
}

// CommittedOffsets returns a copy of a group's committed offsets, by topic and partition; ok
// is false when the group does not exist.
func (c *Coordinator) CommittedOffsets(groupID string) (map[string]map[int32]CommittedOffset, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.groups[groupID]
	if grp == nil {
		return nil, false
	}
	out := make(map[string]map[int32]CommittedOffset, len(grp.offsets.byTopic))
	for t, ps := range grp.offsets.byTopic {
		out[t] = maps.Clone(ps)
	}
	return out, true
}

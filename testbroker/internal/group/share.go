package group

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// shareGroup is the state of a share group (Kafka's ShareGroup).
type shareGroup struct {
	// epoch is the group epoch: bumped on every change of membership, subscriptions or
	// subscribed topics' metadata.
	epoch int32
	// assignmentEpoch is the group epoch the target assignment was computed for.
	assignmentEpoch int32
	members         map[string]*shareMember
	// metadata is the subscribed topics that exist, by name, as of the last epoch bump. A
	// heartbeat that finds it changed (a topic created, deleted or grown) bumps the epoch.
	metadata []TopicMeta
	// target is the target assignment of every member, computed at assignmentEpoch.
	target map[string][]TopicPartitions
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: make(map[string]*shareMember), target: make(map[string][]TopicPartitions)}
}

// state is the group's state: "Empty" without members, else "Stable". Share groups have no
// rebalancing states: members take their target assignment at once.
func (s *shareGroup) state() string {
	if len(s.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (s *shareGroup) protocolType() string { return "share" }

func (s *shareGroup) memberCount() int { return len(s.members) }

func (s *shareGroup) stop() {
	for _, m := range s.members {
		m.stopSession()
	}
}

// subscribedTopics is the union of the members' subscriptions, sorted.
func (s *shareGroup) subscribedTopics() []string {
	var names []string
	for _, m := range s.members {
		names = append(names, m.topics...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// topicMetadata returns the metadata of the named topics that exist, in the order given.
func (c *Coordinator) topicMetadata(names []string) []TopicMeta {
	var out []TopicMeta
	for _, name := range names {
		if meta, ok := c.cfg.Topics.TopicByName(name); ok {
			out = append(out, meta)
		}
	}
	return out
}

// refreshEpoch recomputes the subscribed topics' metadata and bumps the group epoch if it
// changed or if force is set (a member joined, left or changed its subscription).
func (c *Coordinator) refreshShareEpoch(s *shareGroup, force bool) {
	meta := c.topicMetadata(s.subscribedTopics())
	if !force && slices.Equal(meta, s.metadata) {
		return
	}
	s.metadata = meta
	s.epoch++
}

// updateTarget recomputes the target assignment if the group epoch moved past it.
func (s *shareGroup) updateTarget() {
	if s.epoch <= s.assignmentEpoch {
		return
	}
	subs := make([]ShareSubscription, 0, len(s.members))
	for _, m := range s.members {
		subs = append(subs, ShareSubscription{MemberID: m.id, Topics: m.topics})
	}
	s.target = AssignShare(subs, s.metadata)
	s.assignmentEpoch = s.epoch
}

// removeMember takes a member out of the group (leave or session expiry): its session timer
// is stopped and the group epoch bumped. The target assignment of the others is recomputed at
// the next heartbeat.
func (c *Coordinator) removeShareMember(s *shareGroup, m *shareMember) {
	m.stopSession()
	delete(s.members, m.id)
	c.refreshShareEpoch(s, true)
}

// shareGroupLocked returns the share group with this id. A missing group is GROUP_ID_NOT_FOUND
// "Group <id> not found.", a group of another type GROUP_ID_NOT_FOUND "Group <id> is not a
// share group.".
func (c *Coordinator) shareGroupLocked(id string) (*shareGroup, error) {
	g := c.groups[id]
	if g == nil {
		return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", id)
	}
	if g.typ != TypeShare {
		return nil, notTypeError(id, TypeShare)
	}
	return g.share, nil
}

// ShareGroupInfo is a snapshot of a share group, as ShareGroupDescribe reports it.
type ShareGroupInfo struct {
	GroupID string
	// State is "Empty" (no members) or "Stable".
	State string
	// GroupEpoch is bumped whenever a member joins, leaves, is fenced or changes its
	// subscription, and when a subscribed topic is created, deleted or given partitions.
	GroupEpoch int32
	// AssignmentEpoch is the group epoch the target assignment was computed for.
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []ShareMemberInfo
}

// ShareGroup returns a snapshot of a share group. The errors are those of ShareGroupDescribe:
// GROUP_ID_NOT_FOUND "Group <id> not found." or "Group <id> is not a share group.".
func (c *Coordinator) ShareGroup(id string) (ShareGroupInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.shareGroupLocked(id)
	if err != nil {
		return ShareGroupInfo{}, err
	}
	info := ShareGroupInfo{
		GroupID:         id,
		State:           s.state(),
		GroupEpoch:      s.epoch,
		AssignmentEpoch: s.assignmentEpoch,
		Members:         []ShareMemberInfo{},
	}
	for _, m := range s.members {
		info.Members = append(info.Members, m.info(c.cfg.Topics))
	}
	slices.SortFunc(info.Members, func(a, b ShareMemberInfo) int { return strings.Compare(a.MemberID, b.MemberID) })
	return info, nil
}

// ShareGroupIDs returns the ids of every share group, sorted.
func (c *Coordinator) ShareGroupIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, g := range c.groups {
		if g.typ == TypeShare {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

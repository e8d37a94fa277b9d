package group

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// ConsumerConfig is the configuration one consumer group runs with, read at every heartbeat.
type ConsumerConfig struct {
	// HeartbeatInterval is consumer.heartbeat.interval.ms (group), else
	// group.consumer.heartbeat.interval.ms (broker).
	HeartbeatInterval time.Duration
	// SessionTimeout is consumer.session.timeout.ms (group), else
	// group.consumer.session.timeout.ms.
	SessionTimeout time.Duration
	// MaxSize is group.consumer.max.size: the most members the group accepts.
	MaxSize int
	// Assignors are the server-side assignors' names (group.consumer.assignors), the default
	// first.
	Assignors []string
}

// TopicLister is implemented by a Topics that can list every topic, which regular
// expression subscriptions need; without it a regular expression matches no topic.
type TopicLister interface {
	// TopicNames returns the names of every topic.
	TopicNames() []string
}

// consumerGroup is the state of a consumer group (Kafka's ConsumerGroup).
type consumerGroup struct {
	id string
	// epoch is the group epoch: bumped on every change of membership, subscriptions or
	// subscribed topics' metadata.
	epoch int32
	// assignmentEpoch is the group epoch the target assignment was computed for.
	assignmentEpoch int32
	members         map[string]*consumerMember
	// static maps instance ids to the member ids holding them.
	static map[string]string
	// target is the target assignment of every member, computed at assignmentEpoch.
	target map[string]partitionSet
	// metadata is the subscribed topics that exist, by name, as of the last epoch bump.
	metadata []TopicMeta
	// resolved are the topics each subscribed regular expression matched at the last
	// heartbeat, sorted.
	resolved map[string][]string
	// partitionEpochs holds, for every partition a member owns or is revoking, that member's
	// epoch; a partition not in it is free.
	partitionEpochs map[[16]byte]map[int32]int32
}

func newConsumerGroup(id string) *consumerGroup {
	return &consumerGroup{
		id:              id,
		members:         make(map[string]*consumerMember),
		static:          make(map[string]string),
		target:          make(map[string]partitionSet),
		resolved:        make(map[string][]string),
		partitionEpochs: make(map[[16]byte]map[int32]int32),
	}
}

// state is the group's state as ConsumerGroupDescribe and ListGroups name it: "Empty"
// without members, "Assigning" while the target assignment is behind the group epoch,
// "Reconciling" while a member is not stable at the assignment epoch, else "Stable".
func (g *consumerGroup) state() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch > g.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if !m.reconciledTo(g.assignmentEpoch) {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (g *consumerGroup) protocolType() string { return "consumer" }

func (g *consumerGroup) memberCount() int { return len(g.members) }

func (g *consumerGroup) stop() {
	for _, m := range g.members {
		m.stopTimers()
	}
}

// subscribedTo reports whether some member subscribes to topic, by name or by a regular
// expression that matched it.
func (g *consumerGroup) subscribedTo(topic string) bool {
	for _, m := range g.members {
		if slices.Contains(m.topics, topic) || slices.Contains(g.resolved[m.regex], topic) {
			return true
		}
	}
	return false
}

// memberTopics is what a member subscribes to: its names and its regular expression's
// matches, sorted.
func (g *consumerGroup) memberTopics(m *consumerMember) []string {
	names := slices.Clone(m.topics)
	if m.regex != "" {
		names = append(names, g.resolved[m.regex]...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// subscribedTopics is the union of the members' subscriptions, sorted.
func (g *consumerGroup) subscribedTopics() []string {
	var names []string
	for _, m := range g.members {
		names = append(names, g.memberTopics(m)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// resolveRegexes matches every member's regular expression against the cluster's topics,
// as Kafka's refresh does (a whole-name match).
func (c *Coordinator) resolveRegexes(g *consumerGroup) {
	resolved := make(map[string][]string)
	lister, _ := c.cfg.Topics.(TopicLister)
	for _, m := range g.members {
		if m.regex == "" {
			continue
		}
		if _, done := resolved[m.regex]; done {
			continue
		}
		re, err := regexp.Compile(`^(?:` + m.regex + `)$`)
		matched := []string{}
		if err == nil && lister != nil {
			for _, name := range lister.TopicNames() {
				if re.MatchString(name) {
					matched = append(matched, name)
				}
			}
		}
		slices.Sort(matched)
		resolved[m.regex] = matched
	}
	g.resolved = resolved
}

// refreshConsumerEpoch re-resolves the regular expressions, recomputes the subscribed
// topics' metadata and bumps the group epoch if it changed or if force is set.
func (c *Coordinator) refreshConsumerEpoch(g *consumerGroup, force bool) {
	c.resolveRegexes(g)
	meta := c.topicMetadata(g.subscribedTopics())
	if !force && slices.Equal(meta, g.metadata) {
		return
	}
	g.metadata = meta
	g.epoch++
}

// subscribedIDs are the ids of the existing topics m subscribes to.
func (g *consumerGroup) subscribedIDs(m *consumerMember) map[[16]byte]bool {
	ids := map[[16]byte]bool{}
	for _, name := range g.memberTopics(m) {
		for _, t := range g.metadata {
			if t.Name == name {
				ids[t.ID] = true
			}
		}
	}
	return ids
}

// preferredAssignor is the assignor most members asked for (the first configured one on a
// tie), else the default.
func (g *consumerGroup) preferredAssignor(assignors []string) string {
	counts := map[string]int{}
	for _, m := range g.members {
		if m.serverAssignor != "" {
			counts[m.serverAssignor]++
		}
	}
	best := ""
	for _, a := range assignors {
		if counts[a] > counts[best] {
			best = a
		}
	}
	if best == "" && len(assignors) > 0 {
		return assignors[0]
	}
	return best
}

// updateTarget recomputes the target assignment if the group epoch moved past it.
func (g *consumerGroup) updateTarget(assignors []string) {
	if g.epoch <= g.assignmentEpoch {
		return
	}
	subs := make([]ConsumerSubscription, 0, len(g.members))
	for _, m := range g.members {
		subs = append(subs, ConsumerSubscription{
			MemberID:   m.id,
			InstanceID: m.instanceID,
			Topics:     g.memberTopics(m),
			Previous:   g.target[m.id],
		})
	}
	target := make(map[string]partitionSet, len(subs))
	for id, a := range AssignConsumer(g.preferredAssignor(assignors), subs, g.metadata) {
		target[id] = a
	}
	g.target = target
	g.assignmentEpoch = g.epoch
}

func (g *consumerGroup) partitionEpoch(topic [16]byte, partition int32) int32 {
	if e, ok := g.partitionEpochs[topic][partition]; ok {
		return e
	}
	return -1
}

// setAssignment replaces m's assignment state, keeping partitionEpochs in step.
func (g *consumerGroup) setAssignment(m *consumerMember, a memberAssignment) {
	g.releasePartitions(m)
	m.state, m.epoch, m.prevEpoch = a.state, a.epoch, a.prevEpoch
	m.assigned, m.pendingRevocation = a.assigned, a.pendingRevocation
	g.ownPartitions(m)
}

func (g *consumerGroup) ownPartitions(m *consumerMember) {
	for _, set := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range set {
			if g.partitionEpochs[t] == nil {
				g.partitionEpochs[t] = map[int32]int32{}
			}
			for _, p := range ps {
				g.partitionEpochs[t][p] = m.epoch
			}
		}
	}
}

func (g *consumerGroup) releasePartitions(m *consumerMember) {
	for _, set := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range set {
			for _, p := range ps {
				delete(g.partitionEpochs[t], p)
			}
			if len(g.partitionEpochs[t]) == 0 {
				delete(g.partitionEpochs, t)
			}
		}
	}
}

// removeMember takes m out of the group: its timers stop, its partitions are free, its
// target assignment goes.
func (g *consumerGroup) removeMember(m *consumerMember) {
	m.stopTimers()
	g.releasePartitions(m)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
}

// consumerGroupLocked returns the consumer group with this id. A missing group is
// GROUP_ID_NOT_FOUND "Group <id> not found.", a group of another type GROUP_ID_NOT_FOUND
// "Group <id> is not a consumer group.".
func (c *Coordinator) consumerGroupLocked(id string) (*consumerGroup, error) {
	g := c.groups[id]
	if g == nil {
		return nil, kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", id)
	}
	if g.typ != TypeConsumer {
		return nil, notTypeError(id, TypeConsumer)
	}
	return g.consumer, nil
}

// ConsumerGroupInfo is a snapshot of a consumer group (KIP-848), as ConsumerGroupDescribe
// reports it plus each member's reconciliation state.
type ConsumerGroupInfo struct {
	GroupID string
	// State is "Empty" (no members), "Assigning" (the group epoch moved past the target
	// assignment, which the next heartbeat recomputes), "Reconciling" (a member has not
	// reached its target assignment yet) or "Stable".
	State string
	// GroupEpoch is bumped whenever a member joins, leaves, is fenced or changes its
	// subscription, and when a subscribed topic is created, deleted, given partitions or
	// matched by a member's regular expression.
	GroupEpoch int32
	// AssignmentEpoch is the group epoch the target assignment was computed for.
	AssignmentEpoch int32
	// AssignorName is the server-side assignor in use: the one most members ask for, else
	// "uniform".
	AssignorName string
	// Members are sorted by member id.
	Members []ConsumerMemberInfo
}

// ConsumerGroup returns a snapshot of a consumer group. The errors are those of
// ConsumerGroupDescribe: GROUP_ID_NOT_FOUND "Group <id> not found." or "Group <id> is not a
// consumer group.".
func (c *Coordinator) ConsumerGroup(id string) (ConsumerGroupInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.consumerGroupLocked(id)
	if err != nil {
		return ConsumerGroupInfo{}, err
	}
	info := ConsumerGroupInfo{
		GroupID:         id,
		State:           g.state(),
		GroupEpoch:      g.epoch,
		AssignmentEpoch: g.assignmentEpoch,
		AssignorName:    g.preferredAssignor(c.cfg.ConsumerConfig(id).Assignors),
		Members:         []ConsumerMemberInfo{},
	}
	for _, m := range g.members {
		info.Members = append(info.Members, m.info(g.target[m.id], c.cfg.Topics))
	}
	slices.SortFunc(info.Members, func(a, b ConsumerMemberInfo) int { return strings.Compare(a.MemberID, b.MemberID) })
	return info, nil
}

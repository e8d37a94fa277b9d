package group

import (
	"bytes"
	"slices"
	"strings"
)

// The server-side assignors of consumer groups, by the names ConsumerGroupHeartbeat's
// ServerAssignor and ConsumerGroupDescribe's AssignorName use (group.consumer.assignors).
const (
	UniformAssignorName = "uniform"
	RangeAssignorName   = "range"
)

// partitionSet is a set of partitions by topic id, each topic's partitions ascending and
// never empty.
type partitionSet map[[16]byte][]int32

func (p partitionSet) contains(topic [16]byte, partition int32) bool {
	_, ok := slices.BinarySearch(p[topic], partition)
	return ok
}

func (p partitionSet) add(topic [16]byte, partition int32) {
	ps := p[topic]
	if i, ok := slices.BinarySearch(ps, partition); !ok {
		p[topic] = slices.Insert(ps, i, partition)
	}
}

func (p partitionSet) remove(topic [16]byte, partition int32) {
	ps := p[topic]
	if i, ok := slices.BinarySearch(ps, partition); ok {
		ps = slices.Delete(ps, i, i+1)
		if len(ps) == 0 {
			delete(p, topic)
		} else {
			p[topic] = ps
		}
	}
}

func (p partitionSet) count() int {
	n := 0
	for _, ps := range p {
		n += len(ps)
	}
	return n
}

func (p partitionSet) clone() partitionSet {
	out := make(partitionSet, len(p))
	for t, ps := range p {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (p partitionSet) equal(q partitionSet) bool {
	if len(p) != len(q) {
		return false
	}
	for t, ps := range p {
		if !slices.Equal(ps, q[t]) {
			return false
		}
	}
	return true
}

// list returns the set as TopicPartitions sorted by topic id, naming each topic with
// topics; a topic that no longer exists is left out.
func (p partitionSet) list(topics Topics) []TopicPartitions {
	out := []TopicPartitions{}
	for t, ps := range p {
		name, ok := topics.TopicName(t)
		if !ok {
			continue
		}
		out = append(out, TopicPartitions{TopicID: t, Topic: name, Partitions: slices.Clone(ps)})
	}
	slices.SortFunc(out, func(a, b TopicPartitions) int { return bytes.Compare(a.TopicID[:], b.TopicID[:]) })
	return out
}

// ConsumerSubscription is one member of a consumer group as an assignor sees it.
type ConsumerSubscription struct {
	MemberID   string
	InstanceID *string
	// Topics are the names the member subscribes to, by name or by regular expression.
	Topics []string
	// Previous is the member's current target assignment, which the uniform assignor keeps
	// as far as balance allows.
	Previous map[[16]byte][]int32
}

// AssignConsumer computes a consumer group's target assignment with the named assignor
// (UniformAssignorName or RangeAssignorName; any other name is the uniform one): for every
// member, the partitions it is assigned. Only partitions of topics in topics are assigned,
// each to exactly one member subscribed to its topic.
//
// "range", as Kafka's RangeAssignor: per topic, its subscribers in order (members with an
// instance id first, by instance id, then the others by member id) get consecutive ranges of
// partitions, the first partitions%subscribers of them one partition more.
//
// "uniform", as Kafka's UniformAssignor in outcome: each member keeps the partitions of its
// previous target assignment that still exist and that it still subscribes to; unowned
// partitions go one by one, in (topic name, partition) order, to the subscribed member with
// the fewest partitions; then partitions move from the member with the most to a subscribed
// member with at least two fewer until none can. With identical subscriptions the members'
// counts differ by at most one and a member keeps as many of its partitions as that allows.
// Ties go to the member first in id order, so the result depends only on the inputs (Kafka's
// tie-breaks follow Java hash map order).
func AssignConsumer(assignor string, members []ConsumerSubscription, topics []TopicMeta) map[string]map[[16]byte][]int32 {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b ConsumerSubscription) int { return strings.Compare(a.MemberID, b.MemberID) })
	topics = slices.Clone(topics)
	slices.SortFunc(topics, func(a, b TopicMeta) int { return strings.Compare(a.Name, b.Name) })
	var out map[string]partitionSet
	if assignor == RangeAssignorName {
		out = assignRange(members, topics)
	} else {
		out = assignUniform(members, topics)
	}
	res := make(map[string]map[[16]byte][]int32, len(out))
	for id, ps := range out {
		res[id] = ps
	}
	return res
}

func assignRange(members []ConsumerSubscription, topics []TopicMeta) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	for _, m := range members {
		out[m.MemberID] = partitionSet{}
	}
	ordered := slices.Clone(members)
	slices.SortStableFunc(ordered, func(a, b ConsumerSubscription) int {
		switch {
		case a.InstanceID != nil && b.InstanceID != nil:
			return strings.Compare(*a.InstanceID, *b.InstanceID)
		case a.InstanceID != nil:
			return -1
		case b.InstanceID != nil:
			return 1
		}
		return strings.Compare(a.MemberID, b.MemberID)
	})
	for _, t := range topics {
		var subs []string
		for _, m := range ordered {
			if slices.Contains(m.Topics, t.Name) {
				subs = append(subs, m.MemberID)
			}
		}
		if len(subs) == 0 {
			continue
		}
		quota, extra := t.Partitions/int32(len(subs)), t.Partitions%int32(len(subs))
		next := int32(0)
		for _, id := range subs {
			n := quota
			if extra > 0 {
				n++
				extra--
			}
			for p := next; p < next+n; p++ {
				out[id].add(t.ID, p)
			}
			next += n
		}
	}
	return out
}

func assignUniform(members []ConsumerSubscription, topics []TopicMeta) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	subscribed := make([]map[[16]byte]bool, len(members)) // per member, the topic ids it may get
	byID := make(map[[16]byte]TopicMeta, len(topics))
	for _, t := range topics {
		byID[t.ID] = t
	}
	owned := partitionSet{}
	for i, m := range members {
		subscribed[i] = map[[16]byte]bool{}
		for _, t := range topics {
			if slices.Contains(m.Topics, t.Name) {
				subscribed[i][t.ID] = true
			}
		}
		kept := partitionSet{}
		for tid, ps := range m.Previous {
			if !subscribed[i][tid] {
				continue
			}
			for _, p := range ps {
				if p < byID[tid].Partitions && !owned.contains(tid, p) {
					kept.add(tid, p)
					owned.add(tid, p)
				}
			}
		}
		out[m.MemberID] = kept
	}
	fewest := func(eligible func(i int) bool) int {
		best := -1
		for i, m := range members {
			if eligible(i) && (best < 0 || out[m.MemberID].count() < out[members[best].MemberID].count()) {
				best = i
			}
		}
		return best
	}
	for _, t := range topics {
		for p := range t.Partitions {
			if owned.contains(t.ID, p) {
				continue
			}
			if i := fewest(func(i int) bool { return subscribed[i][t.ID] }); i >= 0 {
				out[members[i].MemberID].add(t.ID, p)
			}
		}
	}
	for moved := true; moved; {
		moved = false
		// The most loaded member first, then the least loaded subscriber of one of its topics.
		order := make([]int, len(members))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return out[members[b].MemberID].count() - out[members[a].MemberID].count()
		})
		for _, from := range order {
			src := out[members[from].MemberID]
			to := fewest(func(i int) bool {
				if out[members[i].MemberID].count()+1 >= src.count() {
					return false
				}
				for tid := range src {
					if subscribed[i][tid] {
						return true
					}
				}
				return false
			})
			if to < 0 {
				continue
			}
			dst := out[members[to].MemberID]
			tid, p := lastMovable(src, subscribed[to])
			src.remove(tid, p)
			dst.add(tid, p)
			moved = true
			break
		}
	}
	return out
}

// lastMovable returns the highest partition of the last topic (by id) in src that a member
// subscribed to subs may take.
func lastMovable(src partitionSet, subs map[[16]byte]bool) ([16]byte, int32) {
	var ids [][16]byte
	for tid := range src {
		if subs[tid] {
			ids = append(ids, tid)
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	tid := ids[len(ids)-1]
	ps := src[tid]
	return tid, ps[len(ps)-1]
}

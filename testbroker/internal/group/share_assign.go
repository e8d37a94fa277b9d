package group

import (
	"slices"
	"strings"
)

// ShareAssignorName is the name ShareGroupDescribe reports for the share group assignor.
const ShareAssignorName = "simple"

// ShareSubscription is one member's subscription, as the assignor sees it.
type ShareSubscription struct {
	MemberID string
	Topics   []string
}

// TopicPartitions is a set of partitions of one topic.
type TopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32 // ascending
}

// AssignShare computes the target assignment of a share group: for every member, the partitions it
// is assigned, by topic name. Only partitions of topics in topics that some member subscribes
// to are assigned, and a member only gets partitions of topics it subscribes to.
//
// Every such partition goes to at least one member. Members are taken in id order and
// partitions in (topic name, index) order; each partition goes to the subscribed member with
// the fewest partitions so far (the first in id order on a tie), so with no more members than
// partitions each partition has exactly one member and, when every member subscribes to the
// same topics, members' partition counts differ by at most one. Then every member that got
// nothing but subscribes to an existing topic takes the partition of its topics shared by the
// fewest members (the first in order on a tie): with more members than partitions, partitions
// are shared, spread evenly. The result depends only on the inputs, not on a previous
// assignment.
func AssignShare(members []ShareSubscription, topics []TopicMeta) map[string][]TopicPartitions {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b ShareSubscription) int { return strings.Compare(a.MemberID, b.MemberID) })
	topics = slices.Clone(topics)
	slices.SortFunc(topics, func(a, b TopicMeta) int { return strings.Compare(a.Name, b.Name) })

	type slot struct {
		topic  int // index in topics
		index  int32
		owners []int // member indexes
	}
	subscribers := make([][]int, len(topics)) // per topic, the member indexes subscribed to it
	for t, meta := range topics {
		for m, s := range members {
			if slices.Contains(s.Topics, meta.Name) {
				subscribers[t] = append(subscribers[t], m)
			}
		}
	}
	var slots []slot
	for t, meta := range topics {
		if len(subscribers[t]) == 0 {
			continue
		}
		for p := range meta.Partitions {
			slots = append(slots, slot{topic: t, index: p})
		}
	}

	counts := make([]int, len(members))
	for i := range slots {
		best := -1
		for _, m := range subscribers[slots[i].topic] {
			if best < 0 || counts[m] < counts[best] {
				best = m
			}
		}
		slots[i].owners = append(slots[i].owners, best)
		counts[best]++
	}
	for m := range members {
		if counts[m] > 0 {
			continue
		}
		best := -1
		for i := range slots {
			if !slices.Contains(subscribers[slots[i].topic], m) {
				continue
			}
			if best < 0 || len(slots[i].owners) < len(slots[best].owners) {
				best = i
			}
		}
		if best >= 0 {
			slots[best].owners = append(slots[best].owners, m)
			counts[m]++
		}
	}

	out := make(map[string][]TopicPartitions, len(members))
	for _, s := range members {
		out[s.MemberID] = nil
	}
	for _, sl := range slots { // in (topic, index) order, so partitions stay ascending
		meta := topics[sl.topic]
		for _, m := range sl.owners {
			id := members[m].MemberID
			tps := out[id]
			if n := len(tps); n > 0 && tps[n-1].TopicID == meta.ID {
				tps[n-1].Partitions = append(tps[n-1].Partitions, sl.index)
			} else {
				tps = append(tps, TopicPartitions{TopicID: meta.ID, Topic: meta.Name, Partitions: []int32{sl.index}})
			}
			out[id] = tps
		}
	}
	return out
}

// equalAssignment reports whether two assignments hold the same partitions of the same topic
// ids, in the same order.
func equalAssignment(a, b []TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// cloneAssignment returns a deep copy, so that snapshots do not share slices with the group.
func cloneAssignment(a []TopicPartitions) []TopicPartitions {
	out := make([]TopicPartitions, len(a))
	for i, tp := range a {
		out[i] = TopicPartitions{TopicID: tp.TopicID, Topic: tp.Topic, Partitions: slices.Clone(tp.Partitions)}
	}
	return out
}

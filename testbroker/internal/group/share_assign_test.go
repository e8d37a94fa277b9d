package group

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func topicID(b byte) [16]byte { return [16]byte{b} }

type owned struct {
	topic string
	index int32
}

// owners inverts an assignment: for every partition, the members that have it.
func owners(a map[string][]TopicPartitions) map[owned][]string {
	out := make(map[owned][]string)
	for member, tps := range a {
		for _, tp := range tps {
			for _, p := range tp.Partitions {
				out[owned{tp.Topic, p}] = append(out[owned{tp.Topic, p}], member)
			}
		}
	}
	return out
}

func count(tps []TopicPartitions) int {
	n := 0
	for _, tp := range tps {
		n += len(tp.Partitions)
	}
	return n
}

// TestAssignBalanced checks every shape from 1 to 5 members and 1 to 6 partitions (over two
// topics when there are more than 3), all members subscribed to everything: every partition is
// assigned; with no more members than partitions each partition has one member and counts
// differ by at most one; with more members every member has exactly one partition and the
// partitions' member counts differ by at most one.
func TestAssignBalanced(t *testing.T) {
	t.Parallel()
	for members := 1; members <= 5; members++ {
		for partitions := int32(1); partitions <= 6; partitions++ {
			t.Run(fmt.Sprintf("%dm-%dp", members, partitions), func(t *testing.T) {
				topics := []TopicMeta{{Name: "a", ID: topicID(1), Partitions: partitions}}
				if partitions > 3 {
					topics = []TopicMeta{
						{Name: "a", ID: topicID(1), Partitions: 3},
						{Name: "b", ID: topicID(2), Partitions: partitions - 3},
					}
				}
				var subs []ShareSubscription
				for i := range members {
					subs = append(subs, ShareSubscription{MemberID: fmt.Sprintf("m%d", i), Topics: []string{"a", "b"}})
				}
				got := AssignShare(subs, topics)
				require.Len(t, got, members)

				byPartition := owners(got)
				require.Len(t, byPartition, int(partitions), "every partition is assigned")
				minOwners, maxOwners := members, 0
				for _, ms := range byPartition {
					minOwners, maxOwners = min(minOwners, len(ms)), max(maxOwners, len(ms))
				}
				minCount, maxCount := int(partitions), 0
				for _, tps := range got {
					minCount, maxCount = min(minCount, count(tps)), max(maxCount, count(tps))
				}
				if members <= int(partitions) {
					assert.Equal(t, 1, maxOwners, "each partition has one member")
					assert.LessOrEqual(t, maxCount-minCount, 1, "counts are balanced")
				} else {
					assert.Equal(t, 1, minCount, "every member has a partition")
					assert.Equal(t, 1, maxCount)
					assert.LessOrEqual(t, maxOwners-minOwners, 1, "sharing is spread evenly")
				}

				slices.Reverse(subs)
				slices.Reverse(topics)
				assert.Equal(t, got, AssignShare(subs, topics), "the input order does not matter")
			})
		}
	}
}

// TestAssignExamples pins exact assignments: round robin in (member id, topic, index) order,
// subscriptions respected, and topics that do not exist or that nobody subscribes to left out.
func TestAssignExamples(t *testing.T) {
	t.Parallel()
	a, b, c := TopicMeta{"a", topicID(1), 3}, TopicMeta{"b", topicID(2), 2}, TopicMeta{"c", topicID(3), 4}
	tp := func(m TopicMeta, ps ...int32) TopicPartitions {
		return TopicPartitions{TopicID: m.ID, Topic: m.Name, Partitions: ps}
	}
	tests := []struct {
		name   string
		subs   []ShareSubscription
		topics []TopicMeta
		want   map[string][]TopicPartitions
	}{
		{
			name:   "round robin across topics",
			subs:   []ShareSubscription{{"y", []string{"a", "b"}}, {"x", []string{"a", "b"}}},
			topics: []TopicMeta{b, a},
			want: map[string][]TopicPartitions{
				"x": {tp(a, 0, 2), tp(b, 1)},
				"y": {tp(a, 1), tp(b, 0)},
			},
		},
		{
			name:   "more members than partitions share round robin",
			subs:   []ShareSubscription{{"m1", []string{"b"}}, {"m2", []string{"b"}}, {"m3", []string{"b"}}, {"m4", []string{"b"}}, {"m5", []string{"b"}}},
			topics: []TopicMeta{b},
			want: map[string][]TopicPartitions{
				"m1": {tp(b, 0)}, "m2": {tp(b, 1)}, "m3": {tp(b, 0)}, "m4": {tp(b, 1)}, "m5": {tp(b, 0)},
			},
		},
		{
			name:   "members get only their topics",
			subs:   []ShareSubscription{{"m1", []string{"a"}}, {"m2", []string{"a", "b"}}, {"m3", []string{"missing"}}},
			topics: []TopicMeta{a, b, c},
			want: map[string][]TopicPartitions{
				"m1": {tp(a, 0, 2)},
				"m2": {tp(a, 1), tp(b, 0, 1)},
				"m3": nil,
			},
		},
		{
			name:   "no members",
			topics: []TopicMeta{a},
			want:   map[string][]TopicPartitions{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AssignShare(tt.subs, tt.topics))
		})
	}
}

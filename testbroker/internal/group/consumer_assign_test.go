package group

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func subsOf(topics []string, ids ...string) []ConsumerSubscription {
	var out []ConsumerSubscription
	for _, id := range ids {
		out = append(out, ConsumerSubscription{MemberID: id, Topics: topics})
	}
	return out
}

// requireExactlyOnce checks that every partition of topics is assigned to exactly one member.
func requireExactlyOnce(t *testing.T, got map[string]map[[16]byte][]int32, topics []TopicMeta) {
	t.Helper()
	seen := map[string]string{}
	for id, a := range got {
		for tid, ps := range a {
			for _, p := range ps {
				key := fmt.Sprint(tid[0], "-", p)
				require.Empty(t, seen[key], "partition %s given to %s and %s", key, seen[key], id)
				seen[key] = id
			}
		}
	}
	total := 0
	for _, tm := range topics {
		total += int(tm.Partitions)
	}
	require.Len(t, seen, total)
}

func counts(got map[string]map[[16]byte][]int32) []int {
	var out []int
	for _, a := range got {
		out = append(out, partitionSet(a).count())
	}
	slices.Sort(out)
	return out
}

func TestAssignConsumerRange(t *testing.T) {
	t.Parallel()
	topics := []TopicMeta{{Name: "a", ID: topicID(1), Partitions: 5}, {Name: "b", ID: topicID(2), Partitions: 2}}
	inst := "i0"
	subs := subsOf([]string{"a", "b"}, "m1", "m2")
	subs = append(subs, ConsumerSubscription{MemberID: "m3", InstanceID: &inst, Topics: []string{"a"}})
	got := AssignConsumer(RangeAssignorName, subs, topics)
	requireExactlyOnce(t, got, topics)
	// On a, the static member m3 comes first: m3 0-1, m1 2-3, m2 4; on b m1 0, m2 1.
	assert.Equal(t, map[[16]byte][]int32{topicID(1): {0, 1}}, got["m3"])
	assert.Equal(t, map[[16]byte][]int32{topicID(1): {2, 3}, topicID(2): {0}}, got["m1"])
	assert.Equal(t, map[[16]byte][]int32{topicID(1): {4}, topicID(2): {1}}, got["m2"])
}

func TestAssignConsumerUniformBalanceAndStickiness(t *testing.T) {
	t.Parallel()
	topics := []TopicMeta{{Name: "a", ID: topicID(1), Partitions: 7}, {Name: "b", ID: topicID(2), Partitions: 3}}
	all := []string{"a", "b"}

	first := AssignConsumer(UniformAssignorName, subsOf(all, "m1", "m2"), topics)
	requireExactlyOnce(t, first, topics)
	assert.Equal(t, []int{5, 5}, counts(first))

	// A third member: the first two keep all but what the third needs.
	subs := subsOf(all, "m1", "m2", "m3")
	subs[0].Previous, subs[1].Previous = first["m1"], first["m2"]
	second := AssignConsumer(UniformAssignorName, subs, topics)
	requireExactlyOnce(t, second, topics)
	assert.Equal(t, []int{3, 3, 4}, counts(second))
	for _, id := range []string{"m1", "m2"} {
		for tid, ps := range second[id] {
			for _, p := range ps {
				assert.True(t, partitionSet(first[id]).contains(tid, p), "%s kept only partitions it had", id)
			}
		}
	}

	// m1 leaves: nothing m2 or m3 had moves.
	subs = subsOf(all, "m2", "m3")
	subs[0].Previous, subs[1].Previous = second["m2"], second["m3"]
	third := AssignConsumer(UniformAssignorName, subs, topics)
	requireExactlyOnce(t, third, topics)
	assert.Equal(t, []int{5, 5}, counts(third))
	for _, id := range []string{"m2", "m3"} {
		for tid, ps := range second[id] {
			for _, p := range ps {
				assert.True(t, partitionSet(third[id]).contains(tid, p), "%s lost a partition it had", id)
			}
		}
	}
}

func TestAssignConsumerUniformHeterogeneous(t *testing.T) {
	t.Parallel()
	topics := []TopicMeta{{Name: "a", ID: topicID(1), Partitions: 4}, {Name: "b", ID: topicID(2), Partitions: 4}}
	subs := []ConsumerSubscription{
		{MemberID: "m1", Topics: []string{"a"}},
		{MemberID: "m2", Topics: []string{"a", "b"}},
		{MemberID: "m3", Topics: []string{"b"}},
		{MemberID: "m4", Topics: []string{"c"}}, // no such topic
	}
	got := AssignConsumer(UniformAssignorName, subs, topics)
	requireExactlyOnce(t, got, topics)
	assert.Empty(t, got["m4"])
	assert.Equal(t, []int{0, 2, 3, 3}, counts(got))
	for tid := range got["m1"] {
		assert.Equal(t, topicID(1), tid, "m1 only gets a")
	}
	for tid := range got["m3"] {
		assert.Equal(t, topicID(2), tid, "m3 only gets b")
	}
	// Previous partitions of a topic no longer subscribed, or gone, are dropped.
	subs[0].Previous = map[[16]byte][]int32{topicID(2): {0}, topicID(1): {9}}
	again := AssignConsumer(UniformAssignorName, subs, topics)
	requireExactlyOnce(t, again, topics)
}

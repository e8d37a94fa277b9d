package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAssignmentStable(t *testing.T) {
	all := func(epoch int32) []assignmentView {
		return []assignmentView{
			{stable: true, memberEpoch: epoch, assigned: []int32{0, 2}},
			{stable: true, memberEpoch: epoch, assigned: []int32{1, 3}},
		}
	}
	for _, tc := range []struct {
		name     string
		views    func() []assignmentView
		stable   bool
		assigned int
	}{
		{"every partition, same epoch", func() []assignmentView { return all(3) }, true, 4},
		{"no members", func() []assignmentView { return nil }, false, 0},
		{"one member behind", func() []assignmentView { v := all(3); v[1].memberEpoch = 2; return v }, false, 4},
		{"one member joining", func() []assignmentView { v := all(3); v[0].stable = false; return v }, false, 4},
		{"one member without partitions", func() []assignmentView {
			v := all(3)
			v[0].assigned, v[1].assigned = nil, []int32{0, 1, 2, 3}
			return v
		}, false, 4},
		{"a partition unassigned", func() []assignmentView { v := all(3); v[1].assigned = []int32{1}; return v }, false, 3},
		{"out of range partitions ignored", func() []assignmentView { v := all(3); v[1].assigned = []int32{1, 3, 9, -1}; return v }, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stable, assigned := assignmentStable(tc.views(), 4)
			assert.Equal(t, tc.stable, stable)
			assert.Equal(t, tc.assigned, assigned)
		})
	}
}

func TestOffsetSetCountsDistinct(t *testing.T) {
	s := newOffsetSet(2, 3)
	assert.Equal(t, 1, s.add(0, 0))
	assert.Equal(t, 1, s.add(0, 0), "a redelivery is not counted again")
	assert.Equal(t, 2, s.add(1, 2))
	assert.Equal(t, 2, s.add(1, 3), "offset past the partition")
	assert.Equal(t, 2, s.add(2, 0), "partition past the topic")
	assert.Equal(t, 2, s.add(-1, 0))
	assert.Equal(t, 2, s.count())
}

package main

import "github.com/kshare/kshare/shareconsumer"

// assignmentView is what the stable check needs of one consumer's Status.
type assignmentView struct {
	stable      bool
	memberEpoch int32
	assigned    []int32 // partitions of the topic
}

func viewOf(s shareconsumer.Status) assignmentView {
	v := assignmentView{stable: s.State == shareconsumer.StateStable, memberEpoch: s.MemberEpoch}
	for _, tp := range s.Assigned {
		v.assigned = append(v.assigned, tp.Partition)
	}
	return v
}

// assignmentStable reports whether the members' assignment is the group's final one: every
// member is stable at the same member epoch (the group epoch after the last join, since a
// member takes an epoch only with its assignment), every member has partitions, and every one
// of partitions is assigned to some member. assigned is how many partitions are assigned.
func assignmentStable(views []assignmentView, partitions int) (stable bool, assigned int) {
	covered := make([]bool, partitions)
	stable = len(views) > 0
	for _, v := range views {
		if !v.stable || len(v.assigned) == 0 || v.memberEpoch != views[0].memberEpoch {
			stable = false
		}
		for _, p := range v.assigned {
			if p >= 0 && int(p) < partitions && !covered[p] {
				covered[p] = true
				assigned++
			}
		}
	}
	return stable && assigned == partitions, assigned
}

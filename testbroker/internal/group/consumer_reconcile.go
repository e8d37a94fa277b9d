package group

// memberAssignment is the part of a member that reconciliation changes.
type memberAssignment struct {
	state             memberState
	epoch, prevEpoch  int32
	assigned          partitionSet
	pendingRevocation partitionSet
}

func (a memberAssignment) equal(b memberAssignment) bool {
	return a.state == b.state && a.epoch == b.epoch && a.prevEpoch == b.prevEpoch &&
		a.assigned.equal(b.assigned) && a.pendingRevocation.equal(b.pendingRevocation)
}

// reconciliation moves one member towards its target assignment, as Kafka's
// CurrentAssignmentBuilder does.
type reconciliation struct {
	current     memberAssignment
	targetEpoch int32
	target      partitionSet
	// subscribed are the ids of the existing topics the member subscribes to; a target
	// partition of any other topic is treated as not assigned.
	subscribed map[[16]byte]bool
	// partitionEpoch returns the epoch of the member owning a partition, -1 if none.
	partitionEpoch func(topic [16]byte, partition int32) int32
	// owned are the partitions the member reports owning; nil when the heartbeat did not say.
	owned partitionSet
	// subscriptionChanged forces the partitions of topics no longer subscribed out at once.
	subscriptionChanged bool
}

// next returns the member's next assignment state.
//
// A stable member behind the target epoch is reconciled: it keeps target ∩ assigned; if it
// owns partitions outside its target it must revoke them first (unrevoked_partitions, epoch
// unchanged); otherwise it takes the rest of its target and the target epoch, except
// partitions another member still owns (unreleased_partitions until they are released). A
// member in unrevoked_partitions moves on once its owned partitions no longer include any
// pending revocation; one in unreleased_partitions retries at every heartbeat.
func (r reconciliation) next() memberAssignment {
	cur := r.current
	switch cur.state {
	case memberStable:
		if cur.epoch != r.targetEpoch {
			return r.compute(cur.epoch, cur.assigned)
		}
		if r.subscriptionChanged {
			return r.dropUnsubscribed()
		}
		return cur
	case memberUnrevokedPartitions:
		if r.ownsAny(cur.pendingRevocation) {
			if r.subscriptionChanged {
				return r.dropUnsubscribed()
			}
			return cur
		}
		return r.compute(cur.epoch, cur.assigned)
	default:
		return r.compute(cur.epoch, cur.assigned)
	}
}

// ownsAny reports whether the member still owns any of set; a heartbeat that does not list
// its partitions owns them all.
func (r reconciliation) ownsAny(set partitionSet) bool {
	if r.owned == nil {
		return true
	}
	for t, ps := range r.owned {
		for _, p := range ps {
			if set.contains(t, p) {
				return true
			}
		}
	}
	return false
}

func (r reconciliation) withEpoch(state memberState, epoch int32, assigned, pending partitionSet) memberAssignment {
	return memberAssignment{state: state, prevEpoch: r.current.epoch, epoch: epoch, assigned: assigned, pendingRevocation: pending}
}

// dropUnsubscribed takes the partitions of topics the member no longer subscribes to out of
// its assignment, to be revoked, without a full reconciliation.
func (r reconciliation) dropUnsubscribed() memberAssignment {
	cur := r.current
	assigned := cur.assigned.clone()
	pending := cur.pendingRevocation.clone()
	removed := false
	for t, ps := range cur.assigned {
		if r.subscribed[t] {
			continue
		}
		removed = true
		delete(assigned, t)
		for _, p := range ps {
			pending.add(t, p)
		}
	}
	if !removed {
		return cur
	}
	if len(pending) > 0 && r.ownsAny(pending) {
		return r.withEpoch(memberUnrevokedPartitions, cur.epoch, assigned, pending)
	}
	return r.withEpoch(cur.state, cur.epoch, assigned, cur.pendingRevocation.clone())
}

func (r reconciliation) compute(epoch int32, current partitionSet) memberAssignment {
	assigned := partitionSet{}
	pending := partitionSet{}
	toAssign := partitionSet{}
	unreleased := false
	topics := map[[16]byte]bool{}
	for t := range r.target {
		topics[t] = true
	}
	for t := range current {
		topics[t] = true
	}
	for t := range topics {
		target := r.target[t]
		if !r.subscribed[t] {
			target = nil
		}
		inTarget := partitionSet{t: target}
		for _, p := range current[t] {
			if inTarget.contains(t, p) {
				assigned.add(t, p)
			} else {
				pending.add(t, p)
			}
		}
		for _, p := range target {
			if assigned.contains(t, p) {
				continue
			}
			// A partition this member itself is revoking does not wait for anyone.
			if r.partitionEpoch(t, p) != -1 && !r.current.pendingRevocation.contains(t, p) {
				unreleased = true
				continue
			}
			toAssign.add(t, p)
		}
	}
	switch {
	case len(pending) > 0 && r.ownsAny(pending):
		return r.withEpoch(memberUnrevokedPartitions, epoch, assigned, pending)
	case len(toAssign) > 0:
		for t, ps := range toAssign {
			for _, p := range ps {
				assigned.add(t, p)
			}
		}
		state := memberStable
		if unreleased {
			state = memberUnreleasedPartitions
		}
		return r.withEpoch(state, r.targetEpoch, assigned, partitionSet{})
	case unreleased:
		return r.withEpoch(memberUnreleasedPartitions, r.targetEpoch, assigned, partitionSet{})
	default:
		return r.withEpoch(memberStable, r.targetEpoch, assigned, partitionSet{})
	}
}

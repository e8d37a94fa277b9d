package share

// SetStartOffset is what AlterShareGroupOffsets does to group's share partition of tp, as
// Kafka's share coordinator initializes a share partition's state afresh: the share partition
// restarts at SPSO start with no in-flight records (no acquisitions, acknowledgements or
// delivery counts), whether or not it existed. A start of -1 (Kafka's uninitialized start
// offset) removes the share partition instead, so that the group's next ShareFetch of tp makes
// it from share.auto.offset.reset. A start outside the log moves to the log start offset at the
// next acquisition (Partition.Acquire). It does nothing for a partition that does not exist.
//
// The share partition replaced is closed: its lock timers stop and its waiting fetches wake
// and end NOT_LEADER_OR_FOLLOWER, as for a leader move. Callers make sure that the group has no
// members (Kafka refuses NON_EMPTY_GROUP); sessions of its former members may remain, and their
// next fetch finds the new share partition.
func (m *Manager) SetStartOffset(group string, tp TopicPartition, start int64) {
	pl, ok := m.cfg.Metadata.Placement(tp)
	if !ok {
		return
	}
	var fresh *Partition
	if start != -1 {
		settings := m.cfg.Settings
		fresh = newPartitionAt(group, pl.Log, m.cfg.Clock, func() Settings { return settings(group) }, start)
	}
	key := partitionKey{group, tp}
	m.mu.Lock()
	// A topic deleted meanwhile must not get a share partition back.
	if m.closed || !m.cfg.Metadata.TopicExists(tp.Topic) {
		m.mu.Unlock()
		return
	}
	old := m.parts[key]
	if fresh != nil {
		m.parts[key] = fresh
	} else {
		delete(m.parts, key)
	}
	m.gen++
	m.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// DeleteState is what DeleteShareGroupOffsets does to group's share partitions of a topic, as
// Kafka's share coordinator deletes their state: every one of them is closed and forgotten, so
// that the group's next ShareFetch of a partition makes it afresh from share.auto.offset.reset.
// It reports whether the group had any (Kafka deletes state only for topics the group has
// initialized). Closing works as in SetStartOffset.
func (m *Manager) DeleteState(group string, topic [16]byte) bool {
	var gone []*Partition
	m.mu.Lock()
	for k, sp := range m.parts {
		if k.group == group && k.Topic == topic {
			gone = append(gone, sp)
			delete(m.parts, k)
		}
	}
	if len(gone) > 0 {
		m.gen++
	}
	m.mu.Unlock()
	for _, sp := range gone {
		sp.Close()
	}
	return len(gone) > 0
}

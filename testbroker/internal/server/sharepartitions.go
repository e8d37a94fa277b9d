package server

import (
	"slices"
	"sync"
	"time"

	"github.com/kshare/kshare/testbroker/internal/share"
)

// sharePartitionKey names one share partition: a topic partition as one share group sees it.
type sharePartitionKey struct {
	group     string
	topic     [16]byte
	partition int32
}

// shareState holds the cluster's share partitions and every broker's share sessions.
//
// A share partition is created on the first ShareFetch of its group for it on the partition's
// leader, with the SPSO that the group's share.auto.offset.reset gives at that moment (Kafka
// initializes it from the share coordinator's state, which starts the same way). One
// cluster-wide map stands for every leader's share partition cache: only the partition's
// current leader reaches a share partition (led), and a leader move hands it over to the new
// leader (leaderMoved). Acknowledgements never create one: Kafka answers an acknowledgement for
// a share partition its broker does not hold with UNKNOWN_TOPIC_OR_PARTITION.
type shareState struct {
	c *Cluster

	mu    sync.RWMutex
	parts map[sharePartitionKey]*share.Partition
	// gen counts topic deletions and leader moves, so that sessions and waiting fetches know
	// when what they resolved may be stale.
	gen    uint64
	closed bool

	sessions []*shareSessions // by broker id
}

func newShareState(c *Cluster, brokers int) *shareState {
	s := &shareState{c: c, parts: make(map[sharePartitionKey]*share.Partition)}
	s.sessions = make([]*shareSessions, brokers)
	for i := range s.sessions {
		s.sessions[i] = newShareSessions(s, int32(i))
	}
	return s
}

// get returns a share partition if it exists.
func (s *shareState) get(group string, topic [16]byte, partition int32) *share.Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.parts[sharePartitionKey{group, topic, partition}]
}

// getOrCreate returns group's share partition of p, creating it if needed; nil once the
// cluster is closing.
func (s *shareState) getOrCreate(group string, p *Partition) *share.Partition {
	key := sharePartitionKey{group, p.Topic.ID, p.Index}
	s.mu.RLock()
	sp := s.parts[key]
	s.mu.RUnlock()
	if sp != nil {
		return sp
	}
	// Created outside the lock: NewPartition reads the group's configs and the log.
	c := s.c
	created := share.NewPartition(group, p.Log, c.clock, func() share.Settings { return c.configs.Snapshot().Group(group).Share.Partition })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		created.Close()
		return nil
	}
	if sp = s.parts[key]; sp != nil {
		created.Close()
		return sp
	}
	// A topic deleted meanwhile must not get a share partition back.
	if c.topicByID(p.Topic.ID) != p.Topic {
		created.Close()
		return nil
	}
	s.parts[key] = created
	return created
}

// led returns group's share partition of a partition if broker leads the partition, else nil.
// Looking at the leader under the share state's lock means that a share partition handed over
// to a new leader is never returned to the old one.
func (s *shareState) led(group string, topic [16]byte, partition, broker int32) *share.Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p := s.c.partition(s.c.topicByID(topic), partition); p == nil || p.Leader != broker {
		return nil
	}
	return s.parts[sharePartitionKey{group, topic, partition}]
}

// leaderMoved follows a leader move of a topic partition: the generation moves on, and when
// the leader changed, every share partition of it is replaced by its handover
// (share.Partition.Handover), which fences the old one and wakes its waiters.
func (s *shareState) leaderMoved(topic [16]byte, partition int32, changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if !changed {
		return
	}
	for k, sp := range s.parts {
		if k.topic != topic || k.partition != partition {
			continue
		}
		if next := sp.Handover(); next != nil {
			s.parts[k] = next
		} else {
			delete(s.parts, k)
		}
	}
}

// generation returns the count of topic deletions and leader moves so far.
func (s *shareState) generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// topicDeleted closes and forgets every share partition of a deleted topic: their locks stop and
// their waiters wake.
func (s *shareState) topicDeleted(id [16]byte) {
	var gone []*share.Partition
	s.mu.Lock()
	s.gen++
	for k, sp := range s.parts {
		if k.topic == id {
			gone = append(gone, sp)
			delete(s.parts, k)
		}
	}
	s.mu.Unlock()
	for _, sp := range gone {
		sp.Close()
	}
}

// close closes every share partition; the cluster is shutting down.
func (s *shareState) close() {
	s.mu.Lock()
	s.closed = true
	parts := s.parts
	s.parts = make(map[sharePartitionKey]*share.Partition)
	s.mu.Unlock()
	for _, sp := range parts {
		sp.Close()
	}
}

// groupPartitions returns the keys of every share partition of group, sorted by topic id and
// partition.
func (s *shareState) groupPartitions(group string) []sharePartitionKey {
	s.mu.RLock()
	var keys []sharePartitionKey
	for k := range s.parts {
		if k.group == group {
			keys = append(keys, k)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(keys, func(a, b sharePartitionKey) int {
		if c := slices.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return keys
}

// shareLockDurationMs returns a group's effective share.record.lock.duration.ms, the
// AcquisitionLockTimeoutMs of its ShareFetch and ShareAcknowledge responses.
func (c *Cluster) shareLockDurationMs(group string) int32 {
	return int32(c.configs.Snapshot().Group(group).Share.Partition.LockDuration / time.Millisecond)
}

// SharePartitionState returns group's share partition of a topic partition, for inspection; ok is
// false when the topic does not exist or no ShareFetch of the group has reached the partition.
func (c *Cluster) SharePartitionState(group, topic string, partition int32) (*share.Partition, bool) {
	t := c.topic(topic)
	if t == nil {
		return nil, false
	}
	sp := c.shares.get(group, t.ID, partition)
	return sp, sp != nil
}

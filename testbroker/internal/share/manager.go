package share

import (
	"slices"
	"sync"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// TopicPartition names a partition by topic id, as share requests name them.
type TopicPartition struct {
	Topic     [16]byte
	Partition int32
}

// Placement is where a topic partition is led: its leader, leader epoch and log.
type Placement struct {
	Log         *log.Partition
	Leader      int32
	LeaderEpoch int32
}

// Metadata is what the manager reads of the cluster's topics.
type Metadata interface {
	// TopicExists reports whether a topic with this id exists.
	TopicExists(id [16]byte) bool
	// Placement returns a partition's current placement; ok is false when its topic or the
	// partition does not exist.
	Placement(tp TopicPartition) (p Placement, ok bool)
}

// ManagerConfig is what a Manager runs with.
type ManagerConfig struct {
	Metadata Metadata
	Clock    clock.Clock
	// Brokers is the number of brokers, each with its own share session cache.
	Brokers int
	// Settings returns a group's effective share settings, at every use.
	Settings func(group string) Settings
	// MaxSessions returns group.share.max.share.sessions, the sessions each broker holds.
	MaxSessions func() int
	// Done is closed when the cluster shuts down; waiting fetches then end.
	Done <-chan struct{}
}

// partitionKey names one share partition: a topic partition as one share group sees it.
type partitionKey struct {
	group string
	TopicPartition
}

// Manager is the cluster's SharePartitionManager: the share partitions of every group, and
// every broker's share session cache.
//
// A share partition is created on the first ShareFetch of its group for it on the partition's
// leader, with the SPSO that the group's share.auto.offset.reset gives at that moment (Kafka
// initializes it from the share coordinator's state, which starts the same way). One
// cluster-wide map stands for every leader's share partition cache: only the partition's
// current leader reaches a share partition (Led), and a leader move hands it over to the new
// leader (LeaderMoved). Acknowledgements never create one: Kafka answers an acknowledgement for
// a share partition its broker does not hold with UNKNOWN_TOPIC_OR_PARTITION.
type Manager struct {
	cfg ManagerConfig

	mu    sync.RWMutex
	parts map[partitionKey]*Partition
	// gen counts topic deletions and leader moves, so that sessions and waiting fetches know
	// when what they resolved may be stale.
	gen    uint64
	closed bool

	sessions []*Sessions // by broker id
}

// NewManager returns a manager without share partitions or sessions.
func NewManager(cfg ManagerConfig) *Manager {
	m := &Manager{cfg: cfg, parts: make(map[partitionKey]*Partition)}
	m.sessions = make([]*Sessions, cfg.Brokers)
	for i := range m.sessions {
		m.sessions[i] = newSessions(m, int32(i))
	}
	return m
}

// Sessions returns broker's share session cache, or nil for an unknown broker.
func (m *Manager) Sessions(broker int32) *Sessions {
	if broker < 0 || int(broker) >= len(m.sessions) {
		return nil
	}
	return m.sessions[broker]
}

// Get returns group's share partition of a topic partition if it exists.
func (m *Manager) Get(group string, tp TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[partitionKey{group, tp}]
}

// getOrCreate returns group's share partition of tp, whose log is lg, creating it if needed;
// nil once the manager is closed or the topic is gone.
func (m *Manager) getOrCreate(group string, tp TopicPartition, lg *log.Partition) *Partition {
	key := partitionKey{group, tp}
	m.mu.RLock()
	sp := m.parts[key]
	m.mu.RUnlock()
	if sp != nil {
		return sp
	}
	// Created outside the lock: NewPartition reads the group's configs and the log.
	settings := m.cfg.Settings
	created := NewPartition(group, lg, m.cfg.Clock, func() Settings { return settings(group) })
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		created.Close()
		return nil
	}
	if sp = m.parts[key]; sp != nil {
		created.Close()
		return sp
	}
	// A topic deleted meanwhile must not get a share partition back.
	if !m.cfg.Metadata.TopicExists(tp.Topic) {
		created.Close()
		return nil
	}
	m.parts[key] = created
	return created
}

// Led returns group's share partition of tp if broker leads tp, else nil. Looking at the
// leader under the manager's lock means that a share partition handed over to a new leader is
// never returned to the old one.
func (m *Manager) Led(group string, tp TopicPartition, broker int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if p, ok := m.cfg.Metadata.Placement(tp); !ok || p.Leader != broker {
		return nil
	}
	return m.parts[partitionKey{group, tp}]
}

// LeaderMoved follows a leader move of a topic partition: the generation moves on, and when
// the leader changed, every share partition of it is replaced by its handover
// (Partition.Handover) over lg, the new leader's log, which fences the old one and wakes its
// waiters.
func (m *Manager) LeaderMoved(tp TopicPartition, changed bool, lg *log.Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	if !changed {
		return
	}
	for k, sp := range m.parts {
		if k.TopicPartition != tp {
			continue
		}
		if next := sp.Handover(lg); next != nil {
			m.parts[k] = next
		} else {
			delete(m.parts, k)
		}
	}
}

// generation returns the count of topic deletions and leader moves so far.
func (m *Manager) generation() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen
}

// TopicDeleted closes and forgets every share partition of a deleted topic: their locks stop
// and their waiters wake.
func (m *Manager) TopicDeleted(id [16]byte) {
	var gone []*Partition
	m.mu.Lock()
	m.gen++
	for k, sp := range m.parts {
		if k.Topic == id {
			gone = append(gone, sp)
			delete(m.parts, k)
		}
	}
	m.mu.Unlock()
	for _, sp := range gone {
		sp.Close()
	}
}

// Close closes every share partition; the cluster is shutting down.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	parts := m.parts
	m.parts = make(map[partitionKey]*Partition)
	m.mu.Unlock()
	for _, sp := range parts {
		sp.Close()
	}
}

// GroupPartitions returns every topic partition group has a share partition of, sorted by
// topic id and partition.
func (m *Manager) GroupPartitions(group string) []TopicPartition {
	m.mu.RLock()
	var tps []TopicPartition
	for k := range m.parts {
		if k.group == group {
			tps = append(tps, k.TopicPartition)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if c := slices.Compare(a.Topic[:], b.Topic[:]); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return tps
}

package replica

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrClosed is returned by waits that the cluster's shutdown ended.
var ErrClosed = errors.New("replica: cluster closed")

// Settings are the replication configs, read at every use.
type Settings struct {
	LagTimeMax            time.Duration // replica.lag.time.max.ms
	FetchWaitMax          time.Duration // replica.fetch.wait.max.ms
	FetchMinBytes         int32         // replica.fetch.min.bytes
	FetchMaxBytes         int32         // replica.fetch.max.bytes, per partition
	FetchResponseMaxBytes int32         // replica.fetch.response.max.bytes
	FetchBackoff          time.Duration // replica.fetch.backoff.ms
	// KIP1166 makes the leader answer a follower's fetch when the follower's high watermark is
	// behind (testbroker.kip1166.enable).
	KIP1166 bool
}

// Config is what a Manager runs with.
type Config struct {
	Brokers  int
	Clock    clock.Clock
	Settings func() Settings
	// Dial and Addr are how a follower's fetcher reaches a leader's listener.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	Addr func(broker int32) string
	// Authenticate, when set, authenticates a new connection to a leader after ApiVersions,
	// sending its requests with roundTrip (at the version each carries).
	Authenticate func(roundTrip func(kmsg.Request, kmsg.Response) error) error
	Logger       *slog.Logger
	// LeaderChanged is called, outside every lock of the package, after a partition got a new
	// leader (or lost its leader).
	LeaderChanged func(p *Partition, old, next *State)
}

// partitionKey names a partition by topic id and index.
type partitionKey struct {
	topic [16]byte
	index int32
}

// Manager is the cluster's replica manager: every partition's replicas, which brokers run,
// the ISR expiration task and each running broker's replica fetchers.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	parts    map[partitionKey]*Partition
	alive    []bool
	epochs   []int64 // broker epochs, raised at each restart
	topology chan struct{}
	isrTimer clock.Timer
	closed   bool
	fetchers []*brokerFetchers // by broker id; nil while the broker is stopped
	wg       sync.WaitGroup
}

// NewManager returns a manager of no partitions, with every broker running but no fetcher
// started (Start starts them once the listeners are up).
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, parts: make(map[partitionKey]*Partition), topology: make(chan struct{}),
		alive: make([]bool, cfg.Brokers), epochs: make([]int64, cfg.Brokers), fetchers: make([]*brokerFetchers, cfg.Brokers)}
	for i := range m.alive {
		m.alive[i], m.epochs[i] = true, 1
	}
	return m
}

// Start starts every running broker's replica fetchers.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for b := range m.alive {
		if m.alive[b] && m.fetchers[b] == nil {
			m.fetchers[b] = m.startFetchersLocked(int32(b))
		}
	}
}

// Close stops the fetchers and the ISR expiration task and waits for their goroutines.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	if m.isrTimer != nil {
		m.isrTimer.Stop()
	}
	for i, f := range m.fetchers {
		if f != nil {
			f.stop()
			m.fetchers[i] = nil
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// NewPartition makes and registers a partition with one log per replica (cfg), led by the
// first replica.
func (m *Manager) NewPartition(topicID [16]byte, topic string, index int32, replicas []int32, cfg log.Config) *Partition {
	p := newPartition(m, topicID, topic, index, replicas, cfg)
	m.mu.Lock()
	m.parts[partitionKey{topicID, index}] = p
	if len(replicas) > 1 {
		m.scheduleISRCheckLocked()
	}
	m.changedLocked()
	m.mu.Unlock()
	return p
}

// Forget unregisters a deleted topic's partitions; their fetchers stop fetching them.
func (m *Manager) Forget(topicID [16]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if k.topic == topicID {
			delete(m.parts, k)
		}
	}
	m.changedLocked()
}

// Alive reports whether broker runs.
func (m *Manager) Alive(broker int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return broker >= 0 && int(broker) < len(m.alive) && m.alive[broker]
}

// BrokerEpoch returns broker's epoch: 1 at the start, one more at each restart.
func (m *Manager) BrokerEpoch(broker int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if broker < 0 || int(broker) >= len(m.epochs) {
		return -1
	}
	return m.epochs[broker]
}

// Topology returns a channel closed at the next change of which broker replicates what from
// whom: a partition added or removed, a new leader or ISR, a broker stopped or started.
// Parked follower fetches wait on it so that their fetcher picks up the change at once.
func (m *Manager) Topology() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.topology
}

func (m *Manager) changed() {
	m.mu.Lock()
	m.changedLocked()
	m.mu.Unlock()
}

func (m *Manager) changedLocked() {
	close(m.topology)
	m.topology = make(chan struct{})
}

// scheduleISRCheckLocked runs the ISR expiration task every half replica.lag.time.max.ms, as
// Kafka's ReplicaManager does, from the first replicated partition on: a cluster of single
// replica partitions keeps no timer on its clock.
func (m *Manager) scheduleISRCheckLocked() {
	if m.isrTimer != nil || m.closed {
		return
	}
	m.isrTimer = m.cfg.Clock.AfterFunc(max(m.cfg.Settings().LagTimeMax/2, time.Millisecond), m.checkISR)
}

func (m *Manager) checkISR() {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return
	}
	lag := m.cfg.Settings().LagTimeMax
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.Unlock()
	shrunk := false
	for _, p := range parts {
		if len(p.State().Replicas) > 1 && p.shrinkISR(now, lag) {
			shrunk = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if shrunk {
		m.changedLocked()
	}
	m.isrTimer = nil
	m.scheduleISRCheckLocked()
}

// StopBroker marks broker stopped, stops its fetchers and takes its replicas out of every
// ISR, moving its leaderships as removeFromISR says. The caller closes its listener first.
func (m *Manager) StopBroker(broker int32) {
	m.mu.Lock()
	if !m.alive[broker] {
		m.mu.Unlock()
		return
	}
	m.alive[broker] = false
	f := m.fetchers[broker]
	m.fetchers[broker] = nil
	parts := m.partitionsLocked()
	m.changedLocked()
	m.mu.Unlock()
	if f != nil {
		f.stop()
		f.wait()
	}
	now := m.cfg.Clock.Now()
	for _, p := range parts {
		if old, next := p.removeFromISR(broker, m.Alive, now); next != nil {
			m.leaderChanged(p, old, next)
		}
	}
	m.changed()
}

// StartBroker marks a stopped broker running again with a new broker epoch, lets it lead the
// partitions it is the kept ISR member of, and starts its fetchers, which bring its other
// replicas up to date; the caller has opened its listener.
func (m *Manager) StartBroker(broker int32) {
	m.mu.Lock()
	if m.alive[broker] || m.closed {
		m.mu.Unlock()
		return
	}
	m.alive[broker] = true
	m.epochs[broker]++
	parts := m.partitionsLocked()
	m.mu.Unlock()
	now := m.cfg.Clock.Now()
	for _, p := range parts {
		if old, next := p.brokerStarted(broker, now); next != nil {
			m.leaderChanged(p, old, next)
		}
	}
	m.mu.Lock()
	if !m.closed {
		m.fetchers[broker] = m.startFetchersLocked(broker)
	}
	m.changedLocked()
	m.mu.Unlock()
}

// MoveLeader moves p's leadership (Partition.MoveLeader) and tells the cluster.
func (m *Manager) MoveLeader(p *Partition, broker int32) error {
	old, next, err := p.MoveLeader(broker)
	if err != nil {
		return err
	}
	m.leaderChanged(p, old, next)
	m.changed()
	return nil
}

func (m *Manager) leaderChanged(p *Partition, old, next *State) {
	if m.cfg.LeaderChanged != nil {
		m.cfg.LeaderChanged(p, old, next)
	}
}

func (m *Manager) partitionsLocked() []*Partition {
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// followed returns the partitions broker follows whose leader is leader, in a stable order.
func (m *Manager) followed(broker, leader int32) []*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Partition
	for _, p := range m.parts {
		if st := p.State(); st.Leader == leader && st.IsReplica(broker) {
			out = append(out, p)
		}
	}
	sortPartitions(out)
	return out
}

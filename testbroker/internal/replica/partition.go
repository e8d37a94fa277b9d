package replica

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// State is where a partition stands at one moment: its leader, leader epoch, replicas, ISR and
// the log of each replica. A State is never modified; a change publishes a new one.
type State struct {
	// Leader is the broker that leads, or -1 when no in-sync replica runs.
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32

	logs  map[int32]*log.Partition // by replica broker
	moved chan struct{}            // closed when a State of a later leader epoch replaces this one
}

// Log returns the log of broker's replica, or nil when broker holds none.
func (s *State) Log(broker int32) *log.Partition { return s.logs[broker] }

// LeaderLog returns the leader's log, or nil when the partition has no leader.
func (s *State) LeaderLog() *log.Partition { return s.logs[s.Leader] }

// Moved is closed once the leader epoch has moved past this State's.
func (s *State) Moved() <-chan struct{} { return s.moved }

// IsReplica reports whether broker holds a replica.
func (s *State) IsReplica(broker int32) bool { return slices.Contains(s.Replicas, broker) }

// InISR reports whether broker's replica is in sync.
func (s *State) InISR(broker int32) bool { return slices.Contains(s.ISR, broker) }

// Partition is one topic partition and its replicas. It lives as long as its topic; its State
// changes.
type Partition struct {
	TopicID [16]byte
	Topic   string
	Index   int32

	m     *Manager
	state atomic.Pointer[State]

	// mu serialises State changes and the leader's view of its followers.
	mu         sync.Mutex
	followers  map[int32]*follower // the leader's view of each other replica; reset at each new leader
	epochStart int64               // the leader's log end offset when it took the current epoch
}

// follower is what the leader knows of one follower, as Kafka's Replica keeps it.
type follower struct {
	leo                int64 // the follower's log end offset: its last fetch offset; -1 unknown
	lastFetchLeaderLEO int64 // the leader's log end offset at the follower's previous fetch
	lastFetch          time.Time
	lastCaughtUp       time.Time // the last moment the follower was known to have all the leader had
}

// newPartition makes a partition with a log per replica, at leader epoch 0, as Kafka's
// controller registers one: the ISR is the replicas whose brokers run, and the first of them
// leads (the caller makes sure one runs).
func newPartition(m *Manager, topicID [16]byte, topic string, index int32, replicas []int32, cfg log.Config) *Partition {
	p := &Partition{TopicID: topicID, Topic: topic, Index: index, m: m}
	isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !m.Alive(r) })
	st := &State{Leader: -1, Replicas: slices.Clone(replicas), ISR: isr,
		logs: make(map[int32]*log.Partition, len(replicas)), moved: make(chan struct{})}
	if len(isr) > 0 {
		st.Leader = isr[0]
	}
	if cfg.Now == nil {
		cfg.Now = m.cfg.Clock.Now // transaction markers carry the cluster's time
	}
	for _, r := range replicas {
		st.logs[r] = log.NewPartition(cfg)
	}
	if lg := st.LeaderLog(); lg != nil {
		lg.StartLeaderEpoch(0)
	}
	p.state.Store(st)
	p.resetFollowersLocked(st, m.cfg.Clock.Now())
	return p
}

// State returns the partition's current State.
func (p *Partition) State() *State { return p.state.Load() }

// String names the partition as Kafka's TopicPartition does: topic-index.
func (p *Partition) String() string { return fmt.Sprintf("%s-%d", p.Topic, p.Index) }

// resetFollowersLocked starts the leader's view of its followers afresh, as a Kafka broker
// does when it becomes leader: log end offsets unknown, and the in-sync ones counted as caught
// up now, so that none drops out of the ISR before it had replica.lag.time.max.ms to fetch.
func (p *Partition) resetFollowersLocked(st *State, now time.Time) {
	p.followers = make(map[int32]*follower, len(st.Replicas))
	for _, r := range st.Replicas {
		if r == st.Leader {
			continue
		}
		f := &follower{leo: -1, lastFetchLeaderLEO: -1}
		if st.InISR(r) {
			f.lastCaughtUp = now
		}
		p.followers[r] = f
	}
	if lg := st.LeaderLog(); lg != nil {
		p.epochStart = lg.LogEndOffset()
	}
}

// publishLocked makes next the current State. A new leader epoch closes the old State's Moved.
func (p *Partition) publishLocked(next *State) {
	old := p.state.Load()
	if next.LeaderEpoch != old.LeaderEpoch {
		next.moved = make(chan struct{})
		p.state.Store(next)
		close(old.moved)
	} else {
		next.moved = old.moved
		p.state.Store(next)
	}
}

// withISR returns a copy of st with another ISR.
func withISR(st *State, isr []int32) *State {
	next := *st
	next.ISR = isr
	return &next
}

// effectiveMinISR is min.insync.replicas capped at the replication factor, as Kafka caps it.
func effectiveMinISR(st *State, minISR int) int { return min(minISR, len(st.Replicas)) }

// AppendAsLeader appends a produced batch to the leader's log, as of State st (the caller has
// checked that its broker leads in st). With acks -1 it first refuses, appending nothing, when
// the ISR is smaller than minISR (NOT_ENOUGH_REPLICAS). The high watermark moves at once when
// the leader is the only replica in sync; otherwise when the followers have fetched past the
// batch. The append holds the partition's lock, as Kafka's holds its leader-ISR lock, so that a
// leader that changed since st is NOT_LEADER_OR_FOLLOWER rather than an append to a follower.
func (p *Partition) AppendAsLeader(st *State, records []byte, now time.Time, acks int16, minISR int) (log.AppendResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.state.Load()
	if cur.Leader != st.Leader || cur.LeaderEpoch != st.LeaderEpoch {
		return log.AppendResult{}, kerr.NotLeaderForPartition
	}
	if acks == -1 && len(cur.ISR) < effectiveMinISR(cur, minISR) {
		// Kafka's exception message names the ISR, but the produce response does not carry it.
		return log.AppendResult{}, kerr.NotEnoughReplicas
	}
	res, err := cur.LeaderLog().Append(records, now)
	if err != nil {
		return res, err
	}
	p.maybeAdvanceHighWatermarkLocked()
	return res, nil
}

// maybeAdvanceHighWatermarkLocked moves the leader's high watermark to the lowest log end
// offset in the ISR, if that is above it. It reports whether the watermark moved.
func (p *Partition) maybeAdvanceHighWatermarkLocked() bool {
	st := p.state.Load()
	lg := st.LeaderLog()
	if lg == nil {
		return false
	}
	hw := lg.LogEndOffset()
	for _, r := range st.ISR {
		if r == st.Leader {
			continue
		}
		f := p.followers[r]
		if f == nil || f.leo < 0 {
			return false
		}
		hw = min(hw, f.leo)
	}
	if hw <= lg.HighWatermark() {
		return false
	}
	lg.SetHighWatermark(hw)
	return true
}

// Fetched records a follower's fetch at fetchOffset, as Kafka's leader does before it reads
// for the follower: the follower's log end offset is its fetch offset, it counts as caught up
// when that reaches the leader's log end offset (or the one of its previous fetch), it rejoins
// the ISR once it has reached the high watermark and the start of the leader's epoch, and the
// high watermark moves to the lowest log end offset in the ISR. A fetch carrying a broker
// epoch older than the follower broker's current one is from before a restart and is refused
// with NOT_LEADER_OR_FOLLOWER, as Kafka refuses a stale fetch state update.
func (p *Partition) Fetched(replica int32, brokerEpoch int64, fetchOffset int64) error {
	if brokerEpoch != -1 && brokerEpoch < p.m.BrokerEpoch(replica) {
		return kerr.NotLeaderForPartition
	}
	now := p.m.cfg.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	lg := st.LeaderLog()
	f := p.followers[replica]
	if lg == nil || f == nil {
		return kerr.NotLeaderForPartition
	}
	leaderLEO := lg.LogEndOffset()
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetch)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetch = now
	if !st.InISR(replica) && p.m.Alive(replica) && fetchOffset >= lg.HighWatermark() && fetchOffset >= p.epochStart {
		isr := append(slices.Clone(st.ISR), replica)
		slices.Sort(isr)
		p.publishLocked(withISR(st, isr))
		p.m.changed()
	}
	p.maybeAdvanceHighWatermarkLocked()
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// shrinkISR drops from the ISR every follower that has not caught up within lag, as Kafka's
// leader does from its ISR expiration task, and then lets the high watermark move. It reports
// whether the ISR changed.
func (p *Partition) shrinkISR(now time.Time, lag time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	lg := st.LeaderLog()
	if lg == nil {
		return false
	}
	leaderLEO := lg.LogEndOffset()
	isr := st.ISR[:0:0]
	for _, r := range st.ISR {
		if f := p.followers[r]; r != st.Leader && f != nil && f.leo != leaderLEO && now.Sub(f.lastCaughtUp) > lag {
			continue
		}
		isr = append(isr, r)
	}
	if len(isr) == len(st.ISR) {
		return false
	}
	p.publishLocked(withISR(st, isr))
	p.maybeAdvanceHighWatermarkLocked()
	return true
}

// removeFromISR takes a stopped broker's replica out of the ISR and, if it led, elects the
// first replica in the ISR that runs, with a new leader epoch. When no other ISR member runs the
// partition is left without a leader and the stopped broker stays the last ISR member, so that
// it leads again when it returns (Kafka keeps the last ISR member for the same reason). It
// returns the previous and the new State when the leader changed.
func (p *Partition) removeFromISR(broker int32, alive func(int32) bool, now time.Time) (old, next *State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	if !st.IsReplica(broker) {
		return nil, nil
	}
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == broker })
	if st.Leader != broker {
		if len(isr) != len(st.ISR) {
			p.publishLocked(withISR(st, isr))
			p.maybeAdvanceHighWatermarkLocked()
		}
		return nil, nil
	}
	leader := int32(-1)
	for _, r := range st.Replicas {
		if slices.Contains(isr, r) && alive(r) {
			leader = r
			break
		}
	}
	if leader < 0 {
		isr = st.ISR // nobody to take over: keep the last ISR as it is
	}
	return st, p.electLocked(st, leader, isr, now)
}

// elect makes leader (a running ISR member, or -1 for none) lead with a new leader epoch.
func (p *Partition) electLocked(st *State, leader int32, isr []int32, now time.Time) *State {
	next := *st
	next.Leader, next.LeaderEpoch, next.ISR = leader, st.LeaderEpoch+1, isr
	if lg := next.LeaderLog(); lg != nil {
		lg.StartLeaderEpoch(next.LeaderEpoch)
	}
	p.publishLocked(&next)
	p.resetFollowersLocked(&next, now)
	return &next
}

// brokerStarted lets a restarted broker lead a partition that had no leader, when it is the
// ISR member that was kept; it returns the previous and the new State when it does.
func (p *Partition) brokerStarted(broker int32, now time.Time) (old, next *State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	if st.Leader >= 0 || !st.InISR(broker) {
		return nil, nil
	}
	return st, p.electLocked(st, broker, st.ISR, now)
}

// MoveLeader makes broker lead with the next leader epoch, as a KRaft controller's partition
// change does (the epoch goes up by one even when the leader stays). A broker that holds no
// replica takes the old leader's place among the replicas, and its log, as a reassignment
// would once the new replica had caught up. A follower must be in the ISR and running. It
// returns the previous and the new State.
func (p *Partition) MoveLeader(broker int32) (old, next *State, err error) {
	now := p.m.cfg.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	if !p.m.Alive(broker) {
		return nil, nil, fmt.Errorf("broker %d is stopped: %w", broker, kerr.BrokerNotAvailable)
	}
	if !st.IsReplica(broker) {
		if st.Leader < 0 {
			return nil, nil, fmt.Errorf("%s has no leader whose place broker %d could take: %w", p, broker, kerr.LeaderNotAvailable)
		}
		moved := *st
		moved.Replicas = slices.Clone(st.Replicas)
		moved.Replicas[slices.Index(moved.Replicas, st.Leader)] = broker
		moved.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == st.Leader })
		moved.ISR = append(moved.ISR, broker)
		slices.Sort(moved.ISR)
		moved.logs = make(map[int32]*log.Partition, len(st.logs))
		for r, lg := range st.logs {
			moved.logs[r] = lg
		}
		moved.logs[broker] = st.logs[st.Leader]
		delete(moved.logs, st.Leader)
		return st, p.electLocked(&moved, broker, moved.ISR, now), nil
	}
	if !st.InISR(broker) {
		return nil, nil, fmt.Errorf("broker %d is not in the ISR of %s: %w", broker, p, kerr.PreferredLeaderNotAvailable)
	}
	return st, p.electLocked(st, broker, st.ISR, now), nil
}

// Replicated appends what broker's fetch from the leader of leaderEpoch carried, and takes
// the leader's high watermark, capped at the follower's log end offset. A response from an
// earlier leader epoch, or for a broker that no longer follows, is dropped.
func (p *Partition) Replicated(broker, leaderEpoch int32, records []byte, leaderHW int64) error {
	return p.AsFollower(broker, leaderEpoch, func(lg *log.Partition) error {
		if len(records) > 0 {
			if _, err := lg.AppendReplicated(records); err != nil {
				return err
			}
		}
		if hw := min(leaderHW, lg.LogEndOffset()); hw > lg.HighWatermark() {
			lg.SetHighWatermark(hw)
		}
		return nil
	})
}

// AsFollower runs f on broker's log while broker still follows the leader of leaderEpoch, and
// does nothing otherwise. It holds the partition's lock, so that no election makes the log a
// leader's while f appends to it or truncates it (Kafka stops a partition's fetcher before it
// makes the replica leader).
func (p *Partition) AsFollower(broker, leaderEpoch int32, f func(lg *log.Partition) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state.Load()
	lg := st.Log(broker)
	if lg == nil || st.Leader == broker || st.LeaderEpoch != leaderEpoch {
		return nil
	}
	return f(lg)
}

// WaitReplicated waits until the high watermark of the leader of st covers offset (the end of
// an acks=all batch), as Kafka's DelayedProduce does, and then checks the ISR again: below
// min.insync.replicas it is NOT_ENOUGH_REPLICAS_AFTER_APPEND. A new leader meanwhile is
// NOT_LEADER_OR_FOLLOWER; a new epoch of the same leader over the same log is not (as Kafka's
// DelayedProduce fails only once the broker no longer leads). It gives up with REQUEST_TIMED_OUT when expired is closed, and with
// ErrClosed when done (the cluster's close) or hangup (the producer's connection's) is.
func (p *Partition) WaitReplicated(st *State, offset int64, minISR int, expired, done, hangup <-chan struct{}) error {
	lg := st.LeaderLog()
	for {
		wake := lg.Notify()
		if lg.HighWatermark() >= offset {
			if cur := p.state.Load(); len(cur.ISR) < effectiveMinISR(cur, minISR) {
				return kerr.NotEnoughReplicasAfterAppend
			}
			return nil
		}
		select {
		case <-wake:
		case <-st.moved:
			cur := p.state.Load()
			if cur.Leader != st.Leader || cur.LeaderLog() != lg {
				return kerr.NotLeaderForPartition
			}
			st = cur
		case <-expired:
			return kerr.RequestTimedOut
		case <-done:
			return ErrClosed
		case <-hangup:
			return ErrClosed
		}
	}
}

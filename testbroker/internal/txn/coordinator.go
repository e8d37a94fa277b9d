package txn

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/clock"
)

// TopicPartition names a partition a transaction wrote to.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetsTopic is the topic whose partitions stand for groups in a transaction: AddOffsetsToTxn
// adds the group's __consumer_offsets partition, as in Kafka, and its marker ends the group's
// pending transactional offsets.
const OffsetsTopic = "__consumer_offsets"

// Settings are the broker configs the coordinator reads at each use.
type Settings struct {
	// MaxTimeout is transaction.max.timeout.ms: a longer transaction.timeout.ms is refused.
	MaxTimeout time.Duration
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
	// timed-out transactions are looked for.
	AbortInterval time.Duration
}

// Config is what a Coordinator runs with. Its functions must not call back into the Coordinator.
type Config struct {
	Clock    clock.Clock
	Settings func() Settings
	// NewProducerID returns a producer id no producer of the cluster has had.
	NewProducerID func() int64
	// WriteMarker appends the end marker of producerID's transaction, of transaction version v,
	// to tp's leader. NOT_LEADER_OR_FOLLOWER (no leader) and NOT_ENOUGH_REPLICAS leave the
	// marker pending until RetryMarkers; any other error drops it (markerRetriable).
	WriteMarker func(tp TopicPartition, producerID int64, producerEpoch int16, commit bool, v Version) error
	// EndGroupOffsets makes group's pending offsets of producerID's transaction committed
	// (commit) or drops them.
	EndGroupOffsets func(group string, producerID int64, commit bool)
	// GroupPartition returns the __consumer_offsets partition of a group.
	GroupPartition func(group string) int32
}

// Coordinator holds every transactional id of the cluster. It is safe for concurrent use.
type Coordinator struct {
	cfg Config

	mu     sync.Mutex
	txns   map[string]*txnMeta
	check  clock.Timer // the timeout check, every AbortInterval
	closed bool
}

// txnMeta is Kafka's TransactionMetadata of one transactional id.
type txnMeta struct {
	id                string
	producerID        int64
	prevProducerID    int64 // the id before the last rotation, for retries of it
	nextProducerID    int64 // the id a TV2 end with an exhausted epoch moves to
	epoch, lastEpoch  int16
	state             State
	timeout           time.Duration
	partitions        map[TopicPartition]struct{}
	groups            map[string]struct{} // groups whose offsets the transaction commits
	start, lastUpdate time.Time           // start is zero when no transaction runs
	version           Version
	pending           map[TopicPartition]struct{} // markers not written yet (Prepare*)
	markerEpoch       int16
}

// NewCoordinator returns a coordinator with no transactional ids. It looks for timed-out
// transactions (and retries pending markers) every Settings().AbortInterval on the clock from
// now, as Kafka's scheduler does from the broker's start. The check is a periodic task
// (clock.Every), which a manual clock does not count among its pending timers: a test's
// WaitPending for a parked fetch is not fooled by an open transaction.
func NewCoordinator(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg, txns: make(map[string]*txnMeta)}
	c.check = clock.Every(cfg.Clock, cfg.Settings().AbortInterval, c.checkTimeouts)
	return c
}

// Close stops the timeout checks, waiting for one under way.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.check.Stop()
}

// checkTimeouts is the periodic check: Kafka's abortTimedOutTransactions task.
func (c *Coordinator) checkTimeouts() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.abortTimedOutLocked()
	}
}

// ProducerIDAndEpoch is a producer's id and epoch as a KIP-360 InitProducerId names them.
type ProducerIDAndEpoch struct {
	ProducerID int64
	Epoch      int16
}

// InitProducerID runs InitProducerId for a transactional id (TransactionCoordinator.
// handleInitProducerId): a new id gets a new producer id at epoch 0; a known one gets its epoch
// bumped (a new producer id when the epoch is exhausted), which fences the producer that had it.
// An ongoing transaction is aborted first, with the epoch bumped, and the request answered
// CONCURRENT_TRANSACTIONS so that the client retries once the abort is done; a transaction whose
// markers are pending is CONCURRENT_TRANSACTIONS too. With expected (KIP-360, v3+) the producer
// recovers its own id: PRODUCER_FENCED unless expected is the current producer (or the previous
// one with an exhausted epoch, a retry of a rotation), and a retry of a bump that succeeded gets
// the same epoch again. A timeout not in 1..transaction.max.timeout.ms is
// INVALID_TRANSACTION_TIMEOUT.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, expected *ProducerIDAndEpoch) (int64, int16, error) {
	if !c.ValidTimeout(timeoutMs) {
		return noProducerID, noEpoch, kerr.InvalidTransactionTimeout
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock.Now()
	m := c.txns[id]
	if m == nil {
		m = &txnMeta{id: strings.Clone(id), producerID: c.cfg.NewProducerID(), prevProducerID: noProducerID,
			nextProducerID: noProducerID, epoch: noEpoch, lastEpoch: noEpoch, state: Empty, timeout: timeout, lastUpdate: now}
		c.txns[m.id] = m
	}
	if expected != nil && !(m.epoch == noEpoch || expected.ProducerID == m.producerID ||
		expected.ProducerID == m.prevProducerID && epochExhausted(expected.Epoch)) {
		return noProducerID, noEpoch, kerr.ProducerFenced
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return noProducerID, noEpoch, kerr.ConcurrentTransactions
	case Ongoing:
		c.fenceAndAbortLocked(m, now)
		return noProducerID, noEpoch, kerr.ConcurrentTransactions
	}
	if epochExhausted(m.epoch) && (expected == nil || expected.Epoch == m.epoch) {
		last := int16(noEpoch)
		if expected != nil {
			last = m.epoch
		}
		m.prevProducerID, m.producerID, m.epoch, m.lastEpoch = m.producerID, c.cfg.NewProducerID(), 0, last
	} else {
		switch {
		case expected == nil:
			m.epoch, m.lastEpoch = m.epoch+1, noEpoch
		case m.epoch == noEpoch || expected.Epoch == m.epoch:
			m.epoch, m.lastEpoch = m.epoch+1, m.epoch
		case expected.Epoch == m.lastEpoch:
			// A retry of a bump whose answer the producer lost: the same epoch again.
		default:
			return noProducerID, noEpoch, kerr.ProducerFenced
		}
	}
	m.state, m.timeout, m.start, m.lastUpdate = Empty, timeout, time.Time{}, now
	m.partitions, m.groups = nil, nil
	return m.producerID, m.epoch, nil
}

// ValidTimeout reports whether a transaction.timeout.ms is in 1..transaction.max.timeout.ms.
func (c *Coordinator) ValidTimeout(timeoutMs int32) bool {
	return timeoutMs > 0 && time.Duration(timeoutMs)*time.Millisecond <= c.cfg.Settings().MaxTimeout
}

// fenceAndAbortLocked aborts m's ongoing transaction with the producer epoch bumped, so that the
// producer that ran it is fenced (Kafka's PrepareEpochFence then PrepareAbort). The epoch is
// bumped once; under TV2 the old epoch stays the last one, so that the producer's own abort is
// answered as a retry of this one, as KIP-890 lets a timed-out TV2 producer go on.
func (c *Coordinator) fenceAndAbortLocked(m *txnMeta, now time.Time) {
	m.state = PrepareEpochFence
	last := int16(noEpoch)
	if m.version.bumpsEpoch() {
		last = m.epoch
	}
	m.epoch, m.lastEpoch = m.epoch+1, last
	c.prepareEndLocked(m, false, now)
}

// AddPartitions adds partitions to id's transaction (AddPartitionsToTxn, and the implicit add of
// a TV2 produce or TxnOffsetCommit), starting one if none runs. Errors are the whole request's:
// INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id, PRODUCER_FENCED for
// another epoch, CONCURRENT_TRANSACTIONS while the previous transaction's markers are written.
func (c *Coordinator) AddPartitions(id string, producerID int64, epoch int16, parts []TopicPartition, v Version) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addLocked(id, producerID, epoch, parts, nil, v)
}

// AddOffsets adds group's __consumer_offsets partition to id's transaction (AddOffsetsToTxn),
// so that the transaction's end commits or drops the group's pending offsets.
func (c *Coordinator) AddOffsets(id string, producerID int64, epoch int16, group string, v Version) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addOffsetsLocked(id, producerID, epoch, group, v)
}

func (c *Coordinator) addOffsetsLocked(id string, producerID int64, epoch int16, group string, v Version) error {
	tp := TopicPartition{Topic: OffsetsTopic, Partition: c.cfg.GroupPartition(group)}
	return c.addLocked(id, producerID, epoch, []TopicPartition{tp}, &group, v)
}

func (c *Coordinator) addLocked(id string, producerID int64, epoch int16, parts []TopicPartition, group *string, v Version) error {
	m, err := c.checkProducerLocked(id, producerID, epoch)
	if err != nil {
		return err
	}
	if m.state == PrepareCommit || m.state == PrepareAbort || m.state == PrepareEpochFence {
		return kerr.ConcurrentTransactions
	}
	now := c.cfg.Clock.Now()
	if m.state != Ongoing {
		m.start = now
		m.partitions, m.groups = make(map[TopicPartition]struct{}), make(map[string]struct{})
	}
	for _, tp := range parts {
		m.partitions[tp] = struct{}{}
	}
	if group != nil {
		m.groups[strings.Clone(*group)] = struct{}{}
	}
	m.state, m.lastUpdate, m.version = Ongoing, now, v
	return nil
}

// checkProducerLocked returns id's metadata if producerID and epoch are its producer's.
func (c *Coordinator) checkProducerLocked(id string, producerID int64, epoch int16) (*txnMeta, error) {
	m := c.txns[id]
	switch {
	case m == nil || m.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping
	case m.epoch != epoch:
		return nil, kerr.ProducerFenced
	}
	return m, nil
}

// VerifyPartitions answers AddPartitionsToTxn with VerifyOnly (KIP-890 part 1: a leader asks
// before appending a transactional batch): per partition, nil if it is in the transaction and
// TRANSACTION_ABORTABLE if not; the error fails every partition: INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while markers are written.
func (c *Coordinator) VerifyPartitions(id string, producerID int64, epoch int16, parts []TopicPartition) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.checkProducerLocked(id, producerID, epoch)
	if err != nil {
		return nil, err
	}
	if m.state == PrepareCommit || m.state == PrepareAbort {
		return nil, kerr.ConcurrentTransactions
	}
	out := make([]error, len(parts))
	for i, tp := range parts {
		if _, ok := m.partitions[tp]; !ok || m.state != Ongoing {
			out[i] = kerr.TransactionAbortable
		}
	}
	return out, nil
}

// TxnOffsetCommit checks a TxnOffsetCommit against id's transaction and, if it passes, runs
// commit (which records the pending offsets) while no EndTxn can interleave. Under TV2 (v5+)
// the group is added to the transaction as AddOffsetsToTxn would; before, the group must have
// been added (INVALID_TXN_STATE otherwise, the code Kafka's verification gives clients that do
// not know TRANSACTION_ABORTABLE). The producer checks are AddPartitions'.
func (c *Coordinator) TxnOffsetCommit(id string, producerID int64, epoch int16, group string, v Version, commit func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.bumpsEpoch() {
		if err := c.addOffsetsLocked(id, producerID, epoch, group, v); err != nil {
			return err
		}
	} else {
		m, err := c.checkProducerLocked(id, producerID, epoch)
		if err != nil {
			return err
		}
		if _, ok := m.groups[group]; !ok || m.state != Ongoing {
			return kerr.InvalidTxnState
		}
	}
	commit()
	return nil
}

// EndTxn ends id's transaction (TransactionCoordinator.handleEndTransaction): the markers are
// written to every partition and the groups' pending offsets committed or dropped, and the
// state goes to PrepareCommit/PrepareAbort, then CompleteCommit/CompleteAbort once every marker
// is written. Under TV2 (EndTxn v5+) the epoch is bumped (a new producer id when it is
// exhausted), and the returned producer id and epoch are the ones the producer goes on with; a
// retry of an end that bumped is answered as the first. Errors as Kafka's:
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS (markers pending),
// INVALID_TXN_STATE (an end without a transaction, or the other outcome than the one under way).
func (c *Coordinator) EndTxn(id string, producerID int64, epoch int16, commit bool, v Version) (int64, int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.txns[id]
	if m == nil {
		return noProducerID, noEpoch, kerr.InvalidProducerIDMapping
	}
	tv2 := m.version.bumpsEpoch()
	retryOnEpochBump := tv2 && m.epoch == epoch+1
	retryOnOverflow := tv2 && m.prevProducerID == producerID && epoch == maxEpoch-1 && m.epoch == 0
	var validEpoch bool
	if tv2 {
		switch m.state {
		case PrepareCommit, PrepareAbort:
			validEpoch = retryOnEpochBump
		case CompleteCommit, CompleteAbort:
			validEpoch = retryOnEpochBump || retryOnOverflow
		default:
			validEpoch = epoch == m.epoch
		}
		validEpoch = validEpoch || v.bumpsEpoch() && !commit && epoch == m.epoch
	} else {
		validEpoch = epoch == m.epoch || v.bumpsEpoch() && !commit && epoch == m.epoch
	}
	switch {
	case m.producerID != producerID && !retryOnOverflow:
		return noProducerID, noEpoch, kerr.InvalidProducerIDMapping
	case !validEpoch:
		return noProducerID, noEpoch, kerr.ProducerFenced
	}
	sameOutcome := (m.state == PrepareCommit || m.state == CompleteCommit) == commit
	// Under TV2 an abort without a transaction is legal and bumps the epoch: a producer whose
	// produces all failed cannot know whether they added their partitions.
	emptyAbort := v.bumpsEpoch() && !commit && epoch == m.epoch &&
		(m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort)
	switch {
	case m.state == Ongoing || emptyAbort:
		if v.bumpsEpoch() {
			if epochExhausted(m.epoch) {
				m.nextProducerID = c.cfg.NewProducerID()
			}
			m.epoch, m.lastEpoch = m.epoch+1, m.epoch
		}
		m.version = v
		c.prepareEndLocked(m, commit, c.cfg.Clock.Now())
		if m.nextProducerID != noProducerID {
			return m.nextProducerID, 0, nil
		}
		return m.producerID, m.epoch, nil
	case m.state == CompleteCommit || m.state == CompleteAbort:
		if sameOutcome {
			return m.producerID, m.epoch, nil
		}
	case m.state == PrepareCommit || m.state == PrepareAbort:
		if sameOutcome {
			return noProducerID, noEpoch, kerr.ConcurrentTransactions
		}
	}
	return noProducerID, noEpoch, kerr.InvalidTxnState
}

// prepareEndLocked moves m to PrepareCommit or PrepareAbort and writes its markers.
func (c *Coordinator) prepareEndLocked(m *txnMeta, commit bool, now time.Time) {
	m.state, m.lastUpdate, m.markerEpoch = PrepareAbort, now, m.epoch
	if commit {
		m.state = PrepareCommit
	}
	m.pending = maps.Clone(m.partitions)
	c.writeMarkersLocked(m)
}

// writeMarkersLocked writes m's pending markers and completes the transaction once none is
// left.
func (c *Coordinator) writeMarkersLocked(m *txnMeta) {
	commit := m.state == PrepareCommit
	for _, tp := range sortedPartitions(m.pending) {
		if tp.Topic == OffsetsTopic {
			for g := range m.groups {
				if c.cfg.GroupPartition(g) == tp.Partition {
					c.cfg.EndGroupOffsets(g, m.producerID, commit)
				}
			}
		} else if err := c.cfg.WriteMarker(tp, m.producerID, m.markerEpoch, commit, m.version); markerRetriable(err) {
			continue
		}
		delete(m.pending, tp)
	}
	if len(m.pending) > 0 {
		return
	}
	m.state, m.lastUpdate = CompleteAbort, c.cfg.Clock.Now()
	if commit {
		m.state = CompleteCommit
	}
	if m.nextProducerID != noProducerID {
		m.prevProducerID, m.producerID, m.nextProducerID = m.producerID, m.nextProducerID, noProducerID
		m.lastEpoch, m.epoch = m.epoch, 0
	}
	m.partitions, m.groups, m.pending = nil, nil, nil
}

// markerRetriable reports whether a marker that failed with err is written again later. As
// Kafka's TransactionMarkerRequestCompletionHandler does, a partition without a leader or with
// too small an ISR is retried; a stale marker (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED) or a deleted partition (UNKNOWN_TOPIC_OR_PARTITION) is not,
// since writing it again can never succeed. Kafka then leaves the transaction to the newer
// coordinator; here, with one coordinator for good, the marker is dropped and the transaction
// completes.
func markerRetriable(err error) bool {
	return errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.NotEnoughReplicas)
}

// RetryMarkers writes the markers left pending because their partitions had no leader.
func (c *Coordinator) RetryMarkers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retryPendingLocked()
}

// abortTimedOutLocked aborts every Ongoing transaction that started longer than its timeout
// ago, fencing its producer (TransactionCoordinator.abortTimedOutTransactions). Under TV2 the
// producer's own abort afterwards succeeds as a retry and it goes on with the bumped epoch;
// under TV1 it is fenced for good (PRODUCER_FENCED).
func (c *Coordinator) abortTimedOutLocked() {
	now := c.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		m := c.txns[id]
		if m.state == Ongoing && m.start.Add(m.timeout).Before(now) {
			c.fenceAndAbortLocked(m, now)
		}
	}
	c.retryPendingLocked()
}

func (c *Coordinator) retryPendingLocked() {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		if m := c.txns[id]; len(m.pending) > 0 {
			c.writeMarkersLocked(m)
		}
	}
}

func sortedPartitions(s map[TopicPartition]struct{}) []TopicPartition {
	return slices.SortedFunc(maps.Keys(s), func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

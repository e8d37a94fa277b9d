package replica

import "time"

// DelayedFetch is a Fetch that may wait for data, as Kafka's DelayedFetch: the server reads
// the partitions into its response (Read) and the fetch parks in the purgatory (waiter) until
// it can answer. The reading and the response stay with the server; when to read again and when
// to answer is decided here.
type DelayedFetch struct {
	// Broker is the broker the fetch was sent to: the wake-ups waited on are its replicas'.
	Broker int32
	// Partitions are the partitions read, numbered as HighWatermark numbers them.
	Partitions []*Partition
	MinBytes   int
	MaxWait    time.Duration // 0 or less: answer after the first read
	// Topology is, for a follower's fetch, Manager.Topology as it was before the fetch applied
	// the follower's position, so that a change made meanwhile (a partition added, a leader
	// moved) is not missed; nil for a consumer's fetch.
	Topology <-chan struct{}
	// SentHighWatermarks is, for a follower's fetch under KIP-1166, the high watermark the
	// follower sent for each partition; nil when the rule does not apply.
	SentHighWatermarks []int64
	// Closed is closed when the cluster closes, Hangup when the fetch's connection does.
	Closed, Hangup <-chan struct{}
	// Read reads every partition into the response again, and returns the record bytes read
	// and whether a partition failed.
	Read func() (bytes int, failed bool)
	// HighWatermark returns the high watermark the last Read answered for partition i.
	HighWatermark func(i int) int64
}

// Fetch reads f and, when it found less than MinBytes, MaxWait is positive and no partition
// failed, waits: every append (a transaction marker included) or high watermark move on one of
// its partitions makes it read again, and it returns as soon as it has MinBytes, or after a
// last read once MaxWait has passed on the cluster clock. A leader move of one of its
// partitions makes it read again too, so that a fetch waiting at the old leader answers
// NOT_LEADER_OR_FOLLOWER at once; a follower's fetch reads once more and returns when the
// topology changes, so that its fetcher adds or drops partitions. A follower's fetch under
// KIP-1166 returns as soon as a partition's high watermark is ahead of the one the follower
// sent (complete). The deadline is the wait's only timer on the clock, stopped when data ends
// the wait early, so that a test on the manual clock can see the fetch parked. The cluster's
// close or the connection's ends the wait.
func (m *Manager) Fetch(f *DelayedFetch) {
	n, failed := f.Read()
	if f.MaxWait <= 0 || len(f.Partitions) == 0 || n >= f.MinBytes || failed || f.complete() {
		return
	}

	expired := make(chan struct{})
	timer := m.cfg.Clock.AfterFunc(f.MaxWait, func() { close(expired) })
	w := newWaiter(len(f.Partitions), expired, f.Closed, f.Hangup, f.Topology)
	for {
		// Ask for the wake-ups before reading, so that an append or a leader move between the
		// read and the wait is not missed.
		for i, p := range f.Partitions {
			st := p.State()
			w.Set(i, st.notify(f.Broker), st.Moved())
		}
		n, failed = f.Read()
		if n >= f.MinBytes || failed || f.complete() {
			timer.Stop()
			return
		}
		switch w.Wait() {
		case WaitExpired:
			f.Read()
			return
		case WaitClosed:
			timer.Stop()
			return
		}
		if f.Topology != nil && topologyChanged(f.Topology) {
			timer.Stop()
			f.Read()
			return
		}
	}
}

// complete reports whether a follower's fetch is answered at once under KIP-1166: some
// partition's high watermark is above the one the follower sent (BehindOnHighWatermark).
// Kafka's KRaft leader applies this rule to its metadata log (KafkaRaftClient.handleFetchRequest);
// package replica applies it to every partition. It is asked only after a read in which no
// partition failed.
func (f *DelayedFetch) complete() bool {
	for i, sent := range f.SentHighWatermarks {
		if BehindOnHighWatermark(sent, f.HighWatermark(i)) {
			return true
		}
	}
	return false
}

func topologyChanged(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// notify returns the wake-up of broker's replica in s, or, when the broker holds none (a
// reassignment took it away), a closed channel: the next read answers the error.
func (s *State) notify(broker int32) <-chan struct{} {
	if lg := s.Log(broker); lg != nil {
		return lg.Notify()
	}
	return closedChan
}

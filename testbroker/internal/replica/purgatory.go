package replica

import "reflect"

// waiter is the fetch purgatory of one parked fetch: it waits for the first of a wake-up or a
// leader move of any of the fetch's partitions, the fetch's deadline, the cluster's close, the
// close of the fetch's connection (a stopped broker closes its connections and waits for them) and,
// for a follower's fetch, a change of the replication topology (Manager.Topology), so that the
// follower's fetcher learns of new partitions and leaders at once. A single-partition fetch
// waits with a plain select; a larger one with reflect.Select over every partition's channels.
type waiter struct {
	expired, closed, hangup, topology <-chan struct{}
	one, oneMoved                     <-chan struct{}      // the wake-up and the leader move of a single-partition fetch
	cases                             []reflect.SelectCase // per partition its wake-up and its leader move, then expired, closed, hangup, topology
}

// WaitResult is what ended a Wait.
type WaitResult int

const (
	// WaitWoken: a partition changed, or the topology did; read again.
	WaitWoken WaitResult = iota
	// WaitExpired: the deadline passed.
	WaitExpired
	// WaitClosed: the cluster is closing, or the fetch's connection closed.
	WaitClosed
)

// newWaiter returns the waiter of a fetch of n partitions on a connection that hangup closes;
// topology may be nil (a consumer's fetch does not wait on it).
func newWaiter(n int, expired, closed, hangup, topology <-chan struct{}) *waiter {
	w := &waiter{expired: expired, closed: closed, hangup: hangup, topology: topology}
	if n > 1 {
		w.cases = make([]reflect.SelectCase, 2*n+4)
		for i := range w.cases {
			w.cases[i].Dir = reflect.SelectRecv
		}
		w.cases[2*n].Chan = reflect.ValueOf(expired)
		w.cases[2*n+1].Chan = reflect.ValueOf(closed)
		w.cases[2*n+2].Chan = reflect.ValueOf(hangup)
		w.cases[2*n+3].Chan = reflect.ValueOf(topology)
	}
	return w
}

// Set makes wake the wake-up of partition i and moved the channel its leader move closes.
func (w *waiter) Set(i int, wake, moved <-chan struct{}) {
	if w.cases == nil {
		w.one, w.oneMoved = wake, moved
		return
	}
	w.cases[2*i].Chan = reflect.ValueOf(wake)
	w.cases[2*i+1].Chan = reflect.ValueOf(moved)
}

// Wait blocks until one of the waited-for events.
func (w *waiter) Wait() WaitResult {
	if w.cases == nil {
		select {
		case <-w.one:
		case <-w.oneMoved:
		case <-w.topology:
		case <-w.expired:
			return WaitExpired
		case <-w.closed:
			return WaitClosed
		case <-w.hangup:
			return WaitClosed
		}
		return WaitWoken
	}
	chosen, _, _ := reflect.Select(w.cases)
	switch chosen {
	case len(w.cases) - 4:
		return WaitExpired
	case len(w.cases) - 3, len(w.cases) - 2:
		return WaitClosed
	}
	return WaitWoken
}

// BehindOnHighWatermark is KIP-1166's rule for answering a follower's fetch at once: the high
// watermark the follower sent (-1 when it does not know one; MaxInt64, the field's default,
// when its version does not carry one) is below the leader's (-1 when the leader does not
// know one), as KafkaRaftClient's isHighWatermarkUpdated decides. So a follower that knows
// nothing learns the leader's watermark at once, an unknown watermark on both sides parks, an
// equal one parks, and a follower that cannot send one is never answered early.
func BehindOnHighWatermark(follower, leader int64) bool { return follower < leader }

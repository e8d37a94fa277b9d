package share

import (
	"cmp"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxFetchBytes caps the records of one fetch response, as Kafka's fetch.max.bytes default
// (55 MiB) does.
const maxFetchBytes = 55 << 20

// FetchTarget is one partition of a ShareFetch: what it resolved to, and what the fetch
// acquired from it.
type FetchTarget struct {
	TopicPartition
	// Placement is the partition's placement when it exists: for NOT_LEADER_OR_FOLLOWER, the
	// current leader.
	Placement Placement
	// Err is why the partition is not fetched, or nil.
	Err *kerr.Error
	// Ranges are the acquired records, sorted by offset once Records has been called.
	Ranges []AcquiredRange

	entry      *sessionPart
	sp         *Partition // nil on Err, and until the fetch creates it
	start, end int        // the batches of its first acquisition, in the fetch's batch list
	more       [][2]int   // the batches of later ones (a fetch waiting for MinBytes)
}

// HasRecords reports whether the fetch acquired records from the partition.
func (t *FetchTarget) HasRecords() bool { return t.end > t.start }

// Fetch is one ShareFetch after its session rules ran (Kafka's ShareFetchContext), and then
// its acquisition (Kafka's DelayedShareFetch).
type Fetch struct {
	// Final is epoch -1: the fetch reads nothing and the session closes after the response.
	Final bool
	// Subsequent is whether the session existed before this request (epoch > 0).
	Subsequent bool
	// Targets are the session's partitions, resolved; the slice is the fetch's own.
	Targets []FetchTarget

	ss            *Sessions
	group, member string
	gen           uint64 // the manager's generation the targets were resolved at

	fetchable   int // targets without an error
	rotate      int // the target to start at (Kafka rotates partitions by session epoch)
	mode        AcquireMode
	batchSize   int
	perPart     int // the bytes each acquisition may give (Kafka's uniform split of MaxBytes)
	bytesLeft   int
	recordsLeft int
	bytes       int      // record bytes acquired
	batches     [][]byte // the batches acquired, slices of the logs' storage
}

// FetchLimits are a ShareFetch's limits.
type FetchLimits struct {
	MaxBytes, MinBytes, MaxRecords, BatchSize int32
	MaxWait                                   time.Duration
	Mode                                      AcquireMode
	// Epoch is the request's session epoch, which rotates the partition the fetch starts at.
	Epoch int32
	// Done ends a wait early: the connection closed.
	Done <-chan struct{}
	// Waiting, when not nil, is called once before the fetch first waits; the function it
	// returns is called when the wait ends.
	Waiting func() (stop func())
}

// Poll acquires records for the member from each partition this broker leads, making the
// group's share partition of it on its first fetch. It starts at the partition the session
// epoch rotates to and stays within MaxRecords (soft in batch-optimized mode), BatchSize, and
// MaxBytes split evenly between the partitions (at least one batch each). While the records
// acquired come to less than MinBytes and MaxWait is positive, it waits on the cluster clock
// and tries again whenever a partition's log grows or records become available again (a
// release, an expired lock, a closed session); a single timer times the wait. Kafka acquires
// nothing until MinBytes is there; this fetch keeps what it acquired while it waits for more,
// so those records' locks start earlier. A partition whose leader moves meanwhile, or whose
// topic is deleted, wakes the fetch and ends NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION, without the records acquired from it, which its new leader holds
// AVAILABLE.
func (f *Fetch) Poll(lim FetchLimits) {
	m := f.ss.m
	for i := range f.Targets {
		t := &f.Targets[i]
		if t.Err != nil {
			continue
		}
		if t.sp == nil {
			if t.sp = m.getOrCreate(f.group, t.TopicPartition, t.Placement.Log); t.sp == nil {
				t.Err = kerr.UnknownTopicOrPartition
				continue
			}
		}
		f.fetchable++
	}
	f.recheck()
	if f.fetchable == 0 {
		return
	}
	maxBytes := min(int(lim.MaxBytes), maxFetchBytes)
	minBytes := min(int(lim.MinBytes), maxBytes)
	f.perPart = max(maxBytes/f.fetchable, 1)
	f.bytesLeft = maxBytes
	f.recordsLeft = int(lim.MaxRecords)
	f.batchSize = int(lim.BatchSize)
	f.mode = lim.Mode
	f.rotate = int(uint32(lim.Epoch) % uint32(len(f.Targets)))

	f.acquire()
	if lim.MaxWait <= 0 || f.satisfied(minBytes) {
		return
	}
	expired := make(chan struct{})
	timer := m.cfg.Clock.AfterFunc(lim.MaxWait, func() { close(expired) })
	defer timer.Stop()
	if lim.Waiting != nil {
		defer lim.Waiting()()
	}
	w := newWaiter(expired, lim.Done, m.cfg.Done)
	for {
		// Ask for the wake-ups before trying, so that a change in between is not missed.
		w.reset()
		for i := range f.Targets {
			if t := &f.Targets[i]; t.Err == nil {
				w.add(t.Placement.Log.Notify())
				w.add(t.sp.Notify())
			}
		}
		f.acquire()
		if f.satisfied(minBytes) {
			return
		}
		switch w.wait() {
		case waitExpired:
			f.acquire()
			return
		case waitClosed:
			return
		}
		f.recheck()
	}
}

// Deny fails the targets whose topic the member may not read with TOPIC_AUTHORIZATION_FAILED,
// as Kafka authorizes every partition of the share session at every fetch: they stay in the
// session, so the first fetch after an ACL allows them acquires from them, without the client
// naming them again. Kafka decides UNKNOWN_TOPIC_ID before authorizing, so such a target keeps
// it; the other errors come after.
func (f *Fetch) Deny(denied func(topic [16]byte) bool) {
	for i := range f.Targets {
		t := &f.Targets[i]
		if t.Err == kerr.UnknownTopicID || !denied(t.Topic) {
			continue
		}
		t.Placement, t.sp, t.Err = Placement{}, nil, kerr.TopicAuthorizationFailed
	}
}

// recheck follows the topic deletions and leader moves since the fetch's targets were
// resolved: their share partitions are closed or fenced, and would wake the fetch forever. A
// target whose topic is gone becomes UNKNOWN_TOPIC_OR_PARTITION; one led by another broker now,
// or whose share partition was handed over meanwhile, NOT_LEADER_OR_FOLLOWER with the current
// leader, as Kafka completes a waiting share fetch at once when its broker stops leading a
// partition. What such a target acquired is not sent: its new leader holds it.
func (f *Fetch) recheck() {
	m := f.ss.m
	gen := m.generation()
	if gen == f.gen {
		return
	}
	f.gen = gen
	broker := f.ss.broker
	for i := range f.Targets {
		t := &f.Targets[i]
		if t.Err != nil {
			continue
		}
		cur, ok := m.cfg.Metadata.Placement(t.TopicPartition)
		switch {
		case !ok:
			t.Err = kerr.UnknownTopicOrPartition
		case cur.Leader != broker || m.Led(f.group, t.TopicPartition, broker) != t.sp:
			t.Placement, t.Err = cur, kerr.NotLeaderForPartition
		default:
			continue
		}
		f.fetchable--
	}
}

// satisfied reports whether the fetch may answer: it has MinBytes, or can take nothing more.
func (f *Fetch) satisfied(minBytes int) bool {
	return f.bytes >= minBytes || f.bytesLeft <= 0 || f.recordsLeft <= 0 || f.fetchable == 0
}

// acquire tries every partition once, from the rotated start, within what is left of the
// fetch's limits.
func (f *Fetch) acquire() {
	n := len(f.Targets)
	for k := range n {
		if f.recordsLeft <= 0 || f.bytesLeft <= 0 {
			return
		}
		t := &f.Targets[(f.rotate+k)%n]
		if t.Err != nil {
			continue
		}
		start := len(f.batches)
		ranges, batches, err := t.sp.Acquire(f.batches, f.member, f.recordsLeft, f.batchSize, min(f.perPart, f.bytesLeft), f.mode)
		f.batches = batches
		if err != nil {
			t.Err = kerrOf(err)
			f.fetchable--
			continue
		}
		if len(ranges) == 0 {
			continue
		}
		if t.end == t.start {
			t.Ranges, t.start, t.end = ranges, start, len(batches)
		} else {
			t.Ranges = slices.Concat(t.Ranges, ranges)
			t.more = append(t.more, [2]int{start, len(batches)})
		}
		got := 0
		for _, b := range batches[start:] {
			got += len(b)
		}
		f.bytes += got
		f.bytesLeft -= got
		for _, r := range ranges {
			f.recordsLeft -= int(r.LastOffset - r.FirstOffset + 1)
		}
	}
}

// kerrOf returns the Kafka error err carries, or UNKNOWN_SERVER_ERROR.
func kerrOf(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// Records returns a target's records as the log batches that hold them, slices of the logs'
// storage that the response refers to rather than copies: those of its one acquisition as
// they came, or, after several, every batch once in offset order with Ranges sorted to match.
// The batches never change.
func (f *Fetch) Records(t *FetchTarget) [][]byte {
	if len(t.more) == 0 {
		return f.batches[t.start:t.end:t.end]
	}
	var out [][]byte
	for _, span := range append([][2]int{{t.start, t.end}}, t.more...) {
		out = append(out, f.batches[span[0]:span[1]]...)
	}
	slices.SortStableFunc(out, func(a, b []byte) int { return cmp.Compare(baseOffset(a), baseOffset(b)) })
	out = slices.CompactFunc(out, func(a, b []byte) bool { return baseOffset(a) == baseOffset(b) })
	slices.SortFunc(t.Ranges, func(a, b AcquiredRange) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// baseOffset returns the base offset of a stored record batch.
func baseOffset(batch []byte) int64 { return int64(binary.BigEndian.Uint64(batch)) }

// Answered returns which targets the response lists, as Kafka does: on a new session every
// partition the fetch looked at; afterwards only those with records, with an error, or added
// to the session since the last response (Sessions.mustRespondLocked). polled is whether the
// fetch ran: when it did not (MaxRecords or MaxBytes of 0), only partitions of unknown topics
// are answered, as Kafka answers those before fetching.
func (f *Fetch) Answered(polled bool) []bool {
	ss := f.ss
	include := make([]bool, len(f.Targets))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i := range f.Targets {
		t := &f.Targets[i]
		switch {
		case !polled && (t.Err == nil || t.Err == kerr.NotLeaderForPartition):
			continue
		case f.Subsequent:
			include[i] = ss.mustRespondLocked(t)
		default:
			include[i] = true
		}
	}
	return include
}

type waitResult int

const (
	waitWoken waitResult = iota
	waitExpired
	waitClosed
)

// waiter waits for the first of: any of a fetch's wake-ups, its deadline, its connection's
// close, the cluster's close.
type waiter struct {
	fixed [3]<-chan struct{} // expired, connection done, cluster closed
	wakes []<-chan struct{}
	cases []reflect.SelectCase
}

func newWaiter(expired, connDone, closed <-chan struct{}) *waiter {
	return &waiter{fixed: [3]<-chan struct{}{expired, connDone, closed}}
}

func (w *waiter) reset() { w.wakes = w.wakes[:0] }

func (w *waiter) add(ch <-chan struct{}) { w.wakes = append(w.wakes, ch) }

func (w *waiter) wait() waitResult {
	if len(w.wakes) == 2 {
		select {
		case <-w.wakes[0]:
			return waitWoken
		case <-w.wakes[1]:
			return waitWoken
		case <-w.fixed[0]:
			return waitExpired
		case <-w.fixed[1]:
			return waitClosed
		case <-w.fixed[2]:
			return waitClosed
		}
	}
	w.cases = w.cases[:0]
	for _, ch := range w.fixed {
		w.cases = append(w.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	for _, ch := range w.wakes {
		w.cases = append(w.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	switch chosen, _, _ := reflect.Select(w.cases); chosen {
	case 0:
		return waitExpired
	case 1, 2:
		return waitClosed
	}
	return waitWoken
}

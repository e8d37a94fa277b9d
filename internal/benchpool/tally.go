package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// tally counts what the handlers did, by record, without a lock: per partition, one counter of
// acceptances per offset (the topics are fresh, so offsets run from 0).
type tally struct {
	want     int64
	parts    [][]atomic.Int32
	accepted atomic.Int64
	twice    atomic.Int64
	runs     atomic.Int64
	redeliv  atomic.Int64
	workNs   atomic.Int64
	first    atomic.Int64 // unix nanoseconds of the first handler call
	last     atomic.Int64 // unix nanoseconds of the acceptance that made every record accepted
	bad      atomic.Int64 // records outside the produced offsets
	done     chan struct{}
	once     sync.Once
}

func newTally(records, parts int) *tally {
	t := &tally{want: int64(records), parts: make([][]atomic.Int32, parts), done: make(chan struct{})}
	for p := range t.parts {
		t.parts[p] = make([]atomic.Int32, recordsOf(records, parts, int32(p)))
	}
	return t
}

// started counts a handler call for a delivery of the record with deliveryCount.
func (t *tally) started(deliveryCount int) {
	if t.first.Load() == 0 {
		t.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	t.runs.Add(1)
	if deliveryCount > 1 {
		t.redeliv.Add(1)
	}
}

// acceptedOne counts an acceptance of partition p's offset off; the first acceptance of the
// last record notes the time and closes done.
func (t *tally) acceptedOne(p int32, off int64) {
	if int(p) >= len(t.parts) || off < 0 || off >= int64(len(t.parts[p])) {
		t.bad.Add(1)
		return
	}
	switch t.parts[p][off].Add(1) {
	case 1:
		if t.accepted.Add(1) == t.want {
			t.last.Store(time.Now().UnixNano())
			t.once.Do(func() { close(t.done) })
		}
	case 2:
		t.twice.Add(1)
	}
}

func (t *tally) firstTime() time.Time { return time.Unix(0, t.first.Load()) }

// toLast is the time from the first handler call to the acceptance that made every record
// accepted; 0 until then.
func (t *tally) toLast() time.Duration {
	first, last := t.first.Load(), t.last.Load()
	if first == 0 || last == 0 {
		return 0
	}
	return time.Duration(last - first)
}

// ackErrs counts failed acknowledgements, keeping the first message.
type ackErrs struct {
	n     atomic.Int64
	mu    sync.Mutex
	first string
}

func (a *ackErrs) add(err error) {
	if a.n.Add(1) == 1 {
		a.mu.Lock()
		a.first = err.Error()
		a.mu.Unlock()
	}
}

func (a *ackErrs) firstErr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

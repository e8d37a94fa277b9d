// Package clock is the single source of time for the fake cluster. Every timer the cluster
// runs (long-poll waits, acquisition locks, session timeouts) is scheduled on a Clock, so that a
// test can swap the real clock for a Manual one and advance time deterministically.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	// Now returns the clock's current time.
	Now() time.Time
	// AfterFunc runs f in its own goroutine once d has passed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call scheduled by AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Manual is a clock that moves only when Advance or Set is called. Timers whose deadline is
// reached fire in deadline order; each fired function runs synchronously inside Advance, so
// when Advance returns every due timer has run. Functions must therefore not block, and must
// not call Advance themselves.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*manualTimer
	changed chan struct{} // closed and replaced whenever the set of pending timers changes
	seq     uint64
}

type manualTimer struct {
	m        *Manual
	deadline time.Time
	seq      uint64
	f        func()
	pending  bool
	// period is a periodic task's (Every): it fires every period, and Pending, NextDeadline
	// and WaitPending do not count it.
	period time.Duration
}

// NewManual returns a manual clock that starts at start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, changed: make(chan struct{})}
}

// Now returns the manual clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc schedules f at Now()+d. A d of zero or less fires at the next Advance (even
// Advance(0)), never inside AfterFunc itself, so a caller holding a lock cannot deadlock.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	return m.schedule(d, f, 0)
}

// schedule adds a timer due d from now, periodic when period is positive.
func (m *Manual) schedule(d time.Duration, f func(), period time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{m: m, deadline: m.now.Add(d), seq: m.seq, f: f, pending: true, period: period}
	m.timers = append(m.timers, t)
	m.signalLocked()
	return t
}

// Stop cancels the timer if it has not fired.
func (t *manualTimer) Stop() bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.pending {
		return false
	}
	t.pending = false
	for i, other := range m.timers {
		if other == t {
			m.timers = append(m.timers[:i], m.timers[i+1:]...)
			break
		}
	}
	m.signalLocked()
	return true
}

func (m *Manual) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Advance moves the clock forward by d and runs, in deadline order, every timer that is due.
// Timers scheduled by a fired function are run too if they fall due within the advance.
func (m *Manual) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.mu.Lock()
	target := m.now.Add(d)
	m.mu.Unlock()
	m.Set(target)
}

// Set moves the clock to t (never backwards) and runs every timer that is due.
func (m *Manual) Set(t time.Time) {
	for {
		m.mu.Lock()
		next := m.nextDueLocked(t)
		if next == nil {
			if t.After(m.now) {
				m.now = t
			}
			m.mu.Unlock()
			return
		}
		if next.period > 0 {
			m.skipTicksLocked(next, t)
		}
		if next.deadline.After(m.now) {
			m.now = next.deadline
		}
		if next.period > 0 {
			next.deadline = next.deadline.Add(next.period)
		} else {
			next.pending = false
			for i, other := range m.timers {
				if other == next {
					m.timers = append(m.timers[:i], m.timers[i+1:]...)
					break
				}
			}
		}
		m.signalLocked()
		m.mu.Unlock()
		next.f()
	}
}

// skipTicksLocked moves the due periodic timer p to its last tick at or before limit that no
// other timer is due before, so that an Advance over many periods runs the task once for each
// stretch without other timers rather than once per period: a periodic task (the retention
// check) does at one tick what it would do at every tick before it. Another periodic timer
// bounds the skip by its own last tick at or before limit, not by its next one: bounded by
// each other's next ticks, two periodic tasks would take turns tick by tick, and an Advance of
// a year would run a 1 s check some 30 million times. So each periodic task runs a few times
// per Advance, still in deadline order with every other timer.
func (m *Manual) skipTicksLocked(p *manualTimer, limit time.Time) {
	for _, t := range m.timers {
		if t == p || !t.deadline.Before(limit) {
			continue
		}
		bound := t.deadline
		if t.period > 0 {
			bound = t.deadline.Add(limit.Sub(t.deadline) / t.period * t.period)
		}
		if bound.Before(limit) {
			limit = bound
		}
	}
	if limit.After(p.deadline) {
		p.deadline = p.deadline.Add(limit.Sub(p.deadline) / p.period * p.period)
	}
}

func (m *Manual) nextDueLocked(limit time.Time) *manualTimer {
	var best *manualTimer
	for _, t := range m.timers {
		if t.deadline.After(limit) {
			continue
		}
		if best == nil || t.deadline.Before(best.deadline) || (t.deadline.Equal(best.deadline) && t.seq < best.seq) {
			best = t
		}
	}
	return best
}

// Pending returns how many timers are scheduled and have not fired, periodic tasks (Every)
// aside.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pendingLocked()
}

func (m *Manual) pendingLocked() int {
	n := 0
	for _, t := range m.timers {
		if t.period == 0 {
			n++
		}
	}
	return n
}

// NextDeadline returns the earliest pending timer's deadline, if any, periodic tasks (Every)
// aside.
func (m *Manual) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *manualTimer
	for _, t := range m.timers {
		if t.period == 0 && (best == nil || t.deadline.Before(best.deadline)) {
			best = t
		}
	}
	if best == nil {
		return time.Time{}, false
	}
	return best.deadline, true
}

// WaitPending blocks until at least n timers (periodic tasks aside) are pending or done is
// closed. It reports whether the count was reached. Tests use it to know that the cluster has parked a request on the
// clock before they advance it.
func (m *Manual) WaitPending(done <-chan struct{}, n int) bool {
	for {
		m.mu.Lock()
		if m.pendingLocked() >= n {
			m.mu.Unlock()
			return true
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

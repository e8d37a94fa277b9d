package clock

import (
	"sync"
	"time"
)

// Every runs f every d on c, the first time d after the call, until the returned Timer is
// stopped. On a clock other than Manual, Stop waits for a call under way to finish, so that
// nothing runs f once Stop has returned: f must not call Stop itself.
//
// On a Manual clock Pending, NextDeadline and WaitPending do not count the task, which is
// always scheduled and would otherwise hide the timers a test waits for (a parked fetch's
// deadline). Advance and Set run it in order with the other timers, but once for each stretch
// of ticks that no other timer falls in, at the last tick of it: an Advance of a year runs a
// one-second task a handful of times, not 31 million. Only tasks for which one late run does
// what the runs it replaces would have done may use Every.
func Every(c Clock, d time.Duration, f func()) Timer {
	if m, ok := c.(*Manual); ok {
		return m.schedule(d, f, d)
	}
	e := &every{c: c, d: d}
	e.run = func() {
		e.mu.Lock()
		if e.stopped {
			e.mu.Unlock()
			return
		}
		e.running.Add(1)
		e.mu.Unlock()
		f()
		e.running.Done()
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.stopped {
			e.next = e.c.AfterFunc(e.d, e.run)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.next = c.AfterFunc(d, e.run)
	return e
}

// every is a periodic task scheduled by Every on a clock other than Manual.
type every struct {
	c       Clock
	d       time.Duration
	run     func()
	mu      sync.Mutex
	next    Timer
	stopped bool
	running sync.WaitGroup // the call of f under way
}

// Stop ends the task, waiting for a call of f under way; it reports whether the task was
// running.
func (e *every) Stop() bool {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return false
	}
	e.stopped = true
	e.next.Stop()
	e.mu.Unlock()
	e.running.Wait()
	return true
}

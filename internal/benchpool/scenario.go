package main

import (
	"context"
	"time"
)

// scenario is one workload, run once by every client.
type scenario struct {
	name    string
	topic   string
	records int
	workers int
	work    time.Duration // what the handler takes; 0 for an empty handler
	// lock is the group's share.record.lock.duration.ms; 0 leaves the broker's default.
	lock time.Duration
	// untilAcked: the run ends once the broker has every record done with (lag 0), within
	// timeout, and the connections are tapped to count renews; otherwise it ends once every
	// record was accepted once and the acceptances were answered.
	untilAcked bool
	timeout    time.Duration
}

// workersOf returns the pool sizes scenario name runs at, each a run of every client.
func (c *config) workersOf(name string) []int {
	switch name {
	case scenarioEmpty:
		return c.workersEmpty
	case scenarioSleep:
		return []int{c.workersSleep}
	default:
		return []int{c.workersSlow}
	}
}

// scenario returns the scenario called name with c's counts and workers workers.
func (c *config) scenario(name string, workers int) scenario {
	sc := scenario{name: name, topic: topicOf(name), workers: workers}
	switch name {
	case scenarioEmpty:
		sc.records = c.recordsEmpty
	case scenarioSleep:
		sc.records, sc.work = c.recordsSleep, c.sleep
	case scenarioSlow:
		sc.records, sc.work = c.recordsSlow, c.slowHandler()
		sc.lock, sc.untilAcked, sc.timeout = c.lock, true, c.slowTimeout
	}
	return sc
}

// handle is the scenario's handler work: nothing, a sleep, or (for the slow scenario) a wait
// that ends early when ctx does (kshare ends it when the lock is lost). It counts the call, and
// the time taken when there is work, and reports whether the work was done.
func (sc scenario) handle(ctx context.Context, t *tally, deliveryCount int) bool {
	t.started(deliveryCount)
	if sc.work == 0 {
		return true
	}
	began := time.Now()
	defer func() { t.workNs.Add(int64(time.Since(began))) }()
	if !sc.untilAcked {
		time.Sleep(sc.work)
		return true
	}
	timer := time.NewTimer(sc.work)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

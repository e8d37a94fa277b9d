package main

import (
	"context"
	"sync"
	"time"
)

// clientBaseline names the pool without Kafka, the bound of any pool on the machine.
const clientBaseline = "Go pool, no Kafka"

// runBaseline hands the scenario's records, as bare offsets, to its workers over a channel
// and runs the handler on each: what the machine allows a pool of that many goroutines, with
// no consumer at all.
func runBaseline(sc scenario, parts int) (result, error) {
	r := result{scenario: sc, runner: runner{client: clientBaseline}, finished: true, brokerCPU: -1}
	t := newTally(sc.records, parts)
	var m meter
	if err := m.start(); err != nil {
		return r, err
	}
	type job struct {
		p   int32
		off int64
	}
	jobs := make(chan job, sc.workers)
	var workers sync.WaitGroup
	for range sc.workers {
		workers.Go(func() {
			for j := range jobs {
				sc.handle(context.Background(), t, 1)
				t.acceptedOne(j.p, j.off)
			}
		})
	}
	for i := range sc.records {
		jobs <- job{int32(i % parts), int64(i / parts)}
	}
	close(jobs)
	workers.Wait()
	stop, err := m.stop(&r)
	r.elapsed, r.toLast = stop.Sub(t.firstTime()), t.toLast()
	r.handlerRuns, r.handlerTime = t.runs.Load(), time.Duration(t.workNs.Load())
	r.accepted = t.accepted.Load()
	return r, err
}

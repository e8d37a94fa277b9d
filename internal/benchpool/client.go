package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

// clientRun is one client's run of one scenario.
type clientRun struct {
	sc scenario
	runner
	group      string
	seeds      []string
	partitions int
	franzPoll  int
	queue      int
	// countRequests taps the connections to count share requests, as untilAcked does.
	countRequests bool
	brokerPid     int // read the broker's CPU time from this process; 0 for none
	adm           *admin
	profile       string // CPU profile file, if any
}

// meter measures a client's run (benchkit.Meter: this process's CPU time and allocations, and
// the broker process's CPU time when BrokerPid is set) into its result.
type meter struct{ benchkit.Meter }

func (m *meter) start() error { return m.Start() }

// stop ends the span, puts what it measured in r and returns when it ended.
func (m *meter) stop(r *result) (time.Time, error) {
	s, err := m.Stop()
	r.cpu, r.mallocs, r.brokerCPU = s.CPU, s.Mallocs, s.BrokerCPU
	return s.End, err
}

// run runs the client in the scenario and checks the broker's lag at the end.
func (cr clientRun) run(ctx context.Context) (result, error) {
	r := result{scenario: cr.sc, runner: cr.runner}
	stopProfile, err := benchkit.StartCPUProfile(cr.profile)
	if err != nil {
		return r, err
	}
	defer stopProfile()
	t := newTally(cr.sc.records, cr.partitions)
	var errs ackErrs
	var taps *tapCounts
	if cr.sc.untilAcked || cr.countRequests {
		taps = newTapCounts()
	}

	// end is closed when the run is to stop: every record accepted once, or, untilAcked,
	// every record done with at the broker (or the timeout).
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	end := t.done
	var watchErr error
	var watched sync.WaitGroup
	if cr.sc.untilAcked {
		acked := make(chan struct{})
		end = acked
		watched.Go(func() { watchErr = cr.watchLag(runCtx, acked, cancel) })
	}

	m := meter{benchkit.Meter{BrokerPid: cr.brokerPid}}
	if err := m.start(); err != nil {
		return r, err
	}
	var stop time.Time
	switch cr.client {
	case clientKshare:
		stop, err = cr.runKshare(runCtx, end, t, &errs, taps, &m, &r)
	default:
		stop, err = cr.runFranz(runCtx, end, t, &errs, taps, &m, &r)
	}
	cancel()
	watched.Wait()
	if err == nil {
		err = watchErr
	}
	if err != nil {
		return r, err
	}

	select {
	case <-end:
		r.finished = true
	default:
	}
	if t.first.Load() != 0 {
		r.elapsed = stop.Sub(t.firstTime())
	}
	r.toLast = t.toLast()
	r.handlerRuns, r.handlerTime, r.redelivered = t.runs.Load(), time.Duration(t.workNs.Load()), t.redeliv.Load()
	r.accepted, r.acceptedTwice = t.accepted.Load(), t.twice.Load()
	r.ackErrors, r.firstAckErr = errs.n.Load(), errs.firstErr()
	r.taps = taps
	if n := t.bad.Load(); n > 0 {
		return r, fmt.Errorf("%d records outside the offsets produced", n)
	}
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	if r.lagLeft, err = cr.adm.lag(lctx, cr.group, cr.sc.topic, cr.partitions, cr.sc.records); err != nil {
		return r, err
	}
	return r, nil
}

// watchLag closes acked once the broker has every record of the scenario's topic done with
// for the group, calls stop when the scenario's timeout passes first, and returns then or when
// ctx ends.
func (cr clientRun) watchLag(ctx context.Context, acked chan struct{}, stop func()) error {
	deadline := time.NewTimer(cr.sc.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(lagEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			fmt.Fprintf(os.Stderr, "  %s: not every record done with after %v; stopping\n", cr.label(), cr.sc.timeout)
			stop()
			return nil
		case <-tick.C:
		}
		lag, err := cr.adm.lag(ctx, cr.group, cr.sc.topic, cr.partitions, cr.sc.records)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if lag == 0 {
			close(acked)
			return nil
		}
	}
}

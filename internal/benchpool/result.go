package main

import (
	"fmt"
	"time"

	"github.com/kshare/kshare/shareconsumer"
)

// result is what one client did in one scenario.
type result struct {
	broker   string
	scenario scenario
	runner   // the client, and kshare's acquire mode

	elapsed time.Duration // first record handed to a handler until the end of the run
	// toLast is the first record handed to a handler until the last record's acceptance was
	// recorded (its handler returned), before the client's shutdown waits for the answers; 0
	// when not every record was accepted.
	toLast time.Duration
	cpu    time.Duration // this process's CPU time from creating the client to the end
	// brokerCPU is the broker process's CPU time over the same span; -1 when not known.
	brokerCPU time.Duration
	mallocs   uint64 // heap allocations over the same span
	finished  bool   // every record accepted (and, untilAcked, the broker's lag 0)

	handlerRuns   int64 // handler calls
	handlerTime   time.Duration
	redelivered   int64 // handler calls for deliveries with a delivery count above 1
	accepted      int64 // distinct records accepted
	acceptedTwice int64 // records accepted (handler finished, acceptance sent) more than once
	ackErrors     int64 // acknowledgement results the broker or the client reported failed
	firstAckErr   string
	lagLeft       int64 // records the broker had not done with at the end

	stats *shareconsumer.ProcessStats // kshare only
	taps  *tapCounts                  // untilAcked or -count-requests only

	// runs are every run of the client (-count), this one among them, in the order they ran;
	// the tables show this one and the runs' spread.
	runs []result
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.accepted) / r.elapsed.Seconds()
}

// rateToLast is the records accepted per second of toLast: the pool's rate without the tail of
// the shutdown.
func (r result) rateToLast() float64 {
	if r.toLast <= 0 {
		return 0
	}
	return float64(r.accepted) / r.toLast.Seconds()
}

func (r result) cpuPerRecord() float64 {
	if r.accepted == 0 {
		return 0
	}
	return float64(r.cpu.Nanoseconds()) / 1e3 / float64(r.accepted)
}

// brokerCPUPerRecord is the broker's CPU µs per record accepted, as a table cell.
func (r result) brokerCPUPerRecord() string {
	if r.brokerCPU < 0 || r.accepted == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(r.brokerCPU.Nanoseconds())/1e3/float64(r.accepted))
}

func (r result) meanHandler() time.Duration {
	if r.handlerRuns == 0 {
		return 0
	}
	return r.handlerTime / time.Duration(r.handlerRuns)
}

func (r result) summary() string {
	s := fmt.Sprintf("%d records in %v (%.0f rec/s; to the last handler %v, %.0f rec/s), %.2f µs CPU/rec, %d handler runs (mean %v), %d redelivered, %d accepted twice, %d ack errors, lag %d",
		r.accepted, r.elapsed.Round(time.Millisecond), r.rate(), r.toLast.Round(time.Millisecond), r.rateToLast(), r.cpuPerRecord(), r.handlerRuns, r.meanHandler(), r.redelivered, r.acceptedTwice, r.ackErrors, r.lagLeft)
	if !r.finished {
		s += " (did not finish)"
	}
	if r.firstAckErr != "" {
		s += "; first ack error: " + r.firstAckErr
	}
	if r.stats != nil {
		s += "; stats: " + r.stats.String()
	}
	if r.taps != nil {
		s += "; " + r.taps.String()
	}
	return s
}

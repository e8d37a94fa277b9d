package shareconsumer

import (
	"fmt"
	"time"
)

// ProcessOpt configures one Process call. As with Opt, options apply in order and Process
// checks them all in one place before it starts.
type ProcessOpt interface{ applyProcess(*processCfg) }

type processOpt func(*processCfg)

func (o processOpt) applyProcess(c *processCfg) { o(c) }

// Defaults of Process.
const (
	defaultWorkers       = 10
	defaultQueue         = 1000
	defaultMaxHold       = 60 * time.Minute
	defaultShutdownGrace = 30 * time.Second
	// shutdownCommitTimeout bounds how long Process waits, at its end, for the brokers to answer
	// the last acknowledgements.
	shutdownCommitTimeout = 30 * time.Second
	// ackFlushInterval bounds how long a handler's acknowledgement waits for a ShareFetch to
	// carry it before it leaves in a ShareAcknowledge of its own.
	ackFlushInterval = 100 * time.Millisecond
)

type processCfg struct {
	workers      int
	queue        int
	queueSet     bool
	renewMargin  time.Duration
	maxHold      time.Duration
	grace        time.Duration
	noRenew      bool
	onPanic      func(r *Record, value any, stack []byte)
	onRecordDone func(RecordOutcome)
	// deadLetterTopic is DeadLetterTopic's, or the consumer's when Process has none (dlq.go).
	deadLetterTopic string
	deadLetterSet   bool
	deadLetterOff   bool // NoDeadLetterTopic
}

func defaultProcessCfg() processCfg {
	return processCfg{workers: defaultWorkers, maxHold: defaultMaxHold, grace: defaultShutdownGrace}
}

// Workers sets how many handlers run at once (default 10, at least 1).
func Workers(n int) ProcessOpt { return processOpt(func(c *processCfg) { c.workers = n }) }

// QueueSize sets the most acquired records that may wait for a free worker (default 1000; at
// least 0). Within it, Process keeps about a second of its handlers' work queued, and at least
// as many records as there are workers: fast handlers get ShareFetches of up to QueueSize
// records rather than a round trip per few, and slow ones do not keep records from the group's
// other members for minutes. Process never holds more than Workers plus QueueSize acquired
// records, counting those in ShareFetches on their way. Queued records are renewed like running
// ones where leaders take RENEW; on a Kafka 4.1 leader a queued record's lock runs while it
// waits, and a record whose lock ran out is dropped (it is delivered again) rather than handed
// out. Leaders with ShareFetch v2 (Kafka 4.2) are asked for exactly the records that fit
// (record-limit acquisition); a Kafka 4.1 leader acquires whole record batches, and the surplus
// waits, locked, until a worker is free.
func QueueSize(n int) ProcessOpt {
	return processOpt(func(c *processCfg) { c.queue, c.queueSet = n, true })
}

// RenewMargin sets how long before a record's lock runs out its renew is sent (at most nine
// tenths of the lock duration). By default Process derives it from the lock duration and the
// renew round trips it measures: four round trips plus the time a renew may queue behind a
// ShareFetch, at least a fifth and at most half of the lock duration.
func RenewMargin(d time.Duration) ProcessOpt {
	return processOpt(func(c *processCfg) { c.renewMargin = d })
}

// MaxHold sets the longest Process keeps a record's lock alive (default 60 minutes, as Pub/Sub's
// MaxExtension). Past it the lock is left to run out, the handler's context is cancelled with a
// *errors.LockLostError (errors.LockMaxHoldReached), and nothing is acknowledged for the record.
func MaxHold(d time.Duration) ProcessOpt { return processOpt(func(c *processCfg) { c.maxHold = d }) }

// ShutdownGrace sets how long, once Process's context ends, running handlers may take to finish
// before their contexts are cancelled with errors.ErrProcessStopped (default 30 seconds; 0
// cancels them at once).
func ShutdownGrace(d time.Duration) ProcessOpt {
	return processOpt(func(c *processCfg) { c.grace = d })
}

// NoRenewal turns automatic lock renewal off, as on a leader without RENEW: each handler's
// context then carries its record's lock deadline. It exists to show what renewal saves; a
// handler that outlives its lock has its record delivered again, maybe elsewhere.
func NoRenewal() ProcessOpt { return processOpt(func(c *processCfg) { c.noRenew = true }) }

// OnPanic sets a function called, on the worker's goroutine, when a handler panicked: with the
// record (released), the value the panic was called with and the goroutine's stack. The panic
// is also counted in the stats and logged through the kgo logger.
func OnPanic(fn func(r *Record, value any, stack []byte)) ProcessOpt {
	return processOpt(func(c *processCfg) { c.onPanic = fn })
}

// OnRecordDone sets a function called once for every record that left Process: handled,
// lost, or released at shutdown; a hook to feed metrics or traces. It runs on the goroutine of
// the worker that handled the record or took it out of the queue (a record whose lock was lost
// while it waited is reported when a worker takes it), and for a record shutdown took out of
// the queue, released or lost, on Process's own goroutine; calls may overlap. It must not block
// for long: the worker, or shutdown, waits for it.
func OnRecordDone(fn func(RecordOutcome)) ProcessOpt {
	return processOpt(func(c *processCfg) { c.onRecordDone = fn })
}

func (c *processCfg) validate() error {
	if c.workers < 1 {
		return fmt.Errorf("shareconsumer: Workers(%d): must be at least 1", c.workers)
	}
	if !c.queueSet {
		c.queue = defaultQueue
	}
	if c.queue < 0 {
		return fmt.Errorf("shareconsumer: QueueSize(%d): must be at least 0", c.queue)
	}
	if c.renewMargin < 0 {
		return fmt.Errorf("shareconsumer: RenewMargin(%v): must be at least 0", c.renewMargin)
	}
	if c.maxHold <= 0 {
		return fmt.Errorf("shareconsumer: MaxHold(%v): must be above 0", c.maxHold)
	}
	if c.grace < 0 {
		return fmt.Errorf("shareconsumer: ShutdownGrace(%v): must be at least 0", c.grace)
	}
	if err := validateDeadLetterTopic(c.deadLetterSet, c.deadLetterTopic); err != nil {
		return err
	}
	return nil
}

package shareconsumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Handler processes one record for Process. Its answer is the record's acknowledgement: nil
// accepts it; an error releases it (it is delivered again, maybe to another consumer); an error
// for which errors.Is(err, errors.ErrReject) holds (see errors.Reject) rejects it. A panic is
// recovered and releases it. With DeadLetterTopic, a failure on the record's last delivery, and
// errors.DeadLetter(err) on any, copy it to the dead-letter topic and accept it instead.
//
// ctx ends when the record stops being the handler's: its cause (context.Cause) is a
// *errors.LockLostError when the acquisition lock was lost, errors.ErrProcessStopped when
// Process shut down and the grace period passed. Whatever the handler returns after its lock was
// lost, nothing is acknowledged. ctx carries the values of Process's context, not its end.
// Against a leader without RENEW, and with NoRenewal, ctx has the record's lock deadline.
//
// The handler owns r while it runs; Process does not touch r meanwhile. r.LockDeadline is the
// deadline of the delivery, not of later renews.
type Handler func(ctx context.Context, r *Record) error

// Process runs the consumer's poll loop with a pool of workers, each calling h for one record at
// a time, and acknowledges every record itself from h's answer, whichever acknowledgement mode
// the consumer was created with. While h works on a record, Process renews the record's
// acquisition lock (RENEW, KIP-1222) before it runs out, batching the renews due at one
// leader in one ShareAcknowledge, so a handler may take longer than the lock duration without
// its record being delivered again. It acquires no more records than the workers and the
// queue can hold (QueueSize).
//
// Before it starts, Process finishes with the records the last Poll returned, as Poll would:
// implicit mode accepts the unacknowledged ones; explicit mode fails with
// ErrUnacknowledgedRecords, doing nothing, while any is unacknowledged. Renewed records waiting
// for a Poll are released.
//
// When ctx ends, Process shuts down: it acquires nothing more, releases the records waiting for
// a worker at once, lets running handlers finish within ShutdownGrace, then cancels their
// contexts (cause errors.ErrProcessStopped) and releases what they leave, waits for them,
// releases the records acquired and not handed out, sends every acknowledgement and waits up to
// 30 seconds for the answers, and returns nil. No goroutine of Process outlives it. A handler
// that ignores its context's end holds Process up until it returns.
//
// Process returns early with the consumer's *errors.FatalError once the coordinator refused the
// member for good (GROUP_AUTHORIZATION_FAILED among others), with an *errors.AuthenticationError
// when a broker refused the consumer's credentials (call Process again to try anew), with
// errors.ErrRecordLimitUnsupported, ErrNotSubscribed when the consumer is (or becomes) unsubscribed, ErrClosed
// when Close was called (Close waits for Process to shut down first, so call it from a
// goroutine other than Process's handlers and hooks, or end Process's context instead; when
// Close's context ends first, running handlers are cancelled at once with
// errors.ErrProcessStopped, and Close still waits for them to return), and at once, doing
// nothing, with ErrProcessRunning when Process already runs, ErrConcurrentPoll while Poll runs,
// or an error for a nil handler or a bad option. Errors Poll would return once (a
// *errors.PartitionError, such as a topic the consumer may not read, a *errors.BrokerError, a
// *errors.CorruptBatchError, whose records are rejected) are logged through the kgo logger and
// Process goes on with what it can read; Status says which topics it cannot. Poll fails with
// ErrProcessRunning while Process runs; Acknowledge cannot reach the records Process holds;
// Wakeup has no effect on it.
func (c *Consumer) Process(ctx context.Context, h Handler, opts ...ProcessOpt) error {
	if err := c.check(); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("shareconsumer: Process: the handler is nil")
	}
	cfg := defaultProcessCfg()
	for _, o := range opts {
		if o != nil {
			o.applyProcess(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if !cfg.deadLetterSet && !cfg.deadLetterOff {
		cfg.deadLetterTopic = c.cfg.deadLetterTopic
	}
	if err := deadLetterLoop(cfg.deadLetterTopic, c.Subscription()); err != nil {
		return err
	}
	if !c.poll.processing.CompareAndSwap(false, true) {
		return errors.ErrProcessRunning
	}
	defer c.poll.processing.Store(false)
	if !c.poll.polling.CompareAndSwap(false, true) {
		return errors.ErrConcurrentPoll
	}
	defer c.poll.polling.Store(false)
	defer c.pollEnded()

	c.runCallbacks()
	p := newPool(c, cfg, h, ctx)
	if err := c.startProcess(p); err != nil {
		p.cancelIntake()
		return err
	}
	err := p.run()
	c.runCallbacks()
	return err
}

// ProcessStats returns what Process did on this consumer so far, over every Process call, and
// how many records it holds now. It is safe from any goroutine.
func (c *Consumer) ProcessStats() ProcessStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &c.ledger.lease
	s := c.process.counts.snapshot(int(l.held.Load()), l.renewRequests.Load(), l.renewed.Load(), l.renewFailures.Load())
	if p := c.process.pool; p != nil {
		for _, w := range p.ws {
			s.add(w.stats.snapshot(0, 0, 0, 0))
		}
	}
	return s
}

// processState is what a consumer keeps of Process: the running one, and what every Process
// did.
type processState struct {
	pool   *pool // nil when none runs; Consumer.mu guards it
	counts processCounters
}

// pool is one Process call: its workers, the queue they take records from, and the goroutine
// that keeps the records' locks (process_lease.go). It reaches the rest of the consumer
// through a few calls (docs/internals.md lists them): startProcess, stopIntake and endProcess,
// the records admission lets it acquire (take), and the ledger's begin, finish, release and
// publish for each record or batch.
type pool struct {
	c     *Consumer
	cfg   processCfg
	h     Handler
	stats *processCounters
	// base is the parent of every handler's context: Process's values, not its end.
	base         context.Context
	intakeCtx    context.Context
	cancelIntake context.CancelFunc
	shut         chan struct{} // closed when shutdown is complete, before the callbacks stop
	hurry        chan struct{} // closed by a Close whose context ended: the grace period ends now
	hurryOnce    sync.Once

	// jobs holds the records waiting for a worker, in runs a worker handles one after the
	// other (of one record, unless handlers are fast: runOf).
	jobs     chan []task
	stopping atomic.Bool
	workers  sync.WaitGroup
	ws       []*worker
	// handlerNs is a moving average of the handlers' time, as workers publish it; fast says it
	// is under fastHandler.
	handlerNs atomic.Int64
	fast      atomic.Bool
	// handlersStopped: the grace period is over, running handlers are being stopped; a worker
	// that starts a record after that stops its handler at once.
	handlersStopped atomic.Bool
	// overflow holds records beyond the queue's room (a Kafka 4.1 leader acquires whole
	// batches), which the feeder moves into the queue as it empties.
	overflowMu sync.Mutex
	overflow   [][]task
	feed       chan struct{}
	feederDone chan struct{}

	leaseKick chan struct{}
	leaseStop chan struct{}
	leaseDone chan struct{}
	// flushAt is when acknowledgements that no ShareFetch carried yet are flushed (the lease's
	// nanoseconds; 0 when none wait).
	flushAt atomic.Int64
	// warned: the leaders without RENEW a warning was logged for (Consumer.mu).
	warned map[int32]bool
}

func newPool(c *Consumer, cfg processCfg, h Handler, ctx context.Context) *pool {
	capacity := cfg.workers + cfg.queue
	p := &pool{
		c: c, cfg: cfg, h: h, stats: &c.process.counts,
		base:       context.WithoutCancel(ctx),
		shut:       make(chan struct{}),
		hurry:      make(chan struct{}),
		jobs:       make(chan []task, capacity),
		feed:       make(chan struct{}, 1),
		feederDone: make(chan struct{}),
		leaseKick:  make(chan struct{}, 1),
		leaseStop:  make(chan struct{}),
		leaseDone:  make(chan struct{}),
		warned:     make(map[int32]bool),
	}
	p.intakeCtx, p.cancelIntake = context.WithCancel(ctx)
	p.ws = make([]*worker, cfg.workers)
	for i := range p.ws {
		p.ws[i] = &worker{p: p}
	}
	return p
}

// runningPool returns the running Process, nil when none runs.
func (c *Consumer) runningPool() *pool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.process.pool
}

// closeProcess shuts the running Process down for Close, as when its context ends, waiting
// with wait; when Close cannot wait (wait reports false), running handlers are stopped at once,
// and Close waits for them to return, so that no goroutine of Process outlives it.
func (c *Consumer) closeProcess(wait func(<-chan struct{}) bool) {
	p := c.runningPool()
	if p == nil {
		return
	}
	p.cancelIntake()
	if !wait(p.shut) {
		p.hurryOnce.Do(func() { close(p.hurry) })
		<-p.shut
	}
}

// startProcess finishes with the last Poll's records, as Poll would, and makes p the
// consumer's pool: admission sizes fetches for it, the ledger's lease keeps its locks, and
// fetched records go to it.
func (c *Consumer) startProcess(p *pool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.life.stopped || c.life.closed.Load():
		return errors.ErrClosed
	case c.member.fatal != nil:
		return c.member.fatal
	case len(c.member.subscription) == 0:
		return errors.ErrNotSubscribed
	case c.cfg.explicit && c.ledger.unacked() > 0:
		return errors.ErrUnacknowledgedRecords
	}
	c.rejoinIfLeftLocked()
	if !c.cfg.explicit {
		c.ledger.acceptAll()
	}
	c.ledger.moveAcked(&c.sessions)
	now := time.Now()
	// Records a Poll's fetch left behind, and renewed ones, would go past the pool's bound:
	// they go back.
	c.ledger.giveBack(&c.sessions, now)
	c.ledger.mu.Lock()
	l := &c.ledger.lease
	l.fixedMargin, l.maxHold, l.fetchWait = p.cfg.renewMargin, p.cfg.maxHold, min(c.cfg.fetchMaxWait, ackFlushInterval)
	c.ledger.mu.Unlock()
	c.process.pool, c.taker = p, p
	c.admit.startPool(p.cfg.workers, p.cfg.queue, now)
	c.admit.waiting = true
	c.sessions.flushAll(&c.acks, time.Now())
	c.kickLocked()
	return nil
}

// stopIntake stops fetching for p: admission allows no more ShareFetches for it, and the
// records of those still on their way go to the ledger's buffer, to be released by endProcess.
func (c *Consumer) stopIntake(p *pool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.admit.waiting = false
	c.admit.endPool()
	c.taker = pollTaker{c}
}

// endProcess, once p's workers and lease have stopped, releases the records acquired and not
// handed out and sends every acknowledgement, waiting a while for the answers.
func (c *Consumer) endProcess(p *pool) {
	c.mu.Lock()
	for _, w := range p.ws {
		c.process.counts.fold(&w.stats)
	}
	c.process.pool = nil
	c.ledger.giveBack(&c.sessions, time.Now())
	c.mu.Unlock()
	if c.life.closed.Load() {
		c.kick() // Close sends them, on the requests that close the share sessions
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.base), shutdownCommitTimeout)
	defer cancel()
	c.commitSync(ctx)
}

// take hands the records of one ShareFetch answer to the pool: corrupt batches are rejected, as
// Poll's default is, and logged; records enter the ledger and the queue. It never blocks.
// Consumer.mu is held.
func (p *pool) take(s *session, parts []takenPart, sent time.Time, lock lockReport, now time.Time) {
	c := p.c
	var pps []poolPart
	n := 0
	for _, tp := range parts {
		for _, ch := range tp.chunks {
			if ch.corrupt != nil {
				for _, o := range ch.corrupt.Offsets {
					s.addAck(tp.part, o, acktype.Reject)
				}
				c.log(kgo.LogLevelWarn, "Process rejects a record batch it could not decode", "err", ch.corrupt)
				continue
			}
			pps = append(pps, poolPart{tp.part, ch.recs})
			n += len(ch.recs)
		}
	}
	if n == 0 {
		return
	}
	c.locks.show(lock)
	v, known := c.versions.Get(s.node)
	renewable := known && v.SupportsRenew() && !p.cfg.noRenew
	if !renewable && !p.cfg.noRenew && !p.warned[s.node] {
		p.warned[s.node] = true
		c.log(kgo.LogLevelWarn, "the partition leader does not support RENEW (Kafka 4.1: ShareAcknowledge v1); Process cannot renew locks there, and gives each handler its record's lock deadline", "broker", s.node)
	}
	tasks := make([]task, n)
	entries := c.ledger.acquire(s.node, pps, sent, time.Duration(lock.ms)*time.Millisecond, renewable, now, func(es []entry) {
		for i := range es {
			tasks[i] = task{e: &es[i], p: p}
			es[i].holder = &tasks[i]
		}
	})
	for i := range entries {
		if entries[i].rec.DeliveryCount > 1 {
			p.stats.redeliveries.Add(1)
		}
	}
	p.stats.delivered.Add(uint64(n))
	p.deliver(tasks)
	p.kickLease()
}

// deliver queues tasks for the workers, in runs, the overflow feeder taking what the queue has
// no room for.
func (p *pool) deliver(tasks []task) {
	k := p.runOf(len(tasks))
	p.overflowMu.Lock()
	defer p.overflowMu.Unlock()
	for i := 0; i < len(tasks); i += k {
		run := tasks[i:min(i+k, len(tasks))]
		if len(p.overflow) == 0 {
			select {
			case p.jobs <- run:
				continue
			default:
			}
		}
		p.overflow = append(p.overflow, run)
	}
	if len(p.overflow) > 0 {
		select {
		case p.feed <- struct{}{}:
		default:
		}
	}
}

// feeder moves overflowed records into the queue as it empties, until shutdown.
func (p *pool) feeder() {
	defer close(p.feederDone)
	for {
		select {
		case <-p.feed:
		case <-p.intakeCtx.Done():
			return
		}
		for {
			p.overflowMu.Lock()
			if len(p.overflow) == 0 {
				p.overflowMu.Unlock()
				break
			}
			t := p.overflow[0]
			p.overflowMu.Unlock()
			select {
			case p.jobs <- t:
			case <-p.intakeCtx.Done():
				return
			}
			p.overflowMu.Lock()
			p.overflow[0] = nil
			p.overflow = p.overflow[1:]
			p.overflowMu.Unlock()
		}
	}
}

// isAuthErr reports whether err is an *errors.AuthenticationError: Process returns it rather
// than running on with credentials the cluster refuses.
func isAuthErr(err error) bool {
	var ae *errors.AuthenticationError
	return errors.As(err, &ae)
}

func (p *pool) run() error {
	p.workers.Add(p.cfg.workers)
	for _, w := range p.ws {
		go w.run()
	}
	go p.leaseLoop()
	go p.feeder()
	callbacksDone := make(chan struct{})
	go p.callbackLoop(callbacksDone)
	p.c.kick()
	err := p.watch()
	p.shutdown()
	close(p.shut)
	<-callbacksDone
	return err
}

// watch waits until Process's context ends or the consumer can serve it no more, and returns
// what Process returns. Errors Poll would return once are logged, and Process goes on, but for
// ErrRecordLimitUnsupported and an *errors.AuthenticationError, which it returns.
func (p *pool) watch() error {
	c := p.c
	for {
		c.mu.Lock()
		var err error
		switch {
		case c.life.closed.Load():
			err = errors.ErrClosed
		case c.member.fatal != nil:
			err = c.member.fatal
		case len(c.member.subscription) == 0:
			err = errors.ErrNotSubscribed
		}
		if err == nil {
			err = c.nextPollErrLocked()
			if err != nil && !errors.Is(err, errors.ErrRecordLimitUnsupported) && !isAuthErr(err) {
				c.log(kgo.LogLevelWarn, "Process goes on after an error Poll would have returned", "err", err)
				err = nil
				c.mu.Unlock()
				continue
			}
		}
		c.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-c.poll.notify:
		case <-p.intakeCtx.Done():
			if c.life.closed.Load() {
				return errors.ErrClosed
			}
			return nil
		case <-c.life.closing:
			return errors.ErrClosed
		}
	}
}

// callbackLoop gives acknowledgement outcomes to the OnAcknowledgementCommit callback while
// Process runs, every ackFlushInterval, on a goroutine of its own so that a slow callback holds
// up neither intake nor renewal.
func (p *pool) callbackLoop(done chan<- struct{}) {
	defer close(done)
	if p.c.cfg.onCommit == nil {
		return
	}
	t := time.NewTicker(ackFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.c.runCallbacks()
		case <-p.shut:
			return
		}
	}
}

// shutdown ends Process as its doc says.
func (p *pool) shutdown() {
	p.cancelIntake()
	p.c.stopIntake(p)
	p.stopping.Store(true)
	<-p.feederDone
	p.overflowMu.Lock()
	over := p.overflow
	p.overflow = nil
	p.overflowMu.Unlock()
	for _, run := range over {
		p.releaseRun(run)
	}
	close(p.jobs)
	for run := range p.jobs { // the queued records go back at once, beside the workers
		p.releaseRun(run)
	}
	p.c.flushAll()
	workersDone := make(chan struct{})
	go func() {
		p.workers.Wait()
		close(workersDone)
	}()
	grace := time.NewTimer(p.cfg.grace)
	select {
	case <-workersDone:
	case <-grace.C:
		p.stopHandlers()
		<-workersDone
	case <-p.hurry:
		p.stopHandlers()
		<-workersDone
	}
	grace.Stop()
	close(p.leaseStop)
	<-p.leaseDone
	p.c.endProcess(p)
	p.c.fireLockLost() // what was lost after the lease loop's last round
}

// stopHandlers cancels the contexts of the running handlers with ErrProcessStopped; what they
// leave is released.
func (p *pool) stopHandlers() {
	p.handlersStopped.Store(true)
	p.c.ledger.eachRunning(func(e *entry) {
		if t, ok := e.holder.(*task); ok {
			t.stop()
		}
	})
}

// flushAll sends every waiting acknowledgement in a ShareAcknowledge per leader.
func (c *Consumer) flushAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions.flushAll(&c.acks, time.Now())
	c.kickLocked()
}

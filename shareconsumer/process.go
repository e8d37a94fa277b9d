package shareconsumer

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Handler processes one record for Process. Its answer is the record's acknowledgement: nil
// accepts it; an error releases it (it is delivered again, maybe to another consumer); an error
// for which errors.Is(err, errors.ErrReject) holds (see errors.Reject) rejects it. A panic is
// recovered and releases it.
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
// member for good, ErrNotSubscribed when the consumer is (or becomes) unsubscribed, ErrClosed
// when Close was called (Close waits for Process to shut down first, so call it from a
// goroutine other than Process's handlers and hooks, or end Process's context instead; when
// Close's context ends first, running handlers are cancelled at once with
// errors.ErrProcessStopped), and at once, doing
// nothing, with ErrProcessRunning when Process already runs, ErrConcurrentPoll while Poll runs,
// or an error for a nil handler or a bad option. Errors Poll would return once (a
// *errors.PartitionError, a *errors.BrokerError, a *errors.CorruptBatchError, whose records are
// rejected) are logged through the kgo logger and Process goes on. Poll fails with
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
	if !c.processing.CompareAndSwap(false, true) {
		return errors.ErrProcessRunning
	}
	defer c.processing.Store(false)
	if !c.polling.CompareAndSwap(false, true) {
		return errors.ErrConcurrentPoll
	}
	defer c.polling.Store(false)
	defer c.pollEnded()

	c.runCallbacks()
	p := newPool(c, cfg, h, ctx)
	if err := c.startProcess(p); err != nil {
		p.cancelIntake()
		return err
	}
	defer close(p.done)
	err := p.run()
	c.runCallbacks()
	return err
}

// ProcessStats returns what Process did on this consumer so far, over every Process call, and
// how many records it holds now. It is safe from any goroutine.
func (c *Consumer) ProcessStats() ProcessStats {
	c.mu.Lock()
	p := c.pool
	c.mu.Unlock()
	held := 0
	if p != nil {
		held = int(p.held.Load())
	}
	return c.procStats.snapshot(held)
}

// pool is the state of one Process call: the ledger of held records, the lease that renews
// them, the workers and the queue they take records from.
type pool struct {
	c     *Consumer
	cfg   processCfg
	h     Handler
	stats *processCounters
	admit admission
	// base is the parent of every handler's context: Process's values, not its end.
	base         context.Context
	intakeCtx    context.Context
	cancelIntake context.CancelFunc
	done         chan struct{} // closed when Process returns
	shut         chan struct{} // closed when shutdown is complete, before the callbacks stop
	hurry        chan struct{} // closed by a Close whose context ended: the grace period ends now
	hurryOnce    sync.Once

	mu       sync.Mutex
	ledger   ledger
	lease    lease
	flushDue time.Time // when acknowledgements not carried by a ShareFetch yet are flushed
	warned   map[int32]bool

	held      atomic.Int64     // ledger.len(), read without mu
	stopping  atomic.Bool      // shutting down: started records are the last
	jobs      chan *heldRecord // records waiting for a worker
	freed     chan struct{}    // a record left the ledger
	leaseKick chan struct{}
	quit      chan struct{} // workers take no more records
	leaseStop chan struct{}
	leaseDone chan struct{}
	workers   sync.WaitGroup
	hooks     sync.WaitGroup // OnRecordDone calls for records lost while waiting for a worker
}

func newPool(c *Consumer, cfg processCfg, h Handler, ctx context.Context) *pool {
	capacity := cfg.workers + cfg.queue
	p := &pool{
		c: c, cfg: cfg, h: h, stats: &c.procStats,
		admit:     admission{capacity: capacity},
		base:      context.WithoutCancel(ctx),
		done:      make(chan struct{}),
		shut:      make(chan struct{}),
		hurry:     make(chan struct{}),
		ledger:    newLedger(),
		warned:    make(map[int32]bool),
		jobs:      make(chan *heldRecord, capacity),
		freed:     make(chan struct{}, 1),
		leaseKick: make(chan struct{}, 1),
		quit:      make(chan struct{}),
		leaseStop: make(chan struct{}),
		leaseDone: make(chan struct{}),
	}
	p.intakeCtx, p.cancelIntake = context.WithCancel(ctx)
	p.lease = lease{fixedMargin: cfg.renewMargin, maxHold: cfg.maxHold, fetchWait: c.cfg.fetchMaxWait}
	// The lease's margin caps the fetch wait at a quarter of the lock, as fetchWait does.
	return p
}

// fetchWait is the longest a ShareFetch of Process may wait at a broker: a renew queued behind it
// waits as long, so it is kept to a quarter of the lock duration (once known).
func (p *pool) fetchWait(lock time.Duration) time.Duration {
	w := p.c.cfg.fetchMaxWait
	if lock > 0 {
		w = min(w, lock/4)
	}
	return w
}

func (p *pool) run() error {
	p.workers.Add(p.cfg.workers)
	for range p.cfg.workers {
		go p.worker()
	}
	go p.leaseLoop()
	callbacksDone := make(chan struct{})
	go p.callbackLoop(callbacksDone)
	err := p.intake()
	p.shutdown()
	close(p.shut)
	<-callbacksDone
	return err
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

// intake acquires records while workers and the queue have room, until the intake context ends.
func (p *pool) intake() error {
	ctx := p.intakeCtx
	for {
		free := p.waitFree(ctx)
		if free == 0 {
			return p.endErr(nil)
		}
		recs, err := p.c.acquire(ctx, p, free)
		p.admitRecords(recs)
		if err == nil {
			continue
		}
		var fatal *errors.FatalError
		switch {
		case ctx.Err() != nil:
			return p.endErr(nil)
		case errors.As(err, &fatal), errors.Is(err, errors.ErrClosed), errors.Is(err, errors.ErrNotSubscribed),
			errors.Is(err, errors.ErrRecordLimitUnsupported):
			return err
		}
		p.c.log(kgo.LogLevelWarn, "Process goes on after an error Poll would have returned", "err", err)
	}
}

// endErr is what Process returns when its intake stopped: ErrClosed when Close stopped it.
func (p *pool) endErr(err error) error {
	if p.c.closed.Load() {
		return errors.ErrClosed
	}
	return err
}

// waitFree waits until the ledger has room and returns how much; 0 when ctx ended.
func (p *pool) waitFree(ctx context.Context) int {
	for {
		if ctx.Err() != nil {
			return 0
		}
		if free := p.admit.free(int(p.held.Load()), 0, 0); free > 0 {
			return free
		}
		select {
		case <-p.freed:
		case <-ctx.Done():
			return 0
		}
	}
}

// admitRecords takes acquired records into the ledger and hands them to the workers.
func (p *pool) admitRecords(recs []*heldRecord) {
	if len(recs) == 0 {
		return
	}
	var warn []int32
	p.mu.Lock()
	for _, h := range recs {
		if old := p.ledger.add(h); old != nil {
			// Delivered again while the earlier delivery was still held: its lock was lost.
			p.loseLocked(old, errors.LockDeadlinePassed, nil)
		}
		if !h.renewable && !p.cfg.noRenew && !p.warned[h.node] {
			p.warned[h.node] = true
			warn = append(warn, h.node)
		}
		p.stats.delivered.Add(1)
		if h.rec.DeliveryCount > 1 {
			p.stats.redeliveries.Add(1)
		}
	}
	p.held.Store(int64(p.ledger.len()))
	p.mu.Unlock()
	for _, node := range warn {
		p.c.log(kgo.LogLevelWarn, "the partition leader does not support RENEW (Kafka 4.1: ShareAcknowledge v1); Process cannot renew locks there, and gives each handler its record's lock deadline", "broker", node)
	}
	p.kickLease()
	for i, h := range recs {
		select {
		case p.jobs <- h:
		case <-p.intakeCtx.Done():
			// Shutting down while the queue is full of records lost meanwhile: what is
			// left goes back.
			for _, h := range recs[i:] {
				p.mu.Lock()
				queued := p.ledger.holds(h) && h.lost == nil
				if queued {
					p.removeLocked(h)
				}
				p.mu.Unlock()
				if queued {
					p.release(h)
				}
			}
			return
		}
	}
}

func (p *pool) kickLease() {
	select {
	case p.leaseKick <- struct{}{}:
	default:
	}
}

func (p *pool) signalFreed() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

func (p *pool) worker() {
	defer p.workers.Done()
	for {
		select {
		case <-p.quit:
			return
		case h := <-p.jobs:
			if ctx, ok := p.start(h); ok {
				p.handle(ctx, h)
			}
		}
	}
}

// start gives h to the calling worker and makes its context, unless h is no longer held (its
// lock was lost while it waited) or Process is shutting down (h is released).
func (p *pool) start(h *heldRecord) (context.Context, bool) {
	p.mu.Lock()
	if !p.ledger.holds(h) || h.lost != nil {
		p.mu.Unlock()
		return nil, false
	}
	if !h.deadline.IsZero() && h.renewSent.IsZero() && !time.Now().Before(h.deadline) {
		// The lock ran out while h waited, and the lease loop has not seen it yet: the broker
		// may give h to another member, so no handler works on it.
		p.loseLocked(h, errors.LockDeadlinePassed, nil)
		p.mu.Unlock()
		return nil, false
	}
	if p.stopping.Load() {
		p.removeLocked(h)
		p.mu.Unlock()
		p.release(h)
		return nil, false
	}
	ctx, cancel := context.WithCancelCause(p.base)
	if !h.renewable && !h.deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, h.deadline, &errors.LockLostError{Topic: h.tp.Topic, Partition: h.tp.Partition, Offset: h.rec.Offset, Reason: errors.LockDeadlinePassed})
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	h.started, h.cancel = true, cancel
	p.mu.Unlock()
	return ctx, true
}

// release releases h, which left the ledger without reaching a handler.
func (p *pool) release(h *heldRecord) {
	p.c.ackHeld(h, acktype.Release)
	p.stats.released.Add(1)
	p.signalFreed()
}

// handle runs the handler on h and acknowledges its answer.
func (p *pool) handle(ctx context.Context, h *heldRecord) {
	began := time.Now()
	err := p.call(ctx, h)
	took := time.Since(began)
	p.stats.observeHandler(took)

	p.mu.Lock()
	if h.lost == nil && !h.deadline.IsZero() && h.renewSent.IsZero() && !time.Now().Before(h.deadline) {
		p.loseLocked(h, errors.LockDeadlinePassed, nil)
	}
	lost, stopped, renews := h.lost, h.stopped, h.renews
	out := RecordOutcome{Record: h.rec, Err: err, HandlerTime: took, Renews: renews}
	armFlush := false
	if lost != nil {
		out.Err = lost
	} else {
		// No renew may follow its acknowledgement: the broker would refuse it, and with it
		// the other acknowledgements of the partition in the same request.
		h.answered = true
		out.Ack = ackFor(err)
		if stopped {
			out.Ack = acktype.Release
		}
		if p.flushDue.IsZero() {
			p.flushDue = time.Now().Add(ackFlushInterval)
			armFlush = true
		}
	}
	p.mu.Unlock()
	if out.Ack != 0 {
		// Acknowledged before it leaves the ledger, so that admission counts it all along.
		if p.c.ackHeld(h, out.Ack) {
			p.stats.countAck(out.Ack)
		} else {
			p.mu.Lock()
			out.Ack, out.Err = 0, h.lost
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	p.removeLocked(h)
	p.mu.Unlock()
	h.cancel(nil)
	if armFlush {
		p.kickLease() // a record leaving changes no renew time; a flush to arm does
	}
	p.signalFreed()
	if p.cfg.onRecordDone != nil {
		p.cfg.onRecordDone(out)
	}
}

// call runs the handler, turning a panic into a *errors.PanicError.
func (p *pool) call(ctx context.Context, h *heldRecord) (err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			err = &errors.PanicError{Value: v, Stack: stack}
			p.stats.panics.Add(1)
			p.c.log(kgo.LogLevelError, "Process handler panicked; the record is released", "topic", h.tp.Topic, "partition", h.tp.Partition, "offset", h.rec.Offset, "panic", v, "stack", string(stack))
			if p.cfg.onPanic != nil {
				p.cfg.onPanic(h.rec, v, stack)
			}
		}
	}()
	return p.h(ctx, h.rec)
}

// ackFor is the acknowledgement of a handler's answer.
func ackFor(err error) acktype.Type {
	switch {
	case err == nil:
		return acktype.Accept
	case errors.Is(err, errors.ErrReject):
		return acktype.Reject
	}
	return acktype.Release
}

func (p *pool) removeLocked(h *heldRecord) {
	if p.ledger.remove(h) {
		p.held.Store(int64(p.ledger.len()))
	}
}

// loseLocked marks h's lock lost: its handler's context is cancelled with the reason, a record
// still waiting for a worker leaves the ledger, and nothing will be acknowledged for it.
func (p *pool) loseLocked(h *heldRecord, reason errors.LockLostReason, err error) {
	if h.lost != nil {
		return
	}
	h.lost = &errors.LockLostError{Topic: h.tp.Topic, Partition: h.tp.Partition, Offset: h.rec.Offset, Reason: reason, Err: err}
	p.stats.locksLost[reason].Add(1)
	if h.started {
		h.cancel(h.lost)
		return
	}
	p.removeLocked(h)
	p.signalFreed()
	if p.cfg.onRecordDone != nil {
		// Reported from a goroutine of its own: the hook must not run under the pool's lock.
		out := RecordOutcome{Record: h.rec, Err: h.lost}
		p.hooks.Add(1)
		go func() {
			defer p.hooks.Done()
			p.cfg.onRecordDone(out)
		}()
	}
}

// unanswered returns the records of hs whose final acknowledgement is not recorded yet. The
// consumer calls it under its lock.
func (p *pool) unanswered(hs []*heldRecord) []*heldRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := hs[:0]
	for _, h := range hs {
		if !h.answered && h.lost == nil {
			keep = append(keep, h)
		}
	}
	return keep
}

// loseWhere marks the locks of the held records match selects lost. The consumer calls it,
// under its lock, when a leader's share session was reset or a partition's leader moved.
func (p *pool) loseWhere(match func(*heldRecord) bool, reason errors.LockLostReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.ledger.where(match) {
		p.loseLocked(h, reason, nil)
	}
}

// renewSettled takes the outcome of renews sent at sent: on success each lock runs for the
// duration the answer reported (lockMs; else the one known) from sent; on failure it is lost.
// The consumer calls it under its lock.
func (p *pool) renewSettled(hs []*heldRecord, err error, sent time.Time, lockMs int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && !sent.IsZero() {
		p.lease.observeRTT(time.Since(sent))
	}
	for _, h := range hs {
		if !p.ledger.holds(h) || h.lost != nil {
			continue
		}
		h.renewSent = time.Time{}
		if err != nil {
			p.stats.renewFailures.Add(1)
			p.loseLocked(h, lockLostReason(err), err)
			continue
		}
		if lockMs > 0 {
			h.lock = time.Duration(lockMs) * time.Millisecond
		}
		h.deadline = sent.Add(h.lock)
		h.renews++
		p.stats.renewed.Add(1)
	}
	p.kickLease()
}

// lockLostReason is the reason a renew's failure err gives.
func lockLostReason(err error) errors.LockLostReason {
	var ae *errors.AckError
	if !errors.As(err, &ae) {
		return errors.LockRenewRefused
	}
	switch {
	case errors.Is(ae.Err, kerr.InvalidRecordState):
		return errors.LockInvalidRecordState
	case errors.Is(ae.Err, kerr.NetworkException):
		return errors.LockSessionReset
	case errors.Is(ae.Err, kerr.NotLeaderForPartition), errors.Is(ae.Err, kerr.FencedLeaderEpoch),
		errors.Is(ae.Err, kerr.UnknownTopicOrPartition), errors.Is(ae.Err, kerr.UnknownTopicID):
		return errors.LockLeaderMoved
	}
	return errors.LockRenewRefused
}

// leaseLoop renews locks as the lease plans, gives up those it loses, and flushes the
// acknowledgements that waited ackFlushInterval for a ShareFetch.
func (p *pool) leaseLoop() {
	defer close(p.leaseDone)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		p.mu.Lock()
		plan := p.lease.plan(now, p.ledger.where(func(*heldRecord) bool { return true }))
		for _, l := range plan.lost {
			p.loseLocked(l.h, l.reason, nil)
		}
		for _, hs := range plan.renew {
			for _, h := range hs {
				h.renewSent = now
			}
		}
		flush := !p.flushDue.IsZero() && !now.Before(p.flushDue)
		if flush {
			p.flushDue = time.Time{}
		}
		next := plan.next
		if !p.flushDue.IsZero() && (next.IsZero() || p.flushDue.Before(next)) {
			next = p.flushDue
		}
		p.mu.Unlock()
		if len(plan.renew) > 0 {
			p.c.renewHeld(plan.renew)
		}
		if flush {
			p.c.flushHeldAcks()
		}
		if next.IsZero() {
			t.Stop()
		} else {
			t.Reset(max(0, next.Sub(time.Now())))
		}
		select {
		case <-t.C:
		case <-p.leaseKick:
		case <-p.leaseStop:
			return
		}
	}
}

// stopHandlers cancels the contexts of the running handlers with ErrProcessStopped; what they
// leave is released.
func (p *pool) stopHandlers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.ledger.where(func(h *heldRecord) bool { return h.started && h.lost == nil }) {
		h.stopped = true
		h.cancel(errors.ErrProcessStopped)
	}
}

// shutdown ends Process as its doc says.
func (p *pool) shutdown() {
	p.cancelIntake()
	p.stopping.Store(true)
	close(p.quit)
	for drained := false; !drained; {
		select {
		case h := <-p.jobs:
			p.mu.Lock()
			queued := p.ledger.holds(h) && h.lost == nil
			if queued {
				p.removeLocked(h)
			}
			p.mu.Unlock()
			if queued {
				p.release(h)
			}
		default:
			drained = true
		}
	}
	p.c.flushHeldAcks() // the queued records go back at once
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
	p.hooks.Wait()
}

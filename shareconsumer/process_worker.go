package shareconsumer

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// task is one record of Process: its ledger entry and its handler's context. The context is
// made only when the handler uses it (most calls of an empty or CPU-bound handler never do),
// and cancelled only when the record's lock is lost, shutdown stops the handler, or the
// handler returned having made it; so a record costs no context, no goroutine and no lock of
// its own unless its handler asks.
type task struct {
	e *entry
	p *pool

	mu     sync.Mutex
	ctx    atomic.Pointer[context.Context] // made on first use
	cancel context.CancelCauseFunc
	// ended is why the context ends (a *errors.LockLostError, errors.ErrProcessStopped,
	// context.Canceled when the handler returned), set once; nil while it runs.
	ended   error
	stopped atomic.Bool // shutdown cancelled the handler after the grace period
}

// inner returns the task's context, made on first use with what ended it so far. t.mu is held.
func (t *task) inner() context.Context {
	if c := t.ctx.Load(); c != nil {
		return *c
	}
	ctx, cancel := context.WithCancelCause(t.p.base)
	if dl, ok := t.Deadline(); ok {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, dl, &errors.LockLostError{Topic: t.e.part.tp.Topic, Partition: t.e.part.tp.Partition, Offset: t.e.rec.Offset, Reason: errors.LockDeadlinePassed})
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	t.cancel = cancel
	if t.ended != nil {
		cancel(t.ended)
	}
	t.ctx.Store(&ctx)
	return ctx
}

func (t *task) get() context.Context {
	if c := t.ctx.Load(); c != nil {
		return *c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inner()
}

// Deadline is the record's lock deadline against a leader without RENEW or with NoRenewal;
// none otherwise.
func (t *task) Deadline() (time.Time, bool) {
	if t.e.renewable() {
		return time.Time{}, false
	}
	dl := t.e.deadline()
	return dl, !dl.IsZero()
}

func (t *task) Done() <-chan struct{} { return t.get().Done() }

func (t *task) Err() error {
	if c := t.ctx.Load(); c != nil {
		return (*c).Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended == nil {
		if dl, ok := t.Deadline(); !ok || time.Now().Before(dl) {
			return nil
		}
	}
	return t.inner().Err()
}

// Value looks key up in Process's context. It makes the task's context, which context.Cause
// reaches through it.
func (t *task) Value(key any) any { return t.get().Value(key) }

// end ends the context with cause, if it has not ended yet.
func (t *task) end(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended != nil {
		return
	}
	t.ended = cause
	if t.ctx.Load() != nil {
		t.cancel(cause)
	}
}

// lockLost is the ledger telling that the record's lock is gone: the handler's context ends
// with err as its cause. It runs under the ledger's lock.
func (t *task) lockLost(err *errors.LockLostError) {
	t.p.stats.locksLost[err.Reason].Add(1)
	t.end(err)
}

// stop cancels a running handler at shutdown, after the grace period: what it leaves is
// released.
func (t *task) stop() {
	t.stopped.Store(true)
	t.end(errors.ErrProcessStopped)
}

// clock reads the clock, in the lease's nanoseconds: at the cost of time.Since, which a worker
// pays once per record.
func (p *pool) clock() int64 { return int64(time.Since(p.c.ledger.lease.epoch)) }

// publishEvery bounds how many records a busy worker handles before it publishes its batch;
// publishAfter, how long (a slow handler's record is published at once).
const (
	publishEvery = 64
	publishAfter = 100 * time.Microsecond
)

// worker is one of the pool's goroutines, with what it did since it last published.
type worker struct {
	p *pool
	// mu guards batch. The worker holds it only to add a record to the batch and to publish it,
	// never while a handler or hook runs, so that the acknowledgement flush can publish the
	// batch of a worker whose handler is slow (publishBatches); taken by the worker alone
	// otherwise, it costs an uncontended lock per record.
	mu    sync.Mutex
	batch workerBatch
	stats processCounters // this worker's counts, summed by ProcessStats
	// now is the clock when the last record ended, or when the worker got one after waiting:
	// a busy worker starts its next record then, so it reads the clock once per record.
	now  int64
	last int64 // when it last published, in the lease's nanoseconds
	n    int   // records handled since
	// handled and handlerNs are the handler calls and their time since it last published.
	handled, handlerNs int64
}

func (w *worker) run() {
	p := w.p
	defer p.workers.Done()
	defer w.publish()
	w.now = p.clock()
	for {
		var run []task
		var ok bool
		select {
		case run, ok = <-p.jobs:
		default:
			w.publish() // about to wait: what this worker did counts now
			run, ok = <-p.jobs
			w.now = p.clock()
		}
		if !ok {
			return
		}
		for i := range run {
			w.handle(&run[i])
		}
	}
}

// fastHandler is the mean handler time under which records go to workers in runs: a handler
// that quick gains nothing from more workers than there are CPUs, and a record costs no
// hand-over of its own.
const fastHandler = 20 * time.Microsecond

// runOf returns how many records of a ShareFetch answer of n records go to a worker at once:
// one while handlers are slow (or not timed yet), so that every worker gets one; for fast
// handlers as many as keep twice as many workers busy as there are CPUs (up to the pool's
// workers), at most 64.
func (p *pool) runOf(n int) int {
	if !p.fast.Load() {
		return 1
	}
	busy := min(p.cfg.workers, 2*runtime.GOMAXPROCS(0))
	return max(1, min(n/busy, 64))
}

// publish applies the worker's batch, arms the flush of its acknowledgements, and asks for
// more records when the queue ran down to admission's watermark.
func (w *worker) publish() {
	w.mu.Lock()
	some, acks := w.applyBatch()
	w.mu.Unlock()
	w.published(some, acks)
}

// applyBatch applies the worker's batch, if it holds anything, and reports whether it did
// and whether it held acknowledgements. w.mu is held; published follows once it is not.
func (w *worker) applyBatch() (some, acks bool) {
	w.n = 0
	if w.batch.empty() {
		return false, false
	}
	acks = len(w.batch.acks) > 0
	w.p.c.ledger.publish(&w.batch)
	return true, acks
}

// published ends a publish, w.mu released: the handlers' moving average, the flush of the
// acknowledgements published, and more records when the queue ran low.
func (w *worker) published(some, acks bool) {
	p := w.p
	if !some {
		p.askForMore() // a record lost while its handler ran left room without a batch
		return
	}
	if w.handled > 0 {
		// An eighth of the way to this batch's mean: handlers that turn slow are seen within a
		// few batches. Workers racing here may lose an update, which a moving average can take.
		mean := w.handlerNs / w.handled
		avg := p.handlerNs.Load()
		if avg == 0 {
			avg = mean
		} else {
			avg += (mean - avg) / 8
		}
		p.handlerNs.Store(avg)
		p.fast.Store(time.Duration(avg) < fastHandler)
		w.handled, w.handlerNs = 0, 0
	}
	w.last = p.clock()
	if acks {
		p.armFlush(w.last)
	}
	p.askForMore()
}

// publishBatches publishes the batch of every worker, for the acknowledgement flush: a worker
// whose handler is slow does not publish the acknowledgements of the records it handled before
// (in the same run) until the handler returns, and the locks of those records, settled, are
// not renewed meanwhile. It reports whether any batch held something. No lock is held.
func (p *pool) publishBatches() bool {
	some := false
	for _, w := range p.ws {
		w.mu.Lock()
		if !w.batch.empty() {
			p.c.ledger.publish(&w.batch)
			some = true
		}
		w.mu.Unlock()
	}
	return some
}

// askForMore asks for more records, unless Process is shutting down, when the queue ran low.
func (p *pool) askForMore() {
	if !p.stopping.Load() {
		p.c.fetchIfLow()
	}
}

// handle runs the handler on t's record and acknowledges its answer; a record whose lock was
// lost while it waited is only reported, and one taken after shutdown began is released.
func (w *worker) handle(t *task) {
	p, l := w.p, &w.p.c.ledger
	if p.stopping.Load() {
		w.publish()
		p.release(t)
		return
	}
	e := t.e
	began := w.now
	if !l.begin(e, began) {
		w.mu.Lock()
		w.batch.unqueued++
		w.batch.left++ // lost while it waited: it leaves the count as it leaves the queue
		w.mu.Unlock()
		p.c.fireLockLost()
		p.done(context.Background(), RecordOutcome{Record: e.rec, Err: t.e.lost.Load()})
		return
	}
	if p.handlersStopped.Load() {
		t.stop() // it began after the running handlers were stopped: it is one of them
	}
	fast := p.fast.Load() // a fast handler's record leaves the queue's count with the batch
	if !fast {
		// A slow handler: the queue is shorter by one from now on, and admission may want to
		// know at once.
		l.unqueue(1)
		p.askForMore()
	}
	ctx, err := p.call(t)
	now := p.clock()
	w.now = now
	took := time.Duration(now - began)
	w.stats.observeHandler(took)
	w.handled++
	w.handlerNs += int64(took)
	out := RecordOutcome{Record: e.rec, Err: err, HandlerTime: took}
	if err != nil && t.e.lost.Load() == nil && !t.stopped.Load() && !e.expired(now) {
		// The copy goes first; the lease renews the lock meanwhile, as the record is still
		// running (dlq.go). A record whose lock ran out gets none: the broker may have given
		// it to another member, which would copy it too.
		out.DeadLettered, out.DeadLetterErr = p.deadLetter(t, e.rec, err)
		now = p.clock()
		w.now = now
	}
	if t.e.lost.Load() == nil && e.expired(now) {
		// The handler (or the copy) outlived the lock, with no renew on its way: the broker
		// may have given the record to another member.
		l.loseOne(e, errors.LockDeadlinePassed)
		p.c.fireLockLost()
	}
	ack := ackOf(err, out, t.stopped.Load())
	settled := t.e.lost.Load() == nil && l.finish(e)
	w.mu.Lock()
	if fast {
		w.batch.unqueued++
	}
	first := false
	if settled {
		w.batch.left++
		w.batch.settled++
		w.batch.acks = append(w.batch.acks, inboxAck{e.part, e.rec.Offset, ack, e.rec.DeliveryCount})
		first = len(w.batch.acks) == 1
		w.batch.leave(l, e)
	}
	var some, acks bool
	publish := false
	if w.n++; w.n >= publishEvery || time.Duration(now-w.last) >= publishAfter {
		publish = true
		some, acks = w.applyBatch()
	}
	w.mu.Unlock()
	if settled {
		out.Ack = ack
		if !out.DeadLettered {
			w.stats.countAck(ack)
		}
		if first {
			// The flush publishes the batch if the worker has not by then (a slow handler).
			p.armFlush(now)
		}
	} else {
		out.Err = t.e.lost.Load()
		p.askForMore() // the lost record left room when its lock was lost
	}
	if publish {
		w.published(some, acks)
	}
	out.Renews = e.renews()
	t.end(context.Canceled)
	p.done(ctx, out)
}

// releaseRun releases the records of run, taken out of the queue without reaching a handler.
func (p *pool) releaseRun(run []task) {
	for i := range run {
		p.release(&run[i])
	}
}

// release releases a record taken out of the queue without reaching a handler.
func (p *pool) release(t *task) {
	if p.c.ledger.release(t.e) {
		p.stats.released.Add(1)
		p.done(context.Background(), RecordOutcome{Record: t.e.rec, Ack: acktype.Release})
		return
	}
	p.done(context.Background(), RecordOutcome{Record: t.e.rec, Err: t.e.lost.Load()})
}

// done reports what became of a record that left the pool: to the process-done hooks, with
// ctx, the context its handler had (context.Background() when none did), then to
// OnRecordDone, so that a test or application that stops Process from OnRecordDone finds the
// hooks told.
func (p *pool) done(ctx context.Context, out RecordOutcome) {
	for _, h := range p.c.hooks.processDone {
		h.OnProcessDone(ctx, out)
	}
	if p.cfg.onRecordDone != nil {
		p.cfg.onRecordDone(out)
	}
}

// call runs the handler, turning a panic into a *errors.PanicError, and returns the context
// the handler had: t itself, or what the process-start hooks made of it. A panic in such a
// hook is the handler's.
func (p *pool) call(t *task) (ctx context.Context, err error) {
	ctx = t
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			err = &errors.PanicError{Value: v, Stack: stack}
			p.stats.panics.Add(1) // rare: the shared counts
			r := t.e.rec
			p.c.log(kgo.LogLevelError, "Process handler panicked; the record is released", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "panic", v, "stack", string(stack))
			if p.cfg.onPanic != nil {
				p.cfg.onPanic(r, v, stack)
			}
		}
	}()
	if len(p.c.hooks.processStart) > 0 {
		ctx = p.c.hooks.startRecord(ctx, t.e.rec)
	}
	return ctx, p.h(ctx, t.e.rec)
}

// ackOf is the acknowledgement of a handled record: ACCEPT when its copy is in the dead-letter
// topic, RELEASE when the copy failed or shutdown stopped the handler, else the handler's answer
// err: ACCEPT for nil, REJECT for errors.Reject and for a poison record with no dead-letter
// topic (errors.DeadLetter), RELEASE for any other error or panic.
func ackOf(err error, out RecordOutcome, stopped bool) acktype.Type {
	switch {
	case out.DeadLettered:
		return acktype.Accept
	case out.DeadLetterErr != nil, stopped:
		return acktype.Release
	case err == nil:
		return acktype.Accept
	case errors.Is(err, errors.ErrReject), errors.Is(err, errors.ErrDeadLetter):
		return acktype.Reject
	}
	return acktype.Release
}

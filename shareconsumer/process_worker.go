package shareconsumer

import (
	"context"
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
	lost    atomic.Pointer[errors.LockLostError]
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
	t.lost.Store(err)
	t.p.stats.locksLost[err.Reason].Add(1)
	t.end(err)
}

// stop cancels a running handler at shutdown, after the grace period: what it leaves is
// released.
func (t *task) stop() {
	t.stopped.Store(true)
	t.end(errors.ErrProcessStopped)
}

func (p *pool) worker() {
	defer p.workers.Done()
	for t := range p.jobs {
		p.handle(t)
	}
}

// handle runs the handler on t's record and acknowledges its answer; a record whose lock was
// lost while it waited is only reported, and one taken after shutdown began is released.
func (p *pool) handle(t *task) {
	if p.stopping.Load() {
		p.release(t)
		return
	}
	began := time.Now()
	if !p.c.ledger.start(t.e, began) {
		p.done(RecordOutcome{Record: t.e.rec, Err: t.lost.Load()})
		return
	}
	err := p.call(t)
	now := time.Now()
	took := now.Sub(began)
	p.stats.observeHandler(took)
	out := RecordOutcome{Record: t.e.rec, Err: err, HandlerTime: took}
	if t.lost.Load() == nil {
		if dl := t.e.deadline(); !dl.IsZero() && !now.Before(dl) && !t.e.acq.group.Load().renewing.Load() {
			// The handler outlived the lock, with no renew on its way: the broker may have
			// given the record to another member.
			p.c.ledger.loseOne(t.e, errors.LockDeadlinePassed)
		}
	}
	ack := ackFor(err)
	if t.stopped.Load() {
		ack = acktype.Release
	}
	if t.lost.Load() == nil && p.c.ledger.settle(t.e, ack) {
		out.Ack = ack
		p.stats.countAck(ack)
		p.armFlush(now)
	} else {
		out.Err = t.lost.Load()
	}
	out.Renews = t.e.renews()
	t.end(context.Canceled)
	p.done(out)
}

// release releases a record taken out of the queue without reaching a handler.
func (p *pool) release(t *task) {
	if p.c.ledger.release(t.e) {
		p.stats.released.Add(1)
		p.done(RecordOutcome{Record: t.e.rec, Ack: acktype.Release})
		return
	}
	p.done(RecordOutcome{Record: t.e.rec, Err: t.lost.Load()})
}

// done reports what became of a record that left the pool, and asks for more records when the
// queue ran down to admission's watermark.
func (p *pool) done(out RecordOutcome) {
	c := p.c
	if !p.stopping.Load() && c.ledger.lease.queued.Load() <= c.admit.low.Load() && c.admit.wantKick.CompareAndSwap(true, false) {
		c.kick()
	}
	if p.cfg.onRecordDone != nil {
		p.cfg.onRecordDone(out)
	}
}

// call runs the handler, turning a panic into a *errors.PanicError.
func (p *pool) call(t *task) (err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			err = &errors.PanicError{Value: v, Stack: stack}
			p.stats.panics.Add(1)
			r := t.e.rec
			p.c.log(kgo.LogLevelError, "Process handler panicked; the record is released", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "panic", v, "stack", string(stack))
			if p.cfg.onPanic != nil {
				p.cfg.onPanic(r, v, stack)
			}
		}
	}()
	return p.h(t, t.e.rec)
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

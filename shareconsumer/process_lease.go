package shareconsumer

import (
	"time"
)

// leaseLoop keeps the pool's locks: it handles the lease's events when they are due (renews to
// queue, locks lost), and flushes the acknowledgements that waited ackFlushInterval for a
// ShareFetch to carry them.
func (p *pool) leaseLoop() {
	defer close(p.leaseDone)
	c := p.c
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		ev := c.ledger.due(now)
		c.fireLockLost()
		if len(ev.renew) > 0 {
			c.queueRenews(ev.renew)
		}
		p.askForMore() // records lost just now left room
		next := ev.next
		if at := p.flushAt.Load(); at != 0 {
			if flushAt := c.ledger.lease.at(at); !now.Before(flushAt) {
				p.flushAt.Store(0)
				if p.publishBatches() {
					p.askForMore()
				}
				c.flushAll()
			} else if next.IsZero() || flushAt.Before(next) {
				next = flushAt
			}
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

func (p *pool) kickLease() {
	select {
	case p.leaseKick <- struct{}{}:
	default:
	}
}

// armFlush makes the acknowledgements just handed to the sessions leave within
// ackFlushInterval of now (the lease's nanoseconds), in a ShareAcknowledge if no ShareFetch
// carries them first.
func (p *pool) armFlush(now int64) {
	if p.flushAt.Load() == 0 && p.flushAt.CompareAndSwap(0, now+int64(ackFlushInterval)) {
		p.kickLease()
	}
}

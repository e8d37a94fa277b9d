package share

import (
	"time"

	"github.com/kshare/kshare/testbroker/internal/clock"
)

// lock is one acquisition lock: a timer covering the offsets [first, last] of one in-flight
// batch, which every record it guards points to. A lock dies when its timer fires or when no
// record points to it any more; its identity is its generation, so a record acquired, renewed
// or acknowledged since never answers to a timer of an older lock.
type lock struct {
	first, last int64
	deadline    time.Time
	timer       clock.Timer // nil until scheduled
	dead        bool
}

// newLock returns a lock over [first, last] expiring d after now, not yet scheduled.
func newLock(first, last int64, now time.Time, d time.Duration) *lock {
	return &lock{first: first, last: last, deadline: now.Add(d)}
}

// schedule starts l's timer, to fire d from now on p's clock.
func (p *Partition) schedule(l *lock, d time.Duration) {
	l.timer = p.clk.AfterFunc(d, func() { p.expire(l) })
}

// stop kills l and stops its timer. It accepts nil and dead locks.
func (l *lock) stop() {
	if l == nil || l.dead {
		return
	}
	l.dead = true
	if l.timer != nil {
		l.timer.Stop()
	}
}

// referenced reports whether a cached record still points to l.
func (p *Partition) referenced(l *lock) bool {
	i := p.find(l.first)
	if i < 0 {
		return false
	}
	b := &p.batches[i]
	if b.offs == nil {
		return b.rec.lock == l
	}
	for o := l.first; o <= l.last && o <= b.last; o++ {
		if b.offs[o-b.first].lock == l {
			return true
		}
	}
	return false
}

// expire runs when l's deadline comes (Kafka's releaseAcquisitionLockOnTimeout): every record
// still under l becomes AVAILABLE, or ARCHIVED at the delivery limit or below the SPSO, with
// its delivery count unchanged, and waiters are woken.
func (p *Partition) expire(l *lock) {
	limit := p.settings().DeliveryCountLimit
	p.mu.Lock()
	if p.closed || l.dead {
		p.mu.Unlock()
		return
	}
	l.dead = true
	var c counts
	if i := p.find(l.first); i >= 0 {
		b := &p.batches[i]
		if b.offs == nil {
			if b.rec.lock == l {
				p.add(&c, settle(&b.rec, Available, limit, b.last < p.start), b.first, b.last)
			}
		} else {
			for o := l.first; o <= l.last && o <= b.last; o++ {
				if r := &b.offs[o-b.first]; r.lock == l {
					p.add(&c, settle(r, Available, limit, o < p.start), o, o)
				}
			}
		}
	}
	p.avail += c.avail
	p.done += c.done
	moved := p.advanceStart()
	w := p.takeWakeLocked(c.avail > 0 || moved)
	p.mu.Unlock()
	wakeUp(w)
}

// ReleaseMember ends member's hold on the partition, as Kafka does when its share session
// closes or its connection drops (releaseAcquiredRecords): every record it has ACQUIRED becomes
// AVAILABLE, or ARCHIVED at the delivery limit or below the SPSO, with its delivery count
// unchanged (Kafka 4.2 and later), and its locks are stopped. Records of other members are left
// alone. It returns how many records it released.
func (p *Partition) ReleaseMember(member string) int {
	limit := p.settings().DeliveryCountLimit
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0
	}
	var c counts
	var n int64
	for i := p.head; i < len(p.batches); i++ {
		b := &p.batches[i]
		if b.offs == nil {
			if b.rec.state == Acquired && b.rec.member == member {
				b.rec.lock.stop()
				p.add(&c, settle(&b.rec, Available, limit, b.last < p.start), b.first, b.last)
				n += b.size()
			}
			continue
		}
		for k := range b.offs {
			if r := &b.offs[k]; r.state == Acquired && r.member == member {
				o := b.first + int64(k)
				r.lock.stop()
				p.add(&c, settle(r, Available, limit, o < p.start), o, o)
				n++
			}
		}
	}
	p.avail += c.avail
	p.done += c.done
	moved := p.advanceStart()
	w := p.takeWakeLocked(c.avail > 0 || moved)
	p.mu.Unlock()
	wakeUp(w)
	return int(n)
}

package shareconsumer

import (
	"time"

	"github.com/kshare/kshare/errors"
)

// lease decides, for the records Process holds, when their acquisition locks are renewed and
// when they are given up. It reads no clock: every decision takes the time it is made at.
//
// A record's renew is due at its lock deadline minus a margin. The margin covers the renew's
// trip: the longest renew round trip measured lately, four times over, plus the longest a
// renew may queue at its leader behind a ShareFetch waiting for records (fetchWait); at least a
// fifth of the lock duration, at most half of it. (Process keeps a ShareFetch's wait to a
// quarter of the lock, so fetchWait counts at most that.) When any record held from a leader is due,
// every record held from that leader is renewed in the same request, so that a leader gets at
// most one renew per renew interval however many records it locks for the consumer.
type lease struct {
	fixedMargin time.Duration // RenewMargin; 0 derives the margin
	fetchWait   time.Duration
	maxHold     time.Duration
	rtt         time.Duration // the longest renew round trip measured, decaying
}

// margin is how long before a lock of duration lock runs out its renew is sent.
func (l *lease) margin(lock time.Duration) time.Duration {
	if l.fixedMargin > 0 {
		return min(l.fixedMargin, lock*9/10)
	}
	m := max(lock/5, 4*l.rtt+min(l.fetchWait, lock/4))
	return min(m, lock/2)
}

// observeRTT takes the round trip of an answered renew. An old peak fades by an eighth with
// every answer, so one slow answer does not shorten every renew interval for good.
func (l *lease) observeRTT(d time.Duration) {
	l.rtt = max(d, l.rtt-l.rtt/8)
}

// renewGrace is how long past its local deadline a record whose renew is in flight is kept, so
// that the answer decides: the broker's lock started after the local estimate's.
func renewGrace(lock time.Duration) time.Duration { return lock / 2 }

// leasePlan is what the lease decided at one moment.
type leasePlan struct {
	renew map[int32][]*heldRecord // by leader: the records to renew now
	lost  []lostLock
	next  time.Time // when to decide again; zero for no need
}

type lostLock struct {
	h      *heldRecord
	reason errors.LockLostReason
}

// plan decides, at now, for the records held: which to renew (those whose leader takes RENEW,
// with renewing on), which locks are lost (past MaxHold, or past the deadline with no renew on
// its way), and when the next decision is due.
func (l *lease) plan(now time.Time, held []*heldRecord) leasePlan {
	var p leasePlan
	at := func(t time.Time) {
		if p.next.IsZero() || t.Before(p.next) {
			p.next = t
		}
	}
	dueNodes := map[int32]bool{}
	live := held[:0:0]
	for _, h := range held {
		if h.lost != nil || h.answered {
			continue
		}
		if l.maxHold > 0 {
			end := h.acquired.Add(l.maxHold)
			if !now.Before(end) {
				p.lost = append(p.lost, lostLock{h, errors.LockMaxHoldReached})
				continue
			}
			at(end)
		}
		if h.deadline.IsZero() {
			continue // the broker reported no lock duration: nothing to time
		}
		if !h.renewSent.IsZero() {
			giveUp := h.deadline.Add(renewGrace(h.lock))
			if !now.Before(giveUp) {
				p.lost = append(p.lost, lostLock{h, errors.LockDeadlinePassed})
				continue
			}
			at(giveUp)
			continue
		}
		if !now.Before(h.deadline) {
			p.lost = append(p.lost, lostLock{h, errors.LockDeadlinePassed})
			continue
		}
		at(h.deadline)
		if !h.renewable {
			continue
		}
		live = append(live, h)
		due := h.deadline.Add(-l.margin(h.lock))
		if !now.Before(due) {
			dueNodes[h.node] = true
		} else {
			at(due)
		}
	}
	for _, h := range live {
		if dueNodes[h.node] {
			if p.renew == nil {
				p.renew = make(map[int32][]*heldRecord)
			}
			p.renew[h.node] = append(p.renew[h.node], h)
		}
	}
	return p
}

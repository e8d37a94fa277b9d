package shareconsumer

import (
	"context"
	"time"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// heldRecord is one record Process holds: acquired, handed to a worker or waiting for one, its
// acquisition lock kept alive by renews until the handler answers or the lock is lost.
type heldRecord struct {
	rec  *Record
	tp   TopicPartition
	id   [16]byte
	node int32 // the leader it came from: renews and the acknowledgement go there

	acquired time.Time     // when the ShareFetch that acquired it was sent
	lock     time.Duration // the lock duration its leader last reported for it
	deadline time.Time     // when its lock runs out, by the local estimate
	// renewSent is when the renew in flight for it was sent; zero when none is.
	renewSent time.Time
	renews    int // renews the broker confirmed
	// renewable: its leader takes RENEW (ShareAcknowledge v2) and renewing is on.
	renewable bool

	started  bool                    // a worker took it
	cancel   context.CancelCauseFunc // the handler's context, once started
	lost     *errors.LockLostError   // set once its lock is lost: no acknowledgement is sent
	stopped  bool                    // shutdown cancelled its handler after the grace period
	answered bool                    // its final acknowledgement is recorded: no more renews
}

func (h *heldRecord) key() renewbuffer.Key { return renewKey(h.tp, h.rec.Offset) }

// ledger is the set of records Process holds, by partition and offset. It only keeps them; the
// lease decides when to renew them and admission how many more may be acquired.
type ledger struct {
	recs map[renewbuffer.Key]*heldRecord
}

func newLedger() ledger { return ledger{recs: make(map[renewbuffer.Key]*heldRecord)} }

// add holds h. A record delivered again while the ledger still holds its earlier delivery (the
// earlier lock was lost) replaces it, and the earlier one is returned.
func (l *ledger) add(h *heldRecord) (replaced *heldRecord) {
	k := h.key()
	replaced = l.recs[k]
	l.recs[k] = h
	return replaced
}

// remove lets h go, unless the ledger holds a later delivery of the same record instead. It
// reports whether h was held.
func (l *ledger) remove(h *heldRecord) bool {
	k := h.key()
	if l.recs[k] != h {
		return false
	}
	delete(l.recs, k)
	return true
}

// holds reports whether h is the delivery the ledger holds of its record.
func (l *ledger) holds(h *heldRecord) bool { return l.recs[h.key()] == h }

func (l *ledger) len() int { return len(l.recs) }

// where returns the held records for which match is true.
func (l *ledger) where(match func(*heldRecord) bool) []*heldRecord {
	var out []*heldRecord
	for _, h := range l.recs {
		if match(h) {
			out = append(out, h)
		}
	}
	return out
}

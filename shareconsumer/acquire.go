package shareconsumer

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// This file is the consumer's side of Process: acquiring records for the pool, sending its
// acknowledgements and renews, and telling it of lost sessions and moved leaders.

// startProcess finishes with the last Poll's records, as Poll would, and makes p the consumer's
// pool.
func (c *Consumer) startProcess(p *pool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped || c.closed.Load():
		return errors.ErrClosed
	case c.fatal != nil:
		return c.fatal
	case len(c.subscription) == 0:
		return errors.ErrNotSubscribed
	case c.cfg.explicit && c.inflight.unacked > 0:
		return errors.ErrUnacknowledgedRecords
	}
	c.rejoinIfLeftLocked()
	if !c.cfg.explicit {
		c.acceptAllLocked()
	}
	c.moveAckedLocked()
	c.releaseRenewedLocked()
	// Records a Poll's fetch left behind would go past the pool's bound: they go back.
	c.releaseBufferLocked()
	c.pool = p
	c.flushAllLocked()
	return nil
}

// endProcess, once p's workers and lease have stopped, releases the records acquired and not
// handed out and sends every acknowledgement, waiting a while for the answers.
func (c *Consumer) endProcess(p *pool) {
	c.mu.Lock()
	c.pool = nil
	c.releaseBufferLocked()
	c.mu.Unlock()
	if c.closed.Load() {
		return // Close sends them, on the requests that close the share sessions
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.base), shutdownCommitTimeout)
	defer cancel()
	c.commitSync(ctx)
}

// acquire waits for records for Process, at most max of them, as Poll does, and returns them
// to be held by p, or the error Poll would return. Records are fetched only while acquire
// waits, and each ShareFetch asks for no more than the pool has room for.
func (c *Consumer) acquire(ctx context.Context, p *pool, max int) ([]*heldRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pollSeq++
	c.pollWaiting = true
	defer func() { c.pollWaiting = false }()
	for {
		switch {
		case c.closed.Load():
			return nil, errors.ErrClosed
		case c.fatal != nil:
			return nil, c.fatal
		case len(c.subscription) == 0:
			return nil, errors.ErrNotSubscribed
		}
		recs, err := c.drainHeldLocked(p, max)
		if len(recs) > 0 || err != nil {
			return recs, err
		}
		if len(c.pollErrs) > 0 {
			err := c.pollErrs[0]
			c.pollErrs = c.pollErrs[1:]
			return nil, err
		}
		if err := c.unsupportedLocked(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.awaitRecordsLocked(ctx, nil); err != nil {
			return nil, err // Process does not take Wakeup's tokens: they are Poll's
		}
	}
}

// drainHeldLocked takes up to max records from the buffer for p (drainBufferLocked). A corrupt
// batch is rejected, as Poll's default is, and returned as the error after the records before
// it.
func (c *Consumer) drainHeldLocked(p *pool, max int) ([]*heldRecord, error) {
	var out []*heldRecord
	now := time.Now()
	err := c.drainBufferLocked(max, false, func(it *bufItem, r *Record) {
		v, known := c.versions.Get(it.node)
		lock := time.Duration(it.lock.ms) * time.Millisecond
		h := &heldRecord{rec: r, tp: it.tp, id: it.id, node: it.node, lock: lock, deadline: r.LockDeadline, acquired: now,
			renewable: known && v.SupportsRenew() && !p.cfg.noRenew}
		if !r.LockDeadline.IsZero() {
			h.acquired = r.LockDeadline.Add(-lock)
		}
		out = append(out, h)
	}, func(it *bufItem) {
		acc := c.pendingLocked(it.node, it.tp, it.id)
		for _, o := range it.corrupt.Offsets {
			acc.Add(o, acktype.Reject)
		}
	})
	return out, err
}

// ackHeld records Process's final acknowledgement of h, to go on the next ShareFetch to h's
// leader or in the pool's time-bounded flush.
//
// It reports false, recording nothing, when h's lock was lost meanwhile. The losses the
// consumer learns of (a session reset, a leader move, a refused renew) are marked under its
// lock, so none of those slips in between this check and the recording.
func (c *Consumer) ackHeld(h *heldRecord, t acktype.Type) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	if p := c.pool; p != nil {
		p.mu.Lock()
		lost := h.lost != nil
		p.mu.Unlock()
		if lost {
			return false
		}
	}
	c.pendingLocked(h.node, h.tp, h.id).Add(h.rec.Offset, t)
	c.nodeLocked(h.node).poolPending++
	c.poolOut++
	return true
}

// flushHeldAcks sends the acknowledgements no ShareFetch carried yet in a ShareAcknowledge per
// leader.
func (c *Consumer) flushHeldAcks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushAllLocked()
}

// renewHeld renews the locks of the held records, by leader: one ShareAcknowledge with
// IsRenewAck per leader, queued behind the request in flight there.
func (c *Consumer) renewHeld(byNode map[int32][]*heldRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool == nil {
		return
	}
	for node, hs := range byNode {
		// A record answered since the lease planned its renew is not renewed: the
		// acknowledgement is queued behind this, and a renew after it would fail.
		hs = c.pool.unanswered(hs)
		if len(hs) == 0 {
			continue
		}
		slices.SortFunc(hs, func(a, b *heldRecord) int {
			if d := compareTP(a.tp, b.tp); d != 0 {
				return d
			}
			return cmp64(a.rec.Offset, b.rec.Offset)
		})
		j := &ackJob{kind: jobLease}
		for i := 0; i < len(hs); {
			k := i
			var acks []acktype.Ack
			for ; k < len(hs) && hs[k].tp == hs[i].tp; k++ {
				acks = append(acks, acktype.Ack{Offset: hs[k].rec.Offset, Type: acktype.Renew})
			}
			j.parts = append(j.parts, &ackPart{tp: hs[i].tp, id: hs[i].id, batches: acktype.AppendBatches(nil, acks), renews: true, held: hs[i:k:k]})
			i = k
		}
		if c.stopped {
			c.failPartsLocked(j, j.parts, kerr.NetworkException.Code, msgClosing)
			continue
		}
		c.nodeLocked(node).jobs = append(c.nodeLocked(node).jobs, j)
	}
	c.kickLocked()
}

// poolGrantLocked is how many records the next ShareFetch of Process may ask a leader for,
// when it carries carried of Process's acknowledgements. Records whose acknowledgement has not
// been answered are still locked at their broker: they count as held until the answer, except
// those the fetch carries, which the broker applies before it acquires.
func (c *Consumer) poolGrantLocked(carried int) int {
	reserved, idle := 0, 0
	for _, l := range c.assignedLeadersLocked() {
		if n := c.nodes[l]; n != nil && n.grant > 0 {
			reserved += n.grant
		} else {
			idle++
		}
	}
	free := c.pool.admit.free(int(c.pool.held.Load())+c.poolOut-carried, c.bufRecords, reserved)
	return c.pool.admit.grant(free, idle)
}

// poolFetchLocked sizes n's ShareFetch for Process: the records its grant allows, exactly where
// the leader takes the record-limit acquire mode, and a wait short enough for renews to pass.
func (c *Consumer) poolFetchLocked(n *node, req *kmsg.ShareFetchRequest, carried int) {
	grant := c.poolGrantLocked(carried)
	n.grant = max(grant, 1)
	req.MaxRecords, req.BatchSize = int32(n.grant), int32(n.grant)
	if v, ok := c.versions.Get(n.id); ok && v.SupportsRecordLimitAcquire() {
		req.ShareAcquireMode = 1
	}
	lock := time.Duration(c.lockShown.ms) * time.Millisecond
	req.MaxWaitMillis = int32(c.pool.fetchWait(lock) / time.Millisecond)
}

// sessionResetLocked makes the next request to n open a new share session; Process gives up the
// records it holds from n (errors.LockSessionReset), whose renews and acknowledgements cannot
// travel on the opening request.
func (c *Consumer) sessionResetLocked(n *node) {
	n.resetSessionLocked()
	if c.pool != nil {
		c.pool.loseWhere(func(h *heldRecord) bool { return h.node == n.id }, errors.LockSessionReset)
	}
}

package shareconsumer

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// defaultLockDuration is Kafka's default group.share.record.lock.duration.ms. A renew answered
// by a broker that reported no lock duration, to a consumer that never learnt one, counts its
// new deadline with it.
const defaultLockDuration = 30 * time.Second

// renewEntry is a record the application renewed, held in Consumer.renews from the renew until
// a Poll returns it again.
type renewEntry struct {
	rec  *Record
	node int32    // the leader the record came from; its acknowledgements go there
	id   [16]byte // the topic id
	// deadline is the lock deadline the renew's answer gave; the Poll that returns rec puts it
	// in rec.LockDeadline (Acknowledge's doc tells the application to leave rec alone until then).
	deadline time.Time
}

// renewTicket is one renew sent in a request: the offset and the ticket its answer needs.
type renewTicket struct {
	off    int64
	ticket renewbuffer.Ticket
}

func renewKey(tp TopicPartition, off int64) renewbuffer.Key {
	return renewbuffer.Key{Topic: tp.Topic, Partition: tp.Partition, Offset: off}
}

// hasRenew reports whether any batch renews an offset.
func hasRenew(batches []acktype.Batch) bool {
	for _, b := range batches {
		for _, t := range b.Types {
			if t == acktype.Renew {
				return true
			}
		}
	}
	return false
}

// renewOffsets returns the offsets p renews, in order.
func (p *ackPart) renewOffsets() []int64 {
	var out []int64
	for _, b := range p.batches {
		if len(b.Types) == 1 {
			if b.Types[0] == acktype.Renew {
				for o := b.FirstOffset; o <= b.LastOffset; o++ {
					out = append(out, o)
				}
			}
			continue
		}
		for i, t := range b.Types {
			if t == acktype.Renew {
				out = append(out, b.FirstOffset+int64(i))
			}
		}
	}
	return out
}

// anyRenew reports whether any part renews an offset.
func anyRenew(parts []*ackPart) bool {
	for _, p := range parts {
		if p.renews {
			return true
		}
	}
	return false
}

// gateRenewAck checks, for Acknowledge(r, Renew), that the leader r came from takes RENEW:
// ShareFetch v2 and ShareAcknowledge v2 in its ApiVersions (capped by kgo.MaxVersions). The
// consumer learns each leader's versions before its first ShareFetch there, so they are known
// for every record Poll returned; if they are not (a reconnection is being checked), the renew
// is recorded and the check is made again before it is sent.
func (c *Consumer) gateRenewAck(tp TopicPartition, node int32) error {
	v, ok := c.versions.Get(node)
	if !ok || v.SupportsRenew() {
		return nil
	}
	fetchMax, _ := v.Max(kmsg.ShareFetch)
	ackMax, _ := v.Max(kmsg.ShareAcknowledge)
	return fmt.Errorf("%w: broker %d, the leader %s/%d came from, supports ShareFetch v%d and ShareAcknowledge v%d; RENEW needs v2 of both (Kafka 4.2); nothing was recorded",
		errors.ErrUnsupportedAcknowledgeType, node, tp.Topic, tp.Partition, fetchMax, ackMax)
}

// holdRenewLocked moves a record the application renewed into the renew buffer, its renew
// queued for the next request to its leader.
func (c *Consumer) holdRenewLocked(tp TopicPartition, id [16]byte, r curRec) {
	n := c.nodeLocked(r.node)
	n.queuedRenews++
	c.renews.Add(renewKey(tp, r.off), &renewEntry{rec: r.rec, node: r.node, id: id})
}

// stripUnsupportedRenewsLocked takes the renews out of parts when n does not take RENEW (the
// broker was replaced by an older one since Acknowledge checked), failing them with
// UNSUPPORTED_VERSION, so that type 4 is never sent on a version that does not know it. The
// other acknowledgements of the same parts go on.
func (c *Consumer) stripUnsupportedRenewsLocked(n *node, j *ackJob, parts []*ackPart) []*ackPart {
	if !anyRenew(parts) {
		return parts
	}
	if v, ok := c.versions.Get(n.id); ok && v.SupportsRenew() {
		return parts
	}
	return c.failRenewsLocked(j, parts, kerr.UnsupportedVersion.Code,
		fmt.Sprintf("broker %d no longer supports ShareFetch v2 and ShareAcknowledge v2, which RENEW needs", n.id))
}

// failRenewsLocked fails the renews of parts, parts of j that cannot be sent as they are, with
// code and msg, and returns the parts still to send: those without renews, and the other
// acknowledgements of those with some. A part whose only acknowledgements are renews is
// finished, failed.
func (c *Consumer) failRenewsLocked(j *ackJob, parts []*ackPart, code int16, msg string) []*ackPart {
	keep := parts[:0]
	for _, p := range parts {
		if !p.renews {
			keep = append(keep, p)
			continue
		}
		renewed, rest := splitRenews(p)
		if rest == nil {
			c.finishPartLocked(j, p, ackError(p, code, msg))
			continue
		}
		c.reportPartLocked(j, renewed, ackError(renewed, code, msg))
		*p = *rest // p stays the part j's commit counts
		keep = append(keep, p)
	}
	return keep
}

// splitRenews splits p into its renews and the rest of its acknowledgements, nil when none.
func splitRenews(p *ackPart) (renewed, rest *ackPart) {
	var rs, others []acktype.Ack
	for _, b := range p.batches {
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.FirstOffset]
			}
			if t == acktype.Renew {
				rs = append(rs, acktype.Ack{Offset: o, Type: t})
			} else {
				others = append(others, acktype.Ack{Offset: o, Type: t})
			}
		}
	}
	renewed = &ackPart{tp: p.tp, id: p.id, batches: acktype.AppendBatches(nil, rs), renews: true}
	if len(others) > 0 {
		rest = &ackPart{tp: p.tp, id: p.id, batches: acktype.AppendBatches(nil, others)}
	}
	return renewed, rest
}

// markRenewsSentLocked records that the renews of parts leave now.
func (c *Consumer) markRenewsSentLocked(parts []*ackPart, now time.Time) {
	for _, p := range parts {
		if !p.renews || p.held != nil {
			continue
		}
		for _, o := range p.renewOffsets() {
			if t, ok := c.renews.MarkSent(renewKey(p.tp, o), now); ok {
				p.tickets = append(p.tickets, renewTicket{o, t})
			}
		}
	}
}

// settleRenewsLocked applies the outcome of p to the renews it carried: on success they wait
// for a Poll, deadline counted from the send with the lock duration of the answer (or the last
// known one); on failure, or when they were never sent, they are dropped for good.
func (c *Consumer) settleRenewsLocked(j *ackJob, p *ackPart, err error) {
	if !p.renews {
		return
	}
	if p.held != nil {
		if c.pool != nil {
			c.pool.renewSettled(p.held, err, j.sent, j.lockTimeout)
		}
		return
	}
	if p.tickets == nil {
		for _, o := range p.renewOffsets() {
			c.renews.Remove(renewKey(p.tp, o))
		}
		c.wake()
		return
	}
	d := defaultLockDuration
	switch {
	case j.lockTimeout > 0:
		d = time.Duration(j.lockTimeout) * time.Millisecond
	case c.lockShown.ms > 0:
		d = time.Duration(c.lockShown.ms) * time.Millisecond
	}
	unsubscribed := len(c.subscription) == 0 || c.pool != nil
	for _, t := range p.tickets {
		k := renewKey(p.tp, t.off)
		if err != nil {
			c.renews.Fail(k, t.ticket)
			continue
		}
		if !c.renews.Complete(k, t.ticket, d) {
			continue
		}
		e, _, dl, _ := c.renews.Get(k)
		e.deadline = dl
		if unsubscribed {
			// No Poll will return it: release it, as Unsubscribe and Process released the others.
			c.renews.Remove(k)
			c.pendingLocked(e.node, p.tp, e.id).Add(t.off, acktype.Release)
			c.flushLocked(c.nodeLocked(e.node))
		}
	}
	c.wake()
}

// takeRenewedLocked takes up to max renewed records for Poll, back into the in-flight set with
// their new lock deadline, and drops those whose lock ran out before a Poll came.
func (c *Consumer) takeRenewedLocked(max int, out []*Record) []*Record {
	if c.renews.Ready() == 0 {
		return out
	}
	es, expired := c.renews.Take(time.Now(), max, nil)
	if len(expired) > 0 {
		c.log(kgo.LogLevelInfo, "dropped renewed records whose acquisition lock ran out before a Poll could return them", "records", len(expired))
	}
	var held map[renewbuffer.Key]struct{}
	if len(es) > 0 && len(c.buffer) > 0 {
		// A fetch may have brought an offset again after its renew was recorded (the lock ran
		// out, and this member acquired it anew): the fresh delivery wins.
		held = make(map[renewbuffer.Key]struct{}, c.bufRecords)
		for _, it := range c.buffer {
			for _, r := range it.recs {
				held[renewKey(it.tp, r.Offset)] = struct{}{}
			}
		}
	}
	for _, e := range es {
		if _, ok := held[renewKey(TopicPartition{e.rec.Topic, e.rec.Partition}, e.rec.Offset)]; ok {
			continue
		}
		tp := TopicPartition{e.rec.Topic, e.rec.Partition}
		e.rec.LockDeadline = e.deadline
		c.inflight.add(tp, e.id, e.node, e.rec.Offset, e.rec, false, 0)
		out = append(out, e.rec)
	}
	if len(es) > 0 {
		c.showLockLocked(c.lockNext)
	}
	return out
}

// dropRenewsOfPartitionLocked forgets the renewed records of tp, whose locks are gone (its
// leader moved).
func (c *Consumer) dropRenewsOfPartitionLocked(tp TopicPartition) {
	if c.renews.Len() == 0 {
		return
	}
	if ks := c.renews.RemovePartition(tp.Topic, tp.Partition); len(ks) > 0 {
		c.log(kgo.LogLevelInfo, "dropped renewed records: their partition's leader moved, and their acquisition locks with it", "topic", tp.Topic, "partition", tp.Partition, "records", len(ks))
		c.wake()
	}
}

// unrenewLocked, for Close, takes back the renews the application recorded since the last Poll
// or commit, and drops the renewed records waiting for a Poll: renewing is pointless now, and
// the session's close releases them.
func (c *Consumer) unrenewLocked() {
	for _, cp := range c.inflight.parts {
		for i := range cp.recs {
			if r := &cp.recs[i]; r.acked && r.ty == acktype.Renew {
				r.acked = false
				c.inflight.unacked++
			}
		}
	}
	c.renews.Take(time.Now(), c.renews.Ready(), nil)
}

// dropRenewsLocked takes the renews out of the parts of Close's session-closing request,
// failing them: the session's close releases those records.
func (c *Consumer) dropRenewsLocked(j *ackJob, parts []*ackPart) []*ackPart {
	if !anyRenew(parts) {
		return parts
	}
	return c.failRenewsLocked(j, parts, kerr.NetworkException.Code, msgClosing+"; the share session's close releases the renewed records")
}

// releaseRenewedLocked releases every renewed record waiting for a Poll, for Unsubscribe.
func (c *Consumer) releaseRenewedLocked() {
	if c.renews.Ready() == 0 {
		return
	}
	es, _ := c.renews.Take(time.Now(), c.renews.Ready(), nil)
	for _, e := range es {
		c.pendingLocked(e.node, TopicPartition{e.rec.Topic, e.rec.Partition}, e.id).Add(e.rec.Offset, acktype.Release)
	}
}

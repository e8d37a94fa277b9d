package shareconsumer

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// defaultLockDuration is Kafka's default group.share.record.lock.duration.ms. A renew answered
// by a broker that reported no lock duration, to a consumer that never learnt one, counts its
// new deadline with it.
const defaultLockDuration = 30 * time.Second

// renewTicket is one renew sent in a request: the offset and the ticket its answer needs.
type renewTicket struct {
	off    int64
	ticket renewbuffer.Ticket
}

// gateRenew checks, for Acknowledge(r, Renew), that the leader r came from takes RENEW:
// ShareFetch v2 and ShareAcknowledge v2 in its ApiVersions (capped by kgo.MaxVersions). The
// consumer learns each leader's versions before its first ShareFetch there, so they are known
// for every record Poll returned; if they are not (a reconnection is being checked), the renew
// is recorded and the check is made again before it is sent.
func (c *Consumer) gateRenew(part *heldPart) error {
	v, ok := c.versions.Get(part.node)
	if !ok || v.SupportsRenew() {
		return nil
	}
	fetchMax, _ := v.Max(kmsg.ShareFetch)
	ackMax, _ := v.Max(kmsg.ShareAcknowledge)
	return fmt.Errorf("%w: broker %d, the leader %s/%d came from, supports ShareFetch v%d and ShareAcknowledge v%d; RENEW needs v2 of both (Kafka 4.2); nothing was recorded",
		errors.ErrUnsupportedAcknowledgeType, part.node, part.tp.Topic, part.tp.Partition, fetchMax, ackMax)
}

// pollRenews is the renewer of Poll's renews (renew-and-return): the ledger's renew buffer holds
// the records from the renew until a Poll returns them again. Its methods run with
// Consumer.mu held.
type pollRenews struct{ c *Consumer }

// renewSent records that the renews of p leave now.
func (r pollRenews) renewSent(p *ackPart, now time.Time) { r.c.ledger.renewSent(p, now) }

// renewAnswered applies the outcome of p's renews: on success they wait for a Poll, deadline
// counted from the send with the lock duration of the answer (or the last known one); on
// failure, or when they were never sent, they are dropped for good. A renewed record no Poll
// will return (the consumer unsubscribed, or Process runs) is released. It returns the records
// renewed and their deadline when a HookRenew wants them.
func (r pollRenews) renewAnswered(p *ackPart, err error, lockMs int32, now time.Time) ([]*Record, time.Time) {
	c := r.c
	d := defaultLockDuration
	switch {
	case lockMs > 0:
		d = time.Duration(lockMs) * time.Millisecond
	case c.locks.shown.ms > 0:
		d = c.locks.duration()
	}
	release := len(c.member.subscription) == 0 || c.poll.processing.Load()
	released, renewed, deadline := c.ledger.renewAnswered(p, err, d, release)
	for _, e := range released {
		s := c.sessions.get(e.part.node)
		s.addAck(e.part, e.rec.Offset, acktype.Release)
		s.flush(&c.acks, now)
	}
	c.poll.wake()
	return renewed, deadline
}

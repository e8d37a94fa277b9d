package shareconsumer

import (
	"context"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// DeadLetter is dead-lettering for Poll: it produces a copy of r, one of the records the last
// Poll returned, to the DeadLetterTopic given to New, as Process does (the same headers, cause's
// text in HeaderDeadLetterMessage; a nil cause gives errors.ErrDeadLetter's), and waits for the
// produce to be acknowledged (acks=all), until ctx ends or r's lock deadline (r.LockDeadline)
// passes, whichever comes first: a record whose lock ran out may be delivered elsewhere. It
// blocks the poll loop meanwhile, up to 30 seconds (the produce's timeout, retries included),
// and that time counts toward MaxPollInterval like any other work between Polls. Then:
//
//   - in explicit mode it acknowledges r ACCEPT, as Acknowledge(r, acktype.Accept) would (sent
//     with the next Poll or commit); when the produce fails it returns a *errors.DeadLetterError
//     and leaves r's acknowledgement as it was, for the caller to release (or to try again);
//   - in implicit mode it records RELEASE for r before it produces, so that a commit while the
//     copy is on its way (CommitAsync from another goroutine) cannot accept a record that has
//     no copy, and ACCEPT once the copy is in; the next Poll or commit sends it. When the
//     produce fails it returns a *errors.DeadLetterError and r stays released: delivered
//     again, or archived by the broker if that was its last delivery.
//
// Either way the ACCEPT is sent later: if r's lock runs out first, the broker refuses it (the
// OnAcknowledgementCommit callback, or CommitSync, reports INVALID_RECORD_STATE) and r is
// delivered again, and dead-lettering it again makes a second copy. Commit soon after
// DeadLetter (CommitAsync) to make that unlikely. When the copy was produced but r's
// acknowledgement had been sent meanwhile (that RELEASE was committed), it returns a
// *errors.DeadLetterError with Copied set, wrapping ErrCannotAcknowledge: the copy is in, and
// r comes back.
//
// It fails at once, doing nothing, with ErrClosed, with errors.ErrNoDeadLetterTopic when New had
// no DeadLetterTopic, and with ErrCannotAcknowledge for a record this consumer does not hold
// (a nil one, one of Process's, one whose acknowledgement was sent). A Close while the produce
// is on its way fails it with an error matching ErrClosed. Call it from the poll loop, between
// Polls; the hooks (HookDeadLetter) are told, as for Process's. Use DeliveryCountLimit to tell
// a record's last delivery (r.DeliveryCount >= the limit). Called twice for one record before
// the next Poll or commit, it produces two copies.
func (c *Consumer) DeadLetter(ctx context.Context, r *Record, cause error) error {
	if err := c.check(); err != nil {
		return err
	}
	topic := c.cfg.deadLetterTopic
	if topic == "" {
		return errors.ErrNoDeadLetterTopic
	}
	if r == nil || !c.ledger.holdsPolled(TopicPartition{r.Topic, r.Partition}, r.Offset) {
		return errors.ErrCannotAcknowledge
	}
	if !r.LockDeadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, r.LockDeadline)
		defer cancel()
	}
	tp := TopicPartition{r.Topic, r.Partition}
	if !c.cfg.explicit {
		// Released until the copy is in: a commit meanwhile must not accept the record.
		_, _ = c.ledger.acknowledge(tp, r.Offset, acktype.Release, false, nil)
	}
	if err := c.produceDeadLetter(ctx, topic, r, cause); err != nil {
		return err
	}
	if held, _ := c.ledger.acknowledge(tp, r.Offset, acktype.Accept, false, nil); !held {
		return &errors.DeadLetterError{DeadLetterTopic: topic, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Copied: true, Err: errors.ErrCannotAcknowledge}
	}
	return nil
}

// holdsPolled reports whether the record at tp/offset is one Poll returned whose
// acknowledgement was not taken for sending yet.
func (l *ledger) holdsPolled(tp TopicPartition, offset int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	pp := l.polled.get(tp)
	if pp == nil {
		return false
	}
	r := pp.find(offset)
	return r != nil && !r.undecodable
}

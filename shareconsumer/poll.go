package shareconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Poll returns the next records the consumer acquired, at most MaxPollRecords of them, waiting
// until some arrive, ctx ends, Wakeup is called (ErrWokenUp) or the consumer is closed
// (ErrClosed).
//
// When ctx ends first, the error is a *errors.PollTimeoutError wrapping ctx.Err(), so that
// errors.Is(err, context.DeadlineExceeded) (or context.Canceled) holds, with why nothing came
// (its Reason and Detail: no broker reachable and the last dial error with its address, no
// coordinator, a subscribed topic unknown or refused, no partitions assigned, nothing available
// in the assigned ones, a failed authentication); Status reports the same without polling.
//
// A Poll keeps the member in the group for MaxPollInterval after it returns; the first Poll
// after the member left for want of Polls rejoins the group.
//
// It first finishes with the records the previous Poll returned: implicit mode accepts every
// one the application left unacknowledged (a record given to DeadLetter goes as DeadLetter
// left it); explicit mode fails with ErrUnacknowledgedRecords,
// consuming nothing, while any is unacknowledged. Acknowledgements then travel on the ShareFetch
// this Poll sends to each record's partition leader; a Poll that sends none to a leader sends
// that leader's acknowledgements in a ShareAcknowledge. Their outcome goes to the
// OnAcknowledgementCommit callback, never to Poll's error.
//
// Records are fetched only for a waiting Poll: it sends one ShareFetch to each leader of the
// assigned partitions (one leader at a time with RecordLimitAcquire) and returns as soon as
// any records are in. Records beyond MaxPollRecords, and those that fetches still on their way
// bring in after it returned, are held for the next Poll, which returns them without fetching.
// A consumer that stops polling acquires nothing more. Held records whose lock has run out by
// the local estimate (Record.LockDeadline) are dropped rather than returned.
//
// Other errors: a *errors.FatalError once the coordinator refused the member for good (a
// broker's GROUP_AUTHORIZATION_FAILED among others), or does not serve share groups at all
// (kerr.UnsupportedVersion; close the consumer); ErrNotSubscribed; ErrConcurrentPoll;
// ErrProcessRunning; errors.ErrRecordLimitUnsupported, wrapped. Each of these is returned once,
// by the Poll after it happened: an *errors.AuthenticationError for a connect a broker refused
// to authenticate (at once, not when ctx ends; the consumer keeps trying), a
// *errors.CorruptBatchError, a *errors.PartitionError or a *errors.BrokerError for a ShareFetch
// the broker refused, and a *errors.TopicAuthorizationError for a topic the consumer may not
// read or describe (in a *errors.PartitionError from a ShareFetch, once per topic while it
// stays refused; bare from Metadata or the group coordinator's heartbeat); Status.TopicErrors
// lists the refused topics, and the consumer goes on with the others.
func (c *Consumer) Poll(ctx context.Context) ([]*Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(c.hooks.poll) == 0 {
		return c.pollUnclosed(ctx)
	}
	start := time.Now()
	recs, err := c.pollUnclosed(ctx)
	c.hooks.onPoll(recs, err, start)
	return recs, err
}

// pollUnclosed is Poll on a consumer not closed when Poll began.
func (c *Consumer) pollUnclosed(ctx context.Context) ([]*Record, error) {
	if c.poll.processing.Load() {
		return nil, errors.ErrProcessRunning
	}
	if !c.poll.polling.CompareAndSwap(false, true) {
		return nil, errors.ErrConcurrentPoll
	}
	defer c.poll.polling.Store(false)
	defer c.pollEnded()
	c.runCallbacks()
	recs, err := c.pollOnce(ctx)
	c.runCallbacks()
	return recs, err
}

func (c *Consumer) pollOnce(ctx context.Context) ([]*Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rejoinIfLeftLocked()
	if c.cfg.explicit {
		if c.ledger.unacked() > 0 {
			return nil, errors.ErrUnacknowledgedRecords
		}
	} else {
		c.ledger.acceptAll()
	}
	c.ledger.moveAcked(&c.sessions)
	if c.locks.shown.ms > 0 {
		c.locks.show(c.locks.next)
	}
	c.admit.pollSeq++
	defer c.flushUnfetchedLocked()
	if c.member.fatal != nil {
		return nil, c.member.fatal
	}
	select {
	case <-c.poll.wakeup:
		return nil, errors.ErrWokenUp
	default:
	}
	if len(c.member.subscription) == 0 {
		return nil, errors.ErrNotSubscribed
	}
	c.admit.waiting = true
	defer func() { c.admit.waiting = false }()
	for {
		switch {
		case c.life.closed.Load():
			return nil, errors.ErrClosed
		case c.member.fatal != nil:
			return nil, c.member.fatal
		}
		recs, corrupt, lock, dropped, renewed := c.ledger.take(time.Now(), c.cfg.maxPollRecords)
		if dropped > 0 {
			c.log(kgo.LogLevelInfo, "dropped held records whose acquisition lock ran out before they could be handed out", "records", dropped)
		}
		c.locks.show(lock)
		if renewed > 0 {
			c.locks.show(c.locks.next)
		}
		var err error
		if corrupt != nil {
			err = corrupt
		}
		if len(recs) > 0 {
			c.admit.returned++
		}
		if len(recs) > 0 || err != nil {
			return recs, err
		}
		if err := c.nextPollErrLocked(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, c.pollTimeoutLocked(err) // no fetch for a Poll that cannot wait for it
		}
		if err := c.awaitLocked(ctx, c.poll.wakeup); err != nil {
			// Records that arrived meanwhile are not lost: they wait for the next Poll.
			return nil, c.pollTimeoutLocked(err)
		}
	}
}

// nextPollErrLocked returns the error a Poll returns before waiting: one kept for it (each
// once), or that of a leader that cannot serve the consumer's acquire mode.
func (c *Consumer) nextPollErrLocked() error {
	if len(c.poll.errs) > 0 {
		err := c.poll.errs[0]
		c.poll.errs = c.poll.errs[1:]
		return err
	}
	for _, l := range c.member.leaders() {
		if s := c.sessions.byNode[l]; s != nil && s.unsupported != nil {
			return s.unsupported
		}
	}
	return nil
}

// awaitLocked sends the fetches wanted and waits, without the lock, until something a waiting
// Poll cares about happened (records, errors), or ctx ends (ctx.Err()), wakeup fires
// (ErrWokenUp; nil never fires) or Close starts (ErrClosed).
func (c *Consumer) awaitLocked(ctx context.Context, wakeup <-chan struct{}) error {
	c.kickLocked()
	c.mu.Unlock()
	defer c.mu.Lock()
	select {
	case <-c.poll.notify:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-wakeup:
		return errors.ErrWokenUp
	case <-c.life.closing:
		return errors.ErrClosed
	}
}

// Acknowledge records how the application dealt with r, one of the records the last Poll
// returned: acktype.Accept, Release or Reject, which are final, or acktype.Renew. The
// acknowledgement is sent with the next Poll (on the ShareFetch to r's leader) or commit; until
// then a later call for the same record replaces it. It fails with ErrImplicitMode unless the
// consumer was created with ExplicitAcknowledgement, with ErrCannotAcknowledge for a record this
// consumer is not holding (not returned by Poll, or its acknowledgement already sent), and with
// errors.ErrInvalidAcknowledgeType for acktype.Gap or an unknown type.
//
// Renew (KIP-1222) says "I need more time": the record stays this consumer's. The next Poll
// sends the renew (a ShareFetch with IsRenewAck, which brings no records) or the next commit
// does (a ShareAcknowledge with IsRenewAck), with any other acknowledgements for the same
// leader. Once the broker has renewed the lock, a Poll returns r again, the same *Record with the
// same DeliveryCount and a LockDeadline counted from when the renew was sent; until the
// application acknowledges it with a final type it comes back after every renew. A Poll with
// renewed records ready returns them first, and a Poll waiting for a renew's answer returns as
// soon as the answer is in. A failed renew (INVALID_RECORD_STATE because the lock had expired
// or renewing is disabled for the group, a session reset, a leader move) reaches the callback
// and CommitSync's result with its offset, and the record is never returned again: the broker
// delivers it anew, to this or another consumer.
//
// From Acknowledge(r, acktype.Renew) until a Poll returns r again, r belongs to the consumer:
// that Poll sets r.LockDeadline, so other goroutines must not read or write r meanwhile.
// Unsubscribe releases renewed records instead of returning them.
//
// Renew fails at once with errors.ErrUnsupportedAcknowledgeType, recording nothing, when r's
// partition leader does not support ShareFetch v2 and ShareAcknowledge v2 (Kafka 4.1 and
// older, by its ApiVersions, capped by kgo.MaxVersions); Accept, Release and Reject still work
// for r. Kafka's Java client fails such a renew only later, in the callback.
func (c *Consumer) Acknowledge(r *Record, t acktype.Type) error {
	if err := c.checkAck(t); err != nil {
		return err
	}
	if r == nil {
		return errors.ErrCannotAcknowledge
	}
	return c.acknowledge(TopicPartition{r.Topic, r.Partition}, r.Offset, t, false)
}

// AcknowledgeOffset acknowledges an offset Poll could not return as a record: one of the
// Offsets of a *errors.CorruptBatchError, which the consumer rejects on its own unless told
// otherwise here. Any other offset fails with ErrCannotAcknowledge, and acktype.Renew with
// errors.ErrInvalidAcknowledgeType, since there is no record to return again. Otherwise it
// behaves as Acknowledge.
func (c *Consumer) AcknowledgeOffset(topic string, partition int32, offset int64, t acktype.Type) error {
	if err := c.checkAck(t); err != nil {
		return err
	}
	if t == acktype.Renew {
		return fmt.Errorf("%w: an offset Poll could not return as a record cannot be renewed; accept, release or reject it", errors.ErrInvalidAcknowledgeType)
	}
	return c.acknowledge(TopicPartition{topic, partition}, offset, t, true)
}

func (c *Consumer) checkAck(t acktype.Type) error {
	if err := c.check(); err != nil {
		return err
	}
	if !c.cfg.explicit {
		return errors.ErrImplicitMode
	}
	if !t.Valid() {
		return fmt.Errorf("%w: %v", errors.ErrInvalidAcknowledgeType, t)
	}
	return nil
}

// acknowledge records t for a polled record: it takes the ledger's lock only.
func (c *Consumer) acknowledge(tp TopicPartition, offset int64, t acktype.Type, undecodable bool) error {
	var gate func(*heldPart) error
	if t == acktype.Renew {
		gate = c.gateRenew
	}
	held, err := c.ledger.acknowledge(tp, offset, t, undecodable, gate)
	if !held {
		return errors.ErrCannotAcknowledge
	}
	return err
}

// CommitSync sends every acknowledgement not sent yet in a ShareAcknowledge to each partition
// leader, and waits for the outcome: one entry per partition that had acknowledgements, nil
// for success, else a *errors.AckError (errors.Is works with the kerr code). In implicit mode it
// first accepts every record the last Poll returned. Acknowledgements an earlier Poll or
// CommitAsync sent whose answer has not come yet (on a ShareFetch that waits at a broker, or
// queued behind one) are part of the commit: when CommitSync returns, every acknowledgement
// recorded before it has its outcome. With nothing to wait for it returns an empty map at once.
//
// A partition refused with a retriable error is sent again until ctx ends, except for
// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID
// (the records' locks are gone). Acknowledgements cannot go to a leader whose share session is
// not open, or to the old leader of a partition that moved: those fail with NETWORK_EXCEPTION
// and NOT_LEADER_OR_FOLLOWER without being sent, as with Kafka's client. When ctx ends first,
// the partitions still waiting report REQUEST_TIMED_OUT; their acknowledgements are still
// delivered and the callback reports the broker's answer.
//
// The error is ErrClosed when nothing was done; ctx's end shows in the map.
func (c *Consumer) CommitSync(ctx context.Context) (map[TopicPartition]error, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.commitSync(ctx), nil
}

func (c *Consumer) commitSync(ctx context.Context) map[TopicPartition]error {
	c.runCallbacks()
	c.mu.Lock()
	if !c.cfg.explicit {
		c.ledger.acceptAll()
	}
	c.ledger.moveAcked(&c.sessions)
	w := newCommitWait(ctx)
	for _, s := range c.sessions.sorted() {
		// Acknowledgements an earlier Poll or CommitAsync sent, or queued behind a request in
		// flight, become part of this commit.
		if j := s.piggyback; j != nil && j.commit == nil {
			w.adopt(j)
		}
		if j := s.sending; j != nil && j.commit == nil && j.kind == jobAsync {
			w.adopt(j)
		}
		for _, j := range s.jobs {
			if j.kind == jobAsync {
				j.kind = jobSync
				w.adopt(j)
			}
		}
		if s.hasAcks() {
			s.enqueue(&ackJob{kind: jobSync, commit: w, parts: s.takeAcks(&c.acks, time.Now())})
		}
	}
	c.kickLocked()
	finished := w.remaining == 0
	c.mu.Unlock()
	if !finished {
		select {
		case <-w.done:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	out := make(map[TopicPartition]error, len(w.results))
	for tp, err := range w.results {
		out[tp] = err
	}
	for tp, p := range w.waiting {
		if p > 0 {
			out[tp] = timedOut(tp, w.offsets[tp], ctx)
		}
	}
	w.abandoned = true
	c.mu.Unlock()
	c.runCallbacks()
	return out
}

// CommitAsync sends every acknowledgement not sent yet in a ShareAcknowledge to each partition
// leader, without waiting; in implicit mode it first accepts every record the last Poll
// returned. The outcome reaches only the OnAcknowledgementCommit callback, run by a later
// Poll, commit or Close (and by this call, for outcomes already in).
func (c *Consumer) CommitAsync() {
	if c.check() != nil {
		return
	}
	c.runCallbacks()
	c.mu.Lock()
	if !c.cfg.explicit {
		c.ledger.acceptAll()
	}
	c.ledger.moveAcked(&c.sessions)
	c.sessions.flushAll(&c.acks, time.Now())
	c.kickLocked()
	c.mu.Unlock()
}

package shareconsumer

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// This file builds the hooks' events and calls the hooks (hooks.go has the API). Every call
// site tests its hooks' slice first, so that a consumer without hooks builds nothing; none is
// reached with Consumer.mu, ledger.mu or an inbox lock held: what is found under a lock is
// collected there and given to the hooks after unlocking.

// requestEvents collects, while the answer to one ShareFetch or ShareAcknowledge that carried
// acknowledgements is applied under Consumer.mu, what the HookAcknowledge and HookRenew hooks
// are told once the lock is let go. It is set on the request's job (ackJob.events) after the
// request was built, so that acknowledgements failed without being sent (a moved leader, a
// session being opened) are not in it; nil without such hooks.
type requestEvents struct {
	ack     AcknowledgeEvent
	wantAck bool
	renews  []RenewEvent
}

// newRequestEvents returns the collector of a request to leader, nil when no hook wants it.
func (h *hooks) newRequestEvents(leader int32, request string) *requestEvents {
	if len(h.acknowledge) == 0 && len(h.renew) == 0 {
		return nil
	}
	return &requestEvents{ack: AcknowledgeEvent{Leader: leader, Request: request}, wantAck: len(h.acknowledge) > 0}
}

// acked records the outcome of p, one partition's acknowledgements in the request.
func (ev *requestEvents) acked(p *ackPart, err error) {
	if !ev.wantAck {
		return
	}
	ap := AcknowledgedPartition{TopicPartition: p.tp, Err: err}
	for _, b := range p.batches {
		if len(b.Types) == 1 {
			if t := int(b.Types[0]); t >= 0 && t < len(ap.Records) {
				ap.Records[t] += int(b.LastOffset - b.FirstOffset + 1)
			}
			continue
		}
		for _, t := range b.Types {
			if int(t) >= 0 && int(t) < len(ap.Records) {
				ap.Records[t]++
			}
		}
	}
	ev.ack.Partitions = append(ev.ack.Partitions, ap)
}

// renewed records records whose locks the leader renewed until deadline. Records of one
// request share a deadline but for a request carrying renews of Poll's and of Process's
// records at once (their lock durations are reckoned apart), which gives two events.
func (ev *requestEvents) renewed(recs []*Record, deadline time.Time) {
	if n := len(ev.renews); n > 0 && ev.renews[n-1].LockDeadline.Equal(deadline) {
		ev.renews[n-1].Records = append(ev.renews[n-1].Records, recs...)
		return
	}
	ev.renews = append(ev.renews, RenewEvent{Leader: ev.ack.Leader, Records: recs, LockDeadline: deadline})
}

// requestErr is a request's failure as the hooks' events give it: the transport's error, or
// the answer's top-level error code.
func requestErr(err error, code int16, msg *string) error {
	if err != nil {
		return err
	}
	return errors.FromKafka(code, msg)
}

// fire calls the acknowledge and renew hooks with what ev collected; latency is the request's
// round trip and err its failure. A request whose acknowledgements all failed before it left
// calls nothing.
func (h *hooks) fireRequest(ev *requestEvents, latency time.Duration, err error) {
	if ev == nil {
		return
	}
	if ev.wantAck && len(ev.ack.Partitions) > 0 {
		ev.ack.Latency, ev.ack.Err = latency, err
		for _, x := range h.acknowledge {
			x.OnAcknowledge(ev.ack)
		}
	}
	for _, re := range ev.renews {
		for _, x := range h.renew {
			x.OnRenew(re)
		}
	}
}

// shareFetchEvent builds the event of a ShareFetch to leader: its answer resp (nil when err),
// the topic names it asked for, and the records decoded from it.
func shareFetchEvent(leader int32, resp *kmsg.ShareFetchResponse, err error, names map[[16]byte]string, decoded map[tidp]decodedPart, latency time.Duration) ShareFetchEvent {
	ev := ShareFetchEvent{Leader: leader, Latency: latency}
	if err != nil || resp == nil {
		ev.Err = err
		return ev
	}
	ev.AcquisitionLockTimeout = time.Duration(resp.AcquisitionLockTimeoutMillis) * time.Millisecond
	if resp.ErrorCode != 0 {
		ev.Err = errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		return ev
	}
	for _, t := range resp.Topics {
		name, known := names[t.TopicID]
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			ev.Bytes += len(rp.Records)
			if !known {
				continue // not asked for: its records are left to their locks' expiry
			}
			fp := FetchedPartition{TopicPartition: TopicPartition{name, rp.Partition}, Bytes: len(rp.Records)}
			switch d, ok := decoded[tidp{t.TopicID, rp.Partition}]; {
			case rp.ErrorCode != 0:
				fp.Err = errors.FromKafka(rp.ErrorCode, rp.ErrorMessage)
			case ok && d.invalid != nil:
				fp.Err = d.invalid
			case ok:
				for _, ch := range d.chunks {
					fp.Records += len(ch.recs)
				}
			}
			if fp.Records == 0 && fp.Err == nil {
				continue
			}
			ev.Records += fp.Records
			ev.Partitions = append(ev.Partitions, fp)
		}
	}
	return ev
}

func (h *hooks) onShareFetch(ev ShareFetchEvent) {
	for _, x := range h.shareFetch {
		x.OnShareFetch(ev)
	}
}

// onPoll calls the poll hooks for a Poll that started at start and returns recs, err. A Poll
// whose context ended returns a *errors.PollTimeoutError (never wrapped: a type assertion,
// which unlike errors.As costs no allocation per Poll); the event has no error then, as its
// doc says.
func (h *hooks) onPoll(recs []*Record, err error, start time.Time) {
	if _, timedOut := err.(*errors.PollTimeoutError); timedOut {
		err = nil
	}
	ev := PollEvent{Records: recs, Start: start, Duration: time.Since(start), Err: err}
	for _, x := range h.poll {
		x.OnPoll(ev)
	}
}

// startRecord chains the process-start hooks from the handler's context ctx.
func (h *hooks) startRecord(ctx context.Context, r *Record) context.Context {
	for _, x := range h.processStart {
		ctx = x.OnProcessStart(ctx, r)
	}
	return ctx
}

// fireLockLost gives the locks Process lost, which the ledger collected, to the hooks.
func (c *Consumer) fireLockLost() {
	if len(c.hooks.lockLost) == 0 {
		return
	}
	for _, ev := range c.ledger.takeLost() {
		for _, x := range c.hooks.lockLost {
			x.OnLockLost(ev)
		}
	}
}

// memberSnapshot is the membership the hooks were last told of.
type memberSnapshot struct {
	told     bool
	state    MemberState
	epoch    int32
	assigned []TopicPartition
	// cause is the heartbeat error of a change not told yet (fenced, fatal).
	cause error
}

// memberEventLocked returns the membership event to give the hooks when the membership
// changed since they were last told; false when it did not, or without HookMembership.
// Consumer.mu is held.
func (c *Consumer) memberEventLocked() (MembershipEvent, bool) {
	if len(c.hooks.membership) == 0 {
		return MembershipEvent{}, false
	}
	ms := &c.memberTold
	state := c.member.state(c.life.closed.Load())
	assigned := make([]TopicPartition, 0, len(c.member.assigned))
	for tp := range c.member.assigned {
		assigned = append(assigned, tp)
	}
	slices.SortFunc(assigned, compareTP)
	if ms.told && ms.state == state && ms.epoch == c.member.epoch && slices.Equal(ms.assigned, assigned) {
		ms.cause = nil // an error that changed nothing the hooks see
		return MembershipEvent{}, false
	}
	ev := MembershipEvent{Group: c.cfg.group, MemberID: c.member.memberID, State: state, MemberEpoch: c.member.epoch, Assigned: assigned, Err: ms.cause}
	*ms = memberSnapshot{told: true, state: state, epoch: c.member.epoch, assigned: slices.Clone(assigned)}
	return ev, true
}

// noteMembership tells the membership hooks of a change since they were last told, if any.
// memberHookMu keeps the calls one at a time and in the order of the changes, for the
// heartbeat and metadata goroutines that call this.
func (c *Consumer) noteMembership() {
	if len(c.hooks.membership) == 0 {
		return
	}
	c.memberHookMu.Lock()
	defer c.memberHookMu.Unlock()
	c.mu.Lock()
	ev, changed := c.memberEventLocked()
	c.mu.Unlock()
	if changed {
		for _, x := range c.hooks.membership {
			x.OnMembership(ev)
		}
	}
}

// lockMembership takes Consumer.mu for a change of the membership on the application's
// goroutine (Subscribe, Unsubscribe), and returns what lets it go: with HookMembership, it
// works out the event before letting go, so that the heartbeat cannot fold the change into a
// later one, and tells the hooks after.
func (c *Consumer) lockMembership() (unlock func()) {
	if len(c.hooks.membership) == 0 {
		c.mu.Lock()
		return c.mu.Unlock
	}
	c.memberHookMu.Lock()
	c.mu.Lock()
	return func() {
		ev, changed := c.memberEventLocked()
		c.mu.Unlock()
		defer c.memberHookMu.Unlock()
		if changed {
			for _, x := range c.hooks.membership {
				x.OnMembership(ev)
			}
		}
	}
}

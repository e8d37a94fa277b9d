package shareconsumer

import (
	stderrors "errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Unit tests of the lease (Process's extend-in-place locks) and of the ledger's worker calls,
// with the times passed in. The helpers start with "lt".

// ltT0 is when the tests' first records are acquired.
var ltT0 = time.Unix(1_000_000, 0)

// ltHolder records the lockLost calls of the entries it holds.
type ltHolder struct {
	mu   sync.Mutex
	lost []*errors.LockLostError
}

func (h *ltHolder) lockLost(err *errors.LockLostError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = append(h.lost, err)
}

// take returns the calls recorded since the last take.
func (h *ltHolder) take() []*errors.LockLostError {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.lost
	h.lost = nil
	return out
}

// ltLedger is a fresh ledger, its heldParts (topic "t", by node and partition) and the inboxes
// of its leaders' sessions.
type ltLedger struct {
	l       *ledger
	holder  *ltHolder
	parts   map[partKey]*heldPart
	inboxes map[int32]*ackInbox
}

func ltNew() *ltLedger {
	l := &ledger{}
	l.lease.epoch = ltT0.Add(-time.Hour)
	return &ltLedger{l: l, holder: &ltHolder{}, parts: map[partKey]*heldPart{}, inboxes: map[int32]*ackInbox{}}
}

func (lt *ltLedger) part(node, p int32) *heldPart {
	k := partKey{TopicPartition{"t", p}, node}
	hp := lt.parts[k]
	if hp == nil {
		in := lt.inboxes[node]
		if in == nil {
			in = &ackInbox{}
			lt.inboxes[node] = in
		}
		hp = &heldPart{tp: k.tp, id: [16]byte{1}, node: node, inbox: in, hi: -1}
		lt.parts[k] = hp
	}
	return hp
}

// ltRecs is one partition's records of a ShareFetch answer.
type ltRecs struct {
	p    int32
	offs []int64
}

// acquire acquires records from node, sent at sent and answered at sent+10ms.
func (lt *ltLedger) acquire(node int32, sent time.Time, lock time.Duration, renewable bool, rs ...ltRecs) []entry {
	var pps []poolPart
	for _, r := range rs {
		pp := poolPart{part: lt.part(node, r.p)}
		for _, o := range r.offs {
			pp.recs = append(pp.recs, &Record{Topic: "t", Partition: r.p, Offset: o})
		}
		pps = append(pps, pp)
	}
	return lt.l.acquire(node, pps, sent, lock, renewable, sent.Add(10*time.Millisecond), func(es []entry) {
		for i := range es {
			es[i].holder = lt.holder
		}
	})
}

// settle takes e out of the queue, runs it and settles it with t, publishing at once, as a
// worker does.
func (lt *ltLedger) settle(t *testing.T, e *entry, now time.Time, ty acktype.Type) {
	t.Helper()
	var b workerBatch
	require.True(t, lt.l.begin(e, lt.l.lease.mono(now)), "begin")
	b.unqueued++
	require.True(t, lt.l.finish(e), "finish")
	b.left++
	b.settled++
	b.acks = append(b.acks, inboxAck{e.part, e.rec.Offset, ty, e.rec.DeliveryCount})
	b.leave(lt.l, e)
	lt.l.publish(&b)
}

// acks takes the acknowledgements waiting in node's inbox.
func (lt *ltLedger) acks(node int32) []inboxAck {
	var out []inboxAck
	if in := lt.inboxes[node]; in != nil {
		out = append(out, in.swap(nil)...)
	}
	return out
}

// ltLost summarises lockLost calls: partition, offset and reason.
type ltLost struct {
	p      int32
	off    int64
	reason errors.LockLostReason
}

func ltLosses(errs []*errors.LockLostError) []ltLost {
	out := make([]ltLost, 0, len(errs))
	for _, e := range errs {
		out = append(out, ltLost{e.Partition, e.Offset, e.Reason})
	}
	slices.SortFunc(out, func(a, b ltLost) int {
		if a.p != b.p {
			return int(a.p - b.p)
		}
		return cmp64(a.off, b.off)
	})
	return out
}

// live reports whether the lease holds e's lock.
func ltLive(e *entry) bool {
	s := e.state.Load()
	return s == entryQueued || s == entryRunning
}

// retired reports whether the lease forgot a.
func ltRetired(l *lease, a *acquisition) bool {
	n := l.nodes[a.node.node]
	return n == nil || !slices.Contains(n.acqs, a)
}

// ltTimers returns the times in the lease's heap, sorted.
func ltTimers(l *lease) []time.Time {
	out := make([]time.Time, 0, len(l.timers))
	for _, t := range l.timers {
		out = append(out, t.at)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func TestLeaseMargin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		fixed, rtt, fw time.Duration
		lock, want     time.Duration
	}{
		{name: "a fifth of the lock at least", lock: 30 * time.Second, want: 6 * time.Second},
		{name: "four round trips and a fetch wait", rtt: 2 * time.Second, fw: 500 * time.Millisecond, lock: 30 * time.Second, want: 8500 * time.Millisecond},
		{name: "the fetch wait counts up to a quarter of the lock", fw: 20 * time.Second, lock: 30 * time.Second, want: 7500 * time.Millisecond},
		{name: "half the lock at most", rtt: 5 * time.Second, lock: 30 * time.Second, want: 15 * time.Second},
		{name: "short lock", rtt: 100 * time.Millisecond, lock: time.Second, want: 400 * time.Millisecond},
		{name: "short lock, slow round trips", rtt: 200 * time.Millisecond, lock: time.Second, want: 500 * time.Millisecond},
		{name: "RenewMargin", fixed: 3 * time.Second, rtt: 5 * time.Second, lock: 30 * time.Second, want: 3 * time.Second},
		{name: "RenewMargin, nine tenths of the lock at most", fixed: 40 * time.Second, lock: 30 * time.Second, want: 27 * time.Second},
	} {
		l := lease{fixedMargin: tc.fixed, rtt: tc.rtt, fetchWait: tc.fw}
		assert.Equal(t, tc.want, l.margin(tc.lock), tc.name)
	}

	// The round trip measured: its peak fades by an eighth per answer.
	var l lease
	l.observeRTT(800 * time.Millisecond)
	assert.Equal(t, 800*time.Millisecond, l.rtt)
	l.observeRTT(100 * time.Millisecond)
	assert.Equal(t, 700*time.Millisecond, l.rtt)
	l.observeRTT(time.Second)
	assert.Equal(t, time.Second, l.rtt)
}

func TestLeaseAcquire(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	l.maxHold = 10 * time.Minute
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2}}, ltRecs{1, []int64{7}})
	require.Len(t, es, 3)
	for i := range es {
		e := &es[i]
		assert.Equal(t, entryQueued, e.state.Load())
		assert.Equal(t, ltT0.Add(30*time.Second), e.deadline())
		assert.True(t, e.renewable())
		assert.Same(t, lt.holder, e.holder)
	}
	assert.Same(t, es[0].acq, es[2].acq, "one acquisition per answer")
	assert.Equal(t, int64(3), l.held.Load())
	assert.Equal(t, int64(3), l.queued.Load())
	assert.Equal(t, []time.Time{ltT0.Add(24 * time.Second), ltT0.Add(10 * time.Minute)}, ltTimers(l),
		"the renew at the deadline less the margin; MaxHold")

	// Without RENEW: the timer is the deadline; without a lock duration, none.
	es2 := lt.acquire(2, ltT0, 30*time.Second, false, ltRecs{0, []int64{1}})
	assert.False(t, es2[0].renewable())
	es3 := lt.acquire(3, ltT0, 0, true, ltRecs{0, []int64{1}})
	assert.True(t, es3[0].deadline().IsZero())
	assert.Equal(t, []time.Time{ltT0.Add(24 * time.Second), ltT0.Add(30 * time.Second),
		ltT0.Add(10 * time.Minute), ltT0.Add(10 * time.Minute), ltT0.Add(10 * time.Minute)}, ltTimers(l))
	assert.Nil(t, lt.acquire(1, ltT0, 30*time.Second, true), "nothing acquired")

	ev := lt.l.due(ltT0.Add(time.Second))
	assert.Empty(t, ev.renew)
	assert.Equal(t, ltT0.Add(24*time.Second), ev.next)
}

func TestLeaseDueAsksOneRenewPerLeader(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	lock := 30 * time.Second // margin 6s
	a1 := lt.acquire(1, ltT0, lock, true, ltRecs{0, []int64{1}})
	a2 := lt.acquire(1, ltT0.Add(time.Second), lock, true, ltRecs{0, []int64{2}})
	b1 := lt.acquire(2, ltT0, lock, true, ltRecs{1, []int64{1}})

	ev := lt.l.due(ltT0.Add(24*time.Second - 1))
	assert.Empty(t, ev.renew)
	assert.Equal(t, ltT0.Add(24*time.Second), ev.next)

	ev = lt.l.due(ltT0.Add(24 * time.Second))
	assert.ElementsMatch(t, []int32{1, 2}, ev.renew, "the first group due asks for its leader's renew")
	assert.Equal(t, ltT0.Add(25*time.Second), ev.next, "a2's renew time")
	ev = lt.l.due(ltT0.Add(25 * time.Second))
	assert.Empty(t, ev.renew, "once per leader until it is sent")
	assert.Equal(t, ltT0.Add(30*time.Second), ev.next, "the locks' end, if no renew goes out")
	assert.Empty(t, lt.holder.take())

	// No renew went out: the locks run out at their deadlines.
	ev = lt.l.due(ltT0.Add(30 * time.Second))
	assert.Empty(t, ev.renew)
	assert.Equal(t, []ltLost{{0, 1, errors.LockDeadlinePassed}, {1, 1, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()))
	assert.False(t, ltLive(&a1[0]))
	assert.False(t, ltLive(&b1[0]))
	assert.True(t, ltLive(&a2[0]), "a2's lock runs a second longer")
	assert.Equal(t, ltT0.Add(31*time.Second), ev.next)
	ev = lt.l.due(ltT0.Add(31 * time.Second))
	assert.Equal(t, []ltLost{{0, 2, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()))
	assert.True(t, ev.next.IsZero())
	assert.Empty(t, l.timers)

	// Lost while queued: counted as held and queued until a worker takes them out.
	assert.Equal(t, int64(3), l.held.Load())
	assert.Equal(t, int64(3), l.queued.Load())
	assert.Zero(t, l.renewFailures.Load())
}

func TestLeaseRenewInFlightGivesUpAtDeadlinePlusHalfTheLock(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2}})
	require.Equal(t, []int32{1}, lt.l.due(ltT0.Add(24*time.Second)).renew)
	parts := lt.l.renewParts(1, ltT0.Add(25*time.Second))
	require.Len(t, parts, 1)

	ev := lt.l.due(ltT0.Add(30 * time.Second))
	assert.Empty(t, lt.holder.take(), "the renew's answer decides")
	assert.Equal(t, ltT0.Add(45*time.Second), ev.next)
	assert.True(t, lt.l.begin(&es[0], l.mono(ltT0.Add(40*time.Second))), "not expired while a renew is on its way")

	lt.l.due(ltT0.Add(45*time.Second - 1))
	assert.Empty(t, lt.holder.take())
	ev = lt.l.due(ltT0.Add(45 * time.Second))
	assert.Equal(t, []ltLost{{0, 1, errors.LockDeadlinePassed}, {0, 2, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()))
	assert.True(t, ev.next.IsZero())
	assert.Equal(t, int64(1), l.held.Load(), "the running one left the count; the queued one waits for a worker")
	assert.Empty(t, l.timers)

	// A late answer finds nothing to renew.
	parts[0].renewOf.renewAnswered(parts[0], nil, 0, ltT0.Add(46*time.Second))
	assert.Empty(t, lt.holder.take())
	assert.False(t, ltLive(&es[1]))
	assert.Empty(t, l.timers)
}

func TestLeaseWithoutRenewTheLockRunsOutAtItsDeadline(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	es := lt.acquire(1, ltT0, 30*time.Second, false, ltRecs{0, []int64{1}})
	ev := lt.l.due(ltT0.Add(24 * time.Second))
	assert.Empty(t, ev.renew, "no renew possible")
	assert.Equal(t, ltT0.Add(30*time.Second), ev.next)
	assert.Nil(t, lt.l.renewParts(1, ltT0.Add(24*time.Second)))
	lt.l.due(ltT0.Add(30*time.Second - 1))
	assert.True(t, ltLive(&es[0]))
	lt.l.due(ltT0.Add(30 * time.Second))
	assert.Equal(t, []ltLost{{0, 1, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()))
}

// TestLeaseLeaderLosingRenewLosesLocksAtTheirDeadline: a leader that stops taking RENEW (a
// broker replaced by an older one) makes its records unrenewable; those acquired before keep
// their locks until their deadline, as due's doc says ("one whose lock ran out ... loses its
// records"), not until their renew time.
func TestLeaseLeaderLosingRenewLosesLocksAtTheirDeadline(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1}})
	lt.acquire(1, ltT0.Add(time.Second), 30*time.Second, false, ltRecs{0, []int64{2}})
	ev := lt.l.due(ltT0.Add(24 * time.Second))
	assert.Empty(t, ev.renew)
	assert.Empty(t, ltLosses(lt.holder.take()), "its lock runs 6s more: not lost at its renew time")
	assert.True(t, ltLive(&es[0]))
	lt.l.due(ltT0.Add(30 * time.Second))
	assert.Contains(t, ltLosses(lt.holder.take()), ltLost{0, 1, errors.LockDeadlinePassed})
}

func TestLeaseMaxHold(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	l.maxHold = 10 * time.Second
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2, 3}})
	lt.settle(t, &es[0], ltT0.Add(time.Second), acktype.Accept)
	require.True(t, lt.l.begin(&es[1], l.mono(ltT0.Add(2*time.Second))))

	lt.l.due(ltT0.Add(10*time.Second - 1))
	assert.Empty(t, lt.holder.take())
	ev := lt.l.due(ltT0.Add(10 * time.Second))
	assert.Equal(t, []ltLost{{0, 2, errors.LockMaxHoldReached}, {0, 3, errors.LockMaxHoldReached}}, ltLosses(lt.holder.take()),
		"the live records, not the settled one")
	assert.True(t, ev.next.IsZero())
	assert.True(t, ltRetired(l, es[0].acq), "nothing left of the acquisition")
	assert.Empty(t, l.timers)
	assert.Equal(t, int64(1), l.held.Load(), "the queued one, until a worker takes it out")
	assert.False(t, lt.l.begin(&es[2], l.mono(ltT0.Add(11*time.Second))))
}

func TestLeaseRenewParts(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	now := ltT0.Add(20 * time.Second)
	a1 := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{1, []int64{10, 11, 12}}, ltRecs{0, []int64{4}})
	a2 := lt.acquire(1, ltT0.Add(time.Second), 40*time.Second, true, ltRecs{0, []int64{1, 2}}, ltRecs{1, []int64{13}})
	other := lt.acquire(2, ltT0, 30*time.Second, true, ltRecs{0, []int64{1}})
	lt.settle(t, &a1[1], ltT0.Add(time.Second), acktype.Accept) // 1/11
	lt.l.loseOne(&a2[1], errors.LockDeadlinePassed)             // 0/2
	require.True(t, lt.l.begin(&a2[2], l.mono(ltT0.Add(2*time.Second))))
	require.Len(t, l.timers, 3)

	parts := lt.l.renewParts(1, now)
	require.Len(t, parts, 2)
	type got struct {
		tp    TopicPartition
		offs  []int64
		types map[int64]acktype.Type
	}
	var gots []got
	for _, p := range parts {
		assert.True(t, p.renews)
		assert.True(t, p.quiet, "not the callback's business")
		assert.NotNil(t, p.renewOf)
		assert.Equal(t, [16]byte{1}, p.id)
		checkBatches(t, p.batches)
		gots = append(gots, got{p.tp, p.allOffsets(), batchTypes(p.batches)})
	}
	assert.Equal(t, TopicPartition{"t", 0}, gots[0].tp, "partition order")
	assert.Equal(t, []int64{1, 4}, gots[0].offs, "offset order, live records only")
	assert.Equal(t, TopicPartition{"t", 1}, gots[1].tp)
	assert.Equal(t, []int64{10, 12, 13}, gots[1].offs)
	for _, g := range gots {
		for _, ty := range g.types {
			assert.Equal(t, acktype.Renew, ty)
		}
	}

	g := a1[0].acq.group.Load()
	assert.Same(t, g, a2[0].acq.group.Load(), "every acquisition of the leader joins one group")
	assert.NotSame(t, g, other[0].acq.group.Load())
	assert.Len(t, g.acqs, 2)
	assert.True(t, g.renewing.Load())
	assert.Equal(t, 40*time.Second, g.lock, "the longest lock")
	assert.Equal(t, ltT0.Add(30*time.Second), a1[0].deadline(), "the earliest deadline")
	assert.Equal(t, []time.Time{ltT0.Add(24 * time.Second), ltT0.Add(50 * time.Second)}, ltTimers(l),
		"the other leader's renew; the renew's end: earliest deadline + lock/2; the old groups are out")
	for _, e := range []*entry{&a1[0], &a1[2], &a1[3], &a2[0], &a2[2]} {
		assert.Equal(t, int32(1), e.renewsSent.Load())
		assert.Same(t, g, e.lastRenew.Load())
	}
	assert.Zero(t, a1[1].renewsSent.Load(), "settled")
	assert.Zero(t, a2[1].renewsSent.Load(), "lost")
	assert.Zero(t, l.renewRequests.Load(), "counted when sent, not when built")
	lt.l.renewSentOut()
	assert.Equal(t, uint64(1), l.renewRequests.Load())

	assert.Nil(t, lt.l.renewParts(9, now), "no records from that leader")
	lt.l.loseNode(2, errors.LockSessionReset)
	assert.Nil(t, lt.l.renewParts(2, now), "nothing live")
	lt.acquire(3, ltT0, 30*time.Second, false, ltRecs{0, []int64{1}})
	assert.Nil(t, lt.l.renewParts(3, now), "no RENEW")
	assert.Equal(t, uint64(1), l.renewRequests.Load())
}

func TestLeaseRenewAnsweredSuccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lockMs int32
		want   time.Time
	}{
		{name: "the lock known", want: ltT0.Add(24*time.Second + 30*time.Second)},
		{name: "the answer's lock", lockMs: 40_000, want: ltT0.Add(24*time.Second + 40*time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lt := ltNew()
			l := &lt.l.lease
			es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2}}, ltRecs{1, []int64{5}})
			sent := ltT0.Add(24 * time.Second)
			parts := lt.l.renewParts(1, sent)
			require.Len(t, parts, 2)
			for i := range es {
				assert.Zero(t, es[i].renews(), "not confirmed yet")
			}
			lt.settle(t, &es[0], sent.Add(100*time.Millisecond), acktype.Accept) // settled before the answer

			answered := sent.Add(500 * time.Millisecond)
			for _, p := range parts {
				p.renewOf.renewAnswered(p, nil, tc.lockMs, answered)
			}
			assert.Empty(t, lt.holder.take())
			assert.Equal(t, uint64(3), l.renewed.Load(), "every offset renewed, the one settled since included")
			assert.Equal(t, 500*time.Millisecond, l.rtt)
			for i := range es {
				assert.Equal(t, tc.want, es[i].deadline(), "from when the renew was sent")
				assert.Equal(t, 1, es[i].renews())
			}
			g := es[1].acq.group.Load()
			assert.False(t, g.renewing.Load())
			assert.True(t, g.renewed.Load())
			margin := l.margin(g.lock)
			assert.Equal(t, []time.Time{tc.want.Add(-margin)}, ltTimers(l), "the next renew")

			// The next renew covers them again; until its answer, one renew counts.
			require.Len(t, lt.l.renewParts(1, tc.want.Add(-margin)), 2)
			assert.Equal(t, 1, es[1].renews())
			assert.Equal(t, int32(2), es[1].renewsSent.Load())
			assert.Equal(t, 1, es[0].renews(), "settled before the second renew")
		})
	}
}

func TestLeaseRenewAnsweredFailure(t *testing.T) {
	t.Parallel()
	ackErr := func(err error) error {
		return &errors.AckError{Topic: "t", Partition: 1, Offsets: []int64{5, 6}, Err: err, Message: "no"}
	}
	for _, tc := range []struct {
		name    string
		err     error
		reason  errors.LockLostReason
		counted bool // in renewFailures
	}{
		{name: "INVALID_RECORD_STATE", err: ackErr(kerr.InvalidRecordState), reason: errors.LockInvalidRecordState, counted: true},
		{name: "NETWORK_EXCEPTION", err: ackErr(kerr.NetworkException), reason: errors.LockSessionReset},
		{name: "NOT_LEADER_OR_FOLLOWER", err: ackErr(kerr.NotLeaderForPartition), reason: errors.LockLeaderMoved, counted: true},
		{name: "FENCED_LEADER_EPOCH", err: ackErr(kerr.FencedLeaderEpoch), reason: errors.LockLeaderMoved, counted: true},
		{name: "UNKNOWN_TOPIC_OR_PARTITION", err: ackErr(kerr.UnknownTopicOrPartition), reason: errors.LockLeaderMoved, counted: true},
		{name: "UNKNOWN_TOPIC_ID", err: ackErr(kerr.UnknownTopicID), reason: errors.LockLeaderMoved, counted: true},
		{name: "UNSUPPORTED_VERSION", err: ackErr(kerr.UnsupportedVersion), reason: errors.LockRenewRefused, counted: true},
		{name: "not an AckError", err: stderrors.New("boom"), reason: errors.LockRenewRefused, counted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lt := ltNew()
			l := &lt.l.lease
			es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2}}, ltRecs{1, []int64{5, 6}})
			require.True(t, lt.l.begin(&es[2], l.mono(ltT0.Add(time.Second))))
			parts := lt.l.renewParts(1, ltT0.Add(24*time.Second))
			require.Len(t, parts, 2)
			require.Equal(t, TopicPartition{"t", 1}, parts[1].tp)

			parts[1].renewOf.renewAnswered(parts[1], tc.err, 0, ltT0.Add(25*time.Second))
			lost := lt.holder.take()
			assert.Equal(t, []ltLost{{1, 5, tc.reason}, {1, 6, tc.reason}}, ltLosses(lost), "only that partition's records")
			for _, e := range lost {
				assert.Same(t, tc.err, e.Err, "the renew's outcome")
			}
			assert.True(t, ltLive(&es[0]) && ltLive(&es[1]))
			want := uint64(0)
			if tc.counted {
				want = 2
			}
			assert.Equal(t, want, l.renewFailures.Load())
			assert.Equal(t, int64(3), l.held.Load(), "the running one left the count")

			// The other partition's renew succeeds.
			parts[0].renewOf.renewAnswered(parts[0], nil, 0, ltT0.Add(25*time.Second))
			assert.Equal(t, ltT0.Add(54*time.Second), es[0].deadline())
			assert.Empty(t, lt.holder.take())
		})
	}
}

func TestLeaseLoseNodeAndPartition(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	a := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1}}, ltRecs{1, []int64{1}})
	b := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{1, []int64{2}})
	c := lt.acquire(2, ltT0, 30*time.Second, true, ltRecs{1, []int64{3}})
	require.True(t, lt.l.begin(&b[0], l.mono(ltT0)))

	lt.l.losePartition(1, TopicPartition{"t", 1})
	assert.Equal(t, []ltLost{{1, 1, errors.LockLeaderMoved}, {1, 2, errors.LockLeaderMoved}}, ltLosses(lt.holder.take()))
	assert.True(t, ltLive(&a[0]))
	assert.True(t, ltLive(&c[0]), "the same partition from another leader")
	assert.True(t, ltRetired(l, b[0].acq))
	assert.False(t, ltRetired(l, a[0].acq))
	assert.Equal(t, int64(3), l.held.Load())

	lt.l.losePartition(9, TopicPartition{"t", 1})
	lt.l.loseNode(9, errors.LockSessionReset)
	assert.Empty(t, lt.holder.take(), "no records from that leader")

	lt.l.loseNode(1, errors.LockSessionReset)
	assert.Equal(t, []ltLost{{0, 1, errors.LockSessionReset}}, ltLosses(lt.holder.take()))
	assert.True(t, ltRetired(l, a[0].acq))
	assert.True(t, ltLive(&c[0]))
	assert.Len(t, l.timers, 1, "only node 2's group is left")
	lt.l.loseNode(1, errors.LockSessionReset)
	assert.Empty(t, lt.holder.take(), "lost once")
}

func TestLeaseRedeliveryLosesTheEarlierDelivery(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	first := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{5, 6, 7}})
	require.True(t, lt.l.begin(&first[1], l.mono(ltT0)))
	again := lt.acquire(1, ltT0.Add(31*time.Second), 30*time.Second, true, ltRecs{0, []int64{6, 8}}, ltRecs{1, []int64{5}})
	assert.Equal(t, []ltLost{{0, 6, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()), "only the offset delivered again, on that partition")
	assert.True(t, ltLive(&first[0]))
	assert.True(t, ltLive(&first[2]))
	for i := range again {
		assert.True(t, ltLive(&again[i]))
	}
	assert.Equal(t, int64(5), l.held.Load(), "3 + 3, less the running one lost")
	assert.Equal(t, int64(6), l.queued.Load(), "the worker counted nothing out of the queue yet")

	// Another leader's records of the same partition are not that leader's to lose.
	lt.acquire(2, ltT0.Add(31*time.Second), 30*time.Second, true, ltRecs{0, []int64{5}})
	assert.Empty(t, lt.holder.take())
}

func TestLeaseRetire(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	l.maxHold = time.Minute
	a := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2}})
	b := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{3}})
	require.Len(t, l.timers, 4)

	// One worker settles a's first record and b's, switching acquisitions before it publishes.
	var w workerBatch
	for _, e := range []*entry{&a[0], &b[0]} {
		require.True(t, lt.l.begin(e, l.mono(ltT0)))
		w.unqueued++
		require.True(t, lt.l.finish(e))
		w.left++
		w.settled++
		w.acks = append(w.acks, inboxAck{e.part, e.rec.Offset, acktype.Accept, e.rec.DeliveryCount})
		w.leave(lt.l, e)
	}
	assert.Equal(t, int32(1), a[0].acq.done.Load(), "counted when the worker moved on")
	assert.False(t, ltRetired(l, a[0].acq))
	assert.False(t, ltRetired(l, b[0].acq), "counted when the worker publishes")
	lt.l.publish(&w)
	assert.True(t, ltRetired(l, b[0].acq))
	assert.Len(t, l.timers, 2, "b's group and MaxHold are out of the heap")
	assert.Equal(t, []inboxAck{{a[0].part, 1, acktype.Accept, 0}, {b[0].part, 3, acktype.Accept, 0}}, lt.acks(1))

	lt.l.loseOne(&a[1], errors.LockDeadlinePassed)
	assert.True(t, ltRetired(l, a[0].acq), "the last record of a left")
	assert.Empty(t, l.timers)
	assert.Empty(t, l.nodes[1].acqs)
	ev := lt.l.due(ltT0.Add(time.Hour))
	assert.True(t, ev.next.IsZero())
	assert.Empty(t, ev.renew)
}

func TestLeaseBeginRefusesARecordWhoseLockRanOut(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2, 3, 4}})
	dl := ltT0.Add(30 * time.Second)

	assert.True(t, lt.l.begin(&es[0], l.mono(dl.Add(-1))), "before the deadline")
	assert.Equal(t, entryRunning, es[0].state.Load())
	assert.False(t, lt.l.begin(&es[1], l.mono(dl)), "at the deadline with no renew on its way")
	assert.Equal(t, entryLost, es[1].state.Load())
	assert.Equal(t, []ltLost{{0, 2, errors.LockDeadlinePassed}}, ltLosses(lt.holder.take()))
	assert.False(t, lt.l.begin(&es[1], l.mono(ltT0)), "lost is lost")

	require.NotNil(t, lt.l.renewParts(1, dl.Add(time.Second)))
	assert.True(t, lt.l.begin(&es[2], l.mono(dl.Add(2*time.Second))), "a renew is on its way")
	assert.Empty(t, lt.holder.take())

	assert.Equal(t, int64(4), l.held.Load(), "the worker counts begin's records out of the queue, and lost queued ones out of the held")
	assert.Equal(t, int64(4), l.queued.Load())
	assert.Equal(t, 0, es[2].renews())
	assert.Equal(t, int32(1), es[2].renewsSent.Load())
}

func TestLedgerFinishReleasePublishCounts(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	es := lt.acquire(1, ltT0, 30*time.Second, true, ltRecs{0, []int64{1, 2, 3, 4, 5}})
	now := l.mono(ltT0.Add(time.Second))
	var w workerBatch

	// 1: settled from its handler's answer.
	require.True(t, lt.l.begin(&es[0], now))
	w.unqueued++
	require.True(t, lt.l.finish(&es[0]))
	assert.Equal(t, entrySettled, es[0].state.Load())
	assert.False(t, lt.l.finish(&es[0]), "once")
	w.left++
	w.settled++
	w.acks = append(w.acks, inboxAck{es[0].part, 1, acktype.Reject, 0})
	w.leave(lt.l, &es[0])
	assert.Equal(t, int64(5), l.held.Load(), "unpublished: counted as held longer, never shorter")
	assert.Equal(t, int64(5), l.queued.Load())
	assert.Empty(t, lt.acks(1))

	// 2: lost while its handler ran: finish refuses it; it left the held count when lost.
	require.True(t, lt.l.begin(&es[1], now))
	w.unqueued++
	lt.l.loseOne(&es[1], errors.LockLeaderMoved)
	assert.False(t, lt.l.finish(&es[1]))
	assert.Equal(t, int64(4), l.held.Load())

	// 3: lost while queued: the worker takes it out of both counts.
	lt.l.loseOne(&es[2], errors.LockLeaderMoved)
	assert.Equal(t, int64(4), l.held.Load())
	assert.False(t, lt.l.begin(&es[2], now))
	w.unqueued++
	w.left++

	lt.l.publish(&w)
	assert.Equal(t, workerBatch{acks: w.acks}, w, "emptied")
	assert.Equal(t, int64(2), l.held.Load())
	assert.Equal(t, int64(2), l.queued.Load())
	assert.Equal(t, uint64(1), l.settled.Load())
	assert.Equal(t, []inboxAck{{es[0].part, 1, acktype.Reject, 0}}, lt.acks(1))
	assert.Equal(t, int32(3), es[0].acq.done.Load())

	// 4: released by shutdown; 5: lost, then released: nothing to acknowledge.
	assert.True(t, lt.l.release(&es[3]))
	lt.l.loseOne(&es[4], errors.LockSessionReset)
	assert.False(t, lt.l.release(&es[4]))
	assert.Zero(t, l.held.Load())
	assert.Zero(t, l.queued.Load())
	assert.Equal(t, uint64(2), l.settled.Load())
	assert.Equal(t, []inboxAck{{es[3].part, 4, acktype.Release, 0}}, lt.acks(1))
	assert.True(t, ltRetired(l, es[0].acq))
	assert.Empty(t, l.timers)
	assert.Len(t, lt.holder.take(), 3)

	// A publish with nothing in it changes nothing.
	lt.l.publish(&w)
	assert.Zero(t, l.held.Load())
}

// TestLeaseRenewGivesUpAfterTheDeadlineOfTheRecordsItRenews: a renew in flight gives up at the
// deadline of the records it renews plus half the lock. An acquisition with nothing live left,
// not retired yet because a worker has not published the record it settled (a worker that
// went on to a slow handler), must not bring that forward: its deadline may be long past, and
// the records the renew covers would be lost at once, renew or not.
func TestLeaseRenewGivesUpAfterTheDeadlineOfTheRecordsItRenews(t *testing.T) {
	t.Parallel()
	lt := ltNew()
	l := &lt.l.lease
	lock := 30 * time.Second
	a := lt.acquire(1, ltT0, lock, true, ltRecs{0, []int64{1, 2}})

	// A worker settles a's first record and moves on to a slow handler before it publishes;
	// another worker settles the second.
	var w workerBatch
	require.True(t, lt.l.begin(&a[0], l.mono(ltT0.Add(time.Second))))
	w.unqueued++
	require.True(t, lt.l.finish(&a[0]))
	w.left++
	w.settled++
	w.acks = append(w.acks, inboxAck{a[0].part, 1, acktype.Accept, 0})
	w.leave(lt.l, &a[0])
	lt.settle(t, &a[1], ltT0.Add(time.Second), acktype.Accept)
	require.False(t, ltRetired(l, a[0].acq), "the worker has not published")

	// a's lock runs out with nothing live; records come from the leader again later.
	lt.l.due(ltT0.Add(30 * time.Second))
	b := lt.acquire(1, ltT0.Add(40*time.Second), lock, true, ltRecs{0, []int64{3}})
	require.Equal(t, []int32{1}, lt.l.due(ltT0.Add(64*time.Second)).renew)
	parts := lt.l.renewParts(1, ltT0.Add(64*time.Second))
	require.Len(t, parts, 1)
	assert.Equal(t, []int64{3}, parts[0].allOffsets())

	ev := lt.l.due(ltT0.Add(64*time.Second + time.Millisecond))
	assert.Empty(t, ltLosses(lt.holder.take()), "b's lock runs until 70s, and its renew is on its way")
	assert.True(t, ltLive(&b[0]))
	assert.Equal(t, ltT0.Add(85*time.Second), ev.next, "b's deadline plus half the lock")

	lt.l.publish(&w)
	assert.True(t, ltRetired(l, a[0].acq))
}

package shareconsumer

import (
	"container/heap"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// lease keeps the locks of the records acquired for Process alive (extend-in-place): it renews
// them before they run out, and gives them up when they cannot be renewed. It is part of the
// ledger and guarded by its lock; it reads no clock, every call takes the time it is made at.
//
// Records are kept as they came: an acquisition is the records one ShareFetch answer brought
// from a leader, acquired at one moment under one lock duration. Their deadline is a lease
// group's: at first each acquisition's own, and once the leader's records are renewed, the
// renew's, shared by every record it covered. All records of a leader are renewed in one
// request when the first of them is due, so a leader has one group per renew interval plus one
// per acquisition since the last renew. A timer heap orders the groups' next events (renew due,
// lock lost) and the acquisitions' MaxHold ends; so a record settled, a renew answered or an
// event costs O(log n) in the number of groups and acquisitions, or O(1), never a walk of every
// record held. A record delivered again while an earlier delivery may still be held is looked
// up in its partition's runs of records (heldPart.segs): O(acquisitions holding records of the
// partition). Walks happen only where every record walked must be touched anyway: building a
// renew request (it lists them), and losing the locks of a group, a session or a partition.
type lease struct {
	// epoch is what the lease's times count from (monotonic nanoseconds, so that a worker reads
	// the clock at the cost of time.Since): an hour before the consumer was created, so that
	// every time is above 0, which stands for none.
	epoch time.Time

	fixedMargin time.Duration // RenewMargin; 0 derives the margin
	fetchWait   time.Duration // the longest a renew may queue behind a ShareFetch
	maxHold     time.Duration
	rtt         time.Duration // the longest renew round trip measured, decaying

	nodes  map[int32]*nodeLease
	timers timerHeap

	// held counts the records acquired for Process and not settled or lost; queued, those of
	// them no worker took yet. Workers change them without the ledger's lock.
	held, queued atomic.Int64
	// settled counts the records settled from a handler's answer or released unhandled.
	settled atomic.Uint64
	// renewRequests counts the requests that renewed locks; renewed, the locks the brokers
	// renewed, whether or not the handler had answered by then; renewFailures, the locks lost
	// because a broker refused their renew.
	renewRequests, renewed, renewFailures atomic.Uint64

	// hookLost: a HookLockLost is set, and lost collects the locks lost for it, which
	// ledger.takeLost hands over once the locks are let go.
	hookLost bool
	lost     []LockLostEvent
}

// entry is one record acquired for Process.
type entry struct {
	rec  *Record
	part *heldPart
	acq  *acquisition
	// state is where the record is (entryQueued, ...); the one that moves it out of
	// entryQueued or entryRunning owns the outcome.
	state atomic.Uint32
	// renewsSent counts the renews sent for it; lastRenew is the group of the last one, whose
	// answer decides whether it counts.
	renewsSent atomic.Int32
	lastRenew  atomic.Pointer[leaseGroup]
	// lost is why its lock was lost, set before its state says so.
	lost   atomic.Pointer[errors.LockLostError]
	holder lockHolder
}

// The states of an entry.
const (
	entryQueued  uint32 = iota + 1 // acquired, waiting for a worker
	entryRunning                   // a worker's handler has it
	entrySettled                   // acknowledged from the handler's answer, or released unhandled
	entryLost                      // its lock was lost: nothing will be acknowledged for it
)

// lockHolder is told when a record's lock is lost: Process cancels the handler's context.
type lockHolder interface {
	lockLost(err *errors.LockLostError)
}

// acquisition is the records one ShareFetch answer from a leader brought for Process.
type acquisition struct {
	node      *nodeLease
	renewable bool // its leader takes RENEW and renewal is on, when it was acquired
	entries   []entry
	segs      []segRef // its runs of records, one per partition it holds records of
	done      atomic.Int32
	group     atomic.Pointer[leaseGroup]
	at        int // position in node.acqs
	inGroup   int // position in its group's acqs
	hold      timer
}

// partSeg is a run of one partition's records in an acquisition: entries lo to hi, in offset
// order, from first to last; ref is its segRef in acq.segs.
type partSeg struct {
	acq         *acquisition
	ref         int
	lo, hi      int
	first, last int64
}

// segRef is where an acquisition's run of a partition's records stands in heldPart.segs.
type segRef struct {
	part *heldPart
	at   int
}

// leaseGroup is records of one leader whose locks run out together.
type leaseGroup struct {
	node *nodeLease
	acqs []*acquisition
	lock time.Duration // the lock duration the leader last reported
	// deadline is when the locks run out by the local estimate, in the lease's nanoseconds; 0
	// when the leader reported no lock duration. Workers read it without the ledger's lock.
	deadline atomic.Int64
	// renewing: a renew covering the group is in flight; giveUp is when its locks are lost if
	// no answer came.
	renewing atomic.Bool
	giveUp   time.Time
	sent     time.Time
	renewed  atomic.Bool // the renew covering the group succeeded
	t        timer
}

// nodeLease is the Process records acquired from one leader.
type nodeLease struct {
	lease     *lease
	node      int32
	renewable bool // the leader takes RENEW and renewal is on
	acqs      []*acquisition
	// renewQueued: a renew of every record is queued for the leader's session, built when sent.
	renewQueued bool
}

// timer is one entry of the lease's heap: a group's next event or an acquisition's MaxHold.
type timer struct {
	at    time.Time
	index int // in the heap; -1 when not in it
	group *leaseGroup
	acq   *acquisition
}

// timerHeap orders timers by time.
type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// schedule puts t in the heap at at, or moves it there; a zero at takes it out.
func (l *lease) schedule(t *timer, at time.Time) {
	switch {
	case at.IsZero():
		if t.index >= 0 {
			heap.Remove(&l.timers, t.index)
		}
	case t.index >= 0:
		t.at = at
		heap.Fix(&l.timers, t.index)
	default:
		t.at = at
		heap.Push(&l.timers, t)
	}
}

// margin is how long before a lock of duration lock runs out its renew is sent: the longest
// renew round trip measured lately, four times over, plus the longest a renew may queue at
// its leader behind a ShareFetch waiting for records (fetchWait, which Process keeps to a
// quarter of the lock and at most ackFlushInterval); at least a fifth of the lock duration, at most half of it. RenewMargin
// replaces it, up to nine tenths of the lock.
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

func (l *lease) node(id int32, renewable bool) *nodeLease {
	if l.nodes == nil {
		l.nodes = make(map[int32]*nodeLease)
	}
	n := l.nodes[id]
	if n == nil {
		n = &nodeLease{lease: l, node: id}
		l.nodes[id] = n
	}
	n.renewable = renewable
	return n
}

// acquire takes the records of one ShareFetch answer from a leader (by partition, in the
// answer's order) for Process: sent is when the ShareFetch was sent, lock the duration the
// leader reported (0: none), renewable whether its locks can be renewed. hold makes the
// entries' holders before anything else can touch them. A record the lease holds already
// (delivered again: the earlier lock was lost) replaces the earlier delivery, which is lost. It
// returns the new entries, queued.
func (l *lease) acquire(node int32, pps []poolPart, sent time.Time, lock time.Duration, renewable bool, now time.Time, hold func([]entry)) []entry {
	total := 0
	for _, pp := range pps {
		total += len(pp.recs)
	}
	if total == 0 {
		return nil
	}
	n := l.node(node, renewable)
	a := &acquisition{node: n, renewable: renewable, entries: make([]entry, total)}
	a.hold.acq, a.hold.index = a, -1
	k := 0
	for _, pp := range pps {
		part := pp.part
		var again []int64
		lo := k
		for _, r := range pp.recs {
			if r.Offset <= part.hi { // at or below an offset held: maybe one held still
				again = append(again, r.Offset)
			}
			part.hi = max(part.hi, r.Offset)
			e := &a.entries[k]
			e.rec, e.part, e.acq = r, part, a
			e.state.Store(entryQueued)
			k++
		}
		if len(again) > 0 {
			l.loseRedelivered(part, again)
		}
		if k > lo {
			a.segs = append(a.segs, segRef{part, len(part.segs)})
			part.segs = append(part.segs, partSeg{a, len(a.segs) - 1, lo, k, pp.recs[0].Offset, pp.recs[len(pp.recs)-1].Offset})
		}
	}
	hold(a.entries)
	a.at = len(n.acqs)
	n.acqs = append(n.acqs, a)
	g := &leaseGroup{node: n, lock: lock}
	g.t.group, g.t.index = g, -1
	if lock > 0 {
		g.deadline.Store(l.mono(sent.Add(lock)))
	}
	l.join(g, a)
	l.scheduleGroup(g, now)
	if l.maxHold > 0 {
		l.schedule(&a.hold, sent.Add(l.maxHold))
	}
	l.held.Add(int64(total))
	l.queued.Add(int64(total))
	return a.entries
}

// join puts a in g.
func (l *lease) join(g *leaseGroup, a *acquisition) {
	a.inGroup = len(g.acqs)
	g.acqs = append(g.acqs, a)
	a.group.Store(g)
}

// leave takes a out of its group, and the group out of the heap once it has none left.
func (l *lease) leave(a *acquisition) {
	g := a.group.Load()
	last := g.acqs[len(g.acqs)-1]
	g.acqs[a.inGroup], last.inGroup = last, a.inGroup
	g.acqs[len(g.acqs)-1] = nil
	g.acqs = g.acqs[:len(g.acqs)-1]
	if len(g.acqs) == 0 {
		l.schedule(&g.t, time.Time{})
	}
}

// loseRedelivered loses the live entries of part at offsets, delivered again: the earlier locks
// were lost. It looks only in part's runs of records whose offsets span one of them: O(runs)
// per offset, and a binary search in each run found, never a walk of what the lease holds.
func (l *lease) loseRedelivered(part *heldPart, offsets []int64) {
	var lost []*entry // found first: losing one may retire its acquisition, and change part.segs
	for _, off := range offsets {
		for _, sg := range part.segs {
			if off < sg.first || off > sg.last {
				continue
			}
			es := sg.acq.entries[sg.lo:sg.hi]
			i := sort.Search(len(es), func(i int) bool { return es[i].rec.Offset >= off })
			if i < len(es) && es[i].rec.Offset == off {
				lost = append(lost, &es[i])
			}
		}
	}
	for _, e := range lost {
		l.lose(e, errors.LockDeadlinePassed, nil)
	}
}

// scheduleGroup sets g's timer for its next event: a renew in flight's end; the renew due; the
// lock's end; none without a deadline.
func (l *lease) scheduleGroup(g *leaseGroup, now time.Time) {
	var at time.Time
	dl := g.deadline.Load()
	switch {
	case g.renewing.Load():
		at = g.giveUp
	case dl == 0:
	case g.node.renewable && !g.node.renewQueued:
		at = l.at(dl).Add(-l.margin(g.lock))
	default:
		at = l.at(dl)
	}
	if !at.IsZero() && at.Before(now) {
		at = now
	}
	l.schedule(&g.t, at)
}

// leaseEvents is what the lease decided at one moment.
type leaseEvents struct {
	renew []int32   // leaders whose records must be renewed now: a renew is to be queued
	next  time.Time // when to decide again; zero for no need
}

// due handles every event due at now: a group whose renew is due asks for its leader's renew
// (once until it is sent), one whose lock ran out (renew unanswered, none possible, or none
// sent in time) loses its records, an acquisition past MaxHold loses its records.
func (l *lease) due(now time.Time) leaseEvents {
	var ev leaseEvents
	for len(l.timers) > 0 && !l.timers[0].at.After(now) {
		t := l.timers[0]
		if a := t.acq; a != nil {
			l.schedule(t, time.Time{})
			l.loseIn(a, errors.LockMaxHoldReached, nil)
			continue
		}
		g := t.group
		dl := l.at(g.deadline.Load())
		switch {
		case g.renewing.Load() || !now.Before(dl):
			l.schedule(t, time.Time{})
			for _, a := range slices.Clone(g.acqs) {
				l.loseIn(a, errors.LockDeadlinePassed, nil)
			}
		case !g.node.renewable:
			l.schedule(t, dl) // the leader no longer takes RENEW: the lock runs out at its deadline
		default:
			if !g.node.renewQueued {
				g.node.renewQueued = true
				ev.renew = append(ev.renew, g.node.node)
			}
			l.schedule(t, dl) // lost unless the renew goes out first
		}
	}
	if len(l.timers) > 0 {
		ev.next = l.timers[0].at
	}
	return ev
}

// renewParts builds the renew of every live record of node, sent at now: its parts, in
// partition and offset order, and the group every acquisition of the node joins, whose locks
// the renew's answer sets. It returns nil when nothing is left to renew.
func (l *lease) renewParts(node int32, now time.Time) ([]*ackPart, *leaseGroup) {
	n := l.nodes[node]
	if n == nil {
		return nil, nil
	}
	n.renewQueued = false
	type held struct {
		e  *entry
		tp TopicPartition
	}
	var hs []held
	// The renew covers the acquisitions made while the leader took RENEW and with a lock
	// deadline; it gives up half a lock after the earliest deadline of the records it renews
	// (acquisitions with none left, their last records settled but not yet counted out, do not
	// count).
	renewed := func(a *acquisition) bool { return a.renewable && a.group.Load().deadline.Load() != 0 }
	var dl int64
	for _, a := range n.acqs {
		if !renewed(a) {
			continue
		}
		live := len(hs)
		for i := range a.entries {
			e := &a.entries[i]
			if s := e.state.Load(); s == entryQueued || s == entryRunning {
				hs = append(hs, held{e, e.part.tp})
			}
		}
		if d := a.group.Load().deadline.Load(); len(hs) > live && (dl == 0 || d < dl) {
			dl = d
		}
	}
	if len(hs) == 0 || !n.renewable {
		return nil, nil
	}
	g := &leaseGroup{node: n, sent: now}
	g.t.group, g.t.index = g, -1
	for _, a := range slices.Clone(n.acqs) {
		if !renewed(a) {
			continue
		}
		old := a.group.Load()
		g.lock = max(g.lock, old.lock)
		if len(old.acqs) > 0 {
			old.acqs = old.acqs[:0]
			l.schedule(&old.t, time.Time{})
		}
		l.join(g, a)
	}
	g.deadline.Store(dl)
	g.renewing.Store(true)
	g.giveUp = l.at(dl).Add(renewGrace(g.lock))
	l.scheduleGroup(g, now)

	slices.SortFunc(hs, func(a, b held) int {
		if d := compareTP(a.tp, b.tp); d != 0 {
			return d
		}
		return cmp64(a.e.rec.Offset, b.e.rec.Offset)
	})
	var parts []*ackPart
	for i := 0; i < len(hs); {
		k := i
		var acks []acktype.Ack
		for ; k < len(hs) && hs[k].tp == hs[i].tp; k++ {
			if k > i && hs[k].e.rec.Offset == hs[k-1].e.rec.Offset {
				continue
			}
			hs[k].e.renewsSent.Add(1)
			hs[k].e.lastRenew.Store(g)
			acks = append(acks, acktype.Ack{Offset: hs[k].e.rec.Offset, Type: acktype.Renew})
		}
		p := hs[i].e.part
		parts = append(parts, &ackPart{tp: p.tp, id: p.id, batches: acktype.AppendBatches(nil, acks), renews: true, quiet: true})
		i = k
	}
	return parts, g
}

// renewAnswered applies the outcome of a renew part of g: on success the group's locks run for
// the duration the answer reported (lockMs; else the one known) from when the renew was sent;
// on failure the part's records are lost.
func (l *lease) renewAnswered(g *leaseGroup, p *ackPart, err error, lockMs int32, now time.Time) {
	if err != nil {
		tp := p.tp
		lost := 0
		for _, a := range slices.Clone(g.acqs) {
			lost += l.loseEntries(a, func(e *entry) bool { return e.part.tp == tp }, lockLostReason(err), err)
		}
		if reason := lockLostReason(err); reason != errors.LockSessionReset {
			l.renewFailures.Add(uint64(lost))
		}
		return
	}
	var n int64
	for _, b := range p.batches {
		n += b.LastOffset - b.FirstOffset + 1
	}
	l.renewed.Add(uint64(n))
	if g.renewing.Load() {
		l.observeRTT(now.Sub(g.sent))
		if lockMs > 0 {
			g.lock = time.Duration(lockMs) * time.Millisecond
		}
		g.deadline.Store(l.mono(g.sent.Add(g.lock)))
		g.renewed.Store(true)
		g.renewing.Store(false)
		if len(g.acqs) > 0 {
			l.scheduleGroup(g, now)
		}
	}
}

// loseIn loses the live records of a.
func (l *lease) loseIn(a *acquisition, reason errors.LockLostReason, err error) {
	_ = l.loseEntries(a, nil, reason, err)
}

// loseEntries loses the live records of a for which match is true (nil: all), and returns how
// many it lost.
func (l *lease) loseEntries(a *acquisition, match func(*entry) bool, reason errors.LockLostReason, err error) int {
	n := 0
	for i := range a.entries {
		e := &a.entries[i]
		if (match == nil || match(e)) && l.lose(e, reason, err) {
			n++
		}
	}
	return n
}

// loseWhere loses the live records held from node n for which match is true.
func (l *lease) loseWhere(n *nodeLease, match func(*entry) bool, reason errors.LockLostReason, err error) {
	for _, a := range slices.Clone(n.acqs) {
		l.loseEntries(a, match, reason, err)
	}
}

// loseNode loses every record held from node: its share session was lost.
func (l *lease) loseNode(node int32, reason errors.LockLostReason) {
	if n := l.nodes[node]; n != nil {
		l.loseWhere(n, nil, reason, nil)
	}
}

// losePartition loses the records of tp held from node: the partition's leader moved.
func (l *lease) losePartition(node int32, tp TopicPartition) {
	if n := l.nodes[node]; n != nil {
		l.loseWhere(n, func(e *entry) bool { return e.part.tp == tp }, errors.LockLeaderMoved, nil)
	}
}

// lose takes e's lock as lost, if it is live, and tells its holder. A record lost while queued
// stays counted as held and queued until a worker takes it out of the queue (begin), so that
// the queue never holds more than admission allowed.
func (l *lease) lose(e *entry, reason errors.LockLostReason, err error) bool {
	if s := e.state.Load(); s != entryQueued && s != entryRunning {
		return false
	}
	lost := &errors.LockLostError{Topic: e.part.tp.Topic, Partition: e.part.tp.Partition, Offset: e.rec.Offset, Reason: reason, Err: err}
	if !e.lost.CompareAndSwap(nil, lost) {
		return false // being lost already
	}
	running := false
	for {
		s := e.state.Load()
		if s != entryQueued && s != entryRunning {
			e.lost.Store(nil) // settled meanwhile: not lost after all
			return false
		}
		if e.state.CompareAndSwap(s, entryLost) {
			running = s == entryRunning
			if running {
				l.held.Add(-1)
			}
			break
		}
	}
	if e.holder != nil {
		e.holder.lockLost(lost)
	}
	if l.hookLost {
		l.lost = append(l.lost, LockLostEvent{Record: e.rec, Running: running, Err: lost})
	}
	if int(e.acq.done.Add(1)) == len(e.acq.entries) {
		l.retire(e.acq)
	}
	return true
}

// retire forgets a, none of whose records is live any more.
func (l *lease) retire(a *acquisition) {
	for _, r := range a.segs {
		// Swap-remove, telling the run moved into the hole where it is now.
		segs := r.part.segs
		last := segs[len(segs)-1]
		segs[r.at] = last
		last.acq.segs[last.ref].at = r.at
		segs[len(segs)-1] = partSeg{}
		r.part.segs = segs[:len(segs)-1]
	}
	n := a.node
	last := n.acqs[len(n.acqs)-1]
	n.acqs[a.at], last.at = last, a.at
	n.acqs[len(n.acqs)-1] = nil
	n.acqs = n.acqs[:len(n.acqs)-1]
	l.leave(a)
	l.schedule(&a.hold, time.Time{})
}

// begin gives e, just taken out of the queue by a worker, to that worker at now (the lease's
// nanoseconds, clock), unless its lock was lost, or ran out while it waited and no renew is on
// its way (then it is lost: the broker may give it to another member). The worker counts e out
// of the queue itself (workerBatch).
func (l *ledger) begin(e *entry, now int64) bool {
	if e.expired(now) {
		l.mu.Lock()
		l.lease.lose(e, errors.LockDeadlinePassed, nil)
		l.mu.Unlock()
	}
	return e.state.CompareAndSwap(entryQueued, entryRunning)
}

// finish marks e settled from its handler's answer; false when its lock was lost. The worker
// hands the acknowledgement over and counts e out itself (workerBatch).
func (l *ledger) finish(e *entry) bool {
	return e.state.CompareAndSwap(entryRunning, entrySettled)
}

// expired reports whether e's lock ran out by now (the lease's nanoseconds) with no renew on
// its way.
func (e *entry) expired(now int64) bool {
	g := e.acq.group.Load()
	dl := g.deadline.Load()
	return dl != 0 && now >= dl && !g.renewing.Load()
}

// release releases e, taken out of the queue by shutdown without reaching a handler: the
// Release goes to its leader's session and e counts out of its acquisition. It reports false
// when e's lock was lost meanwhile.
func (l *ledger) release(e *entry) bool {
	l.lease.queued.Add(-1)
	l.lease.held.Add(-1)
	if !e.state.CompareAndSwap(entryQueued, entrySettled) {
		return false
	}
	l.lease.settled.Add(1)
	e.part.inbox.add(inboxAck{e.part, e.rec.Offset, acktype.Release, e.rec.DeliveryCount})
	l.acqLeft(e.acq, 1)
	return true
}

// workerBatch is what a worker did since it last published it: records taken out of the
// queue, records that left the count of held ones, acknowledgements for their sessions, and
// records of its current acquisition that left it. A worker publishes when it is about to wait
// for a record, every publishEvery records and after a slow handler, so that the shared counts
// move once per batch rather than once per record; until then they count a record as held
// longer than it is, never shorter, so admission never lets more in than it should.
type workerBatch struct {
	unqueued, left, settled int64
	acks                    []inboxAck
	acq                     *acquisition
	acqLeft                 int32
}

// empty reports whether b holds nothing to publish.
func (b *workerBatch) empty() bool { return b.unqueued == 0 && b.left == 0 && len(b.acks) == 0 }

// leave counts e, which left the worker (settled or lost), out of its acquisition.
func (b *workerBatch) leave(l *ledger, e *entry) {
	if b.acq != e.acq {
		l.acqLeft(b.acq, b.acqLeft)
		b.acq, b.acqLeft = e.acq, 0
	}
	b.acqLeft++
}

// publish applies b to the shared counts and hands its acknowledgements to their sessions.
func (l *ledger) publish(b *workerBatch) {
	if b.unqueued != 0 {
		l.lease.queued.Add(-b.unqueued)
	}
	if b.left != 0 {
		l.lease.held.Add(-b.left)
	}
	if b.settled != 0 {
		l.lease.settled.Add(uint64(b.settled))
	}
	for i := 0; i < len(b.acks); {
		in := b.acks[i].part.inbox
		k := i + 1
		for k < len(b.acks) && b.acks[k].part.inbox == in {
			k++
		}
		in.add(b.acks[i:k]...)
		i = k
	}
	clear(b.acks)
	b.acks = b.acks[:0]
	l.acqLeft(b.acq, b.acqLeft)
	b.unqueued, b.left, b.settled, b.acq, b.acqLeft = 0, 0, 0, nil, 0
}

// acqLeft counts n more records of a as settled or lost, and retires a once none is left.
func (l *ledger) acqLeft(a *acquisition, n int32) {
	if a == nil || n == 0 {
		return
	}
	if int(a.done.Add(n)) == len(a.entries) {
		l.mu.Lock()
		l.lease.retire(a)
		l.mu.Unlock()
	}
}

// unqueue counts n records out of the queue at once, for a worker that does not wait for its
// batch (a slow handler's record).
func (l *ledger) unqueue(n int64) { l.lease.queued.Add(-n) }

// renews returns how many renews of e the brokers confirmed.
func (e *entry) renews() int {
	n := int(e.renewsSent.Load())
	if g := e.lastRenew.Load(); g != nil && !g.renewed.Load() {
		n--
	}
	return n
}

// deadline is e's lock deadline by the local estimate; zero when the leader reported no lock
// duration.
func (e *entry) deadline() time.Time {
	if dl := e.acq.group.Load().deadline.Load(); dl != 0 {
		return e.acq.node.lease.at(dl)
	}
	return time.Time{}
}

// mono returns t in the lease's nanoseconds.
func (l *lease) mono(t time.Time) int64 { return int64(t.Sub(l.epoch)) }

// at returns the time of n, in the lease's nanoseconds.
func (l *lease) at(n int64) time.Time { return l.epoch.Add(time.Duration(n)) }

// renewable reports whether e's lock is renewed while its handler works.
func (e *entry) renewable() bool { return e.acq.renewable }

// lockLostReason is the reason a renew's failure err gives.
func lockLostReason(err error) errors.LockLostReason {
	var ae *errors.AckError
	if !errors.As(err, &ae) {
		return errors.LockRenewRefused
	}
	switch {
	case errors.Is(ae.Err, kerr.InvalidRecordState):
		return errors.LockInvalidRecordState
	case errors.Is(ae.Err, kerr.NetworkException):
		return errors.LockSessionReset
	case errors.Is(ae.Err, kerr.NotLeaderForPartition), errors.Is(ae.Err, kerr.FencedLeaderEpoch),
		errors.Is(ae.Err, kerr.UnknownTopicOrPartition), errors.Is(ae.Err, kerr.UnknownTopicID):
		return errors.LockLeaderMoved
	}
	return errors.LockRenewRefused
}

package shareconsumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// The operations of TestLedgerModel (ledger_model_test.go): each does to the ledger what the
// consumer does, and to the model what the ledger should have done.

func (m *lmModel) stepOnce() {
	m.tb.Helper()
	ops := []struct {
		w  int
		fn func()
	}{
		{6, m.opPollFetch},
		{5, m.opTake},
		{8, m.opAcknowledge},
		{1, m.opAcceptAll},
		{4, m.opMoveAcked},
		{5, m.opPollRenewSend},
		{5, m.opPollRenewAnswer},
		{1, m.opGiveBack},
		{6, m.opAcquire},
		{7, m.opBegin},
		{6, m.opFinish},
		{4, m.opPublish},
		{1, m.opRelease},
		{8, m.opDue},
		{2, m.opAdvance},
		{4, m.opLeaseRenewBuild},
		{4, m.opLeaseRenewAnswer},
		{1, m.opLeaderMove},
		{1, m.opSessionReset},
		{1, m.opProcessStartOrEnd},
	}
	total := 0
	for _, o := range ops {
		total += o.w
	}
	r := m.rng.IntN(total)
	for _, o := range ops {
		if r < o.w {
			o.fn()
			break
		}
		r -= o.w
	}
	m.settle()
	m.check()
}

// --- Poll ---

func (m *lmModel) opPollFetch() {
	p := int32(m.rng.IntN(lmPartitions))
	node := m.leader[p]
	part := m.part(node, p)
	nd := m.nodes[node]
	sent := m.now.Add(-time.Duration(m.rng.IntN(20)) * time.Millisecond)
	it := &lmBufItem{part: part}
	if m.rng.IntN(10) == 0 {
		offs := m.offsets(p, 1+m.rng.IntN(3), func(*lmDelivery) bool { return false })
		ce := &errors.CorruptBatchError{Topic: "t", Partition: p, Offsets: offs}
		for _, o := range offs {
			d := m.deliver(lmKey{p, o}, node, lmBuffer)
			d.undecodable = true
			it.corrupt = append(it.corrupt, d)
		}
		m.logf("fetch for Poll from %d: corrupt %v", node, offs)
		m.l.hold(part, nil, ce, lockReport{})
		m.buffer = append(m.buffer, it)
		return
	}
	// A renewed record whose lock ran out may come again: the fresh delivery replaces it.
	offs := m.offsets(p, 1+m.rng.IntN(4), func(d *lmDelivery) bool {
		lu := d.lockUntil()
		return d.place.renew() && d.node == node && !lu.IsZero() && !m.now.Before(lu)
	})
	lock := nd.lock
	if m.rng.IntN(10) == 0 {
		lock = 0
	}
	var recs []*Record
	for _, o := range offs {
		if old := m.cur[lmKey{p, o}]; old != nil {
			m.gone(old) // dropped from the renews: its lock ran out
			m.stats["Poll: renewed record delivered again"]++
		}
		d := m.deliver(lmKey{p, o}, node, lmBuffer)
		if lock > 0 {
			d.rec.LockDeadline = sent.Add(lock)
		}
		it.ds = append(it.ds, d)
		recs = append(recs, d.rec)
	}
	m.logf("fetch for Poll from %d: t-%d %v", node, p, offs)
	m.l.hold(part, recs, nil, lockReport{})
	m.buffer = append(m.buffer, it)
}

func (m *lmModel) opTake() {
	max := 1 + m.rng.IntN(5)
	// Renewed records first: those whose lock ran out are dropped.
	var ready []*lmDelivery
	for _, d := range m.sortedCur() {
		if d.place != lmRenewReady {
			continue
		}
		if !m.now.Before(d.renewDeadline) {
			m.gone(d)
			continue
		}
		ready = append(ready, d)
	}
	nRenewed := min(max, len(ready))
	// Then the buffer, in arrival order, dropping records whose lock ran out.
	var want []*lmDelivery
	var wantCorrupt *lmBufItem
	dropped := 0
	n, limit := 0, max-nRenewed
	for len(m.buffer) > 0 && n < limit {
		it := m.buffer[0]
		if it.corrupt != nil {
			if nRenewed > 0 || n > 0 {
				break
			}
			wantCorrupt = it
			m.buffer = m.buffer[1:]
			break
		}
		for len(it.ds) > 0 && n < limit {
			d := it.ds[0]
			it.ds = it.ds[1:]
			if dl := d.rec.LockDeadline; !dl.IsZero() && !m.now.Before(dl) {
				dropped++
				m.gone(d)
				continue
			}
			want = append(want, d)
			n++
		}
		if len(it.ds) == 0 {
			m.buffer = m.buffer[1:]
		}
	}

	out, cerr, _, gotDropped, renewedTaken := m.l.take(m.now, max)
	m.logf("take %d: %d renewed of %d ready, %d buffered, %d dropped, corrupt %v", max, renewedTaken, len(ready), len(out)-renewedTaken, gotDropped, cerr != nil)
	if renewedTaken != nRenewed {
		m.failf("take(%d) took %d renewed records, the model has %d ready", max, renewedTaken, len(ready))
	}
	if len(out) < nRenewed {
		m.failf("take returned %d records, fewer than the %d renewed ones", len(out), nRenewed)
	}
	for _, r := range out[:nRenewed] {
		d := m.cur[lmKey{r.Partition, r.Offset}]
		if d == nil || d.place != lmRenewReady || d.rec != r {
			m.failf("take returned %s@%d as renewed; the model has %v", TopicPartition{r.Topic, r.Partition}, r.Offset, d)
		}
		if !r.LockDeadline.Equal(d.renewDeadline) {
			m.failf("renewed %s: LockDeadline %v, want the renew's %v", d, r.LockDeadline, d.renewDeadline)
		}
		d.place, d.acked, d.ty = lmPolled, false, 0
	}
	if rest := out[nRenewed:]; len(rest) != len(want) {
		m.failf("take returned %d buffered records, the model %d", len(rest), len(want))
	} else {
		for i, d := range want {
			if rest[i] != d.rec {
				m.failf("take's buffered record %d is %s-%d@%d, the model's %s", i, rest[i].Topic, rest[i].Partition, rest[i].Offset, d)
			}
			d.place = lmPolled
		}
	}
	m.stats["Poll: renewed records taken"] += nRenewed
	m.stats["Poll: expired records dropped"] += dropped
	if gotDropped != dropped {
		m.failf("take dropped %d records, the model %d", gotDropped, dropped)
	}
	switch {
	case wantCorrupt == nil && cerr != nil:
		m.failf("take reported a corrupt batch %v; the model none", cerr.Offsets)
	case wantCorrupt != nil && cerr == nil:
		m.failf("take reported no corrupt batch; the model one")
	case wantCorrupt != nil:
		for _, d := range wantCorrupt.corrupt {
			d.place, d.acked, d.ty = lmPolled, true, acktype.Reject
		}
	}
}

func (m *lmModel) opAcknowledge() {
	var d *lmDelivery
	var key lmKey
	undecodable := false
	if polled := m.inPlace(lmPolled); len(polled) > 0 && m.rng.IntN(5) > 0 {
		d = polled[m.rng.IntN(len(polled))]
		key, undecodable = d.key, d.undecodable
		if m.rng.IntN(10) == 0 {
			undecodable = !undecodable
		}
	} else {
		p := int32(m.rng.IntN(lmPartitions))
		key = lmKey{p, int64(m.rng.IntN(int(m.nextOff[p]) + 1))}
		undecodable = m.rng.IntN(4) == 0
		if c := m.cur[key]; c != nil && c.place == lmPolled {
			d = c
		}
	}
	types := []acktype.Type{acktype.Accept, acktype.Release, acktype.Reject, acktype.Renew}
	ty := types[m.rng.IntN(len(types))]
	if ty == acktype.Renew && (undecodable || (d != nil && !m.nodes[d.node].renewable)) {
		ty = acktype.Accept // AcknowledgeOffset refuses Renew; the gate refuses it for leaders without RENEW
	}
	wantHeld := d != nil && d.undecodable == undecodable
	held, err := m.l.acknowledge(TopicPartition{"t", key.p}, key.off, ty, undecodable, nil)
	m.logf("acknowledge %s %v (undecodable %v): held %v", key, ty, undecodable, held)
	if err != nil {
		m.failf("acknowledge: %v", err)
	}
	if held != wantHeld {
		m.failf("acknowledge %s (undecodable %v): held %v, the model says %v (%v)", key, undecodable, held, wantHeld, d)
	}
	if held {
		d.acked, d.ty = true, ty
	}
}

func (m *lmModel) opAcceptAll() {
	m.logf("acceptAll")
	m.acceptAll()
}

func (m *lmModel) acceptAll() {
	m.l.acceptAll()
	for _, d := range m.inPlace(lmPolled) {
		if !d.acked {
			d.acked, d.ty = true, acktype.Accept
		}
	}
}

func (m *lmModel) opMoveAcked() {
	m.logf("moveAcked")
	m.moveAcked()
}

func (m *lmModel) moveAcked() {
	wantQ := map[*heldPart]int{}
	for _, d := range m.inPlace(lmPolled) {
		if !d.acked {
			continue
		}
		m.expAcks = append(m.expAcks, lmExp{lmAck{d.node, d.key, d.ty}, d})
		if d.ty == acktype.Renew {
			d.place = lmRenewQueued
			wantQ[d.part]++
			continue
		}
		m.leave(d, d.ty)
	}
	clear(m.dest.renewsQ)
	m.l.moveAcked(m.dest)
	for p, n := range wantQ {
		if m.dest.renewsQ[p] != n {
			m.failf("moveAcked counted %d renews queued for %s from %d, the model %d", m.dest.renewsQ[p], p.tp, p.node, n)
		}
	}
	if len(m.dest.renewsQ) != len(wantQ) {
		m.failf("moveAcked counted renews for %d parts, the model %d", len(m.dest.renewsQ), len(wantQ))
	}
}

// leave records that d's acknowledgement t is on its way: the record is the broker's again.
func (m *lmModel) leave(d *lmDelivery, t acktype.Type) {
	if t == acktype.Accept || t == acktype.Reject {
		m.archived[d.key] = true
	}
	m.gone(d)
}

func (m *lmModel) opPollRenewSend() {
	type group struct {
		node int32
		p    int32
	}
	byGroup := map[group][]*lmDelivery{}
	var groups []group
	for _, d := range m.inPlace(lmRenewQueued) {
		g := group{d.node, d.key.p}
		if byGroup[g] == nil {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], d)
	}
	if len(groups) == 0 {
		return
	}
	g := groups[m.rng.IntN(len(groups))]
	ds := byGroup[g]
	acks := make([]acktype.Ack, len(ds))
	for i, d := range ds {
		acks[i] = acktype.Ack{Offset: d.key.off, Type: acktype.Renew}
	}
	p := &ackPart{tp: TopicPartition{"t", g.p}, id: ds[0].part.id, batches: acktype.AppendBatches(nil, acks), renews: true, renewOf: lmRenewer{m}}
	if g.node != m.leader[g.p] || m.rng.IntN(8) == 0 {
		// Screened: the leader moved, or no session is open; the renews fail unsent.
		m.logf("Poll renews of t-%d from %d screened (%d)", g.p, g.node, len(ds))
		for _, d := range ds {
			m.gone(d)
		}
		p.renewOf.renewAnswered(p, &errors.AckError{Topic: "t", Partition: g.p, Err: kerr.NotLeaderForPartition}, 0, m.now)
		return
	}
	m.logf("Poll renews of t-%d sent to %d: %d", g.p, g.node, len(ds))
	p.renewOf.renewSent(p, m.now)
	if len(p.tickets) != len(ds) {
		m.failf("renewSent took %d renews, the model %d", len(p.tickets), len(ds))
	}
	pr := &lmPollRenew{p: p, ds: ds}
	for _, d := range ds {
		d.place, d.renewSentAt, d.pollRenew = lmRenewSent, m.now, pr
	}
	m.pRenews = append(m.pRenews, pr)
}

func (m *lmModel) opPollRenewAnswer() {
	if len(m.pRenews) == 0 {
		return
	}
	i := m.rng.IntN(len(m.pRenews))
	pr := m.pRenews[i]
	m.pRenews = slices.Delete(m.pRenews, i, i+1)
	var err error
	lockMs := int32(0)
	switch m.rng.IntN(4) {
	case 0:
		err = &errors.AckError{Topic: "t", Partition: pr.p.tp.Partition, Err: kerr.InvalidRecordState}
	case 1:
		lockMs = int32(m.nodes[pr.ds[0].node].lock / time.Millisecond)
	}
	d := lmPollLock
	if lockMs > 0 {
		d = time.Duration(lockMs) * time.Millisecond
	}
	m.logf("Poll renews of %s answered: err %v, lock %dms (processing %v)", pr.p.tp, err != nil, lockMs, m.processing)
	for _, dl := range pr.ds {
		if dl.place != lmRenewSent || dl.pollRenew != pr || m.cur[dl.key] != dl {
			continue // replaced or dropped since
		}
		switch {
		case err != nil:
			m.gone(dl)
		case m.processing:
			m.stats["Poll: renewed record released (Process runs)"]++
			m.expAcks = append(m.expAcks, lmExp{lmAck{dl.node, dl.key, acktype.Release}, dl})
			m.leave(dl, acktype.Release)
		default:
			m.stats["Poll: renews answered ok"]++
			dl.place, dl.renewDeadline = lmRenewReady, dl.renewSentAt.Add(d)
		}
	}
	pr.p.renewOf.renewAnswered(pr.p, err, lockMs, m.now)
}

func (m *lmModel) opGiveBack() {
	m.logf("giveBack")
	m.giveBack()
}

func (m *lmModel) giveBack() {
	for _, it := range m.buffer {
		for _, d := range it.corrupt {
			m.expAcks = append(m.expAcks, lmExp{lmAck{d.node, d.key, acktype.Reject}, d})
			m.leave(d, acktype.Reject)
		}
		for _, d := range it.ds {
			m.expAcks = append(m.expAcks, lmExp{lmAck{d.node, d.key, acktype.Release}, d})
			m.leave(d, acktype.Release)
		}
	}
	m.buffer = nil
	for _, d := range m.inPlace(lmRenewReady) {
		if m.now.Before(d.renewDeadline) {
			m.expAcks = append(m.expAcks, lmExp{lmAck{d.node, d.key, acktype.Release}, d})
			m.leave(d, acktype.Release)
		} else {
			m.gone(d) // its lock ran out: nothing to release
		}
	}
	m.l.giveBack(m.dest, m.now)
}

// --- Process ---

func (m *lmModel) opAcquire() {
	node := m.leader[m.rng.IntN(lmPartitions)]
	nd := m.nodes[node]
	var ps []int32
	for p, l := range m.leader {
		if l == node && (len(ps) == 0 || m.rng.IntN(2) == 0) {
			ps = append(ps, int32(p))
		}
	}
	sent := m.now.Add(-time.Duration(m.rng.IntN(30)) * time.Millisecond)
	lock := nd.lock
	if !nd.renewable && m.rng.IntN(4) == 0 {
		lock = 0
	}
	var pps []poolPart
	var ds []*lmDelivery
	for _, p := range ps {
		part := m.part(node, p)
		// A Process record whose lock ran out with no renew on its way may come again: the
		// earlier delivery is lost.
		offs := m.offsets(p, 1+m.rng.IntN(4), func(d *lmDelivery) bool {
			lu := d.lockUntil()
			return d.acq != nil && d.part == part && !d.acq.renewing() && nd.inFlight == nil && !lu.IsZero() && !m.now.Before(lu)
		})
		pp := poolPart{part: part}
		for _, o := range offs {
			if old := m.cur[lmKey{p, o}]; old != nil {
				m.expLoss[old] = []errors.LockLostReason{errors.LockDeadlinePassed}
				m.stats["Process: held record delivered again"]++
			}
		}
		for _, o := range offs {
			d := &lmDelivery{key: lmKey{p, o}, node: node, part: part, place: lmQueued,
				rec: &Record{Topic: "t", Partition: p, Offset: o}, inQueue: true}
			pp.recs = append(pp.recs, d.rec)
			ds = append(ds, d)
		}
		pps = append(pps, pp)
	}
	m.logf("acquire from %d: %d records, lock %v", node, len(ds), lock)
	es := m.l.acquire(node, pps, sent, lock, nd.renewable, m.now, func(es []entry) {
		if len(es) != len(ds) {
			m.bad = append(m.bad, fmt.Sprintf("acquire made %d entries for %d records", len(es), len(ds)))
			return
		}
		for i := range es {
			es[i].holder = &lmHold{m, ds[i]}
		}
	})
	if len(es) != len(ds) {
		m.failf("acquire returned %d entries for %d records", len(es), len(ds))
	}
	a := &lmAcq{node: node, ds: ds, a: es[0].acq, lock: lock, renewable: nd.renewable}
	if lock > 0 {
		a.deadline = sent.Add(lock)
	}
	if mh := m.l.lease.maxHold; mh > 0 {
		a.holdEnd = sent.Add(mh)
	}
	for i, d := range ds {
		if es[i].rec != d.rec {
			m.failf("acquire's entry %d is not its record", i)
		}
		m.nextID++
		d.id, d.e, d.acq = m.nextID, &es[i], a
		m.cur[d.key] = d
	}
	m.acqs = append(m.acqs, a)
	m.queue = append(m.queue, ds...)
	m.held += int64(len(ds))
	m.queued += int64(len(ds))
}

// expired is whether d's lock ran out by the model, with no renew on its way.
func (m *lmModel) expired(d *lmDelivery) bool {
	a := d.acq
	return !a.deadline.IsZero() && !m.now.Before(a.deadline) && !a.renewing()
}

func (m *lmModel) opBegin() {
	if len(m.queue) == 0 {
		return
	}
	w := m.workers[m.rng.IntN(len(m.workers))]
	i := m.rng.IntN(len(m.queue))
	d := m.queue[i]
	m.queue = slices.Delete(m.queue, i, i+1)
	d.inQueue = false
	want := !d.lost
	if want && m.expired(d) {
		m.expLoss[d] = []errors.LockLostReason{errors.LockDeadlinePassed}
		want = false
	}
	fast := m.rng.IntN(2) == 0
	m.logf("begin %s (fast %v), want %v", d, fast, want)
	ok := m.l.begin(d.e, m.l.lease.mono(m.now))
	if ok != want {
		m.failf("begin %s: %v, the model says %v", d, ok, want)
	}
	if !ok {
		w.b.unqueued++
		w.b.left++
		w.unqueued++
		w.left++
		return
	}
	d.place = lmRunning
	if fast {
		w.b.unqueued++
		w.unqueued++
	} else {
		m.l.lease.queued.Add(-1)
		m.queued--
	}
	w.running = append(w.running, d)
}

func (m *lmModel) opFinish() {
	w := m.workers[m.rng.IntN(len(m.workers))]
	if len(w.running) == 0 {
		return
	}
	i := m.rng.IntN(len(w.running))
	d := w.running[i]
	w.running = slices.Delete(w.running, i, i+1)
	if want, got := m.renewsOf(d), d.e.renews(); want != got {
		m.failf("%s: renews() %d, the model %d", d, got, want)
	}
	// The handler outlived the lock, with no renew on its way.
	if !d.lost {
		exp := m.expired(d)
		if got := d.e.expired(m.l.lease.mono(m.now)); got != exp {
			m.failf("%s: expired %v, the model %v", d, got, exp)
		}
		if exp {
			m.expLoss[d] = []errors.LockLostReason{errors.LockDeadlinePassed}
			m.l.loseOne(d.e, errors.LockDeadlinePassed)
			m.settle()
		}
	}
	types := []acktype.Type{acktype.Accept, acktype.Release, acktype.Reject}
	ty := types[m.rng.IntN(len(types))]
	want := !d.lost
	m.logf("finish %s %v, want %v", d, ty, want)
	if d.lost {
		if m.l.finish(d.e) {
			m.failf("finish %s: the lock was lost, yet it settled", d)
		}
		return
	}
	if !m.l.finish(d.e) {
		m.failf("finish %s: refused, the model has its lock", d)
	}
	w.b.left++
	w.b.settled++
	w.b.acks = append(w.b.acks, inboxAck{d.e.part, d.e.rec.Offset, ty, d.e.rec.DeliveryCount})
	w.b.leave(m.l, d.e)
	w.left++
	w.settled++
	w.acks = append(w.acks, lmExp{lmAck{d.node, d.key, ty}, d})
	if w.acq != d.acq {
		m.acqLeft(w.acq, w.acqLeft)
		w.acq, w.acqLeft = d.acq, 0
	}
	w.acqLeft++
	m.gone(d)
	m.unsent[d.key] = true
}

func (m *lmModel) renewsOf(d *lmDelivery) int {
	n := d.renewsSent
	if d.lastRenew != nil && !d.lastRenew.renewed {
		n--
	}
	return n
}

// acqLeft counts n more records of a as left.
func (m *lmModel) acqLeft(a *lmAcq, n int) {
	if a == nil || n == 0 {
		return
	}
	a.done += n
	if a.done > len(a.ds) {
		m.failf("an acquisition of %d records counts %d left", len(a.ds), a.done)
	}
	if a.done == len(a.ds) {
		a.retired = true
		m.stats["acquisitions retired"]++
	}
}

func (m *lmModel) opPublish() {
	m.publish(m.workers[m.rng.IntN(len(m.workers))])
}

func (m *lmModel) publish(w *lmWorker) {
	m.logf("publish: %d acks", len(w.acks))
	m.l.publish(&w.b)
	m.queued -= w.unqueued
	m.held -= w.left
	m.settled += uint64(w.settled)
	m.expInbox = append(m.expInbox, w.acks...)
	for _, e := range w.acks {
		delete(m.unsent, e.key)
		if e.t != acktype.Release {
			m.archived[e.key] = true
		}
	}
	m.acqLeft(w.acq, w.acqLeft)
	w.unqueued, w.left, w.settled, w.acks, w.acq, w.acqLeft = 0, 0, 0, nil, nil, 0
}

func (m *lmModel) opRelease() {
	if len(m.queue) == 0 {
		return
	}
	w := m.workers[m.rng.IntN(len(m.workers))]
	m.publish(w) // a worker publishes before it releases
	i := m.rng.IntN(len(m.queue))
	d := m.queue[i]
	m.queue = slices.Delete(m.queue, i, i+1)
	d.inQueue = false
	want := !d.lost
	m.logf("release %s, want %v", d, want)
	if got := m.l.release(d.e); got != want {
		m.failf("release %s: %v, the model %v", d, got, want)
	}
	m.queued--
	m.held--
	if want {
		m.settled++
		m.expInbox = append(m.expInbox, lmExp{lmAck{d.node, d.key, acktype.Release}, d})
		m.acqLeft(d.acq, 1)
		m.gone(d)
	}
}

func (m *lmModel) opAdvance() {
	d := time.Duration(m.rng.IntN(800)) * time.Millisecond
	m.now = m.now.Add(d)
	m.logf("advance %v (no due)", d)
}

func (m *lmModel) opDue() {
	d := time.Duration(m.rng.IntN(250)) * time.Millisecond
	if m.rng.IntN(10) == 0 {
		d = time.Duration(m.rng.IntN(4000)) * time.Millisecond
	}
	m.now = m.now.Add(d)
	m.due()
}

func (m *lmModel) due() {
	asked := map[int32]bool{}
	for _, a := range m.acqs {
		var reasons []errors.LockLostReason
		if !a.holdEnd.IsZero() && !a.holdFired && !m.now.Before(a.holdEnd) {
			a.holdFired = true
			reasons = append(reasons, errors.LockMaxHoldReached)
		}
		nd := m.nodes[a.node]
		switch {
		case a.renewing():
			if !m.now.Before(a.renew.giveUp) {
				reasons = append(reasons, errors.LockDeadlinePassed)
			}
		case a.deadline.IsZero():
		case !m.now.Before(a.deadline):
			reasons = append(reasons, errors.LockDeadlinePassed)
		case nd.renewable && !nd.renewQueued && !m.now.Before(a.deadline.Add(-m.l.lease.margin(a.lock))) && len(a.live()) > 0 && len(reasons) == 0:
			asked[a.node] = true // records due for a renew and not lost now
		}
		if len(reasons) > 0 {
			for _, d := range a.live() {
				m.expLoss[d] = reasons
			}
		}
	}
	ev := m.l.due(m.now)
	m.logf("due: renew %v, next %v", ev.renew, ev.next.Sub(ltT0))
	seen := map[int32]bool{}
	for _, n := range ev.renew {
		nd := m.nodes[n]
		switch {
		case seen[n]:
			m.failf("due asked twice for a renew of %d", n)
		case nd.renewQueued:
			m.failf("due asked again for a renew of %d, queued already", n)
		case !nd.renewable:
			m.failf("due asked for a renew of %d, which takes no RENEW", n)
		}
		seen[n] = true
		nd.renewQueued = true
		m.stats["lease renews asked"]++
	}
	for n := range asked {
		if !seen[n] {
			m.failf("due asked no renew of %d, whose records are due for one", n)
		}
	}
	if !ev.next.IsZero() && !ev.next.After(m.now) {
		m.failf("due's next event %v is not after now", ev.next.Sub(ltT0))
	}
	if ev.next.IsZero() != (len(m.l.lease.timers) == 0) {
		m.failf("due's next event is %v with %d timers", ev.next, len(m.l.lease.timers))
	}
}

func (m *lmModel) opLeaseRenewBuild() {
	var nodes []int32
	for _, n := range []int32{1, 2, 3} {
		if nd := m.nodes[n]; nd.renewQueued && nd.inFlight == nil {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return
	}
	node := nodes[m.rng.IntN(len(nodes))]
	nd := m.nodes[node]
	nd.renewQueued = false
	var live []*lmDelivery
	var acqs []*lmAcq
	var minDl time.Time
	lock := time.Duration(0)
	for _, a := range m.acqs {
		// A renew covers the acquisitions made while the leader took RENEW, with a deadline.
		if a.node != node || !a.renewable || a.deadline.IsZero() {
			continue
		}
		acqs = append(acqs, a)
		lock = max(lock, a.lock)
		l := a.live()
		if len(l) > 0 && !a.deadline.IsZero() && (minDl.IsZero() || a.deadline.Before(minDl)) {
			minDl = a.deadline
		}
		live = append(live, l...)
	}
	parts := m.l.renewParts(node, m.now)
	m.logf("lease renew of %d built: %d parts, %d live records", node, len(parts), len(live))
	if len(live) == 0 || !nd.renewable {
		if parts != nil {
			m.failf("renewParts(%d) built %d parts with nothing to renew", node, len(parts))
		}
		return
	}
	m.l.renewSentOut() // built to be sent: the consumer counts it as it sends it
	m.renewCount++
	m.stats["lease renews built"]++
	// Every live record of the leader, once, by partition and offset.
	want := map[int32][]int64{}
	for _, d := range live {
		want[d.key.p] = append(want[d.key.p], d.key.off)
	}
	if len(parts) != len(want) {
		m.failf("renewParts(%d): %d parts, the model %d partitions", node, len(parts), len(want))
	}
	for i, p := range parts {
		if i > 0 && compareTP(parts[i-1].tp, p.tp) >= 0 {
			m.failf("renewParts(%d): parts out of order", node)
		}
		offs := want[p.tp.Partition]
		slices.Sort(offs)
		if !slices.Equal(p.allOffsets(), offs) || !p.renews || !p.quiet || p.renewOf == nil {
			m.failf("renewParts(%d): %s renews %v, the model %v", node, p.tp, p.allOffsets(), offs)
		}
		for _, ty := range batchTypes(p.batches) {
			if ty != acktype.Renew {
				m.failf("renewParts(%d): a %v among the renews", node, ty)
			}
		}
	}
	r := &lmRenew{node: node, sent: m.now, lock: lock, acqs: acqs, parts: parts, renewing: true}
	r.giveUp = minDl.Add(renewGrace(lock))
	for _, a := range acqs {
		a.renew = r
	}
	for _, d := range live {
		d.renewsSent++
		d.lastRenew = r
	}
	nd.inFlight = r
}

func (m *lmModel) opLeaseRenewAnswer() {
	var nodes []int32
	for _, n := range []int32{1, 2, 3} {
		if m.nodes[n].inFlight != nil {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return
	}
	nd := m.nodes[nodes[m.rng.IntN(len(nodes))]]
	r := nd.inFlight
	nd.inFlight = nil
	mode := m.rng.IntN(4) // 0, 1: success; 2: each part at random; 3: the request failed
	codes := []error{kerr.InvalidRecordState, kerr.NetworkException, kerr.NotLeaderForPartition, kerr.UnknownServerError}
	for _, p := range r.parts {
		var err error
		switch {
		case mode == 3:
			err = &errors.AckError{Topic: "t", Partition: p.tp.Partition, Err: kerr.NetworkException}
		case mode == 2 && m.rng.IntN(2) == 0:
			err = &errors.AckError{Topic: "t", Partition: p.tp.Partition, Err: codes[m.rng.IntN(len(codes))]}
		}
		lockMs := int32(0)
		if m.rng.IntN(2) == 0 {
			lockMs = int32(nd.lock / time.Millisecond)
		}
		m.logf("lease renew of %d answered for %s: %v", r.node, p.tp, err)
		if err != nil {
			m.stats["lease renews answered: failed parts"]++
			reason := lockLostReason(err)
			lost := 0
			for _, a := range r.acqs {
				if a.retired || a.renew != r {
					continue
				}
				for _, d := range a.live() {
					if d.key.p == p.tp.Partition {
						m.expLoss[d] = []errors.LockLostReason{reason}
						lost++
					}
				}
			}
			if reason != errors.LockSessionReset {
				m.renewFailures += uint64(lost)
			}
		} else {
			m.stats["lease renews answered: renewed parts"]++
			m.renewed += uint64(len(p.allOffsets()))
			if r.renewing {
				lk := r.lock
				if lockMs > 0 {
					lk = time.Duration(lockMs) * time.Millisecond
				}
				r.renewing, r.renewed, r.lock = false, true, lk
				for _, a := range r.acqs {
					if a.renew == r {
						a.deadline, a.lock = r.sent.Add(lk), lk
					}
				}
			}
		}
		p.renewOf.renewAnswered(p, err, lockMs, m.now)
		m.settle()
	}
}

func (m *lmModel) opLeaderMove() {
	p := int32(m.rng.IntN(lmPartitions))
	from := m.leader[p]
	to := from%3 + 1
	if m.rng.IntN(2) == 0 {
		to = to%3 + 1
	}
	dropped := 0
	for _, d := range m.sortedCur() {
		if d.key.p != p {
			continue
		}
		if d.place.renew() {
			dropped++
			m.gone(d)
		}
		if d.acq != nil && d.node == from && !d.lost {
			m.expLoss[d] = []errors.LockLostReason{errors.LockLeaderMoved}
		}
	}
	m.logf("t-%d moves from %d to %d", p, from, to)
	tp := TopicPartition{"t", p}
	if n := m.l.dropRenewsOf(tp); n != dropped {
		m.failf("dropRenewsOf(%s) dropped %d, the model %d", tp, n, dropped)
	}
	m.l.losePartition(from, tp)
	m.leader[p] = to
}

func (m *lmModel) opSessionReset() {
	node := int32(1 + m.rng.IntN(3))
	for _, d := range m.sortedCur() {
		if d.acq != nil && d.node == node && !d.lost {
			m.expLoss[d] = []errors.LockLostReason{errors.LockSessionReset}
		}
	}
	m.logf("session with %d reset", node)
	m.l.loseNode(node, errors.LockSessionReset)
}

func (m *lmModel) opProcessStartOrEnd() {
	if m.processing {
		m.logf("Process ends")
		m.giveBack()
		m.processing = false
		return
	}
	m.logf("Process starts")
	m.acceptAll()
	m.moveAcked()
	m.giveBack()
	m.processing = true
}

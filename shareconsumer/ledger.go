package shareconsumer

import (
	"slices"
	"sync"
	"time"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// ledger is every record the consumer holds, from the answer that acquired it until its
// acknowledgement is taken for sending or its lock is lost, whoever holds it:
//
//   - for Poll: acquired and not returned yet (the buffer, in arrival order), returned and not
//     acknowledged yet (polled, by partition and offset, for Acknowledge), and renewed with
//     Renew: from the renew until a later Poll returns the record again (renew-and-return,
//     KIP-1222; renewbuffer orders them);
//   - for Process: acquired and queued for a worker or handled by one, its lock extended in
//     place by the lease (lease.go) until the handler answers.
//
// A record's acknowledgement leaves the ledger for its leader's session, never any other: the
// locks are the leader's. The ledger has its own lock, below Consumer.mu; Process's workers take
// it only to lose a record whose lock ran out and to retire an acquisition whose last record
// left (consumer.go lists who takes which lock).
type ledger struct {
	mu sync.Mutex

	// buffer holds the records acquired for Poll and not returned yet, in arrival order;
	// bufRecords counts them.
	buffer     []bufItem
	bufRecords int
	// polled holds the records Poll returned whose acknowledgement has not been taken yet.
	polled polledSet
	// renews holds the records the application renewed, from the Poll or commit that took the
	// renew until a Poll returns them again.
	renews renewbuffer.Buffer[*renewEntry]

	// lease holds the records acquired for Process.
	lease lease

	// parts are the partitions records were acquired from, by leader.
	parts map[partKey]*heldPart

	// hookRenew: a HookRenew is set, and renew answers name the records they renewed.
	hookRenew bool
}

// bufItem is records acquired and not yet returned by Poll (or a corrupt batch to report),
// with where they came from.
type bufItem struct {
	part    *heldPart
	recs    []*Record
	corrupt *errors.CorruptBatchError
	lock    lockReport // the lock duration the fetch's answer reported
}

// heldPart is a partition records were acquired from, with the leader they came from: their
// acknowledgements go to that leader's session and nowhere else, since the locks are its own.
// One exists per partition and leader, for the life of the consumer.
type heldPart struct {
	tp    TopicPartition
	id    [16]byte
	node  int32
	inbox *ackInbox // the leader's session's, for acknowledgements from Process's workers
	// hi is the highest offset acquired for Process: a record above it cannot be one the
	// ledger holds already; segs are its runs of records in the lease's live acquisitions, to
	// find one delivered again (lease.loseRedelivered). Guarded by ledger.mu.
	hi   int64
	segs []partSeg
}

// ackDest takes acknowledgements leaving the ledger for their leader's session
// (Consumer.sessions).
type ackDest interface {
	ack(part *heldPart, first, last int64, t acktype.Type) // the offsets first to last, all t
	renewQueued(part *heldPart)                            // a Renew among them, for Poll's renew buffer
}

// polledSet holds the records Poll returned whose acknowledgements have not been taken for
// sending yet, and the offsets of corrupt batches Poll reported (acknowledged by the consumer,
// overridable). Acknowledgements stay here until the next Poll, commit or Close takes them
// (moveAcked); until then a later Acknowledge replaces the type.
type polledSet struct {
	parts   map[TopicPartition]*polledPart
	unacked int // records with no acknowledgement recorded yet
	lastTP  TopicPartition
	last    *polledPart // the partition get found last
}

// polledPart is one partition's polled records, sorted by offset.
type polledPart struct {
	recs []polledRec
	hint int // where find looks first
}

// polledRec is one polled record: where it came from (its acknowledgement goes to that leader
// and nowhere else), and its acknowledgement, if it has one.
type polledRec struct {
	off         int64
	rec         *Record // nil for an undecodable offset
	part        *heldPart
	acked       bool
	ty          acktype.Type
	undecodable bool
}

// renewEntry is a record the application renewed, held from the renew until a Poll returns it
// again.
type renewEntry struct {
	rec  *Record
	part *heldPart
	// deadline is the lock deadline the renew's answer gave; the Poll that returns rec puts it
	// in rec.LockDeadline (Acknowledge's doc tells the application to leave rec alone until then).
	deadline time.Time
}

func renewKey(tp TopicPartition, off int64) renewbuffer.Key {
	return renewbuffer.Key{Topic: tp.Topic, Partition: tp.Partition, Offset: off}
}

// hold takes records a ShareFetch acquired for Poll. A fresh delivery of a renewed record
// replaces it: its lock was lost.
func (l *ledger) hold(part *heldPart, recs []*Record, corrupt *errors.CorruptBatchError, lock lockReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renews.Len() > 0 {
		for _, r := range recs {
			l.renews.Remove(renewKey(part.tp, r.Offset))
		}
	}
	l.buffer = append(l.buffer, bufItem{part: part, recs: recs, corrupt: corrupt, lock: lock})
	l.bufRecords += len(recs)
}

// held returns how many records the ledger holds for Poll: buffered, polled (acknowledged or
// not, until their acknowledgements are taken for sending) and renewed.
func (l *ledger) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.bufRecords + l.renews.Len()
	for _, pp := range l.polled.parts {
		for i := range pp.recs {
			if !pp.recs[i].undecodable {
				n++
			}
		}
	}
	return n
}

// pollView is what the ledger tells admission and Status of the records held for Poll.
type pollView struct {
	buffered    int  // records acquired and not returned
	anyBuffered bool // records or a corrupt batch wait
	renewsReady int  // renewed records ready to return
	renewsHeld  int  // renewed records, ready or not
	unacked     int  // polled records without an acknowledgement
}

func (l *ledger) pollView() pollView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return pollView{buffered: l.bufRecords, anyBuffered: len(l.buffer) > 0, renewsReady: l.renews.Ready(),
		renewsHeld: l.renews.Len(), unacked: l.polled.unacked}
}

// take takes up to max records for Poll, renewed records first, then from the buffer, into the
// polled set. Records whose lock ran out by the local estimate are dropped (dropped counts
// them). A corrupt batch is reported on its own: its offsets enter the polled set acknowledged
// as Reject until the application says otherwise; it is returned as the error. lock is the
// lock report of the last records taken, zero when none.
func (l *ledger) take(now time.Time, max int) (out []*Record, err *errors.CorruptBatchError, lock lockReport, dropped, renewedTaken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, renewedTaken = l.takeRenewed(now, max)
	dropped, lock, err = l.drain(now, max-len(out), len(out) > 0, func(it *bufItem, r *Record) {
		if out == nil {
			out = make([]*Record, 0, min(l.bufRecords, max))
		}
		l.polled.add(it.part, r.Offset, r, false, 0)
		out = append(out, r)
	}, func(it *bufItem) {
		for _, o := range it.corrupt.Offsets {
			l.polled.add(it.part, o, nil, true, acktype.Reject)
		}
	})
	return out, err, lock, dropped, renewedTaken
}

// takeRenewed takes up to max renewed records whose renew succeeded back into the polled set,
// with their new lock deadline; those whose lock ran out before a Poll came are dropped.
func (l *ledger) takeRenewed(now time.Time, max int) (out []*Record, n int) {
	if l.renews.Ready() == 0 {
		return nil, 0
	}
	es, _ := l.renews.Take(now, max, nil)
	var fresh map[renewbuffer.Key]struct{}
	if len(es) > 0 && len(l.buffer) > 0 {
		// A fetch may have brought an offset again after its renew was recorded (the lock ran
		// out, and this member acquired it anew): the fresh delivery wins.
		fresh = make(map[renewbuffer.Key]struct{}, l.bufRecords)
		for _, it := range l.buffer {
			for _, r := range it.recs {
				fresh[renewKey(it.part.tp, r.Offset)] = struct{}{}
			}
		}
	}
	for _, e := range es {
		if _, ok := fresh[renewKey(e.part.tp, e.rec.Offset)]; ok {
			continue
		}
		e.rec.LockDeadline = e.deadline
		l.polled.add(e.part, e.rec.Offset, e.rec, false, 0)
		out = append(out, e.rec)
	}
	return out, len(es)
}

// drain takes up to max records from the buffer, in arrival order, giving each to take, and
// dropping those whose lock has run out by the local estimate. It stops before a corrupt batch
// when records were taken (taken says whether the caller already has some); otherwise it gives
// the batch to corrupt, removes it and returns its error.
func (l *ledger) drain(now time.Time, max int, taken bool, take func(it *bufItem, r *Record), corrupt func(it *bufItem)) (dropped int, lock lockReport, _ *errors.CorruptBatchError) {
	n := 0
	for len(l.buffer) > 0 && n < max {
		it := &l.buffer[0]
		if it.corrupt != nil {
			if taken || n > 0 {
				break
			}
			corrupt(it)
			ce := it.corrupt
			l.popBuffer()
			return dropped, lock, ce
		}
		k := min(len(it.recs), max-n)
		for _, r := range it.recs[:k] {
			if !r.LockDeadline.IsZero() && !now.Before(r.LockDeadline) {
				dropped++
				continue
			}
			take(it, r)
			n++
		}
		if it.lock.seq > lock.seq {
			lock = it.lock
		}
		l.bufRecords -= k
		it.recs = it.recs[k:]
		if len(it.recs) == 0 {
			l.popBuffer()
		}
	}
	return dropped, lock, nil
}

func (l *ledger) popBuffer() {
	l.buffer[0] = bufItem{}
	l.buffer = l.buffer[1:]
	if len(l.buffer) == 0 {
		l.buffer = nil
	}
}

// giveBack releases every record acquired for Poll and not returned, and every renewed record
// waiting for a Poll, for Unsubscribe, Process and a member leaving: the broker may give them to
// another member at once. Corrupt batches are rejected, as Poll would have.
func (l *ledger) giveBack(dest ackDest, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range l.buffer {
		if it.corrupt != nil {
			for _, o := range it.corrupt.Offsets {
				dest.ack(it.part, o, o, acktype.Reject)
			}
			continue
		}
		for _, r := range it.recs {
			dest.ack(it.part, r.Offset, r.Offset, acktype.Release)
		}
	}
	l.buffer, l.bufRecords = nil, 0
	if l.renews.Ready() > 0 {
		es, _ := l.renews.Take(now, l.renews.Ready(), nil)
		for _, e := range es {
			dest.ack(e.part, e.rec.Offset, e.rec.Offset, acktype.Release)
		}
	}
}

// acknowledge records t for the polled record at tp/offset (undecodable: an offset of a corrupt
// batch). It returns the record's part, nil when no such record is held; check may refuse t
// for that part (the renew gate), and its error is returned with nothing recorded.
func (l *ledger) acknowledge(tp TopicPartition, offset int64, t acktype.Type, undecodable bool, check func(*heldPart) error) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pp := l.polled.get(tp)
	if pp == nil {
		return false, nil
	}
	r := pp.find(offset)
	if r == nil || r.undecodable != undecodable {
		return false, nil
	}
	if check != nil {
		if err := check(r.part); err != nil {
			return true, err
		}
	}
	if !r.acked {
		r.acked = true
		l.polled.unacked--
	}
	r.ty = t
	return true, nil
}

// unacked returns how many polled records have no acknowledgement.
func (l *ledger) unacked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.polled.unacked
}

// acceptAll is implicit acknowledgement: every polled record without an acknowledgement is
// accepted; those with one (the consumer's own rejections) keep it.
func (l *ledger) acceptAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.polled.unacked == 0 {
		return
	}
	for _, pp := range l.polled.parts {
		for i := range pp.recs {
			if r := &pp.recs[i]; !r.acked {
				r.acked, r.ty = true, acktype.Accept
			}
		}
	}
	l.polled.unacked = 0
}

// moveAcked takes the acknowledged records out of the polled set, their acknowledgements to the
// leader each came from: from now on they cannot be acknowledged again. Renewed records move
// to the renew buffer, queued, until a Poll returns them again. Records without an
// acknowledgement stay.
func (l *ledger) moveAcked(dest ackDest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pp := range l.polled.parts {
		keep := pp.recs[:0]
		// Consecutive offsets with one type and leader go as one run.
		var run polledRec // run.part nil: none
		var runLast int64
		flush := func() {
			if run.part != nil {
				dest.ack(run.part, run.off, runLast, run.ty)
				run.part = nil
			}
		}
		for _, r := range pp.recs {
			if !r.acked {
				keep = append(keep, r)
				continue
			}
			if r.ty == acktype.Renew {
				l.renews.Add(renewKey(r.part.tp, r.off), &renewEntry{rec: r.rec, part: r.part})
				dest.renewQueued(r.part)
			}
			if run.part != nil && r.off == runLast+1 && r.ty == run.ty && r.part == run.part {
				runLast = r.off
				continue
			}
			flush()
			run, runLast = r, r.off
		}
		flush()
		clear(pp.recs[len(keep):])
		pp.recs = keep // an emptied partition stays, its memory used again by the next Poll
		pp.hint = 0
	}
}

// unrenew, for Close, takes back the renews the application recorded since the last Poll or
// commit, and drops the renewed records waiting for a Poll: renewing is pointless now, and the
// session's close releases them.
func (l *ledger) unrenew(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pp := range l.polled.parts {
		for i := range pp.recs {
			if r := &pp.recs[i]; r.acked && r.ty == acktype.Renew {
				r.acked = false
				l.polled.unacked++
			}
		}
	}
	l.renews.Take(now, l.renews.Ready(), nil)
}

// renewSent records that the renews of p, Poll's, leave now: each gets the ticket its answer
// needs.
func (l *ledger) renewSent(p *ackPart, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range p.renewOffsets() {
		if t, ok := l.renews.MarkSent(renewKey(p.tp, o), now); ok {
			p.tickets = append(p.tickets, renewTicket{o, t})
		}
	}
}

// renewAnswered applies the outcome of p's renews (Poll's) to the renew buffer: on success each
// waits for a Poll, its deadline lock after the send, or, with release, leaves the buffer and is
// returned, to be released; on failure, or when it was never sent, it is dropped. With
// hookRenew it also returns the records renewed and their deadline, for HookRenew.
func (l *ledger) renewAnswered(p *ackPart, err error, lock time.Duration, release bool) (released []*renewEntry, renewed []*Record, deadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.tickets == nil {
		for _, o := range p.renewOffsets() {
			l.renews.Remove(renewKey(p.tp, o))
		}
		return nil, nil, time.Time{}
	}
	for _, t := range p.tickets {
		k := renewKey(p.tp, t.off)
		if err != nil {
			l.renews.Fail(k, t.ticket)
			continue
		}
		if !l.renews.Complete(k, t.ticket, lock) {
			continue
		}
		e, _, dl, _ := l.renews.Get(k)
		e.deadline = dl
		if l.hookRenew {
			renewed, deadline = append(renewed, e.rec), dl
		}
		if release {
			l.renews.Remove(k)
			released = append(released, e)
		}
	}
	return released, renewed, deadline
}

// dropRenewsOf forgets the renewed records of tp, whose locks are gone (its leader moved), and
// returns how many there were.
func (l *ledger) dropRenewsOf(tp TopicPartition) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renews.Len() == 0 {
		return 0
	}
	return len(l.renews.RemovePartition(tp.Topic, tp.Partition))
}

// add records a delivery of rec (or of offset off, undecodable, with rec nil) from part,
// unacknowledged, or acknowledged as ty by the consumer itself for an undecodable offset. A
// record delivered again replaces its earlier delivery.
func (s *polledSet) add(part *heldPart, off int64, rec *Record, undecodable bool, ty acktype.Type) {
	if s.parts == nil {
		s.parts = make(map[TopicPartition]*polledPart)
	}
	pp := s.get(part.tp)
	if pp == nil {
		pp = &polledPart{}
		s.parts[part.tp] = pp
	}
	r := polledRec{off: off, rec: rec, part: part, acked: undecodable, ty: ty, undecodable: undecodable}
	if !r.acked {
		s.unacked++
	}
	n := len(pp.recs)
	if n == 0 || pp.recs[n-1].off < off {
		pp.recs = append(pp.recs, r)
		return
	}
	i, found := slices.BinarySearchFunc(pp.recs, off, func(r polledRec, o int64) int { return cmp64(r.off, o) })
	if found {
		if !pp.recs[i].acked {
			s.unacked--
		}
		pp.recs[i] = r
		return
	}
	pp.recs = slices.Insert(pp.recs, i, r)
}

// get returns tp's polled records, nil for none; consecutive calls for one partition skip the
// map.
func (s *polledSet) get(tp TopicPartition) *polledPart {
	if s.last != nil && s.lastTP == tp {
		return s.last
	}
	pp := s.parts[tp]
	if pp != nil {
		s.lastTP, s.last = tp, pp
	}
	return pp
}

func (pp *polledPart) find(off int64) *polledRec {
	// Applications acknowledge in the order Poll returned the records, mostly: try the record
	// after the last one found before searching.
	if i := pp.hint; i < len(pp.recs) && pp.recs[i].off == off {
		pp.hint++
		return &pp.recs[i]
	}
	i, found := slices.BinarySearchFunc(pp.recs, off, func(r polledRec, o int64) int { return cmp64(r.off, o) })
	if !found {
		return nil
	}
	pp.hint = i + 1
	return &pp.recs[i]
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// part returns the heldPart of tp (topic id id) led by s's broker, made on first use.
func (l *ledger) part(tp TopicPartition, id [16]byte, s *session) *heldPart {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := partKey{tp, s.node}
	p := l.parts[k]
	if p == nil || p.id != id {
		if l.parts == nil {
			l.parts = make(map[partKey]*heldPart)
		}
		p = &heldPart{tp: tp, id: id, node: s.node, inbox: &s.inbox, hi: -1}
		l.parts[k] = p
	}
	return p
}

type partKey struct {
	tp   TopicPartition
	node int32
}

// acquire takes records acquired for Process from node (see lease.acquire); hold makes their
// holders before any can be lost.
func (l *ledger) acquire(node int32, pps []poolPart, sent time.Time, lock time.Duration, renewable bool, now time.Time, hold func([]entry)) []entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease.acquire(node, pps, sent, lock, renewable, now, hold)
}

// due handles the lease's events due at now (lease.due).
func (l *ledger) due(now time.Time) leaseEvents {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease.due(now)
}

// renewParts builds the renew of every live Process record of node, sent at now.
func (l *ledger) renewParts(node int32, now time.Time) []*ackPart {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts, g := l.lease.renewParts(node, now)
	if g != nil {
		r := &leaseRenew{l: l, g: g}
		for _, p := range parts {
			p.renewOf = r
		}
	}
	return parts
}

// renewSentOut counts a renew request of the lease that was sent.
func (l *ledger) renewSentOut() { l.lease.renewRequests.Add(1) }

// renewDropped tells the lease that the renew queued for node will not be sent.
func (l *ledger) renewDropped(node int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.lease.nodes[node]; n != nil {
		n.renewQueued = false
	}
}

// leaseRenew is one renew request of the lease, told its outcome part by part.
type leaseRenew struct {
	l *ledger
	g *leaseGroup
}

func (r *leaseRenew) renewSent(*ackPart, time.Time) {}

// renewAnswered applies the outcome of p's renews; with hookRenew, a success returns the
// records of p the lease still holds (a record settled, its acquisition retired since the
// renew left, is not among them) and their new deadline.
func (r *leaseRenew) renewAnswered(p *ackPart, err error, lockMs int32, now time.Time) ([]*Record, time.Time) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.lease.renewAnswered(r.g, p, err, lockMs, now)
	if !r.l.hookRenew || err != nil || !r.g.renewed.Load() {
		return nil, time.Time{}
	}
	var recs []*Record
	for _, a := range r.g.acqs {
		for i := range a.entries {
			if e := &a.entries[i]; e.part.tp == p.tp && e.lastRenew.Load() == r.g && e.state.Load() != entryLost {
				recs = append(recs, e.rec)
			}
		}
	}
	return recs, r.l.lease.at(r.g.deadline.Load())
}

// takeLost returns the locks lost since it was last called, for HookLockLost.
func (l *ledger) takeLost() []LockLostEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := l.lease.lost
	l.lease.lost = nil
	return lost
}

// loseNode loses every Process record held from node.
func (l *ledger) loseNode(node int32, reason errors.LockLostReason) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease.loseNode(node, reason)
}

// losePartition loses the Process records of tp held from node.
func (l *ledger) losePartition(node int32, tp TopicPartition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease.losePartition(node, tp)
}

// loseOne loses e's lock, if it is live.
func (l *ledger) loseOne(e *entry, reason errors.LockLostReason) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease.lose(e, reason, nil)
}

// eachRunning calls fn for every Process record a handler has.
func (l *ledger) eachRunning(fn func(*entry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.lease.nodes {
		for _, a := range n.acqs {
			for i := range a.entries {
				if e := &a.entries[i]; e.state.Load() == entryRunning {
					fn(e)
				}
			}
		}
	}
}

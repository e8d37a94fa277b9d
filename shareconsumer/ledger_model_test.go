package shareconsumer

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// A property test of the ledger against a model. Random sequences of Poll operations (fetch
// answers, Poll's take, Acknowledge, implicit acceptance, acknowledgements taken for sending,
// Poll's renews sent and answered, giving records back) interleave with Process operations
// (ShareFetch answers acquired, workers beginning, finishing, releasing and publishing, lease
// events as time passes, lease renews built and answered), leader moves and share-session
// resets. The model keeps, for each record (partition, offset), its current delivery and where
// that is; after every operation the ledger must agree with it: every record in exactly one
// place, each acknowledgement leaving once to the leader the record came from and never for a
// record whose lock was lost, the held and queued counts, acquisitions retired exactly when
// nothing of them is left, and a timer heap holding only what is alive.
//
// The model is a simple broker too: it delivers an offset again only when no delivery of it is
// held, or when the lock of the one held ran out (a renewed record waiting for a Poll, or a
// Process record with no renew on its way), as a broker would. Poll and Process records never
// share an offset at once; Process starting gives Poll's records back, as startProcess does.
//
//	go test ./shareconsumer -run TestLedgerModel -ledgermodel.seqs=20000
//
// runs more sequences; -ledgermodel.seed picks the first seed (a failure prints its seed and
// the operations before it).
// FuzzLedgerModel runs the same sequences from fuzzed seeds.

var (
	lmSeqs  = flag.Int("ledgermodel.seqs", 0, "TestLedgerModel: how many random sequences to run (0: the default, quick)")
	lmSeed  = flag.Uint64("ledgermodel.seed", 1, "TestLedgerModel: the seed of the first sequence")
	lmSteps = flag.Int("ledgermodel.steps", 250, "TestLedgerModel: operations per sequence")
)

const (
	lmDefaultSeqs = 200
	lmPartitions  = 3
	lmMargin      = 300 * time.Millisecond // RenewMargin
	lmPollLock    = 2 * time.Second        // the lock Poll's renews count with when the answer has none
)

func TestLedgerModel(t *testing.T) {
	t.Parallel()
	n := *lmSeqs
	if n == 0 {
		n = lmDefaultSeqs
	}
	start := time.Now()
	total := map[string]int{}
	for i := range n {
		for k, v := range runLedgerModel(t, *lmSeed+uint64(i), *lmSteps) {
			total[k] += v
		}
		if t.Failed() {
			return
		}
	}
	var s []string
	for k, v := range total {
		s = append(s, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(s)
	t.Logf("%d sequences of %d operations in %v; exercised: %s", n, *lmSteps, time.Since(start).Round(time.Millisecond), strings.Join(s, ", "))
}

func FuzzLedgerModel(f *testing.F) {
	f.Add(uint64(1), uint16(250))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		runLedgerModel(t, seed, 1+int(steps%1000))
	})
}

// lmKey is a record: an offset of a partition of topic "t".
type lmKey struct {
	p   int32
	off int64
}

func (k lmKey) String() string { return fmt.Sprintf("t-%d@%d", k.p, k.off) }

// lmPlace is where the ledger holds a delivery.
type lmPlace uint8

const (
	lmGone        lmPlace = iota // not held (any more)
	lmBuffer                     // Poll: acquired, not returned
	lmPolled                     // Poll: returned, its acknowledgement not taken
	lmRenewQueued                // Poll: renewed, the renew not sent
	lmRenewSent                  // Poll: renewed, the renew on its way
	lmRenewReady                 // Poll: renewed, waiting for a Poll
	lmQueued                     // Process: waiting for a worker
	lmRunning                    // Process: a handler has it
)

var lmPlaceNames = [...]string{"gone", "buffer", "polled", "renew-queued", "renew-sent", "renew-ready", "queued", "running"}

func (p lmPlace) String() string { return lmPlaceNames[p] }

func (p lmPlace) renew() bool { return p == lmRenewQueued || p == lmRenewSent || p == lmRenewReady }

// lmDelivery is one delivery of a record to the consumer.
type lmDelivery struct {
	id    int
	key   lmKey
	node  int32
	part  *heldPart
	place lmPlace
	rec   *Record
	// Poll
	undecodable   bool
	acked         bool
	ty            acktype.Type
	renewSentAt   time.Time
	renewDeadline time.Time
	pollRenew     *lmPollRenew // the renew it was sent in
	// Process
	e          *entry
	acq        *lmAcq
	lost       bool
	inQueue    bool // not taken out of the queue by a worker yet, lost or not
	renewsSent int
	lastRenew  *lmRenew
	// final: its acknowledgement (not a Renew) left the ledger.
	final bool
}

func (d *lmDelivery) String() string {
	return fmt.Sprintf("#%d %s from %d (%s)", d.id, d.key, d.node, d.place)
}

// lockUntil is when the broker may deliver d again; zero: not by time.
func (d *lmDelivery) lockUntil() time.Time {
	switch {
	case d.acq != nil:
		return d.acq.deadline
	case d.place == lmRenewReady:
		return d.renewDeadline
	}
	return d.rec.LockDeadline
}

// lmAcq is an acquisition: the records of one ShareFetch answer for Process.
type lmAcq struct {
	node      int32
	renewable bool // its leader took RENEW when it was acquired
	ds        []*lmDelivery
	a         *acquisition
	lock      time.Duration
	deadline  time.Time // zero without a lock duration
	renew     *lmRenew  // the last renew that covered it
	holdEnd   time.Time
	holdFired bool
	done      int // records settled (counted) or lost
	retired   bool
}

func (a *lmAcq) renewing() bool { return a.renew != nil && a.renew.renewing }

func (a *lmAcq) live() []*lmDelivery {
	var out []*lmDelivery
	for _, d := range a.ds {
		if !d.lost && (d.place == lmQueued || d.place == lmRunning) {
			out = append(out, d)
		}
	}
	return out
}

// lmRenew is a renew of a leader's Process records.
type lmRenew struct {
	node     int32
	sent     time.Time
	giveUp   time.Time
	lock     time.Duration
	acqs     []*lmAcq
	parts    []*ackPart
	renewing bool
	renewed  bool
}

// lmPollRenew is a part of Poll's renews sent to a leader.
type lmPollRenew struct {
	p  *ackPart
	ds []*lmDelivery
}

type lmNode struct {
	renewable   bool
	lock        time.Duration
	renewQueued bool
	inFlight    *lmRenew
}

// lmWorker is one of Process's workers: its batch, and the model's view of it.
type lmWorker struct {
	b       workerBatch
	running []*lmDelivery
	// the model's batch
	unqueued, left, settled int64
	acks                    []lmExp
	acq                     *lmAcq
	acqLeft                 int
}

// lmAck is an acknowledgement that left the ledger.
type lmAck struct {
	node int32
	key  lmKey
	t    acktype.Type
}

// lmExp is an acknowledgement the model expects, and its delivery.
type lmExp struct {
	lmAck
	d *lmDelivery
}

// lmDest is the ackDest of Poll's acknowledgements: it records them.
type lmDest struct {
	acks    []lmAck
	renewsQ map[*heldPart]int
}

func (d *lmDest) ack(part *heldPart, first, last int64, t acktype.Type) {
	for o := first; o <= last; o++ {
		d.acks = append(d.acks, lmAck{part.node, lmKey{part.tp.Partition, o}, t})
	}
}

func (d *lmDest) renewQueued(part *heldPart) { d.renewsQ[part]++ }

// lmHold is the lockHolder of a Process delivery.
type lmHold struct {
	m *lmModel
	d *lmDelivery
}

func (h *lmHold) lockLost(err *errors.LockLostError) { h.m.lockLost(h.d, err) }

// lmRenewer is Poll's renewer, as pollRenews, on the model's ledger: a renewed record no Poll
// will return (Process runs) is released.
type lmRenewer struct{ m *lmModel }

func (r lmRenewer) renewSent(p *ackPart, now time.Time) { r.m.l.renewSent(p, now) }

func (r lmRenewer) renewAnswered(p *ackPart, err error, lockMs int32, _ time.Time) ([]*Record, time.Time) {
	m := r.m
	d := lmPollLock
	if lockMs > 0 {
		d = time.Duration(lockMs) * time.Millisecond
	}
	released, _, _ := m.l.renewAnswered(p, err, d, m.processing)
	for _, e := range released {
		m.dest.ack(e.part, e.rec.Offset, e.rec.Offset, acktype.Release)
	}
	return nil, time.Time{}
}

type lmModel struct {
	tb    testing.TB
	seed  uint64
	step  int
	rng   *rand.Rand
	l     *ledger
	dest  *lmDest
	parts map[partKey]*heldPart
	ss    map[int32]*session
	now   time.Time

	leader     [lmPartitions]int32
	nodes      map[int32]*lmNode
	processing bool

	nextID   int
	nextOff  [lmPartitions]int64
	cur      map[lmKey]*lmDelivery // the held delivery of each record
	archived map[lmKey]bool        // accepted or rejected: never delivered again
	unsent   map[lmKey]bool        // settled by a worker that has not published: still locked
	buffer   []*lmBufItem
	queue    []*lmDelivery
	acqs     []*lmAcq // not retired
	workers  [2]*lmWorker
	pRenews  []*lmPollRenew

	held, queued                                int64
	settled, renewed, renewFailures, renewCount uint64

	expAcks  []lmExp // Poll's, to the dest
	expInbox []lmExp // Process's, to the sessions' inboxes
	expLoss  map[*lmDelivery][]errors.LockLostReason
	bad      []string // violations found where the test cannot stop (under the ledger's lock)
	log      []string
	stats    map[string]int // what the sequence exercised
}

type lmBufItem struct {
	part    *heldPart
	ds      []*lmDelivery
	corrupt []*lmDelivery
}

func runLedgerModel(t *testing.T, seed uint64, steps int) map[string]int {
	t.Helper()
	m := newLedgerModel(t, seed)
	for m.step = 0; m.step < steps; m.step++ {
		m.stepOnce()
		if t.Failed() {
			break
		}
	}
	return m.stats
}

func newLedgerModel(tb testing.TB, seed uint64) *lmModel {
	rng := rand.New(rand.NewPCG(seed, 0x1ed9e7))
	m := &lmModel{
		tb: tb, seed: seed, rng: rng,
		l:     &ledger{},
		dest:  &lmDest{renewsQ: map[*heldPart]int{}},
		parts: map[partKey]*heldPart{},
		ss:    map[int32]*session{},
		now:   ltT0,
		nodes: map[int32]*lmNode{
			1: {renewable: true, lock: 2 * time.Second},
			2: {renewable: true, lock: 3 * time.Second},
			3: {renewable: false, lock: 1500 * time.Millisecond},
		},
		cur:      map[lmKey]*lmDelivery{},
		archived: map[lmKey]bool{},
		unsent:   map[lmKey]bool{},
		expLoss:  map[*lmDelivery][]errors.LockLostReason{},
		stats:    map[string]int{},
	}
	m.l.lease.epoch = ltT0.Add(-time.Hour)
	m.l.lease.fixedMargin = lmMargin
	if rng.IntN(2) == 0 {
		m.l.lease.maxHold = 6 * time.Second
	}
	for i := range m.leader {
		m.leader[i] = int32(i%3) + 1
	}
	for i := range m.workers {
		m.workers[i] = &lmWorker{}
	}
	return m
}

func (m *lmModel) failf(format string, args ...any) {
	m.tb.Helper()
	start := max(0, len(m.log)-60)
	m.tb.Fatalf("seed %d, step %d: %s\nlast operations:\n  %s", m.seed, m.step, fmt.Sprintf(format, args...), strings.Join(m.log[start:], "\n  "))
}

func (m *lmModel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("%d %s: ", m.step, m.now.Sub(ltT0))+fmt.Sprintf(format, args...))
}

func (m *lmModel) session(node int32) *session {
	s := m.ss[node]
	if s == nil {
		s = newSession(node, lmRenewer{m})
		m.ss[node] = s
	}
	return s
}

func (m *lmModel) part(node, p int32) *heldPart {
	return m.l.part(TopicPartition{"t", p}, [16]byte{byte(p + 1)}, m.session(node))
}

func (m *lmModel) deliver(key lmKey, node int32, place lmPlace) *lmDelivery {
	m.nextID++
	d := &lmDelivery{id: m.nextID, key: key, node: node, part: m.part(node, key.p), place: place,
		rec: &Record{Topic: "t", Partition: key.p, Offset: key.off}}
	m.cur[key] = d
	return d
}

// gone takes d out of the model's places: it left the ledger.
func (m *lmModel) gone(d *lmDelivery) {
	if m.cur[d.key] == d {
		delete(m.cur, d.key)
	}
	d.place = lmGone
}

// offsets picks up to n offsets of p to deliver from node, in order: new ones, or ones the
// broker may deliver again (redeliverable says which held deliveries allow it).
func (m *lmModel) offsets(p int32, n int, redeliverable func(d *lmDelivery) bool) []int64 {
	var again []int64
	for off := range m.nextOff[p] {
		k := lmKey{p, off}
		if m.archived[k] || m.unsent[k] {
			continue
		}
		if d := m.cur[k]; d == nil || redeliverable(d) {
			again = append(again, off)
		}
	}
	var out []int64
	for range n {
		if len(again) > 0 && m.rng.IntN(3) == 0 {
			i := m.rng.IntN(len(again))
			out = append(out, again[i])
			again = slices.Delete(again, i, i+1)
			continue
		}
		out = append(out, m.nextOff[p])
		m.nextOff[p]++
	}
	slices.Sort(out)
	return out
}

// --- the model's bookkeeping ---

// lockLost is a holder told that d's lock was lost.
func (m *lmModel) lockLost(d *lmDelivery, err *errors.LockLostError) {
	reasons, ok := m.expLoss[d]
	switch {
	case d.lost:
		m.bad = append(m.bad, fmt.Sprintf("%s lost twice (%v)", d, err.Reason))
		return
	case !ok:
		m.bad = append(m.bad, fmt.Sprintf("%s lost (%v), the model keeps it (deadline %v, renewing %v)", d, err.Reason, d.acq.deadline.Sub(ltT0), d.acq.renewing()))
	case !slices.Contains(reasons, err.Reason):
		m.bad = append(m.bad, fmt.Sprintf("%s lost for %v, the model says %v", d, err.Reason, reasons))
	case err.Topic != "t" || err.Partition != d.key.p || err.Offset != d.key.off:
		m.bad = append(m.bad, fmt.Sprintf("%s lost as %s-%d@%d", d, err.Topic, err.Partition, err.Offset))
	}
	delete(m.expLoss, d)
	m.stats["lost "+err.Reason.String()]++
	d.lost = true
	if d.place == lmRunning {
		m.held--
	}
	if m.cur[d.key] == d {
		m.gone(d)
	} else {
		d.place = lmGone
	}
	m.acqLeft(d.acq, 1)
}

// settle checks what an operation did besides its own result: the holders' reports and the
// acknowledgements that left.
func (m *lmModel) settle() {
	m.tb.Helper()
	if len(m.bad) > 0 {
		m.failf("%s", strings.Join(m.bad, "; "))
	}
	if len(m.expLoss) > 0 {
		var s []string
		for d, r := range m.expLoss {
			s = append(s, fmt.Sprintf("%s (%v)", d, r))
		}
		slices.Sort(s)
		m.failf("locks the model lost and the ledger did not: %s", strings.Join(s, ", "))
	}
	m.matchAcks("to the sessions", m.dest.acks, m.expAcks)
	m.dest.acks, m.expAcks = nil, nil
	var inbox []lmAck
	for _, n := range []int32{1, 2, 3} {
		if s := m.ss[n]; s != nil {
			for _, a := range s.inbox.swap(nil) {
				if a.part.inbox != &s.inbox {
					m.failf("an acknowledgement for %d went to the inbox of %d", a.part.node, n)
				}
				inbox = append(inbox, lmAck{n, lmKey{a.part.tp.Partition, a.off}, a.t})
			}
		}
	}
	m.matchAcks("to the inboxes", inbox, m.expInbox)
	m.expInbox = nil
}

func (m *lmModel) matchAcks(what string, got []lmAck, want []lmExp) {
	m.tb.Helper()
	cmpAck := func(a, b lmAck) int {
		if a.node != b.node {
			return int(a.node - b.node)
		}
		if a.key.p != b.key.p {
			return int(a.key.p - b.key.p)
		}
		if a.key.off != b.key.off {
			return cmp64(a.key.off, b.key.off)
		}
		return int(a.t) - int(b.t)
	}
	slices.SortFunc(got, cmpAck)
	slices.SortFunc(want, func(a, b lmExp) int { return cmpAck(a.lmAck, b.lmAck) })
	w := make([]lmAck, len(want))
	for i, e := range want {
		w[i] = e.lmAck
	}
	if !slices.Equal(got, w) {
		m.failf("acknowledgements %s: %v, the model %v", what, got, w)
	}
	for _, e := range want {
		m.stats["ack "+what+" "+e.t.String()]++
		d := e.d
		switch {
		case d.lost:
			m.failf("%s acknowledged (%v) though its lock was lost", d, e.t)
		case d.final:
			m.failf("%s acknowledged (%v) a second time", d, e.t)
		case e.node != d.part.node:
			m.failf("%s acknowledged to %d, not to the leader it came from", d, e.node)
		}
		if e.t != acktype.Renew {
			d.final = true
		}
	}
}

func (m *lmModel) sortedCur() []*lmDelivery {
	out := make([]*lmDelivery, 0, len(m.cur))
	for _, d := range m.cur {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *lmDelivery) int { return a.id - b.id })
	return out
}

func (m *lmModel) inPlace(p lmPlace) []*lmDelivery {
	var out []*lmDelivery
	for _, d := range m.sortedCur() {
		if d.place == p {
			out = append(out, d)
		}
	}
	return out
}

// check compares the ledger with the model.
func (m *lmModel) check() {
	m.tb.Helper()
	l := m.l
	found := map[lmKey]int{}

	// Poll's buffer, item by item.
	if len(l.buffer) != len(m.buffer) {
		m.failf("the buffer has %d items, the model %d", len(l.buffer), len(m.buffer))
	}
	bufRecords := 0
	for i, it := range l.buffer {
		mi := m.buffer[i]
		if it.part != mi.part || len(it.recs) != len(mi.ds) || (it.corrupt != nil) != (mi.corrupt != nil) {
			m.failf("buffer item %d differs from the model's", i)
		}
		for j, r := range it.recs {
			if r != mi.ds[j].rec || mi.ds[j].place != lmBuffer {
				m.failf("buffer item %d record %d differs from the model's", i, j)
			}
			found[mi.ds[j].key]++
		}
		if it.corrupt != nil {
			for j, o := range it.corrupt.Offsets {
				if o != mi.corrupt[j].key.off {
					m.failf("buffer item %d: corrupt offset %d", i, o)
				}
				found[mi.corrupt[j].key]++
			}
		}
		bufRecords += len(it.recs)
	}
	if l.bufRecords != bufRecords {
		m.failf("bufRecords %d, the buffer has %d", l.bufRecords, bufRecords)
	}

	// Poll's polled set.
	polled, unacked := 0, 0
	for tp, pp := range l.polled.parts {
		for i, r := range pp.recs {
			if i > 0 && pp.recs[i-1].off >= r.off {
				m.failf("polled %s out of order", tp)
			}
			k := lmKey{tp.Partition, r.off}
			d := m.cur[k]
			if d == nil || d.place != lmPolled || d.part != r.part || d.rec != r.rec && !d.undecodable || d.undecodable != r.undecodable || d.acked != r.acked || (r.acked && d.ty != r.ty) {
				m.failf("polled %s (acked %v %v, part of %d) differs from the model's %v", k, r.acked, r.ty, r.part.node, d)
			}
			found[k]++
			polled++
			if !r.acked {
				unacked++
			}
		}
	}
	if l.polled.unacked != unacked {
		m.failf("polled.unacked %d, the set has %d", l.polled.unacked, unacked)
	}

	// Poll's renews.
	renews, ready := 0, 0
	for _, d := range m.sortedCur() {
		switch d.place {
		case lmPolled:
			polled--
		case lmRenewQueued, lmRenewSent, lmRenewReady:
			renews++
			e, s, dl, ok := l.renews.Get(renewKey(TopicPartition{"t", d.key.p}, d.key.off))
			want := map[lmPlace]renewbuffer.State{lmRenewQueued: renewbuffer.Queued, lmRenewSent: renewbuffer.Sent, lmRenewReady: renewbuffer.Ready}[d.place]
			if !ok || s != want || e.rec != d.rec || e.part != d.part {
				m.failf("renews hold %s as %v (held %v), the model as %v", d.key, s, ok, d.place)
			}
			if d.place == lmRenewReady {
				ready++
				if !dl.Equal(d.renewDeadline) {
					m.failf("renewed %s: deadline %v, the model %v", d.key, dl.Sub(ltT0), d.renewDeadline.Sub(ltT0))
				}
			}
			found[d.key]++
		}
	}
	if polled != 0 {
		m.failf("the polled set and the model differ by %d records", polled)
	}
	if l.renews.Len() != renews || l.renews.Ready() != ready {
		m.failf("renews hold %d (%d ready), the model %d (%d)", l.renews.Len(), l.renews.Ready(), renews, ready)
	}
	pv := l.pollView()
	if pv.buffered != bufRecords || pv.renewsHeld != renews || pv.renewsReady != ready || pv.unacked != unacked {
		m.failf("pollView %+v", pv)
	}

	// Process's records, acquisitions, groups and timers.
	le := &l.lease
	live := 0
	liveQueued := 0
	acqs := map[*acquisition]*lmAcq{}
	for _, a := range m.acqs {
		acqs[a.a] = a
	}
	for node, n := range le.nodes {
		for i, a := range n.acqs {
			ma := acqs[a]
			switch {
			case a.at != i:
				m.failf("node %d: acquisition %d knows itself at %d", node, i, a.at)
			case ma == nil:
				m.failf("node %d holds an acquisition the model does not know", node)
			case ma.retired:
				m.failf("node %d holds an acquisition of %d records with nothing left (done %d)", node, len(ma.ds), a.done.Load())
			case int(a.done.Load()) != ma.done:
				m.failf("an acquisition counts %d records left, the model %d", a.done.Load(), ma.done)
			}
			delete(acqs, a)
			g := a.group.Load()
			if g == nil || a.inGroup >= len(g.acqs) || g.acqs[a.inGroup] != a || g.node != n {
				m.failf("node %d: an acquisition is not where its group says", node)
			}
			for j := range a.entries {
				e := &a.entries[j]
				s := e.state.Load()
				if s != entryQueued && s != entryRunning {
					continue
				}
				d := ma.ds[j]
				if d.e != e || d.lost || m.cur[d.key] != d || (s == entryQueued) != (d.place == lmQueued) || (s == entryRunning) != (d.place == lmRunning) {
					m.failf("the lease holds %s (state %d), the model %v", d.key, s, d)
				}
				if got, want := e.renews(), m.renewsOf(d); got != want {
					m.failf("%s: renews() %d, the model %d", d, got, want)
				}
				live++
				if s == entryQueued {
					liveQueued++
				}
				found[d.key]++
			}
			// A live acquisition's events are in the heap.
			if len(ma.live()) > 0 {
				if !ma.holdEnd.IsZero() && !ma.holdFired && a.hold.index < 0 {
					m.failf("a live acquisition's MaxHold is not in the heap")
				}
				if (g.renewing.Load() || g.deadline.Load() != 0) && g.t.index < 0 {
					m.failf("a live group's timer is not in the heap")
				}
			}
		}
	}
	for _, ma := range acqs {
		if !ma.retired {
			m.failf("an acquisition of %d records (done %d) was retired with records left", len(ma.ds), ma.done)
		}
	}
	m.acqs = slices.DeleteFunc(m.acqs, func(a *lmAcq) bool { return a.retired })
	for i, t := range le.timers {
		switch {
		case t.index != i:
			m.failf("timer %d knows itself at %d", i, t.index)
		case i > 0 && le.timers[(i-1)/2].at.After(t.at):
			m.failf("the timer heap is out of order at %d", i)
		case t.acq != nil && ltRetired(le, t.acq):
			m.failf("the heap holds the MaxHold of a retired acquisition")
		case t.group != nil && len(t.group.acqs) == 0:
			m.failf("the heap holds the timer of an empty group")
		}
		if t.group != nil {
			for _, a := range t.group.acqs {
				if ltRetired(le, a) {
					m.failf("the heap holds a group with a retired acquisition")
				}
			}
		}
	}
	wantLive := 0
	for _, d := range m.cur {
		if d.place == lmQueued || d.place == lmRunning {
			wantLive++
		}
	}
	if live != wantLive {
		m.failf("the lease holds %d live records, the model %d", live, wantLive)
	}

	// Counts.
	held, queued := le.held.Load(), le.queued.Load()
	switch {
	case held != m.held || queued != m.queued:
		m.failf("held %d queued %d, the model %d and %d", held, queued, m.held, m.queued)
	case held < int64(live) || queued < int64(liveQueued):
		m.failf("held %d queued %d count fewer than the %d live (%d queued)", held, queued, live, liveQueued)
	case le.settled.Load() != m.settled:
		m.failf("settled %d, the model %d", le.settled.Load(), m.settled)
	case le.renewed.Load() != m.renewed || le.renewFailures.Load() != m.renewFailures || le.renewRequests.Load() != m.renewCount:
		m.failf("renewed %d failures %d requests %d, the model %d %d %d", le.renewed.Load(), le.renewFailures.Load(), le.renewRequests.Load(), m.renewed, m.renewFailures, m.renewCount)
	}

	// Every record in exactly one place.
	for k, n := range found {
		if n != 1 {
			m.failf("%s is held in %d places", k, n)
		}
	}
	if len(found) != len(m.cur) {
		m.failf("the ledger holds %d records, the model %d", len(found), len(m.cur))
	}
}

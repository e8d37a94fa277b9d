package shareconsumer

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// AcknowledgementCommit is the outcome of one partition's acknowledgements in one completed
// request, as the OnAcknowledgementCommit callback receives it.
type AcknowledgementCommit struct {
	TopicPartition
	// Offsets are the acknowledged offsets, in order, including those the consumer
	// acknowledged on its own (gaps, rejected corrupt batches).
	Offsets []int64
	// Err is nil when the broker applied every acknowledgement, else a *errors.AckError
	// (errors.Is works with the kerr code). The records of failed acknowledgements will be
	// delivered again, to this or another consumer, unless they were rejected.
	Err error
}

// Messages of acknowledgements that failed without reaching a broker, or with a response that
// did not answer them. The first is Kafka's client's.
const (
	msgInvalidResponse = "Acknowledgement not successful due to invalid response from broker"
	msgEpochZero       = "acknowledgements cannot travel on a request that opens a share session; the session with the leader was new or had been reset"
	msgClosing         = "the consumer closed before the acknowledgements could be sent"
)

// inflight holds the records Poll returned whose acknowledgements have not been taken for
// sending yet, and the offsets of corrupt batches Poll reported (acknowledged by the consumer,
// overridable). Acknowledgements stay here until the next Poll, commit or Close takes them
// (moveAckedLocked); until then a later Acknowledge replaces the type.
type inflight struct {
	parts   map[TopicPartition]*curPart
	unacked int // records with no acknowledgement recorded yet
	lastTP  TopicPartition
	last    *curPart // the partition get found last
}

// curPart is one partition's records in flight, sorted by offset.
type curPart struct {
	id   [16]byte
	recs []curRec
	hint int // where find looks first
}

// curRec is one record in flight: the leader it came from (its acknowledgement goes there and
// nowhere else), and its acknowledgement, if it has one.
type curRec struct {
	off         int64
	rec         *Record // nil for an undecodable offset
	node        int32
	acked       bool
	ty          acktype.Type
	undecodable bool
}

// add records a delivery of rec (or of offset off, undecodable, with rec nil) from node,
// unacknowledged, or acknowledged as ty by the consumer itself for an undecodable offset. A
// record delivered again replaces its earlier delivery.
func (s *inflight) add(tp TopicPartition, id [16]byte, node int32, off int64, rec *Record, undecodable bool, ty acktype.Type) {
	cp := s.get(tp)
	if cp == nil {
		cp = &curPart{}
		s.parts[tp] = cp
	}
	cp.id = id
	r := curRec{off: off, rec: rec, node: node, acked: undecodable, ty: ty, undecodable: undecodable}
	if !r.acked {
		s.unacked++
	}
	n := len(cp.recs)
	if n == 0 || cp.recs[n-1].off < off {
		cp.recs = append(cp.recs, r)
		return
	}
	i, found := slices.BinarySearchFunc(cp.recs, off, func(r curRec, o int64) int { return cmp64(r.off, o) })
	if found {
		if !cp.recs[i].acked {
			s.unacked--
		}
		cp.recs[i] = r
		return
	}
	cp.recs = slices.Insert(cp.recs, i, r)
}

// get returns tp's records in flight, nil for none; consecutive calls for one partition skip
// the map.
func (s *inflight) get(tp TopicPartition) *curPart {
	if s.last != nil && s.lastTP == tp {
		return s.last
	}
	cp := s.parts[tp]
	if cp != nil {
		s.lastTP, s.last = tp, cp
	}
	return cp
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

func (cp *curPart) find(off int64) *curRec {
	// Applications acknowledge in the order Poll returned the records, mostly: try the record
	// after the last one found before searching.
	if i := cp.hint; i < len(cp.recs) && cp.recs[i].off == off {
		cp.hint++
		return &cp.recs[i]
	}
	i, found := slices.BinarySearchFunc(cp.recs, off, func(r curRec, o int64) int { return cmp64(r.off, o) })
	if !found {
		return nil
	}
	cp.hint = i + 1
	return &cp.recs[i]
}

// pendingPart is one partition's acknowledgements waiting to be sent to one leader.
type pendingPart struct {
	id  [16]byte
	acc acktype.Accumulator
}

// pendingLocked returns the accumulator of tp's acknowledgements for node.
func (c *Consumer) pendingLocked(node int32, tp TopicPartition, id [16]byte) *acktype.Accumulator {
	n := c.nodeLocked(node)
	pp := n.pending[tp]
	if pp == nil {
		// An accumulator taken before is used again, with the memory it grew.
		if pp = n.spare[tp]; pp != nil {
			delete(n.spare, tp)
			pp.id = id
		} else {
			pp = &pendingPart{id: id}
		}
		n.pending[tp] = pp
	}
	return &pp.acc
}

// acceptAllLocked is implicit acknowledgement: every record in flight without an
// acknowledgement is accepted; those with one (the consumer's own rejections) keep it.
func (c *Consumer) acceptAllLocked() {
	if c.inflight.unacked == 0 {
		return
	}
	for _, cp := range c.inflight.parts {
		for i := range cp.recs {
			if r := &cp.recs[i]; !r.acked {
				r.acked, r.ty = true, acktype.Accept
			}
		}
	}
	c.inflight.unacked = 0
}

// moveAckedLocked takes the acknowledged records out of the in-flight set, their
// acknowledgements to the leader each came from, to be sent: from now on they cannot be
// acknowledged again. Renewed records go to the renew buffer, until a Poll returns them again.
// Records without an acknowledgement stay.
func (c *Consumer) moveAckedLocked() {
	for tp, cp := range c.inflight.parts {
		keep := cp.recs[:0]
		var acc *acktype.Accumulator
		accNode := int32(-1)
		for _, r := range cp.recs {
			if !r.acked {
				keep = append(keep, r)
				continue
			}
			if r.ty == acktype.Renew {
				c.holdRenewLocked(tp, cp.id, r)
			}
			if acc == nil || accNode != r.node {
				acc, accNode = c.pendingLocked(r.node, tp, cp.id), r.node
			}
			acc.Add(r.off, r.ty)
		}
		clear(cp.recs[len(keep):])
		cp.recs = keep // an emptied partition stays, its memory used again by the next Poll
	}
}

// ackPart is one partition's acknowledgements in one request.
type ackPart struct {
	tp      TopicPartition
	id      [16]byte
	batches []acktype.Batch
	offsets []int64       // every offset of batches, computed when first needed
	renews  bool          // some batch renews
	tickets []renewTicket // the renews, once sent
	held    []*heldRecord // for Process's renews: the records renewed, in offset order
}

func (p *ackPart) allOffsets() []int64 {
	if p.offsets == nil {
		n := int64(0)
		for _, b := range p.batches {
			n += b.LastOffset - b.FirstOffset + 1
		}
		p.offsets = make([]int64, 0, n)
		for _, b := range p.batches {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				p.offsets = append(p.offsets, o)
			}
		}
	}
	return p.offsets
}

// takeAcksLocked takes every acknowledgement waiting for n, by partition in name order. The
// acknowledgements of Process among them are counted in j, which will carry them (nil when
// they fail unsent).
func (c *Consumer) takeAcksLocked(n *node, j *ackJob) []*ackPart {
	if j != nil {
		j.poolAcks += n.poolPending
	} else {
		c.poolOut = max(0, c.poolOut-n.poolPending)
	}
	n.poolPending = 0
	if len(n.pending) == 0 {
		return nil
	}
	tps := make([]TopicPartition, 0, len(n.pending))
	for tp := range n.pending {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	parts := make([]*ackPart, 0, len(tps))
	for _, tp := range tps {
		pp := n.pending[tp]
		delete(n.pending, tp)
		if n.spare == nil {
			n.spare = make(map[TopicPartition]*pendingPart)
		}
		n.spare[tp] = pp
		if batches := pp.acc.Take(); len(batches) > 0 {
			parts = append(parts, &ackPart{tp: tp, id: pp.id, batches: batches, renews: n.queuedRenews > 0 && hasRenew(batches)})
		}
	}
	n.queuedRenews = 0
	return parts
}

func compareTP(a, b TopicPartition) int {
	switch {
	case a.Topic < b.Topic:
		return -1
	case a.Topic > b.Topic:
		return 1
	}
	return cmp64(int64(a.Partition), int64(b.Partition))
}

type jobKind uint8

const (
	jobPiggyback jobKind = iota // acknowledgements on a ShareFetch
	jobAsync                    // ShareAcknowledge of CommitAsync, or of a Poll that did not fetch
	jobSync                     // ShareAcknowledge of CommitSync
	jobClose                    // ShareAcknowledge with epoch -1, of Close
	jobLease                    // ShareAcknowledge renewing the locks of records Process holds
)

// ackJob is a set of acknowledgements for one leader, and who waits for their outcome.
type ackJob struct {
	kind   jobKind
	parts  []*ackPart
	commit *commitWait // CommitSync's or Close's waiter; nil for none
	// lockTimeout is the AcquisitionLockTimeoutMs of the answer, for the renews; 0 for none.
	lockTimeout int32
	renewFetch  bool      // a ShareFetch with IsRenewAck
	poolAcks    int       // acknowledgements of Process it carries (Consumer.poolOut)
	sent        time.Time // when a request with renews was sent
	// For jobSync and a jobPiggyback adopted by CommitSync, each part finishes one unit of
	// commit; for jobClose the job as a whole does.
}

// commitWait collects the outcome of a CommitSync (by partition), or counts the session closes
// of Close.
type commitWait struct {
	ctx       context.Context // CommitSync's: retries stop when it ends
	results   map[TopicPartition]error
	waiting   map[TopicPartition]int // CommitSync: parts of each partition not final yet
	offsets   map[TopicPartition][]int64
	remaining int
	done      chan struct{}
	abandoned bool // CommitSync returned
}

func (w *commitWait) addPart(p *ackPart) {
	if w.waiting == nil {
		w.waiting = make(map[TopicPartition]int)
		w.offsets = make(map[TopicPartition][]int64)
	}
	w.waiting[p.tp]++
	w.offsets[p.tp] = append(w.offsets[p.tp], p.allOffsets()...)
	w.remaining++
}

func (w *commitWait) finishOne() {
	w.remaining--
	if w.remaining == 0 {
		close(w.done)
	}
}

// adoptLocked makes CommitSync's w wait for the parts of j, a job sent or queued before it.
func (c *Consumer) adoptLocked(j *ackJob, w *commitWait) {
	j.commit = w
	for _, p := range j.parts {
		w.addPart(p)
	}
}

// enqueueLocked queues a ShareAcknowledge job for n; the node's goroutine sends it when the
// request before it is answered.
func (c *Consumer) enqueueLocked(n *node, j *ackJob) {
	if j.kind == jobSync {
		if len(j.parts) == 0 {
			return
		}
		for _, p := range j.parts {
			j.commit.addPart(p)
		}
	}
	if j.kind == jobAsync && len(j.parts) == 0 {
		return
	}
	if j.kind == jobClose && j.commit != nil {
		j.commit.remaining++
	}
	n.jobs = append(n.jobs, j)
}

// flushLocked queues n's waiting acknowledgements in a ShareAcknowledge.
func (c *Consumer) flushLocked(n *node) {
	if len(n.pending) > 0 {
		j := &ackJob{kind: jobAsync}
		j.parts = c.takeAcksLocked(n, j)
		c.enqueueLocked(n, j)
	}
}

// flushAllLocked sends every waiting acknowledgement in a ShareAcknowledge per leader.
func (c *Consumer) flushAllLocked() {
	for _, n := range c.sortedNodesLocked() {
		c.flushLocked(n)
	}
	c.kickLocked()
}

// flushUnfetchedLocked, at the end of a Poll, sends the acknowledgements of every leader this
// Poll sent no ShareFetch to, and that FetchAhead is not about to fetch from, in a
// ShareAcknowledge, so that none waits for a Poll that may not come.
func (c *Consumer) flushUnfetchedLocked() {
	for _, n := range c.sortedNodesLocked() {
		if n.fetchedPoll != c.pollSeq && !c.wantFetchLocked(n) {
			c.flushLocked(n)
		}
	}
	c.kickLocked()
}

// ackError is the outcome of acknowledgements Kafka refused with code.
func ackError(p *ackPart, code int16, msg string) error {
	if code == 0 {
		return nil
	}
	return &errors.AckError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offsets: p.allOffsets(), Err: kerr.ErrorForCode(code), Message: msg}
}

// timedOut is a CommitSync result for acknowledgements still on their way when ctx ended.
func timedOut(tp TopicPartition, offsets []int64, ctx context.Context) error {
	msg := "CommitSync returned before the broker answered"
	if err := ctx.Err(); err != nil {
		msg += ": " + err.Error()
	}
	return &errors.AckError{Topic: tp.Topic, Partition: tp.Partition, Offsets: offsets, Err: kerr.RequestTimedOut, Message: msg}
}

// finishPartLocked reports the final outcome of p, a part of j.
func (c *Consumer) finishPartLocked(j *ackJob, p *ackPart, err error) {
	c.reportPartLocked(j, p, err)
	if w := j.commit; w != nil && j.kind != jobClose {
		w.waiting[p.tp]--
		w.finishOne()
	}
}

// reportPartLocked gives the outcome of p, a part of j or split from one, to its renews, the
// callback and the commit waiting for j, without counting p as finished.
func (c *Consumer) reportPartLocked(j *ackJob, p *ackPart, err error) {
	c.settleRenewsLocked(j, p, err)
	if p.held != nil {
		return // Process's renews are its own business, not the application's callback's
	}
	if c.cfg.onCommit != nil {
		c.completions = append(c.completions, AcknowledgementCommit{TopicPartition: p.tp, Offsets: p.allOffsets(), Err: err})
	}
	if w := j.commit; w != nil && j.kind != jobClose {
		if cur, ok := w.results[p.tp]; !ok || cur == nil {
			w.results[p.tp] = err
		}
	}
}

// failPartsLocked reports every part of j as failed with code.
func (c *Consumer) failPartsLocked(j *ackJob, parts []*ackPart, code int16, msg string) {
	for _, p := range parts {
		c.finishPartLocked(j, p, ackError(p, code, msg))
	}
}

// answeredLocked counts j's acknowledgements of Process as no longer outstanding: the broker
// answered them, or they failed.
func (c *Consumer) answeredLocked(j *ackJob) {
	c.poolOut = max(0, c.poolOut-j.poolAcks)
	j.poolAcks = 0
}

// finishJobLocked ends a close job.
func (c *Consumer) finishJobLocked(j *ackJob) {
	if j.kind == jobClose && j.commit != nil {
		j.commit.finishOne()
		j.commit = nil
	}
}

// failAllLocked, once every goroutine has ended, fails what could not be sent.
func (c *Consumer) failAllLocked() {
	for _, n := range c.sortedNodesLocked() {
		for _, j := range n.jobs {
			c.failPartsLocked(j, j.parts, kerr.NetworkException.Code, msgClosing)
			c.finishJobLocked(j)
		}
		n.jobs = nil
		parts := c.takeAcksLocked(n, nil)
		c.failPartsLocked(&ackJob{kind: jobAsync}, parts, kerr.NetworkException.Code, msgClosing)
	}
}

// runCallbacks gives the outcomes collected so far to the callback, on the calling goroutine,
// unless another goroutine is doing so: that one also gives the outcomes that arrive while it
// runs, before it lets go. A call from inside the callback (which holds cbMu) returns at once,
// and the outcomes it produced follow when the callback returns.
func (c *Consumer) runCallbacks() {
	if c.cfg.onCommit == nil {
		return
	}
	for c.cbMu.TryLock() {
		c.mu.Lock()
		comps := c.completions
		c.completions = nil
		c.mu.Unlock()
		for _, ac := range comps {
			c.callback(ac)
		}
		c.cbMu.Unlock()
		c.mu.Lock()
		more := len(c.completions) > 0
		c.mu.Unlock()
		if !more {
			return
		}
	}
}

func (c *Consumer) callback(ac AcknowledgementCommit) {
	defer func() {
		if r := recover(); r != nil {
			c.log(kgo.LogLevelError, "acknowledgement commit callback panicked; recovered", "topic", ac.Topic, "partition", ac.Partition, "panic", r)
		}
	}()
	c.cfg.onCommit(ac)
}

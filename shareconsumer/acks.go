package shareconsumer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// AcknowledgementCommit is the outcome of the acknowledgements of one partition sent in one
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
	msgNoSession       = "no share session was open with the leader"
	msgSuperseded      = "the record's acquisition lock ran out before this acknowledgement was sent, and the record was delivered again; the acknowledgement of the later delivery is sent instead"
)

// pendingPart is one partition's acknowledgements waiting to be sent to one leader. dcs holds
// the delivery count of Process's acknowledgements of redelivered records (above 1), so that two
// acknowledgements of one offset can be told apart (session.addInbox).
type pendingPart struct {
	id  [16]byte
	acc acktype.Accumulator
	dcs map[int64]int16
}

// ackInbox takes acknowledgements for a session from Process's workers, without the
// consumer's lock: the session moves them to its pending acknowledgements when it builds a
// request. It has a lock of its own, taken last of all.
type ackInbox struct {
	mu   sync.Mutex
	acks []inboxAck
}

type inboxAck struct {
	part *heldPart
	off  int64
	t    acktype.Type
	dc   int16 // the delivery count of the delivery acknowledged
}

func (b *ackInbox) add(acks ...inboxAck) {
	b.mu.Lock()
	b.acks = append(b.acks, acks...)
	b.mu.Unlock()
}

// swap returns the acknowledgements in the inbox and leaves spare, emptied, in their place: the
// lock is held for no more than the swap, and the two slices' memory goes back and forth.
func (b *ackInbox) swap(spare []inboxAck) []inboxAck {
	clear(spare)
	b.mu.Lock()
	defer b.mu.Unlock()
	acks := b.acks
	b.acks = spare[:0]
	return acks
}

// len returns how many acknowledgements wait in the inbox.
func (b *ackInbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.acks)
}

// ackPart is one partition's acknowledgements in one request.
type ackPart struct {
	tp      TopicPartition
	id      [16]byte
	batches []acktype.Batch
	offsets []int64 // every offset of batches, computed when first needed
	renews  bool    // some batch renews
	// renewOf is told when the renews are sent and how they ended; quiet parts (Process's
	// renews) are not the application's callback's business.
	renewOf renewer
	quiet   bool
	tickets []renewTicket // Poll's renews, once sent
}

// renewer is what a part's renews are for: Poll's renew buffer (renew-and-return) or the lease
// (extend-in-place).
//
// renewAnswered returns, when a HookRenew is set, the records whose locks the answer renewed
// and their new deadline; nil otherwise.
type renewer interface {
	renewSent(p *ackPart, now time.Time)
	renewAnswered(p *ackPart, err error, lockMs int32, now time.Time) ([]*Record, time.Time)
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

// renewOffsets returns the offsets p renews, in order.
func (p *ackPart) renewOffsets() []int64 {
	var out []int64
	for _, b := range p.batches {
		if len(b.Types) == 1 {
			if b.Types[0] == acktype.Renew {
				for o := b.FirstOffset; o <= b.LastOffset; o++ {
					out = append(out, o)
				}
			}
			continue
		}
		for i, t := range b.Types {
			if t == acktype.Renew {
				out = append(out, b.FirstOffset+int64(i))
			}
		}
	}
	return out
}

// hasRenew reports whether any batch renews an offset.
func hasRenew(batches []acktype.Batch) bool {
	for _, b := range batches {
		for _, t := range b.Types {
			if t == acktype.Renew {
				return true
			}
		}
	}
	return false
}

// anyRenew reports whether any part renews an offset.
func anyRenew(parts []*ackPart) bool {
	for _, p := range parts {
		if p.renews {
			return true
		}
	}
	return false
}

// splitRenews splits p into its renews and the rest of its acknowledgements, nil when none.
func splitRenews(p *ackPart) (renewed, rest *ackPart) {
	var rs, others []acktype.Ack
	for _, b := range p.batches {
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.FirstOffset]
			}
			if t == acktype.Renew {
				rs = append(rs, acktype.Ack{Offset: o, Type: t})
			} else {
				others = append(others, acktype.Ack{Offset: o, Type: t})
			}
		}
	}
	renewed = &ackPart{tp: p.tp, id: p.id, batches: acktype.AppendBatches(nil, rs), renews: true, renewOf: p.renewOf, quiet: p.quiet}
	if len(others) > 0 {
		rest = &ackPart{tp: p.tp, id: p.id, batches: acktype.AppendBatches(nil, others), quiet: p.quiet}
	}
	return renewed, rest
}

type jobKind uint8

const (
	jobPiggyback jobKind = iota // acknowledgements on a ShareFetch
	jobAsync                    // ShareAcknowledge of CommitAsync, of a Poll that did not fetch, of a flush
	jobSync                     // ShareAcknowledge of CommitSync
	jobClose                    // ShareAcknowledge with epoch -1, of Close
	jobLease                    // ShareAcknowledge renewing the locks of records Process holds, built when sent
)

// ackJob is a set of acknowledgements for one leader, and who waits for their outcome.
type ackJob struct {
	kind   jobKind
	parts  []*ackPart
	commit *commitWait // CommitSync's or Close's waiter; nil for none
	// lockTimeout is the AcquisitionLockTimeoutMs of the answer, for the renews; 0 for none.
	lockTimeout int32
	renewFetch  bool // a ShareFetch with IsRenewAck
	// events collects what the hooks are told of the request's answer; nil without such hooks,
	// and until the request is built.
	events *requestEvents
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

func newCommitWait(ctx context.Context) *commitWait {
	return &commitWait{ctx: ctx, results: make(map[TopicPartition]error), done: make(chan struct{})}
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

// adopt makes w wait for the parts of j, a job sent or queued before it.
func (w *commitWait) adopt(j *ackJob) {
	j.commit = w
	for _, p := range j.parts {
		w.addPart(p)
	}
}

// outcomes collects what became of acknowledgements: for the callback, for CommitSync and
// Close, and for the renews they carried. Guarded by Consumer.mu; the callback runs without it.
type outcomes struct {
	onCommit    func(AcknowledgementCommit)
	completions []AcknowledgementCommit
	// cbMu is held by the goroutine draining completions into the callback. Others that find
	// it held leave the draining to it (TryLock), so that a consumer method called from inside
	// the callback never waits for the callback to end.
	cbMu sync.Mutex
}

// finish reports the final outcome of p, a part of j.
func (o *outcomes) finish(j *ackJob, p *ackPart, err error, now time.Time) {
	o.report(j, p, err, now)
	if w := j.commit; w != nil && j.kind != jobClose {
		w.waiting[p.tp]--
		w.finishOne()
	}
}

// report gives the outcome of p, a part of j or split from one, to its renews, the callback
// and the commit waiting for j, without counting p as finished.
func (o *outcomes) report(j *ackJob, p *ackPart, err error, now time.Time) {
	if p.renews && p.renewOf != nil {
		recs, deadline := p.renewOf.renewAnswered(p, err, j.lockTimeout, now)
		if j.events != nil && len(recs) > 0 {
			j.events.renewed(recs, deadline)
		}
	}
	if j.events != nil {
		j.events.acked(p, err)
	}
	if p.quiet {
		return
	}
	if o.onCommit != nil {
		o.completions = append(o.completions, AcknowledgementCommit{TopicPartition: p.tp, Offsets: p.allOffsets(), Err: err})
	}
	if w := j.commit; w != nil && j.kind != jobClose {
		if cur, ok := w.results[p.tp]; !ok || cur == nil {
			w.results[p.tp] = err
		}
	}
}

// fail reports every one of parts, parts of j, as failed with code.
func (o *outcomes) fail(j *ackJob, parts []*ackPart, code int16, msg string, now time.Time) {
	for _, p := range parts {
		o.finish(j, p, ackError(p, code, msg), now)
	}
}

// finishJob ends a close job.
func (o *outcomes) finishJob(j *ackJob) {
	if j.kind == jobClose && j.commit != nil {
		j.commit.finishOne()
		j.commit = nil
	}
}

// failRenews fails the renews of parts, parts of j that cannot be sent as they are, with code
// and msg, and returns the parts still to send: those without renews, and the other
// acknowledgements of those with some. A part whose only acknowledgements are renews is
// finished, failed.
func (o *outcomes) failRenews(j *ackJob, parts []*ackPart, code int16, msg string, now time.Time) []*ackPart {
	keep := parts[:0]
	for _, p := range parts {
		if !p.renews {
			keep = append(keep, p)
			continue
		}
		renewed, rest := splitRenews(p)
		if rest == nil {
			o.finish(j, p, ackError(p, code, msg), now)
			continue
		}
		o.report(j, renewed, ackError(renewed, code, msg), now)
		*p = *rest // p stays the part j's commit counts
		keep = append(keep, p)
	}
	return keep
}

// run gives the outcomes collected so far to the callback, on the calling goroutine, unless
// another goroutine is doing so: that one also gives the outcomes that arrive while it runs,
// before it lets go. A call from inside the callback (which holds cbMu) returns at once, and
// the outcomes it produced follow when the callback returns. mu is the consumer's lock, which
// guards the completions.
func (o *outcomes) run(mu *sync.Mutex, log func(kgo.LogLevel, string, ...any)) {
	if o.onCommit == nil {
		return
	}
	for o.cbMu.TryLock() {
		mu.Lock()
		comps := o.completions
		o.completions = nil
		mu.Unlock()
		for _, ac := range comps {
			o.call(ac, log)
		}
		o.cbMu.Unlock()
		mu.Lock()
		more := len(o.completions) > 0
		mu.Unlock()
		if !more {
			return
		}
	}
}

func (o *outcomes) call(ac AcknowledgementCommit, log func(kgo.LogLevel, string, ...any)) {
	defer func() {
		if r := recover(); r != nil {
			log(kgo.LogLevelError, "acknowledgement commit callback panicked; recovered", "topic", ac.Topic, "partition", ac.Partition, "panic", r)
		}
	}()
	o.onCommit(ac)
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

// retriableAck reports whether CommitSync sends acknowledgements refused with code again.
// NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH are not retried, since the locks are gone
// after a leader change, nor are unknown topics and partitions.
func retriableAck(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		return false
	}
	ke, ok := kerr.ErrorForCode(code).(*kerr.Error)
	return ok && ke.Retriable
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

// sortedTPs returns the keys of m sorted by name and partition.
func sortedTPs[V any](m map[TopicPartition]V) []TopicPartition {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	return tps
}

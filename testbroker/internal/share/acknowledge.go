package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// AckBatch is one AcknowledgementBatch of a ShareFetch or ShareAcknowledge request: the offsets
// [FirstOffset, LastOffset] and either one type for all of them or one type per offset.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []int8 // 0 gap, 1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW
}

// The acknowledgement types.
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// ackStates maps the types other than RENEW to the state they lead to.
var ackStates = [...]RecordState{ackGap: Archived, ackAccept: Acknowledged, ackRelease: Available, ackReject: Archived}

var errInvalidBatches = kafkaerr.Code(kerr.InvalidRequest)

// ValidateBatches checks one partition's acknowledgement batches before anything is applied,
// as Kafka's KafkaApis.validateAcknowledgementBatches does, and fails with INVALID_REQUEST and
// no message on the first batch that breaks a rule, in this order: FirstOffset above
// LastOffset; FirstOffset below the previous batch's LastOffset; no types; more than one type
// but not one per offset; a type below 0 or above maxType (4 for version 2 requests, 3 before);
// RENEW (4) in a request whose IsRenewAck is false.
func ValidateBatches(batches []AckBatch, maxType int8, isRenewAck bool) error {
	for i, b := range batches {
		switch {
		case b.FirstOffset > b.LastOffset,
			i > 0 && b.FirstOffset < batches[i-1].LastOffset,
			len(b.Types) == 0,
			len(b.Types) > 1 && b.LastOffset-b.FirstOffset != int64(len(b.Types))-1:
			return errInvalidBatches
		}
		for _, t := range b.Types {
			if t < 0 || t > maxType || t == ackRenew && !isRenewAck {
				return errInvalidBatches
			}
		}
	}
	return nil
}

// Acknowledge applies one partition's acknowledgement batches for member, all or nothing: if
// any batch is refused, nothing changes (no state, no lock) and the first refusal is returned
// as a *kafkaerr.Error. It follows Kafka's SharePartition.acknowledge, batch by batch:
//
//   - A batch wholly below the SPSO is skipped: its records are already terminal.
//   - A batch whose first offset has no tracked record at or before it fails with
//     INVALID_RECORD_STATE "Batch record not found. The request batch offsets are not found
//     in the cache." (in practice: nothing is tracked since the last SPSO move); one starting
//     after the SPEO with INVALID_REQUEST "Batch record not found. The first offset in request
//     is past acquired records."; one ending after it with INVALID_REQUEST "Batch record not
//     found. The last offset in request is past acquired records."
//   - Every record it covers at or after the SPSO must be ACQUIRED by member: otherwise
//     INVALID_RECORD_STATE with "The batch cannot be acknowledged. The batch is not in the
//     acquired state." or "Member is not the owner of batch record" for a whole tracked batch,
//     and "The offset cannot be acknowledged. The offset is not acquired." or "Member is not
//     the owner of offset" for a record tracked on its own.
//   - A gap or REJECT makes a record ARCHIVED, ACCEPT ACKNOWLEDGED, RELEASE AVAILABLE (ARCHIVED
//     at the delivery limit), each stopping its lock with the delivery count unchanged. RENEW
//     leaves it ACQUIRED with its delivery count, and replaces its lock by one of the full
//     current LockDuration: one per whole tracked batch renewed, one per record otherwise. With
//     RenewEnabled false, RENEW fails with INVALID_RECORD_STATE "Renewing acquisition locks is
//     not enabled for the group."
//
// Batches the server has not validated are checked too: an unknown type fails with
// INVALID_REQUEST "Invalid acknowledge type: [...]", a malformed batch with INVALID_REQUEST.
// A partition handed over to a new leader refuses everything with NOT_LEADER_OR_FOLLOWER
// (Handover); a closed one accepts everything and changes nothing.
func (p *Partition) Acknowledge(member string, batches []AckBatch) error {
	s := p.settings()
	p.mu.Lock()
	if p.closed {
		fenced := p.fenced
		p.mu.Unlock()
		if fenced {
			return errFenced
		}
		return nil
	}
	tx := &p.tx
	tx.now, tx.s = p.clk.Now(), s
	if err := p.acknowledge(tx, member, batches); err != nil {
		tx.rollback()
		p.mu.Unlock()
		return err
	}
	tx.commit(p)
	moved := p.advanceStart()
	w := p.takeWakeLocked(tx.c.avail > 0 || moved)
	tx.reset()
	p.mu.Unlock()
	wakeUp(w)
	return nil
}

func (p *Partition) acknowledge(tx *ackTx, member string, batches []AckBatch) error {
	for _, ab := range batches {
		if err := checkTypes(ab); err != nil {
			return err
		}
		if ab.LastOffset < p.start {
			continue
		}
		fi := p.floor(ab.FirstOffset)
		if fi < 0 && ab.FirstOffset < p.start {
			fi = p.floor(p.start)
		}
		if fi < 0 {
			return invalidState(msgNotInCache)
		}
		li := p.floor(ab.LastOffset)
		switch {
		case p.batches[li].last < ab.FirstOffset:
			return invalidRequest(msgFirstPastAcquired)
		case ab.LastOffset > p.batches[li].last:
			return invalidRequest(msgLastPastAcquired)
		}
		for j := fi; j <= li; j++ {
			if err := p.ackBatch(tx, &p.batches[j], member, ab); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTypes refuses what validation should have refused, with Kafka's answers.
func checkTypes(ab AckBatch) error {
	if ab.FirstOffset > ab.LastOffset || len(ab.Types) == 0 ||
		len(ab.Types) > 1 && ab.LastOffset-ab.FirstOffset != int64(len(ab.Types))-1 {
		return errInvalidBatches
	}
	for _, t := range ab.Types {
		if t < 0 || t > ackRenew {
			return invalidAckType(ab.Types)
		}
	}
	return nil
}

// ackBatch applies ab to the tracked batch b.
func (p *Partition) ackBatch(tx *ackTx, b *inflight, member string, ab AckBatch) error {
	if b.last < p.start {
		return nil
	}
	if b.offs == nil {
		switch b.rec.member {
		case "":
			return invalidState(msgBatchNotAcquired)
		case member:
		default:
			return invalidState(msgNotOwnerOfBatch)
		}
	}
	whole := b.first >= ab.FirstOffset && b.last <= ab.LastOffset
	if whole && b.offs == nil && len(ab.Types) == 1 && b.first >= p.start {
		if b.rec.state != Acquired {
			return invalidState(msgBatchNotAcquired)
		}
		return p.ackRecord(tx, &b.rec, ab.Types[0], b.first, b.last)
	}
	if b.offs == nil {
		if b.rec.state != Acquired {
			return invalidState(msgSubsetNotAcquired)
		}
		b.split()
		tx.undo = append(tx.undo, change{split: b})
	}
	for o := max(b.first, ab.FirstOffset, p.start); o <= min(b.last, ab.LastOffset); o++ {
		r := &b.offs[o-b.first]
		if r.state != Acquired {
			return invalidState(msgOffsetNotAcquired)
		}
		if r.member != member {
			return invalidState(msgNotOwnerOfOffset)
		}
		t := ab.Types[0]
		if len(ab.Types) > 1 {
			t = ab.Types[o-ab.FirstOffset]
		}
		if err := p.ackRecord(tx, r, t, o, o); err != nil {
			return err
		}
	}
	return nil
}

// ackRecord applies type t to r, the ACQUIRED state of the records [first, last].
func (p *Partition) ackRecord(tx *ackTx, r *rec, t int8, first, last int64) error {
	if t == ackRenew {
		if !tx.s.RenewEnabled {
			return invalidState(msgRenewNotEnabled)
		}
		tx.save(r)
		r.lock = newLock(first, last, tx.now, tx.s.LockDuration)
		tx.added = append(tx.added, r.lock)
		return nil
	}
	tx.save(r)
	p.add(&tx.c, settle(r, ackStates[t], tx.s.DeliveryCountLimit, false), first, last)
	return nil
}

// ackTx is an Acknowledge in progress: what it changed, so that it can be undone, and what it
// must do to counters and timers once it succeeds.
type ackTx struct {
	now     time.Time
	s       Settings
	undo    []change
	dropped []*lock // locks that lost a record
	added   []*lock // locks made by RENEW, not yet scheduled
	c       counts
}

// change is one undoable change: a record's state before it changed, or a batch split.
type change struct {
	r     *rec
	old   rec
	split *inflight // when r is nil
}

// save remembers r before it changes, and that its lock loses it.
func (tx *ackTx) save(r *rec) {
	tx.undo = append(tx.undo, change{r: r, old: *r})
	if n := len(tx.dropped); n == 0 || tx.dropped[n-1] != r.lock {
		tx.dropped = append(tx.dropped, r.lock)
	}
}

// rollback undoes every change, latest first.
func (tx *ackTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		if c := &tx.undo[i]; c.r != nil {
			*c.r = c.old
		} else {
			c.split.offs = nil
		}
	}
	tx.reset()
}

// commit applies the counters, starts the timers of the new locks and stops those of the
// locks no record points to any more.
func (tx *ackTx) commit(p *Partition) {
	p.avail += tx.c.avail
	p.done += tx.c.done
	for _, l := range tx.added {
		if p.referenced(l) {
			p.schedule(l, tx.s.LockDuration)
		} else {
			l.dead = true
		}
	}
	for _, l := range tx.dropped {
		if !l.dead && !p.referenced(l) {
			l.stop()
		}
	}
}

func (tx *ackTx) reset() {
	clear(tx.undo)
	clear(tx.dropped)
	clear(tx.added)
	tx.undo, tx.dropped, tx.added = tx.undo[:0], tx.dropped[:0], tx.added[:0]
	tx.c = counts{}
}

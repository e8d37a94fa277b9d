package log

import (
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// Control record types of an end transaction marker's key (Kafka's ControlRecordType).
const (
	controlAbort  = 0
	controlCommit = 1
)

// AbortedTxn is one aborted transaction a read_committed fetch must skip: the consumer drops the
// producer's records from FirstOffset up to the producer's abort marker. It is one entry of a
// Fetch response's AbortedTransactions.
type AbortedTxn struct{ ProducerID, FirstOffset int64 }

// txnState is a partition's transactions: the ongoing ones, the aborted transaction index and
// the completed ones whose marker is not below the high watermark yet.
type txnState struct {
	open         []openTxn      // by first offset
	aborted      []abortedEntry // by marker offset
	unreplicated []doneTxn
	now          func() time.Time // stamps markers; nil means time.Now
}

// openTxn is an ongoing transaction: the producer and the offset of its first record here.
type openTxn struct {
	pid   int64
	first int64
}

// doneTxn is a completed transaction whose marker (at last) is not below the high watermark
// yet: until it is, the transaction still holds the last stable offset back, as Kafka's
// ProducerStateManager keeps it among its unreplicated transactions.
type doneTxn struct {
	first, last int64
}

// abortedEntry is an entry of the aborted transaction index, Kafka's TxnIndex: the first offset
// of the transaction, the offset of its abort marker, and the last stable offset once it was
// aborted, which bounds the first offsets of all transactions aborted after it.
type abortedEntry struct {
	pid              int64
	first, last, lso int64
}

// AppendTxnMarker appends a control batch ending producerID's transaction on this partition:
// a COMMIT marker when commit is set, an ABORT marker otherwise, carrying coordinatorEpoch, in
// producerEpoch. The marker is an ordinary batch of the log (control and transactional
// attributes, sequence -1, one control record), so followers replicate it, and it is stamped
// with the leader epoch and the time of the log's clock. It returns the marker's offset.
//
// Kafka's checks for markers (ProducerAppendInfo.appendEndTxnMarker) apply: an epoch older than
// the producer's latest fails with kerr.InvalidProducerEpoch, and a coordinator epoch older than
// the one of the producer's previous marker with kerr.TransactionCoordinatorFenced; a refused
// marker changes nothing. These are the checks of a marker of transaction version 0 or 1;
// AppendTxnMarkerVersion applies those of version 2. A marker for a producer without an
// ongoing transaction here is appended all the same, as Kafka appends it, and changes no
// transaction. A marker in a newer epoch makes that epoch the producer's, so its next batch
// must start at sequence 0.
//
// Ending a transaction moves the last stable offset; an aborted one enters the aborted
// transaction index that AbortedTransactions reads. The marker wakes the Notify channel.
func (p *Partition) AppendTxnMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	return p.AppendTxnMarkerVersion(producerID, producerEpoch, commit, coordinatorEpoch, 1)
}

// AppendTxnMarkerVersion is AppendTxnMarker for a transaction of transactionVersion, the
// TransactionVersion of a WriteTxnMarkers request. From version 2 (KIP-890) the coordinator
// bumps the producer's epoch before it writes the markers, so a marker whose epoch is not
// above the producer's latest is a late or repeated one and fails with
// kerr.InvalidProducerEpoch, as Kafka's check of KIP-1228; before version 2 only an older
// epoch does. Followers replicate markers without the check.
func (p *Partition) AppendTxnMarkerVersion(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, transactionVersion int16) (int64, error) {
	clk := p.txns.now
	if clk == nil {
		clk = time.Now
	}
	now := clk().UnixMilli()
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.producers[producerID]
	if ps != nil {
		if producerEpoch < ps.epoch || transactionVersion >= 2 && producerEpoch == ps.epoch {
			rel := "<"
			if transactionVersion >= 2 {
				rel = "<="
			}
			return -1, kafkaerr.Detailed(kerr.InvalidProducerEpoch, "epoch of producer %d at offset %d is %d, which is %s the last seen epoch %d (TV%d)", producerID, p.leo, producerEpoch, rel, ps.epoch, transactionVersion)
		}
		if coordinatorEpoch < ps.coordEpoch {
			return -1, kafkaerr.Detailed(kerr.TransactionCoordinatorFenced, "invalid coordinator epoch for producer %d: %d (zombie), %d (current)", producerID, coordinatorEpoch, ps.coordEpoch)
		}
	}
	base := p.leo
	data, follows := p.store(encodeMarker(base, p.leaderEpoch, producerID, producerEpoch, commit, coordinatorEpoch, now), true)
	p.push(stored{base: base, last: base, maxTimestamp: now, data: data, follows: follows})
	p.epochs.assign(p.leaderEpoch, base)
	p.endTxn(p.producer(producerID), producerID, producerEpoch, commit, coordinatorEpoch, base)
	p.notifyLocked()
	return base, nil
}

// LastStableOffset returns the last stable offset: the first offset of the earliest transaction
// that is ongoing or whose marker is not below the high watermark yet, or the high watermark when
// there is none or it starts at or past the high watermark. read_committed consumers read only
// below it. It is never below the log start offset: DeleteRecords or retention past an ongoing
// transaction's first records moves it up, as Kafka's first unstable offset is.
func (p *Partition) LastStableOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastStableLocked()
}

func (p *Partition) lastStableLocked() int64 {
	lso := p.hwm
	if len(p.txns.open) > 0 {
		lso = min(lso, p.txns.open[0].first)
	}
	for _, d := range p.txns.unreplicated {
		lso = min(lso, d.first)
	}
	return max(lso, p.logStart)
}

// pruneUnreplicated forgets the completed transactions whose marker is below the high
// watermark: they no longer hold the last stable offset back.
func (p *Partition) pruneUnreplicated() {
	p.txns.unreplicated = slices.DeleteFunc(p.txns.unreplicated, func(d doneTxn) bool { return d.last < p.hwm })
}

// AbortedTransactions lists, in the order they were aborted, the aborted transactions that a
// read_committed fetch of the records [from, to) must know of, as Kafka's TxnIndex lists them:
// those whose abort marker is at or after from and whose first offset is below to.
func (p *Partition) AbortedTransactions(from, to int64) []AbortedTxn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []AbortedTxn
	// Markers are appended in offset order, so the entries are sorted by last.
	i, _ := slices.BinarySearchFunc(p.txns.aborted, from, func(e abortedEntry, from int64) int {
		return cmp.Compare(e.last, from)
	})
	for _, e := range p.txns.aborted[i:] {
		if e.first < to {
			out = append(out, AbortedTxn{ProducerID: e.pid, FirstOffset: e.first})
		}
		// Every transaction aborted later was ongoing at e's abort or began after it, so it
		// starts at e.lso or later.
		if e.lso >= to {
			break
		}
	}
	return out
}

// OngoingTxn returns the first offset of producerID's ongoing transaction on this partition, if
// it has one: a transactional batch of the producer was appended and no marker since.
func (p *Partition) OngoingTxn(producerID int64) (firstOffset int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps := p.producers[producerID]; ps != nil && ps.txnFirst >= 0 {
		return ps.txnFirst, true
	}
	return -1, false
}

// beginTxn starts producer pid's transaction at base when a transactional batch arrives and
// none is ongoing.
func (p *Partition) beginTxn(ps *producerState, pid int64, transactional bool, base int64) {
	if transactional && ps.txnFirst < 0 {
		ps.txnFirst = base
		p.txns.open = append(p.txns.open, openTxn{pid: pid, first: base})
	}
}

// endTxn applies a marker at offset to the producer's state, as Kafka's
// ProducerStateEntry.update does, and completes its ongoing transaction, if any.
func (p *Partition) endTxn(ps *producerState, pid int64, epoch int16, commit bool, coordEpoch int32, offset int64) {
	if ps.txnFirst >= 0 {
		p.txns.open = slices.DeleteFunc(p.txns.open, func(t openTxn) bool { return t.pid == pid })
		if offset >= p.hwm {
			p.txns.unreplicated = append(p.txns.unreplicated, doneTxn{first: ps.txnFirst, last: offset})
		}
		if !commit {
			lso := offset + 1
			if len(p.txns.open) > 0 {
				lso = p.txns.open[0].first
			}
			p.txns.aborted = append(p.txns.aborted, abortedEntry{pid: pid, first: ps.txnFirst, last: offset, lso: lso})
		}
	}
	if epoch != ps.epoch {
		ps.epoch, ps.n, ps.next = epoch, 0, 0
	}
	ps.coordEpoch = coordEpoch
	ps.txnFirst = -1
}

// replay applies a stored or replicated batch to the producer and transaction state without
// the checks a leader makes, as Kafka's replication and log recovery do. h describes data,
// which lies at h.BaseOffset.
func (p *Partition) replay(h *BatchHeader, data []byte, maxTimestamp int64) {
	if h.ProducerID < 0 {
		return
	}
	ps := p.producer(h.ProducerID)
	if h.Attributes&attrControl != 0 {
		if commit, coordEpoch, ok := readMarker(data); ok {
			p.endTxn(ps, h.ProducerID, h.ProducerEpoch, commit, coordEpoch, h.BaseOffset)
		}
		return
	}
	ps.add(h, h.BaseOffset, maxTimestamp)
	p.beginTxn(ps, h.ProducerID, h.Attributes&attrTransactional != 0, h.BaseOffset)
}

// encodeMarker builds the control batch of an end transaction marker at offset base: one
// control record whose key is (version 0, type) and whose value is (version 0, coordinator
// epoch), as Kafka's EndTransactionMarker writes it, uncompressed.
func encodeMarker(base int64, leaderEpoch int32, pid int64, epoch int16, commit bool, coordEpoch int32, ts int64) []byte {
	typ := int16(controlAbort)
	if commit {
		typ = controlCommit
	}
	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, 4) // key length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint16(rec, uint16(typ))
	rec = binary.AppendVarint(rec, 6) // value length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, uint32(coordEpoch))
	rec = binary.AppendVarint(rec, 0) // headers

	be := binary.BigEndian
	b := make([]byte, HeaderSize, HeaderSize+binary.MaxVarintLen32+len(rec))
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	be.PutUint64(b[0:], uint64(base))
	be.PutUint32(b[posBatchLength:], uint32(len(b)-frameOverhead))
	be.PutUint32(b[posLeaderEpoch:], uint32(leaderEpoch))
	b[posMagic] = 2
	be.PutUint16(b[posAttributes:], attrControl|attrTransactional)
	be.PutUint32(b[23:], 0) // last offset delta
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[posMaxTimestamp:], uint64(ts))
	be.PutUint64(b[posProducerID:], uint64(pid))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], 0xffffffff) // no sequence
	be.PutUint32(b[57:], 1)
	be.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
	return b
}

// readMarker reads the first control record of the control batch b, an end transaction
// marker, as Kafka reads only that one. ok is false when the record cannot be read as a
// marker: the batch is compressed, the record is cut short, or its type is neither COMMIT nor
// ABORT.
func readMarker(b []byte) (commit bool, coordEpoch int32, ok bool) {
	h := parseHeader(b)
	if h.Attributes&attrCodecMask != 0 {
		return false, 0, false
	}
	r := b[HeaderSize:]
	next := func() (int64, bool) {
		v, n := binary.Varint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	if _, ok := next(); !ok || len(r) < 1 { // record length
		return false, 0, false
	}
	r = r[1:]                 // attributes
	if _, ok := next(); !ok { // timestamp delta
		return false, 0, false
	}
	if _, ok := next(); !ok { // offset delta
		return false, 0, false
	}
	keyLen, ok := next()
	if !ok || keyLen < 4 || int64(len(r)) < keyLen {
		return false, 0, false
	}
	typ := int16(binary.BigEndian.Uint16(r[2:]))
	r = r[keyLen:]
	valLen, ok := next()
	if !ok || valLen < 6 || int64(len(r)) < valLen || typ != controlAbort && typ != controlCommit {
		return false, 0, false
	}
	return typ == controlCommit, int32(binary.BigEndian.Uint32(r[2:])), true
}

// isMarker reports whether the control batch b holds a readable end transaction marker.
func isMarker(b []byte) bool {
	_, _, ok := readMarker(b)
	return ok
}

// reset forgets every transaction, keeping the clock.
func (t *txnState) reset() {
	t.open, t.aborted, t.unreplicated = t.open[:0], t.aborted[:0], t.unreplicated[:0]
}

// IsTransactional reports whether the batch belongs to a transaction (attribute bit 0x10), as
// control batches do.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports whether the batch is a control batch (attribute bit 0x20).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsAbortMarker reports whether b, a whole stored batch, is a control batch whose first record
// is an ABORT marker.
func IsAbortMarker(b []byte) bool {
	if len(b) < HeaderSize || !parseHeader(b).IsControl() {
		return false
	}
	commit, _, ok := readMarker(b)
	return ok && !commit
}

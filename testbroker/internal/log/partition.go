package log

import (
	"encoding/binary"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// DefaultMaxMessageBytes is Kafka's default max.message.bytes: 1 MiB plus the 12 bytes of a
// batch's BaseOffset and BatchLength.
const DefaultMaxMessageBytes = 1048588

// Config describes a partition's log. The topic's configuration supplies it.
type Config struct {
	// LogStartOffset is the offset the first appended record receives; a negative value means 0.
	LogStartOffset int64
	// LogAppendTime stamps every batch with its append time, as message.timestamp.type
	// LogAppendTime does; otherwise the producer's timestamps stand (CreateTime).
	LogAppendTime bool
	// MaxMessageBytes is the largest batch accepted, in bytes, as max.message.bytes; zero or
	// less means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Now is the clock that stamps transaction markers; nil means time.Now.
	Now func() time.Time
}

// Partition is the log of one partition. All its methods are safe for concurrent use.
type Partition struct {
	logAppendTime   bool
	maxMessageBytes int

	mu          sync.Mutex
	logStart    int64
	leo         int64 // log end offset: the offset the next record receives
	hwm         int64
	leaderEpoch int32
	batches     []stored // in offset order, without gaps, from logStart to leo
	maxIdx      int      // index in batches of the first batch with the largest MaxTimestamp
	arena       []byte   // storage the next small batches are copied into
	arenaTail   bool     // whether the last batch stored is the last one copied into arena
	producers   map[int64]*producerState
	txns        txnState
	epochs      epochCache
	wake        chan struct{} // closed on the next change; nil until Notify asks for it
}

// stored is one appended batch.
type stored struct {
	base, last   int64
	maxTimestamp int64
	maxSoFar     int64 // the largest maxTimestamp of this batch and all batches before it
	// data is the batch. A batch copied into an arena chunk keeps the chunk's capacity beyond
	// it, so that AppendSpans can extend it over the batches copied right after it; data must
	// be capped before it leaves the package.
	data    []byte
	follows bool // data starts where the previous batch's data ends, in the same chunk
}

// Batches smaller than keepBytes are copied into chunks that start small, so that a partition
// holding a few records costs little, and double up to maxChunk, so that a busy one allocates
// rarely. Larger batches are kept where the caller had them: copying them would cost more than
// the little memory a request frame holds besides its batch.
const (
	minChunk  = 4 << 10
	maxChunk  = 1 << 20
	keepBytes = 8 << 10
)

// NewPartition returns an empty log whose log start offset, log end offset and high watermark
// are cfg.LogStartOffset, and whose leader epoch is 0.
func NewPartition(cfg Config) *Partition {
	start := max(cfg.LogStartOffset, 0)
	maxBytes := cfg.MaxMessageBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	return &Partition{
		logAppendTime:   cfg.LogAppendTime,
		maxMessageBytes: maxBytes,
		logStart:        start,
		leo:             start,
		hwm:             start,
		producers:       make(map[int64]*producerState),
		txns:            txnState{now: cfg.Now},
	}
}

// AppendResult is the outcome of a successful Append.
type AppendResult struct {
	// BaseOffset is the offset of the batch's first record.
	BaseOffset int64
	// LogAppendTime is the append time in Unix milliseconds on a LogAppendTime topic, and -1 on
	// a CreateTime topic, as a produce response reports it.
	LogAppendTime int64
	// Duplicate reports a producer retry: the batch repeats one of the producer's last five
	// batches, nothing was appended, and BaseOffset and LogAppendTime are the original's.
	Duplicate bool
}

// Append validates the records field of one produce request for this partition, appends its
// batch, and returns the batch's base offset. A batch that is appended may be stored as it is,
// without a copy, with the assigned offset, the leader epoch and on LogAppendTime topics the
// timestamp written into it: the caller must neither modify nor reuse records once Append has
// appended them. A refused or duplicate batch is left untouched.
//
// now is the cluster clock's time; on a
// LogAppendTime topic it becomes the batch's MaxTimestamp and the CRC is recomputed. On a
// CreateTime topic the producer's MaxTimestamp is kept as it is: Kafka recomputes it from the
// records, which this log does not decode, and clients always write it right.
//
// The records must hold exactly one v2 batch, as Kafka requires of a produce request, with a
// BaseOffset of 0 and no more than max.message.bytes; the batch must pass SplitBatches' checks
// and must not be a control batch: markers come only from AppendTxnMarker (Kafka's "clients
// are not allowed to write control records", INVALID_RECORD). A refused append changes
// nothing. See the package documentation for the error codes.
//
// A batch with a ProducerID of 0 or more comes from an idempotent producer and is checked as
// Kafka checks it. A retry of one of the producer's last five batches (same epoch, same first
// and last sequence) is not appended again: Append returns the original batch's base offset
// with Duplicate set. Otherwise an epoch older than the last one seen fails with
// kerr.InvalidProducerEpoch; a newer epoch must start at sequence 0 and the current epoch must
// continue at the last sequence plus one (MaxInt32 wraps to 0), or Append fails with
// kerr.OutOfOrderSequenceNumber. A producer the partition has no state for may start at any
// sequence, as with Kafka. Producer state never expires.
//
// A transactional batch starts the producer's transaction here when none is ongoing, which
// holds the last stable offset at its base offset until AppendTxnMarker ends it; a
// non-transactional batch of a producer whose transaction is ongoing fails with
// kerr.InvalidTxnState, as with Kafka. Whether the coordinator knows of the transaction is the
// caller's check.
func (p *Partition) Append(records []byte, now time.Time) (AppendResult, error) {
	h, err := p.validate(records)
	if err != nil {
		return AppendResult{}, err
	}
	appendTime := int64(-1)
	if p.logAppendTime {
		appendTime = now.UnixMilli()
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	var ps *producerState
	newProducer := false
	if h.ProducerID >= 0 {
		ps = p.producers[h.ProducerID]
		if ps == nil {
			ps, newProducer = newProducerState(), true
		}
		if dup, ok := ps.duplicate(&h); ok {
			res := AppendResult{BaseOffset: dup.baseOffset, LogAppendTime: -1, Duplicate: true}
			if p.logAppendTime {
				res.LogAppendTime = dup.maxTimestamp
			}
			return res, nil
		}
		if err := ps.check(&h); err != nil {
			return AppendResult{}, err
		}
		if ps.txnFirst >= 0 && h.Attributes&attrTransactional == 0 {
			return AppendResult{}, kafkaerr.Detailed(kerr.InvalidTxnState, "expected a transactional write from producer %d, whose transaction began at offset %d", h.ProducerID, ps.txnFirst)
		}
	}

	base := p.leo
	data, follows := p.store(records, true)
	binary.BigEndian.PutUint64(data, uint64(base))
	binary.BigEndian.PutUint32(data[posLeaderEpoch:], uint32(p.leaderEpoch))
	maxTS := h.MaxTimestamp
	switch {
	case p.logAppendTime:
		maxTS = appendTime
		setMaxTimestamp(data, true, maxTS)
	case h.Attributes&attrLogAppendTime != 0:
		// Kafka stores batches of a CreateTime topic with the CreateTime type whatever the
		// producer set; the records' timestamps then read as the producer wrote them.
		setMaxTimestamp(data, false, maxTS)
	}

	p.push(stored{base: base, last: base + int64(h.LastOffsetDelta), maxTimestamp: maxTS, data: data, follows: follows})
	p.epochs.assign(p.leaderEpoch, base)
	if ps != nil {
		ps.add(&h, base, maxTS)
		if newProducer {
			p.producers[h.ProducerID] = ps
		}
		p.beginTxn(ps, h.ProducerID, h.Attributes&attrTransactional != 0, base)
	}
	p.notifyLocked()
	return AppendResult{BaseOffset: base, LogAppendTime: appendTime}, nil
}

// validate applies the checks that need no partition state, in Kafka's order: the request's
// framing, then UnifiedLog's checks, then LogValidator's.
func (p *Partition) validate(records []byte) (BatchHeader, error) {
	if len(records) == 0 {
		return BatchHeader{}, errNoBatch
	}
	n, err := frame(records, 0)
	if err != nil {
		return BatchHeader{}, err
	}
	if n < len(records) {
		return BatchHeader{}, kafkaerr.Detailed(kerr.InvalidRecord, "a produce request may carry one record batch per partition, but %d bytes follow the first batch", len(records)-n)
	}
	h := parseHeader(records)
	if h.BaseOffset != 0 {
		return BatchHeader{}, kafkaerr.Detailed(kerr.InvalidRecord, "the base offset of a produced batch must be 0, not %d", h.BaseOffset)
	}
	if n > p.maxMessageBytes {
		return BatchHeader{}, kafkaerr.Detailed(kerr.MessageTooLarge, "the batch has %d bytes, more than max.message.bytes (%d)", n, p.maxMessageBytes)
	}
	if err := checkBatch(&h, records, 0); err != nil {
		return BatchHeader{}, err
	}
	switch {
	case h.Attributes&attrControl != 0:
		return BatchHeader{}, errClientControl
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return BatchHeader{}, kafkaerr.Detailed(kerr.InvalidRecord, "producer %d sent the invalid sequence %d", h.ProducerID, h.BaseSequence)
	case h.Attributes&attrLogAppendTime != 0 && (p.logAppendTime || h.MaxTimestamp == -1):
		// Kafka refuses the producer's LogAppendTime type wherever the records' timestamps are
		// not checked as create times: on LogAppendTime topics, and when the timestamp is
		// missing (-1).
		return BatchHeader{}, kafkaerr.Detailed(kerr.InvalidTimestamp, "the producer must not set the LogAppendTime timestamp type")
	}
	return h, nil
}

var errClientControl = kafkaerr.Detailed(kerr.InvalidRecord, "clients are not allowed to write control records")

// push adds s, a batch that starts at the log end offset, to the stored batches and the
// timestamp index.
func (p *Partition) push(s stored) {
	s.maxSoFar = s.maxTimestamp
	if n := len(p.batches); n > 0 {
		s.maxSoFar = max(s.maxTimestamp, p.batches[n-1].maxSoFar)
		if s.maxTimestamp > p.batches[p.maxIdx].maxTimestamp {
			p.maxIdx = n
		}
	}
	p.batches = append(p.batches, s)
	p.leo = s.last + 1
}

// store returns the storage of batch b, which becomes the last stored batch: a copy in the
// arena when it is small, otherwise b itself if keep is set (the caller hands b over) or a copy
// of its own. follows reports whether the copy starts where the previous batch ends.
func (p *Partition) store(b []byte, keep bool) (data []byte, follows bool) {
	if len(b) >= keepBytes {
		p.arenaTail = false
		if !keep {
			return append(make([]byte, 0, len(b)), b...), false
		}
		return b[:len(b):len(b)], false
	}
	follows = p.arenaTail
	if len(b) > cap(p.arena)-len(p.arena) {
		size := min(max(2*cap(p.arena), minChunk), maxChunk)
		p.arena = make([]byte, 0, max(size, len(b)))
		follows = false
	}
	start := len(p.arena)
	p.arena = append(p.arena, b...)
	p.arenaTail = true
	return p.arena[start:len(p.arena)], follows
}

// AppendRecords appends to dst the stored batches a fetch at offset returns, and returns the
// extended slice: the batch that holds offset and the batches after it, as long as their total
// stays within maxBytes and each lies wholly below limit (the high watermark: a batch whose
// last offset is limit or more is not returned). The first batch is returned even when it
// alone exceeds maxBytes, so that a consumer always makes progress (KIP-74); a caller that
// must stay within maxBytes (a later partition of a fetch whose size budget is spent) drops a
// result longer than maxBytes, which can only be that single first batch.
//
// The first batch may start before offset; the consumer skips the records it did not ask for.
// An offset equal to the log end offset, or at or past limit, returns dst unchanged. An offset
// below the log start offset or past the log end offset fails with kerr.OffsetOutOfRange.
func (p *Partition) AppendRecords(dst []byte, offset int64, maxBytes int, limit int64) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, j, err := p.readRange(offset, maxBytes, limit)
	for _, b := range p.batches[i:j] {
		dst = append(dst, b.data...)
	}
	return dst, err
}

// AppendSpans is AppendRecords without the copy: it appends to dst the same bytes, as slices
// of the log's storage, and returns the extended slice and the number of bytes. Batches stored
// next to each other come as one slice, so a fetch of many small batches is a few slices. The
// slices never change once appended: a reader may keep them but must not modify them.
func (p *Partition) AppendSpans(dst [][]byte, offset int64, maxBytes int, limit int64) ([][]byte, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, j, err := p.readRange(offset, maxBytes, limit)
	total := 0
	var span []byte // the slice being built; its capacity runs on over the batches after it
	for _, b := range p.batches[i:j] {
		total += len(b.data)
		if b.follows && len(span) > 0 {
			span = span[:len(span)+len(b.data)]
			continue
		}
		if len(span) > 0 {
			dst = append(dst, span[:len(span):len(span)])
		}
		span = b.data
	}
	if len(span) > 0 {
		dst = append(dst, span[:len(span):len(span)])
	}
	return dst, total, err
}

// readRange returns the batches [i, j) that AppendRecords returns, or an empty range and its
// error.
func (p *Partition) readRange(offset int64, maxBytes int, limit int64) (i, j int, err error) {
	if offset < p.logStart || offset > p.leo {
		return 0, 0, kafkaerr.Detailed(kerr.OffsetOutOfRange, "offset %d is outside the log, which spans [%d, %d)", offset, p.logStart, p.leo)
	}
	i = sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset })
	total := 0
	for j = i; j < len(p.batches) && p.batches[j].last < limit; j++ {
		n := len(p.batches[j].data)
		if total > 0 && total+n > maxBytes {
			break
		}
		total += n
	}
	return i, j, nil
}

// LogStartOffset returns the offset of the first record the log holds or will hold.
func (p *Partition) LogStartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logStart
}

// LogEndOffset returns the offset the next appended record will receive.
func (p *Partition) LogEndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leo
}

// HighWatermark returns the high watermark: consumers read only below it.
func (p *Partition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hwm
}

// SetHighWatermark sets the high watermark, clamped to [LogStartOffset, LogEndOffset]. Append
// leaves the high watermark alone: the caller moves it once the batch counts as replicated. A
// change wakes the Notify channel.
func (p *Partition) SetHighWatermark(hwm int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hwm = min(max(hwm, p.logStart), p.leo)
	if hwm != p.hwm {
		p.hwm = hwm
		p.pruneUnreplicated()
		p.notifyLocked()
	}
}

// SetLeaderEpoch sets the leader epoch that Append writes into the PartitionLeaderEpoch field
// of the batches it appends from now on; consumers use it to detect log truncation. The epoch
// enters the leader epoch cache with the first batch appended in it; StartLeaderEpoch enters it
// at once, as a new leader must.
func (p *Partition) SetLeaderEpoch(epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch = epoch
}

// Notify returns a channel that is closed at the next append or high watermark change; each
// change closes the channel in use and a later call returns a new one. A long-polling fetch
// calls Notify before it looks for data, then waits on the channel if it found none, so that a
// change between the look and the wait is not missed. The channel is made only when asked for,
// so appends with nobody waiting allocate none.
func (p *Partition) Notify() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	return p.wake
}

func (p *Partition) notifyLocked() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

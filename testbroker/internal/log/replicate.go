package log

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// minRecordLength is the smallest BatchLength Kafka reads as a frame at all (LegacyRecord's
// RECORD_OVERHEAD_V0); a smaller one is corrupt even at the end of a fetch response.
const minRecordLength = 14

// ReplicatedAppendResult is the outcome of AppendReplicated, what Kafka's LogAppendInfo tells a
// replica fetcher.
type ReplicatedAppendResult struct {
	// FirstOffset and LastOffset are the offsets of the first and last records appended; both
	// are -1 when nothing was.
	FirstOffset, LastOffset int64
	// LastEpoch is the PartitionLeaderEpoch of the last batch appended, the LastFetchedEpoch of
	// the follower's next fetch; UndefinedEpoch when nothing was appended.
	LastEpoch int32
	// Bytes is the size of the batches appended; a trailing partial batch is not counted.
	Bytes int
}

// AppendReplicated is a follower's append of the records field of a leader's fetch response:
// v2 batches back to back, stored exactly as they come, BaseOffset and PartitionLeaderEpoch
// included, so the log holds the leader's bytes and its CRCs stay valid. The bytes are copied:
// the caller may reuse records once AppendReplicated returns. Nothing moves the high watermark,
// which the caller sets from the leader's. A change wakes the Notify channel.
//
// A fetch response may end in part of a batch: bytes too few for a batch's header or its
// length are ignored, as Kafka ignores them, and the result counts only the whole batches.
// Empty records, or only a partial batch, append nothing and return no error.
//
// Every batch is checked before any is appended, so a refused append changes nothing:
//
//   - a frame that is wrong (a length below 14 bytes or below a v2 header, a magic byte outside
//     0..2), a CRC mismatch or an unknown codec fail with a *CorruptError (kerr.CorruptMessage);
//   - a batch of magic 0 or 1, inconsistent record counts, a negative PartitionLeaderEpoch or
//     a base offset outside the offsets a log holds fail with kerr.InvalidRecord, and so does
//     a control batch whose first record is no end transaction marker (the leader writes only
//     those);
//   - offsets that do not continue the log fail with an *UnexpectedOffsetError: the first batch
//     must start at the log end offset and each batch right after the one before it. Kafka also
//     refuses a first batch below the log end offset; it accepts gaps, which only compaction
//     makes and which this log therefore refuses.
//
// One first batch below the log end offset is accepted, as Kafka's Partition accepts it: on an
// empty log, a batch that holds the log end offset (the leader's log start offset fell inside
// it) restarts the log at the batch's base offset, as TruncateFullyAndStartAt does.
//
// Each batch updates the log as the leader's append did: its PartitionLeaderEpoch enters the
// leader epoch cache at its base offset (contradicting entries removed), its MaxTimestamp the
// timestamp index, and a batch with a ProducerID the producer's state (epoch, last five
// batches, ongoing transaction; a marker ends the transaction as on the leader), without the
// checks the leader made, so that this log dedups a retry, checks sequences and knows the
// ongoing and aborted transactions as the leader did once Append is called on it.
func (p *Partition) AppendReplicated(records []byte) (ReplicatedAppendResult, error) {
	res := ReplicatedAppendResult{FirstOffset: -1, LastOffset: -1, LastEpoch: UndefinedEpoch}
	batches, err := splitReplicated(records)
	if err != nil || len(batches) == 0 {
		return res, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if first := &batches[0].Header; first.BaseOffset != p.leo {
		if len(p.batches) > 0 || first.BaseOffset > p.leo || first.LastOffset() < p.leo {
			return res, &UnexpectedOffsetError{FirstOffset: first.BaseOffset, LastOffset: first.LastOffset(), NextOffset: p.leo}
		}
		p.truncateFully(first.BaseOffset)
	}
	for i := range batches {
		h := &batches[i].Header
		data, follows := p.store(batches[i].Bytes, false)
		p.push(stored{base: h.BaseOffset, last: h.LastOffset(), maxTimestamp: h.MaxTimestamp, data: data, follows: follows})
		p.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		p.replay(h, data, h.MaxTimestamp)
		res.Bytes += len(data)
	}
	last := &batches[len(batches)-1].Header
	res.FirstOffset, res.LastOffset, res.LastEpoch = batches[0].Header.BaseOffset, last.LastOffset(), last.PartitionLeaderEpoch
	p.notifyLocked()
	return res, nil
}

// producer returns the state of producer id, made empty if the log has none.
func (p *Partition) producer(id int64) *producerState {
	ps := p.producers[id]
	if ps == nil {
		ps = newProducerState()
		p.producers[id] = ps
	}
	return ps
}

// splitReplicated returns the whole batches of a fetch response's records, checked as
// AppendReplicated says, and ignores a partial batch at the end.
func splitReplicated(records []byte) ([]Batch, error) {
	var batches []Batch
	for pos := 0; ; {
		n, err := replicatedFrame(records[pos:], pos)
		if err != nil || n == 0 {
			return batches, err
		}
		raw := records[pos : pos+n : pos+n]
		h := parseHeader(raw)
		if err := checkBatch(&h, raw, pos); err != nil {
			return nil, err
		}
		switch {
		case h.Attributes&attrControl != 0 && !isMarker(raw):
			return nil, kafkaerr.Detailed(kerr.InvalidRecord, "the control batch at byte %d holds no readable end transaction marker", pos)
		case h.PartitionLeaderEpoch < 0:
			return nil, kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d carries no partition leader epoch", pos)
		case h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1:
			return nil, kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d has the base offset %d, outside the offsets of a log", pos, h.BaseOffset)
		}
		if k := len(batches); k > 0 {
			if next := batches[k-1].Header.LastOffset() + 1; h.BaseOffset != next {
				return nil, &UnexpectedOffsetError{FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), NextOffset: next}
			}
		}
		batches = append(batches, Batch{Header: h, Bytes: raw})
		pos += n
	}
}

// replicatedFrame returns the size of the batch at the start of b, which lies at pos in the
// records, or 0 when b ends before the batch does. Its checks come in the order of Kafka's
// reader of fetched records: a length too small for any record is corrupt however few bytes
// follow, the magic byte is judged once it is there, and only then is the batch required whole.
func replicatedFrame(b []byte, pos int) (int, error) {
	if len(b) < frameOverhead {
		return 0, nil
	}
	length := int32(binary.BigEndian.Uint32(b[posBatchLength:]))
	if length < minRecordLength {
		return 0, corruptf(pos, "batch length %d is below the %d bytes of the smallest record", length, minRecordLength)
	}
	if len(b) <= posMagic {
		return 0, nil
	}
	magic := int8(b[posMagic])
	switch {
	case magic < 0 || magic > 2:
		return 0, corruptf(pos, "invalid magic byte %d", magic)
	case int64(length) > int64(len(b)-frameOverhead):
		return 0, nil
	case magic != 2:
		return 0, kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d has magic %d: only magic 2 batches are accepted", pos, magic)
	case length < minBatchLength:
		return 0, corruptf(pos, "batch length %d is below the %d bytes of a v2 header", length, minBatchLength)
	}
	return frameOverhead + int(length), nil
}

// TruncateTo removes the records at offset and after, as a follower does when its log diverged
// from the leader's (Kafka's UnifiedLog.truncateTo). The log is cut at a batch boundary: the
// batch that holds offset goes with the batches after it, so a cut inside a batch leaves the
// log end offset at that batch's base offset, below offset. (Kafka sets its log end offset to
// offset itself, past the data that is left; its truncation points are batch boundaries, where
// the two agree.) The leader epoch cache loses the entries that start at the new log end
// offset or later, the producer states are rebuilt from the batches that remain, and the high
// watermark becomes at most the new log end offset.
//
// An offset at or past the log end offset removes no record, but still removes the epoch cache
// entries at the log end offset, which a leader that appended nothing in its epoch left there.
// An offset below the log start offset empties the log as TruncateFullyAndStartAt(offset)
// does. A negative offset fails with kerr.UnknownServerError and changes nothing. A change
// wakes the Notify channel. Readers keep the bytes they were given: removed batches are
// forgotten, never overwritten.
func (p *Partition) TruncateTo(offset int64) error {
	if offset < 0 {
		return kafkaerr.Detailed(kerr.UnknownServerError, "cannot truncate the log to the negative offset %d", offset)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case offset >= p.leo:
		p.epochs.truncateFromEnd(p.leo)
		return nil
	case offset < p.logStart:
		p.truncateFully(offset)
	default:
		p.cut(sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset }))
	}
	p.notifyLocked()
	return nil
}

// TruncateFullyAndStartAt empties the log and starts it again at offset, which becomes its log
// start offset, log end offset and high watermark, as a follower does when its log end offset
// is below the leader's log start offset (Kafka's UnifiedLog.truncateFullyAndStartAt). The
// leader epoch cache and the producer states are emptied. A negative offset fails with
// kerr.UnknownServerError and changes nothing. It wakes the Notify channel.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return kafkaerr.Detailed(kerr.UnknownServerError, "cannot start the log at the negative offset %d", offset)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.truncateFully(offset)
	p.notifyLocked()
	return nil
}

func (p *Partition) truncateFully(offset int64) {
	clear(p.batches)
	p.batches = p.batches[:0]
	p.logStart, p.leo, p.hwm = offset, offset, offset
	p.maxIdx, p.arenaTail = 0, false
	p.epochs.clear()
	clear(p.producers)
	p.txns.reset()
}

// cut removes the batches from index i on, at least one.
func (p *Partition) cut(i int) {
	producers := false
	for _, b := range p.batches[i:] {
		producers = producers || int64(binary.BigEndian.Uint64(b.data[posProducerID:])) >= 0
	}
	clear(p.batches[i:])
	p.batches = p.batches[:i]
	p.leo = p.logStart
	p.maxIdx = 0
	if i > 0 {
		top := p.batches[i-1].maxSoFar
		p.leo = p.batches[i-1].last + 1
		p.maxIdx = sort.Search(i, func(j int) bool { return p.batches[j].maxSoFar >= top })
	}
	// The arena's next copy goes after the removed batches' bytes, not after the last batch.
	p.arenaTail = false
	p.hwm = min(p.hwm, p.leo)
	p.epochs.truncateFromEnd(p.leo)
	if producers {
		p.rebuildProducers()
	}
}

// rebuildProducers replays the stored batches into new producer and transaction states, as
// Kafka rebuilds them after a truncation: ongoing transactions, the aborted transaction index
// and the last stable offset are those of the batches that remain.
func (p *Partition) rebuildProducers() {
	clear(p.producers)
	p.txns.reset()
	for _, b := range p.batches {
		h := parseHeader(b.data)
		p.replay(&h, b.data, b.maxTimestamp)
	}
}

// LogEndOffsetAndEpoch returns the log end offset and the PartitionLeaderEpoch of the batch
// that ends there, the last one; the epoch is UndefinedEpoch when the log holds no batch. A
// follower sends them as its fetch's FetchOffset and LastFetchedEpoch. (Kafka's fetcher starts
// from the epoch cache's latest epoch, LatestEpoch, which differs only when a leader recorded
// an epoch with StartLeaderEpoch and appended nothing in it; the leader's answer then leads
// the follower to the same truncation.)
func (p *Partition) LogEndOffsetAndEpoch() (int64, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.batches) == 0 {
		return p.leo, UndefinedEpoch
	}
	return p.leo, int32(binary.BigEndian.Uint32(p.batches[len(p.batches)-1].data[posLeaderEpoch:]))
}

// DivergingEpoch applies the LastFetchedEpoch check of a follower's fetch at fetchOffset, as
// Kafka's Partition.readRecords does before it reads: when the leader's end offset for
// lastFetchedEpoch (EndOffsetForEpoch) has a smaller epoch or lies below fetchOffset, the
// follower's log diverged, diverged is true, and epoch and endOffset are the Fetch response's
// DivergingEpoch; the response then carries no records. A negative lastFetchedEpoch means the
// fetch sent none, and nothing is checked.
//
// It fails with kerr.OffsetOutOfRange when the log cannot place lastFetchedEpoch (an undefined
// end offset), and when fetchOffset is below the log start offset, whether or not the epochs
// diverge.
func (p *Partition) DivergingEpoch(lastFetchedEpoch int32, fetchOffset int64) (epoch int32, endOffset int64, diverged bool, err error) {
	if lastFetchedEpoch < 0 {
		return UndefinedEpoch, UndefinedEpochOffset, false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	epoch, endOffset = p.epochs.endOffsetFor(lastFetchedEpoch, p.leo)
	switch {
	case epoch == UndefinedEpoch || endOffset == UndefinedEpochOffset:
		return UndefinedEpoch, UndefinedEpochOffset, false, kafkaerr.Detailed(kerr.OffsetOutOfRange, "could not determine the end offset of the last fetched epoch %d", lastFetchedEpoch)
	case fetchOffset < p.logStart:
		return UndefinedEpoch, UndefinedEpochOffset, false, kafkaerr.Detailed(kerr.OffsetOutOfRange, "offset %d is outside the log, which spans [%d, %d)", fetchOffset, p.logStart, p.leo)
	case epoch < lastFetchedEpoch || endOffset < fetchOffset:
		return epoch, endOffset, true, nil
	}
	return UndefinedEpoch, UndefinedEpochOffset, false, nil
}

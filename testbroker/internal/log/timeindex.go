package log

import (
	"encoding/binary"
	"sort"
)

// The time index is the stored batches' MaxTimestamp and maxSoFar, the largest MaxTimestamp of
// a batch and every batch before it: maxSoFar never decreases, so a binary search finds the
// first batch that can hold a record at or after a timestamp, and only that batch's records
// (rarely those of a few batches after it) are decoded. Kafka's time index does the same per
// segment and leads LogSegment.findOffsetByTimestamp to a position it scans from.

// TimestampOffset is the answer of a ListOffsets lookup: a record's offset and timestamp, and
// the PartitionLeaderEpoch of its batch (-1 when the batch carries none).
type TimestampOffset struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// OffsetForTimestamp answers a ListOffsets request for timestamp ts (zero or more; the negative
// special timestamps are the caller's) as Kafka's UnifiedLog.fetchOffsetByTimestamp does: the
// first record, at or after the log start offset, whose timestamp is ts or more, with that
// record's timestamp (the batch's MaxTimestamp on LogAppendTime batches, where every record has
// it) and its batch's leader epoch. Compressed batches are decompressed to find it.
//
// found is false when no record qualifies, or when the record found is at or past limit (the
// offset reads stop at), as Kafka hides such answers from consumers. A batch whose records
// cannot be decoded is passed over.
func (p *Partition) OffsetForTimestamp(ts, limit int64) (TimestampOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].maxSoFar >= ts })
	for ; i < len(p.batches); i++ {
		b := &p.batches[i]
		if b.maxTimestamp < ts || b.last < p.logStart {
			continue
		}
		var hit recordTime
		found := false
		_ = eachRecordTime(b.data, func(r recordTime) bool {
			if r.timestamp >= ts && r.offset >= p.logStart {
				hit, found = r, true
			}
			return !found
		})
		if found {
			if hit.offset >= limit {
				return TimestampOffset{}, false
			}
			return TimestampOffset{Offset: hit.offset, Timestamp: hit.timestamp, LeaderEpoch: batchEpoch(b.data)}, true
		}
	}
	return TimestampOffset{}, false
}

// MaxTimestamp answers a ListOffsets request for the largest timestamp (-3, KIP-734) as Kafka
// does: in the first batch holding the largest timestamp of the log, the first record with
// that timestamp, and the batch's leader epoch. found is false when the log is empty, when no
// record of that batch has its MaxTimestamp (a producer's header that lies, which Kafka would
// have refused) and when the record is at or past limit.
func (p *Partition) MaxTimestamp(limit int64) (TimestampOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.batches) == 0 {
		return TimestampOffset{}, false
	}
	b := &p.batches[p.maxIdx]
	var hit recordTime
	found := false
	_ = eachRecordTime(b.data, func(r recordTime) bool {
		if r.timestamp == b.maxTimestamp {
			hit, found = r, true
		}
		return !found
	})
	if !found || hit.offset >= limit {
		return TimestampOffset{}, false
	}
	return TimestampOffset{Offset: hit.offset, Timestamp: hit.timestamp, LeaderEpoch: batchEpoch(b.data)}, true
}

// batchEpoch is the PartitionLeaderEpoch of a stored batch, -1 when it has none.
func batchEpoch(data []byte) int32 {
	return max(int32(binary.BigEndian.Uint32(data[posLeaderEpoch:])), -1)
}

// LogStartEpoch returns the leader epoch ListOffsets answers with the log start offset: the
// earliest epoch of the leader epoch cache when it starts at or before the log start offset,
// else -1, as Kafka's fetchOffsetByTimestamp does for the earliest timestamps.
func (p *Partition) LogStartEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.epochs.entries) == 0 || p.epochs.entries[0].start > p.logStart {
		return UndefinedEpoch
	}
	return p.epochs.entries[0].epoch
}

// ReadLimit returns the offset a consumer's reads stop at for its isolation level: the high
// watermark for read_uncommitted; read_committed stops at the last stable offset.
func (p *Partition) ReadLimit(readCommitted bool) int64 {
	if readCommitted {
		return p.LastStableOffset()
	}
	return p.HighWatermark()
}

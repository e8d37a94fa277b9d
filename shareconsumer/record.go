package shareconsumer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// Record is one record the consumer acquired for the application. Key, Value and header values
// share memory with the fetch response they came in; the application may keep them.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (a tombstone)
	Headers   []kgo.RecordHeader
	// Timestamp is the record's create time, or the broker's append time when the topic uses
	// LogAppendTime.
	Timestamp time.Time
	// DeliveryCount is how many times the broker has handed this record out, this one
	// included: 1 on the first delivery.
	DeliveryCount int16
	// LockDeadline estimates when the record's acquisition lock expires, on the local clock:
	// when the ShareFetch that acquired it was sent, plus the lock duration the broker reported.
	// The broker's lock starts later, so the real deadline is a little after this one. It is
	// the zero time when the broker reported no duration. After a successful renew, the Poll
	// that returns the record again sets it to when the renew was sent plus the duration the
	// renew's answer reported; DeliveryCount stays as it was. (A testbroker on a manual clock
	// times locks on its own clock, which this estimate knows nothing of.)
	LockDeadline time.Time
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", as Kafka prints partitions.
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// The record batch (magic 2) header, as Kafka lays it out.
const (
	batchLengthOffset  = 8  // int32: bytes after this field
	batchMagicOffset   = 16 // int8
	batchCRCOffset     = 17 // uint32: CRC-32C of everything from the attributes on
	batchAttrsOffset   = 21 // int16
	batchLastDeltaOff  = 23 // int32
	batchBaseTimeOff   = 27 // int64
	batchMaxTimeOff    = 35 // int64
	batchNumRecordsOff = 57 // int32
	batchHeaderSize    = 61

	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrControl       = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// decoder turns the records of ShareFetch responses into Records.
type decoder struct {
	decompressor kgo.Decompressor
	checkCRC     bool
}

// acquiredRange is one AcquiredRecords range of a ShareFetch response partition.
type acquiredRange struct {
	first, last int64
	dc          int16
}

// normalizeAcquired returns the ranges sorted, without empty or negative ones, and with
// overlaps cut from the later range: Kafka's client logs and ignores offsets acquired twice.
func normalizeAcquired(in []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) []acquiredRange {
	rs := make([]acquiredRange, 0, len(in))
	sorted := true
	for _, a := range in {
		if a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset == math.MaxInt64 {
			continue
		}
		if n := len(rs); n > 0 && a.FirstOffset < rs[n-1].first {
			sorted = false
		}
		rs = append(rs, acquiredRange{a.FirstOffset, a.LastOffset, a.DeliveryCount})
	}
	if !sorted {
		slices.SortStableFunc(rs, func(a, b acquiredRange) int {
			switch {
			case a.first < b.first:
				return -1
			case a.first > b.first:
				return 1
			}
			return 0
		})
	}
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.first <= out[n-1].last {
			r.first = out[n-1].last + 1
			if r.first > r.last {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// acqCursor walks the acquired ranges in offset order, accounting for every acquired offset
// once: as a record, a gap, or part of a corrupt batch.
type acqCursor struct {
	rs   []acquiredRange
	i    int
	next int64 // the lowest acquired offset not accounted for yet
}

// advance accounts for the acquired offsets below o not accounted for yet, passing them to mark
// as ranges (mark may be nil).
func (c *acqCursor) advance(o int64, mark func(first, last int64)) {
	for c.i < len(c.rs) {
		r := c.rs[c.i]
		lo := max(r.first, c.next)
		if lo >= o {
			break
		}
		hi := min(r.last, o-1)
		if mark != nil {
			mark(lo, hi)
		}
		c.next = hi + 1
		if hi == r.last {
			c.i++
		}
	}
	c.next = max(c.next, o)
}

// take accounts for offset o, at or after every offset accounted for so far, marking the
// acquired offsets below it with gap; it returns o's delivery count and whether o is acquired.
func (c *acqCursor) take(o int64, gap func(first, last int64)) (int16, bool) {
	c.advance(o, gap)
	if c.i >= len(c.rs) || o < c.rs[c.i].first {
		return 0, false
	}
	r := c.rs[c.i]
	c.next = o + 1
	if o == r.last {
		c.i++
	}
	return r.dc, true
}

// count returns how many acquired offsets not accounted for yet lie in [first, last].
func (c *acqCursor) count(first, last int64) int64 {
	var k int64
	for i := c.i; i < len(c.rs); i++ {
		r := c.rs[i]
		lo := max(r.first, c.next, first)
		if lo > last {
			break
		}
		if hi := min(r.last, last); hi >= lo {
			k += hi - lo + 1
		}
	}
	return k
}

// overlaps reports whether any acquired offset not accounted for yet lies in [first, last].
func (c *acqCursor) overlaps(first, last int64) bool {
	for i := c.i; i < len(c.rs); i++ {
		r := c.rs[i]
		lo := max(r.first, c.next)
		if lo > last {
			return false
		}
		if lo <= r.last && r.last >= first {
			return true
		}
	}
	return false
}

// maxAcquiredOffsets bounds the acquired offsets of one partition in one ShareFetch answer that
// the consumer accounts for. Kafka's broker keeps at most group.share.partition.max.record.locks
// (10000 at the most) records of a share partition in flight, overshooting by whole batches; an
// answer naming over a million is no Kafka broker's, and accounting for it offset by offset (as
// gaps and corrupt batches are acknowledged) would stall the consumer.
const maxAcquiredOffsets = 1 << 20

// decodedPart is what one partition of a ShareFetch response holds: its records, in order,
// split where a corrupt batch sits; the acquired offsets within the data that held no record
// (gaps); how many acquired offsets lay outside the data (unfetched); or, for an answer that
// acquired too many offsets, the error that replaces all of it (invalid).
type decodedPart struct {
	chunks    []chunk
	gaps      []offsetRange
	unfetched int64
	invalid   error
}

// chunk is a run of records, or a corrupt batch.
type chunk struct {
	recs    []*Record
	corrupt *errors.CorruptBatchError
}

type offsetRange struct{ first, last int64 }

// decodePartition decodes a ShareFetch response partition: only acquired offsets become
// records, each with the delivery count of its range. An acquired offset within the data with
// no record (removed by compaction, a transaction marker, a record before the batch's start)
// is a gap. A batch that cannot be decoded (CRC mismatch, unknown compression or magic,
// malformed records) becomes an errors.CorruptBatchError covering every acquired offset in it;
// when the framing itself is broken, it covers every acquired offset from there on.
//
// Acquired offsets outside the data (before the first batch, after the last complete one: a
// partial batch at the end is ignored, as Kafka's client ignores it) were never fetched: they
// are counted as unfetched and get no acknowledgement, so their locks expire and the broker
// delivers them again. Kafka's client acknowledges those after the data as gaps, which would
// archive any record the broker failed to send. An answer acquiring over maxAcquiredOffsets
// offsets is invalid as a whole.
func (d *decoder) decodePartition(topic string, partition int32, data []byte, acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, deadline time.Time) decodedPart {
	var out decodedPart
	rs := normalizeAcquired(acquired)
	if len(rs) == 0 {
		return out
	}
	if tooManyAcquired(rs) {
		out.invalid = &errors.PartitionError{Topic: topic, Partition: partition, Err: errors.ErrTooManyAcquired}
		return out
	}
	cur := acqCursor{rs: rs, next: rs[0].first}
	unfetched := func(first, last int64) { out.unfetched += last - first + 1 }
	started := false // whether a batch set where the data starts
	start := func(base int64) {
		if !started {
			started = true
			cur.advance(base, unfetched)
		}
	}
	end := int64(-1) // the last offset of the last complete batch
	gap := func(first, last int64) {
		if n := len(out.gaps); n > 0 && out.gaps[n-1].last+1 == first {
			out.gaps[n-1].last = last
			return
		}
		out.gaps = append(out.gaps, offsetRange{first, last})
	}
	var pending []*Record
	flush := func() {
		if len(pending) > 0 {
			out.chunks = append(out.chunks, chunk{recs: pending})
			pending = nil
		}
	}
	corrupt := func(first, last int64, err error) {
		ce := &errors.CorruptBatchError{Topic: topic, Partition: partition, Err: err}
		cur.advance(first, gap)
		cur.advance(last+1, func(lo, hi int64) {
			for o := lo; o <= hi; o++ {
				ce.Offsets = append(ce.Offsets, o)
			}
		})
		if len(ce.Offsets) > 0 {
			flush()
			out.chunks = append(out.chunks, chunk{corrupt: ce})
		}
	}

	for len(data) > 0 {
		if len(data) < batchMagicOffset+1 {
			break // a partial batch at the end
		}
		base := int64(binary.BigEndian.Uint64(data))
		length := int32(binary.BigEndian.Uint32(data[batchLengthOffset:]))
		// Past a batch whose framing cannot be trusted nothing can be found again: every
		// acquired offset left is part of the corrupt data.
		if magic := data[batchMagicOffset]; magic != 2 {
			corrupt(cur.next, math.MaxInt64-1, fmt.Errorf("record batch at offset %d has magic %d; only magic 2 (Kafka 0.11+) is supported", base, magic))
			break
		}
		if length < batchHeaderSize-12 {
			corrupt(cur.next, math.MaxInt64-1, fmt.Errorf("record batch at offset %d has an invalid length %d", base, length))
			break
		}
		size := int(length) + 12
		if size > len(data) {
			break // a partial batch at the end
		}
		start(base) // only a complete batch's base offset says where the data starts
		batch := data[:size]
		data = data[size:]
		last := base + int64(int32(binary.BigEndian.Uint32(batch[batchLastDeltaOff:])))
		if last < base {
			corrupt(cur.next, math.MaxInt64-1, fmt.Errorf("record batch at offset %d has a negative last offset delta", base))
			break
		}
		end = max(end, last)
		if !cur.overlaps(base, last) {
			continue // nothing acquired in it
		}
		attrs := binary.BigEndian.Uint16(batch[batchAttrsOffset:])
		if d.checkCRC {
			if want, got := binary.BigEndian.Uint32(batch[batchCRCOffset:]), crc32.Checksum(batch[batchAttrsOffset:], crc32c); want != got {
				corrupt(base, last, fmt.Errorf("record batch at offsets %d-%d fails its CRC check (stored %#08x, computed %#08x)", base, last, want, got))
				continue
			}
		}
		if attrs&attrControl != 0 {
			continue // transaction markers: their offsets are gaps
		}
		recs, err := d.decodeBatch(topic, partition, batch, base, attrs, &cur, gap, deadline)
		if err != nil {
			corrupt(base, last, fmt.Errorf("record batch at offsets %d-%d: %w", base, last, err))
			continue
		}
		pending = append(pending, recs...)
	}
	flush()
	if started && end < math.MaxInt64 {
		cur.advance(end+1, gap)
	}
	cur.advance(math.MaxInt64, unfetched)
	return out
}

// tooManyAcquired reports whether rs acquire more than maxAcquiredOffsets offsets.
func tooManyAcquired(rs []acquiredRange) bool {
	var n int64
	for _, r := range rs {
		if n += min(r.last-r.first+1, maxAcquiredOffsets+1); n > maxAcquiredOffsets {
			return true
		}
	}
	return false
}

var errTruncated = errors.New("record data is truncated")

// decodeBatch decodes the records of one magic-2 batch whose header was checked, returning the
// acquired ones. On an error nothing of the batch was accounted for in cur.
func (d *decoder) decodeBatch(topic string, partition int32, batch []byte, base int64, attrs uint16, cur *acqCursor, gap func(first, last int64), deadline time.Time) ([]*Record, error) {
	n := int32(binary.BigEndian.Uint32(batch[batchNumRecordsOff:]))
	if n < 0 {
		return nil, fmt.Errorf("negative record count %d", n)
	}
	body := batch[batchHeaderSize:]
	if codec := attrs & attrCompression; codec != 0 {
		if codec > 4 {
			return nil, fmt.Errorf("unknown compression codec %d", codec)
		}
		var err error
		if body, err = d.decompressor.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
			return nil, fmt.Errorf("decompressing (%s): %w", codecName(codec), err)
		}
	}
	baseTime := int64(binary.BigEndian.Uint64(batch[batchBaseTimeOff:]))
	logAppend := attrs&attrLogAppendTime != 0
	var appendTime time.Time
	if logAppend {
		appendTime = time.UnixMilli(int64(binary.BigEndian.Uint64(batch[batchMaxTimeOff:])))
	}

	// Decode against a copy of cur, so that a malformed record leaves cur untouched; cur takes
	// the acquired records, and marks the gaps among them, once the whole batch has decoded.
	// Records outside the acquired ranges are framed (length, offset), not read: in the
	// record-limit acquire mode a broker sends the whole stored batch for the records it
	// acquired, so most of what a fetch brings may be skipped.
	c := *cur
	var (
		slab  []Record
		hslab []kgo.RecordHeader // the acquired records' headers, sliced off in turn
		hkeys []string           // header keys seen in this batch, to share their strings
	)
	r := reader{b: body}
	prev := int64(-1)
	for i := range n {
		length := r.varint()
		rb := r.bytes(length)
		if r.err != nil {
			return nil, r.err
		}
		rr := reader{b: rb}
		rr.skip(1) // attributes, unused
		tsDelta := rr.varint()
		off := base + rr.varint()
		if rr.err != nil {
			return nil, fmt.Errorf("record %d: %w", i, rr.err)
		}
		if off <= prev {
			return nil, fmt.Errorf("record offsets do not increase (%d after %d)", off, prev)
		}
		prev = off
		if off < c.next { // acquired twice in the response, or below what was accounted for
			continue
		}
		dc, acquired := c.take(off, nil)
		if !acquired {
			continue // its length framed it: the rest of it is not read
		}
		key := rr.nullableBytes()
		value := rr.nullableBytes()
		nh := rr.varint()
		if rr.err == nil && (nh < 0 || nh > int64(len(rr.b))) {
			rr.err = fmt.Errorf("invalid header count %d", nh)
		}
		var headers []kgo.RecordHeader
		if nh > 0 && rr.err == nil {
			if int64(cap(hslab)-len(hslab)) < nh {
				hslab = make([]kgo.RecordHeader, 0, max(nh, min(nh*int64(n-i), 1024)))
			}
			l := len(hslab)
			headers = hslab[l : l : l+int(nh)]
			hslab = hslab[:l+int(nh)]
			for range nh {
				hk := rr.bytes(rr.varint())
				hv := rr.nullableBytes()
				if rr.err == nil {
					headers = append(headers, kgo.RecordHeader{Key: internKey(&hkeys, hk), Value: hv})
				}
			}
		}
		if rr.err != nil {
			return nil, fmt.Errorf("record %d: %w", i, rr.err)
		}
		if slab == nil {
			last := base + int64(int32(binary.BigEndian.Uint32(batch[batchLastDeltaOff:])))
			slab = make([]Record, 0, max(1, min(int64(n-i), cur.count(off, last))))
		}
		ts := appendTime
		if !logAppend {
			ts = time.UnixMilli(baseTime + tsDelta)
		}
		slab = append(slab, Record{
			Topic:         topic,
			Partition:     partition,
			Offset:        off,
			Key:           key,
			Value:         value,
			Headers:       headers,
			Timestamp:     ts,
			DeliveryCount: dc,
			LockDeadline:  deadline,
		})
	}
	var out []*Record
	if len(slab) > 0 {
		out = make([]*Record, len(slab))
	}
	for i := range slab {
		out[i] = &slab[i]
		cur.take(slab[i].Offset, gap)
	}
	cur.advance(c.next, gap) // the gaps the records after the last acquired one showed
	*cur = c
	return out, nil
}

// internKey returns k as a string, sharing the string of an equal key in keys, to which it adds
// up to 16 distinct keys.
func internKey(keys *[]string, k []byte) string {
	for _, s := range *keys {
		if s == string(k) {
			return s
		}
	}
	s := string(k)
	if len(*keys) < 16 {
		*keys = append(*keys, s)
	}
	return s
}

func codecName(codec uint16) string {
	switch codec {
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", codec)
}

// reader reads Kafka's varint-encoded record fields; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) > 0 && r.b[0] < 0x80 {
		// One byte, as most lengths, deltas and counts of small records are.
		u := int64(r.b[0])
		r.b = r.b[1:]
		return u>>1 ^ -(u & 1)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errTruncated
		if n < 0 {
			r.err = errors.New("varint overflows 64 bits")
		}
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) {
	if r.err == nil && len(r.b) < n {
		r.err = errTruncated
	}
	if r.err == nil {
		r.b = r.b[n:]
	}
}

// bytes returns the next n bytes; a negative n is an error.
func (r *reader) bytes(n int64) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.err = fmt.Errorf("negative length %d", n)
		return nil
	}
	if n > int64(len(r.b)) {
		r.err = errTruncated
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

// nullableBytes reads a length (-1 for null) and that many bytes.
func (r *reader) nullableBytes() []byte {
	n := r.varint()
	if n == -1 {
		return nil
	}
	return r.bytes(n)
}

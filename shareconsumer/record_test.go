package shareconsumer

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// tRec is a record to put in a test batch, at base+delta.
type tRec struct {
	delta   int32
	key     []byte
	value   []byte
	headers []kgo.RecordHeader
}

// tBatch encodes an uncompressed magic-2 record batch as Kafka stores it.
func tBatch(base int64, lastDelta int32, attrs int16, baseTime int64, recs ...tRec) []byte {
	var body []byte
	for _, r := range recs {
		var rb []byte
		rb = append(rb, 0) // attributes
		rb = binary.AppendVarint(rb, int64(r.delta)*10)
		rb = binary.AppendVarint(rb, int64(r.delta))
		rb = appendNullable(rb, r.key)
		rb = appendNullable(rb, r.value)
		rb = binary.AppendVarint(rb, int64(len(r.headers)))
		for _, h := range r.headers {
			rb = appendNullable(rb, []byte(h.Key))
			rb = appendNullable(rb, h.Value)
		}
		body = binary.AppendVarint(body, int64(len(rb)))
		body = append(body, rb...)
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(body))
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(batchHeaderSize-12+len(body)))
	b[batchMagicOffset] = 2
	binary.BigEndian.PutUint16(b[batchAttrsOffset:], uint16(attrs))
	binary.BigEndian.PutUint32(b[batchLastDeltaOff:], uint32(lastDelta))
	binary.BigEndian.PutUint64(b[batchBaseTimeOff:], uint64(baseTime))
	binary.BigEndian.PutUint64(b[batchMaxTimeOff:], uint64(baseTime+1000))
	binary.BigEndian.PutUint32(b[batchNumRecordsOff:], uint32(len(recs)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchAttrsOffset:], crc32c))
	return b
}

func appendNullable(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func acq(first, last int64, dc int16) kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	return kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: first, LastOffset: last, DeliveryCount: dc}
}

func tDecoder() *decoder { return &decoder{decompressor: kgo.DefaultDecompressor(), checkCRC: true} }

func offsetsOf(recs []*Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

func TestDecodeOnlyAcquired(t *testing.T) {
	t.Parallel()
	data := append(
		tBatch(10, 2, 0, 1000, tRec{delta: 0, value: []byte("a")}, tRec{delta: 1, key: []byte("k"), value: []byte("b"), headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}, tRec{delta: 2, value: nil}),
		tBatch(13, 1, 0, 2000, tRec{delta: 0, value: []byte("d")}, tRec{delta: 1, value: []byte("e")})...)
	deadline := time.Unix(100, 0)
	d := tDecoder().decodePartition("t", 4, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(11, 13, 2), acq(14, 14, 1)}, deadline)
	require.Len(t, d.chunks, 1)
	recs := d.chunks[0].recs
	assert.Equal(t, []int64{11, 12, 13, 14}, offsetsOf(recs))
	assert.Empty(t, d.gaps)
	r := recs[0]
	assert.Equal(t, "t", r.Topic)
	assert.EqualValues(t, 4, r.Partition)
	assert.Equal(t, "k", string(r.Key))
	assert.Equal(t, "b", string(r.Value))
	assert.Equal(t, []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}, r.Headers)
	assert.Equal(t, time.UnixMilli(1010), r.Timestamp)
	assert.EqualValues(t, 2, r.DeliveryCount)
	assert.Equal(t, deadline, r.LockDeadline)
	assert.Nil(t, recs[1].Value, "a null value stays nil")
	assert.Nil(t, recs[1].Key)
	assert.EqualValues(t, 2, recs[2].DeliveryCount)
	assert.EqualValues(t, 1, recs[3].DeliveryCount)
}

func TestDecodeGaps(t *testing.T) {
	t.Parallel()
	// Offsets 0-9 acquired; the data holds records at 2 and 5 (compaction), a control batch at
	// 6, and nothing from 7 on: those were never fetched, so they are neither gaps nor records.
	data := append(tBatch(0, 5, 0, 0, tRec{delta: 2, value: []byte("x")}, tRec{delta: 5, value: []byte("y")}),
		tBatch(6, 0, attrControl, 0, tRec{delta: 0, key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}})...)
	d := tDecoder().decodePartition("t", 0, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, 9, 1)}, time.Time{})
	require.Len(t, d.chunks, 1)
	assert.Equal(t, []int64{2, 5}, offsetsOf(d.chunks[0].recs))
	assert.Equal(t, []offsetRange{{0, 1}, {3, 4}, {6, 6}}, d.gaps)
	assert.EqualValues(t, 3, d.unfetched)
}

func TestDecodeUnfetched(t *testing.T) {
	t.Parallel()
	data := tBatch(5, 2, 0, 0, tRec{delta: 0, value: []byte("a")}, tRec{delta: 2, value: []byte("b")})
	// Acquired 0-9: 0-4 lie before the data, 8-9 after it; only 6 is a gap.
	d := tDecoder().decodePartition("t", 0, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, 9, 1)}, time.Time{})
	require.Len(t, d.chunks, 1)
	assert.Equal(t, []int64{5, 7}, offsetsOf(d.chunks[0].recs))
	assert.Equal(t, []offsetRange{{6, 6}}, d.gaps)
	assert.EqualValues(t, 7, d.unfetched)

	// No data at all: nothing is accounted for but as unfetched.
	d = tDecoder().decodePartition("t", 0, nil, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(100, 109, 1)}, time.Time{})
	assert.Empty(t, d.chunks)
	assert.Empty(t, d.gaps)
	assert.EqualValues(t, 10, d.unfetched)
}

// An answer acquiring 2^62 offsets with no data used to make the consumer account for them one
// by one; it is refused as a whole, at once.
func TestDecodeTooManyAcquired(t *testing.T) {
	t.Parallel()
	data := tBatch(0, 0, 0, 0, tRec{delta: 0, value: []byte("a")})
	for _, rs := range [][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
		{acq(0, 1<<62, 1)},
		{acq(0, maxAcquiredOffsets, 1)},
		{acq(0, maxAcquiredOffsets/2, 1), acq(maxAcquiredOffsets, maxAcquiredOffsets+maxAcquiredOffsets/2, 1)},
	} {
		d := tDecoder().decodePartition("t", 4, data, rs, time.Time{})
		require.Empty(t, d.chunks)
		require.Empty(t, d.gaps)
		var pe *errors.PartitionError
		require.ErrorAs(t, d.invalid, &pe)
		assert.Equal(t, TopicPartition{"t", 4}, TopicPartition{pe.Topic, pe.Partition})
		assert.ErrorIs(t, d.invalid, errors.ErrTooManyAcquired)
	}
	// At the bound, the answer is taken.
	d := tDecoder().decodePartition("t", 4, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, maxAcquiredOffsets-1, 1)}, time.Time{})
	require.NoError(t, d.invalid)
	assert.EqualValues(t, maxAcquiredOffsets-1, d.unfetched)
}

func TestDecodeCorruptBatch(t *testing.T) {
	t.Parallel()
	good1 := tBatch(0, 1, 0, 0, tRec{delta: 0, value: []byte("a")}, tRec{delta: 1, value: []byte("b")})
	bad := tBatch(2, 2, 0, 0, tRec{delta: 0, value: []byte("c")}, tRec{delta: 1, value: []byte("d")}, tRec{delta: 2, value: []byte("e")})
	bad[len(bad)-2] ^= 0xff // the last value byte: the CRC no longer matches
	good2 := tBatch(5, 0, 0, 0, tRec{delta: 0, value: []byte("f")})
	data := append(append(append([]byte{}, good1...), bad...), good2...)
	d := tDecoder().decodePartition("t", 1, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(1, 5, 1)}, time.Time{})
	require.Len(t, d.chunks, 3)
	assert.Equal(t, []int64{1}, offsetsOf(d.chunks[0].recs))
	ce := d.chunks[1].corrupt
	require.NotNil(t, ce)
	assert.Equal(t, []int64{2, 3, 4}, ce.Offsets)
	assert.Equal(t, "t", ce.Topic)
	assert.EqualValues(t, 1, ce.Partition)
	assert.True(t, errors.Is(ce, kerr.CorruptMessage))
	assert.Contains(t, ce.Error(), "CRC")
	assert.Equal(t, []int64{5}, offsetsOf(d.chunks[2].recs))
	assert.Empty(t, d.gaps)

	// With CRC checks off, the damaged value is returned as it is.
	dec := tDecoder()
	dec.checkCRC = false
	d = dec.decodePartition("t", 1, data, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(1, 5, 1)}, time.Time{})
	require.Len(t, d.chunks, 1)
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, offsetsOf(d.chunks[0].recs))
}

func TestDecodeMalformedRecords(t *testing.T) {
	t.Parallel()
	b := tBatch(0, 1, 0, 0, tRec{delta: 0, value: []byte("a")}, tRec{delta: 1, value: []byte("b")})
	binary.BigEndian.PutUint32(b[batchNumRecordsOff:], 3) // one record more than there is
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchAttrsOffset:], crc32c))
	d := tDecoder().decodePartition("t", 0, b, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, 1, 1)}, time.Time{})
	require.Len(t, d.chunks, 1)
	require.NotNil(t, d.chunks[0].corrupt)
	assert.Equal(t, []int64{0, 1}, d.chunks[0].corrupt.Offsets)
	assert.ErrorIs(t, d.chunks[0].corrupt, errTruncated)
}

func TestDecodeBrokenFraming(t *testing.T) {
	t.Parallel()
	good := tBatch(0, 0, 0, 0, tRec{delta: 0, value: []byte("a")})
	bad := tBatch(1, 0, 0, 0, tRec{delta: 0, value: []byte("b")})
	bad[batchMagicOffset] = 7
	d := tDecoder().decodePartition("t", 0, append(good, bad...), []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, 3, 1)}, time.Time{})
	require.Len(t, d.chunks, 2)
	assert.Equal(t, []int64{0}, offsetsOf(d.chunks[0].recs))
	assert.Equal(t, []int64{1, 2, 3}, d.chunks[1].corrupt.Offsets, "nothing after broken framing can be trusted")
	assert.Contains(t, d.chunks[1].corrupt.Error(), "magic 7")
}

func TestDecodePartialTrailingBatch(t *testing.T) {
	t.Parallel()
	good := tBatch(0, 0, 0, 0, tRec{delta: 0, value: []byte("a")})
	next := tBatch(1, 1, 0, 0, tRec{delta: 0, value: []byte("b")}, tRec{delta: 1, value: []byte("c")})
	d := tDecoder().decodePartition("t", 0, append(good, next[:len(next)-3]...), []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(0, 2, 1)}, time.Time{})
	require.Len(t, d.chunks, 1)
	assert.Equal(t, []int64{0}, offsetsOf(d.chunks[0].recs))
	assert.Empty(t, d.gaps, "as Kafka's client, a partial batch is ignored; but its offsets are not gaps")
	assert.EqualValues(t, 2, d.unfetched)
}

func TestNormalizeAcquired(t *testing.T) {
	t.Parallel()
	got := normalizeAcquired([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(10, 12, 1), acq(0, 3, 2), acq(2, 5, 3), acq(7, 6, 1), acq(-1, 2, 1), acq(4, 4, 1)})
	assert.Equal(t, []acquiredRange{{0, 3, 2}, {4, 5, 3}, {10, 12, 1}}, got)
}

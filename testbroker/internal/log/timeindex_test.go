package log

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// compress returns batch b with its records compressed by codec, as a producer sends it.
func compress(t *testing.T, b []byte, codec kgo.CompressionCodec) []byte {
	t.Helper()
	c, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	var buf bytes.Buffer
	records, typ := c.Compress(&buf, b[HeaderSize:])
	require.NotEqual(t, kgo.CodecNone, typ)
	h := parseHeader(b)
	rb := kmsg.RecordBatch{
		Length:               int32(minBatchLength + len(records)),
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           h.Attributes | int16(typ),
		LastOffsetDelta:      h.LastOffsetDelta,
		FirstTimestamp:       h.BaseTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		FirstSequence:        h.BaseSequence,
		NumRecords:           h.NumRecords,
		Records:              records,
	}
	return recrc(rb.AppendTo(nil))
}

// lookupLog holds five batches at bases 0, 2, 3, 6 and 7, their records' timestamps out of
// order inside the third; codec compresses every batch unless it is nil.
func lookupLog(t *testing.T, codec *kgo.CompressionCodec) *Partition {
	t.Helper()
	p := NewPartition(Config{})
	p.SetLeaderEpoch(3)
	for _, ts := range [][]int64{{90, 100}, {300}, {150, 200, 120}, {300}, {50}} {
		b := encode(spec{n: len(ts), timestamps: ts})
		if codec != nil {
			b = compress(t, b, *codec)
		}
		_, err := p.Append(b, now)
		require.NoError(t, err)
	}
	p.SetHighWatermark(p.LogEndOffset())
	return p
}

func TestOffsetForTimestampFindsTheRecord(t *testing.T) {
	codecs := map[string]*kgo.CompressionCodec{"uncompressed": nil}
	for name, c := range map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	} {
		codecs[name] = &c
	}
	tests := []struct {
		name   string
		ts     int64
		limit  int64
		offset int64 // -1: not found
		stamp  int64
	}{
		{name: "before everything", ts: 0, limit: 8, offset: 0, stamp: 90},
		{name: "at a record", ts: 90, limit: 8, offset: 0, stamp: 90},
		{name: "between two records of a batch", ts: 95, limit: 8, offset: 1, stamp: 100},
		{name: "at a batch's last record", ts: 100, limit: 8, offset: 1, stamp: 100},
		{name: "between batches", ts: 101, limit: 8, offset: 2, stamp: 300},
		{name: "the largest", ts: 300, limit: 8, offset: 2, stamp: 300},
		{name: "beyond every record", ts: 301, limit: 8, offset: -1},
		{name: "answer at the limit", ts: 150, limit: 2, offset: -1},
		{name: "answer below the limit", ts: 150, limit: 3, offset: 2, stamp: 300},
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			p := lookupLog(t, codec)
			for _, tt := range tests {
				at, found := p.OffsetForTimestamp(tt.ts, tt.limit)
				if tt.offset < 0 {
					assert.False(t, found, tt.name)
					continue
				}
				assert.True(t, found, tt.name)
				assert.Equal(t, TimestampOffset{Offset: tt.offset, Timestamp: tt.stamp, LeaderEpoch: 3}, at, tt.name)
			}

			// Inside the third batch, {150, 200, 120} at offsets 3..5: a search that passes
			// the batches before it lands on its second record.
			q := NewPartition(Config{})
			for _, ts := range [][]int64{{10, 20}, {150, 200, 120}} {
				b := encode(spec{n: len(ts), timestamps: ts})
				if codec != nil {
					b = compress(t, b, *codec)
				}
				_, err := q.Append(b, now)
				require.NoError(t, err)
			}
			at, found := q.OffsetForTimestamp(160, 5)
			require.True(t, found)
			assert.Equal(t, TimestampOffset{Offset: 3, Timestamp: 200, LeaderEpoch: 0}, at, "the first record at or after 160, not the batch's first")
		})
	}
}

func TestMaxTimestampFindsTheRecord(t *testing.T) {
	p := NewPartition(Config{})
	for _, ts := range [][]int64{{10, 40, 40, 20}, {30}, {40}} { // bases 0, 4, 5
		_, err := p.Append(compress(t, encode(spec{n: len(ts), timestamps: ts}), kgo.Lz4Compression()), now)
		require.NoError(t, err)
	}
	at, found := p.MaxTimestamp(6)
	require.True(t, found)
	assert.Equal(t, TimestampOffset{Offset: 1, Timestamp: 40, LeaderEpoch: 0}, at, "the first record with the largest timestamp, in the first batch that has it")

	_, found = p.MaxTimestamp(1)
	assert.False(t, found, "hidden at or past the limit")
	_, found = NewPartition(Config{}).MaxTimestamp(0)
	assert.False(t, found, "empty log")

	// The last record holds the largest timestamp, as with increasing timestamps.
	q := NewPartition(Config{})
	_, err := q.Append(encode(spec{n: 100, timestamps: increasing(1000, 100)}), now)
	require.NoError(t, err)
	at, found = q.MaxTimestamp(100)
	require.True(t, found)
	assert.Equal(t, int64(99), at.Offset)
	assert.Equal(t, int64(1099), at.Timestamp)
}

func increasing(from int64, n int) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = from + int64(i)
	}
	return ts
}

func TestLogAppendTimeLookups(t *testing.T) {
	p := NewPartition(Config{LogAppendTime: true})
	_, err := p.Append(encode(spec{n: 3, timestamps: []int64{5, 900, 7}}), now)
	require.NoError(t, err)
	_, err = p.Append(encode(spec{n: 2, timestamps: []int64{1, 2}}), now.Add(10*time.Millisecond))
	require.NoError(t, err)
	p.SetHighWatermark(p.LogEndOffset())

	at, found := p.OffsetForTimestamp(now.UnixMilli()+1, 5)
	require.True(t, found)
	assert.Equal(t, TimestampOffset{Offset: 3, Timestamp: now.UnixMilli() + 10, LeaderEpoch: 0}, at, "records carry their batch's append time, not the producer's")
	at, found = p.MaxTimestamp(5)
	require.True(t, found)
	assert.Equal(t, int64(3), at.Offset, "the first record of the batch with the latest append time")
}

func TestLookupsSkipUndecodableRecords(t *testing.T) {
	p := NewPartition(Config{})
	b := encode(spec{n: 2, timestamps: []int64{10, 20}})
	bad := edit(b, func(b []byte) { b[HeaderSize] = 0x7f }) // a record length past the end
	_, err := p.Append(bad, now)
	require.NoError(t, err)
	_, err = p.Append(encode(spec{timestamps: []int64{30}}), now)
	require.NoError(t, err)

	at, found := p.OffsetForTimestamp(15, 3)
	require.True(t, found)
	assert.Equal(t, int64(2), at.Offset, "a batch whose records cannot be read is passed over")
	_, found = p.MaxTimestamp(3)
	assert.True(t, found)
}

func TestIncrementLogStartOffset(t *testing.T) {
	p := lookupLog(t, nil) // bases 0, 2, 3, 6, 7; hwm 8
	p.StartLeaderEpoch(5)
	_, err := p.Append(encode(spec{timestamps: []int64{400}}), now) // offset 8, epoch 5
	require.NoError(t, err)

	_, err = p.IncrementLogStartOffset(9)
	requireCode(t, kerr.OffsetOutOfRange, err)
	assert.Equal(t, int64(0), p.LogStartOffset(), "nothing moves past the high watermark")

	wake := p.Notify()
	start, err := p.IncrementLogStartOffset(4)
	require.NoError(t, err)
	assert.Equal(t, int64(4), start)
	assert.True(t, isClosed(wake))
	assert.Equal(t, int32(3), p.LogStartEpoch(), "the epoch of the new start")

	_, err = p.AppendRecords(nil, 3, 1<<20, 8)
	requireCode(t, kerr.OffsetOutOfRange, err)
	got, err := p.AppendRecords(nil, 4, 1, 8)
	require.NoError(t, err)
	assert.Equal(t, int64(3), split(t, got)[0].Header.BaseOffset, "the batch holding the start stays whole")

	at, found := p.OffsetForTimestamp(0, 8)
	require.True(t, found)
	assert.Equal(t, TimestampOffset{Offset: 4, Timestamp: 200, LeaderEpoch: 3}, at, "records below the start are not answers")

	start, err = p.IncrementLogStartOffset(2)
	require.NoError(t, err)
	assert.Equal(t, int64(4), start, "the start never moves back")

	_, err = p.IncrementLogStartOffset(7)
	require.NoError(t, err)
	at, found = p.MaxTimestamp(9)
	require.True(t, found)
	assert.Equal(t, TimestampOffset{Offset: 8, Timestamp: 400, LeaderEpoch: 5}, at, "the largest timestamp among the batches left")
	at, found = p.OffsetForTimestamp(300, 9)
	require.True(t, found)
	assert.Equal(t, int64(8), at.Offset, "the deleted batches' timestamps no longer steer the search")

	p.SetHighWatermark(9)
	_, err = p.IncrementLogStartOffset(9)
	require.NoError(t, err)
	assert.Equal(t, []int64{9, 9, 9}, []int64{p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark()})
	assert.Equal(t, int32(5), p.LogStartEpoch())
	_, found = p.MaxTimestamp(9)
	assert.False(t, found, "an empty log has no largest timestamp")
	e, end := p.EndOffsetForEpoch(3)
	assert.Equal(t, []any{int32(3), int64(9)}, []any{e, end}, "epoch 3 ends where epoch 5 starts, at the log start")
}

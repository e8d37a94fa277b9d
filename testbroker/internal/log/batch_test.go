package log

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseHeader(t *testing.T) {
	b := encode(spec{n: 3, timestamps: []int64{10, 30, 20}, pid: 7, epoch: 2, seq: 40, attrs: 1})
	h, err := ParseHeader(b)
	require.NoError(t, err)

	var want kmsg.RecordBatch
	require.NoError(t, want.ReadFrom(b))
	assert.Equal(t, BatchHeader{
		BaseOffset:           want.FirstOffset,
		BatchLength:          want.Length,
		PartitionLeaderEpoch: want.PartitionLeaderEpoch,
		Magic:                want.Magic,
		CRC:                  uint32(want.CRC),
		Attributes:           want.Attributes,
		LastOffsetDelta:      want.LastOffsetDelta,
		BaseTimestamp:        want.FirstTimestamp,
		MaxTimestamp:         want.MaxTimestamp,
		ProducerID:           want.ProducerID,
		ProducerEpoch:        want.ProducerEpoch,
		BaseSequence:         want.FirstSequence,
		NumRecords:           want.NumRecords,
	}, h)
	assert.Equal(t, int64(30), h.MaxTimestamp)
	assert.Equal(t, int64(2), h.LastOffset())

	_, err = ParseHeader(b[:HeaderSize-1])
	var ce *CorruptError
	assert.ErrorAs(t, err, &ce)
}

func TestSplitBatches(t *testing.T) {
	one := encode(spec{})
	three := encode(spec{n: 3})

	tests := []struct {
		name    string
		records []byte
		want    *kerr.Error // nil for success
		corrupt bool        // the error is a *CorruptError
		batches int
	}{
		{name: "one batch", records: one, batches: 1},
		{name: "two batches", records: concat(one, three), batches: 2},
		{name: "empty", records: nil, want: kerr.InvalidRecord},
		{name: "truncated header", records: one[:HeaderSize-10], want: kerr.CorruptMessage, corrupt: true},
		{name: "too few bytes for the magic", records: one[:10], want: kerr.CorruptMessage, corrupt: true},
		{name: "truncated records", records: one[:len(one)-1], want: kerr.CorruptMessage, corrupt: true},
		{name: "truncated second batch", records: concat(one, three[:len(three)-5]), want: kerr.CorruptMessage, corrupt: true},
		{name: "trailing bytes", records: concat(one, []byte{0, 0, 0}), want: kerr.CorruptMessage, corrupt: true},
		{name: "length below the header", records: edit(one, func(b []byte) { binary.BigEndian.PutUint32(b[8:], 48) }), want: kerr.CorruptMessage, corrupt: true},
		{name: "negative length", records: edit(one, func(b []byte) { binary.BigEndian.PutUint32(b[8:], 0xffffffff) }), want: kerr.CorruptMessage, corrupt: true},
		{name: "flipped record byte", records: func() []byte { b := clone(one); b[len(b)-3] ^= 1; return b }(), want: kerr.CorruptMessage, corrupt: true},
		{name: "bad CRC in second batch", records: concat(one, func() []byte { b := clone(three); b[17] ^= 0xff; return b }()), want: kerr.CorruptMessage, corrupt: true},
		{name: "magic 1", records: edit(one, func(b []byte) { b[16] = 1 }), want: kerr.InvalidRecord},
		{name: "magic 0 in a short frame", records: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, want: kerr.InvalidRecord},
		{name: "magic 3", records: edit(one, func(b []byte) { b[16] = 3 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "negative magic", records: edit(one, func(b []byte) { b[16] = 0x80 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "unknown codec", records: edit(one, func(b []byte) { b[22] = 5 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "count above delta", records: edit(three, func(b []byte) { binary.BigEndian.PutUint32(b[57:], 4) }), want: kerr.InvalidRecord},
		{name: "count below delta", records: edit(three, func(b []byte) { binary.BigEndian.PutUint32(b[57:], 2) }), want: kerr.InvalidRecord},
		{name: "zero count", records: edit(one, func(b []byte) { binary.BigEndian.PutUint32(b[23:], 0xffffffff); binary.BigEndian.PutUint32(b[57:], 0) }), want: kerr.InvalidRecord},
		{name: "negative delta", records: edit(one, func(b []byte) { binary.BigEndian.PutUint32(b[23:], 0xfffffffe) }), want: kerr.InvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batches, err := SplitBatches(tt.records)
			if tt.want == nil {
				require.NoError(t, err)
				require.Len(t, batches, tt.batches)
				pos := 0
				for _, b := range batches {
					assert.Same(t, &tt.records[pos], &b.Bytes[0], "batches alias the input")
					pos += len(b.Bytes)
				}
				assert.Equal(t, len(tt.records), pos)
				return
			}
			requireCode(t, tt.want, err)
			assert.Nil(t, batches)
			var ce *CorruptError
			assert.Equal(t, tt.corrupt, errors.As(err, &ce), "error %q", err)
		})
	}
}

func TestCorruptErrorPosition(t *testing.T) {
	one := encode(spec{})
	bad := clone(one)
	bad[len(bad)-1] ^= 1
	_, err := SplitBatches(concat(one, bad))
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, len(one), ce.Pos)
	assert.ErrorIs(t, err, kerr.CorruptMessage)
}

// FuzzSplitBatches checks that no input panics SplitBatches or Append, that every refusal
// carries a Kafka code, and that accepted input is what the checks promise. With fixCRC the
// input is given the CRC it calls for when read as a single batch.
func FuzzSplitBatches(f *testing.F) {
	one := encode(spec{})
	three := encode(spec{n: 3, timestamps: []int64{5, 9, 7}, pid: 3, epoch: 1})
	f.Add(one, false)
	f.Add(concat(one, three), false)
	f.Add(one[:len(one)-1], false)
	f.Add(edit(one, func(b []byte) { b[16] = 1 }), false)
	f.Add(edit(three, func(b []byte) { binary.BigEndian.PutUint32(b[57:], 2) }), false)
	f.Add(func() []byte { b := clone(three); b[30] ^= 4; return b }(), false)
	f.Add(func() []byte { b := clone(three); b[22] = attrLogAppendTime; return b }(), true)
	f.Add([]byte{}, false)

	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, records []byte, fixCRC bool) {
		if fixCRC && len(records) > posAttributes {
			// Random bytes almost never carry a matching CRC; fixing it lets the fuzzer reach
			// the checks behind the CRC check.
			records = recrc(clone(records))
		}
		batches, err := SplitBatches(records)
		if err != nil {
			var ke *kerr.Error
			require.ErrorAs(t, err, &ke)
		} else {
			pos := 0
			for _, b := range batches {
				require.GreaterOrEqual(t, len(b.Bytes), HeaderSize)
				require.Equal(t, records[pos:pos+len(b.Bytes)], b.Bytes)
				h, err := ParseHeader(b.Bytes)
				require.NoError(t, err)
				require.Equal(t, h, b.Header)
				require.Equal(t, int8(2), h.Magic)
				require.Equal(t, int(h.BatchLength)+12, len(b.Bytes))
				require.Equal(t, crc32.Checksum(b.Bytes[21:], castagnoli), h.CRC)
				require.Positive(t, h.NumRecords)
				require.Equal(t, int64(h.NumRecords), int64(h.LastOffsetDelta)+1)
				pos += len(b.Bytes)
			}
			require.Equal(t, len(records), pos)
		}

		p := NewPartition(Config{LogAppendTime: len(records)%2 == 1})
		res, err := p.Append(records, now)
		if err != nil {
			var ke *kerr.Error
			require.ErrorAs(t, err, &ke)
			require.Equal(t, int64(0), p.LogEndOffset())
			return
		}
		require.Len(t, batches, 1, "Append accepts what SplitBatches accepts, one batch at a time")
		require.Equal(t, int64(0), res.BaseOffset)
		require.Equal(t, batches[0].Header.LastOffset()+1, p.LogEndOffset())
		stored, err := p.AppendRecords(nil, 0, 0, p.LogEndOffset())
		require.NoError(t, err)
		_, err = SplitBatches(stored)
		require.NoError(t, err, "the stored batch stays valid")
	})
}

package shareconsumer

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzAcquired turns fuzz bytes into AcquiredRecords ranges near the small offsets the seed
// batches use: five bytes a range (first, a signed span that may reverse it, a delivery count
// that may be negative), and now and then a first offset at the edges of int64. The span is
// bounded, so that the acquired offsets an input names stay in proportion to its size.
func fuzzAcquired(b []byte) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	in := fuzzInput{b}
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for in.more() {
		first := int64(in.i16())
		switch first {
		case math.MaxInt16:
			first = math.MaxInt64
		case math.MaxInt16 - 1:
			first = math.MaxInt64 - 1
		case math.MinInt16:
			first = math.MinInt64
		}
		span := int64(int8(in.u8()))
		last := first + span
		if (span > 0 && last < first) || (span < 0 && last > first) {
			last = first // no wrapping around int64
		}
		out = append(out, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: first, LastOffset: last, DeliveryCount: in.i16()})
	}
	return out
}

// acquiredSet returns the offsets rs acquire, with their delivery counts.
func acquiredSet(t *testing.T, rs []acquiredRange) map[int64]int16 {
	t.Helper()
	out := make(map[int64]int16)
	for i, r := range rs {
		require.GreaterOrEqual(t, r.first, int64(0))
		require.LessOrEqual(t, r.first, r.last)
		require.Less(t, r.last, int64(math.MaxInt64))
		if i > 0 {
			require.Less(t, rs[i-1].last, r.first, "normalized ranges overlap or are out of order")
		}
		for o := r.first; o <= r.last; o++ {
			out[o] = r.dc
		}
	}
	return out
}

// FuzzDecodePartition decodes fuzzed record data against fuzzed acquired ranges. However wrong
// either is, decoding returns, and every acquired offset is accounted for exactly once: as a
// record (with its range's delivery count), a gap, or an offset of a corrupt batch; nothing
// that was not acquired is.
func FuzzDecodePartition(f *testing.F) {
	plain := tBatch(0, 4, 0, 1000,
		tRec{delta: 0, key: []byte("k0"), value: []byte("v0")},
		tRec{delta: 2, value: []byte("v2"), headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}},
		tRec{delta: 4, key: []byte("k4")})
	next := tBatch(5, 1, 0, 2000, tRec{delta: 0, value: []byte("v5")}, tRec{delta: 1, value: []byte("v6")})
	control := tBatch(7, 0, attrControl, 0, tRec{delta: 0, key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}})
	badCRC := append([]byte{}, next...)
	badCRC[len(badCRC)-2] ^= 0xff
	badMagic := append([]byte{}, next...)
	badMagic[batchMagicOffset] = 1
	acq := func(rs ...[3]int64) []byte { // the inverse of fuzzAcquired, for seeds
		var b []byte
		for _, r := range rs {
			b = append(b, byte(uint16(r[0])>>8), byte(r[0]), byte(int8(r[1]-r[0])), byte(uint16(r[2])>>8), byte(r[2]))
		}
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	f.Add(plain, acq([3]int64{0, 4, 1}), true)
	f.Add(cat(plain, next, control), acq([3]int64{0, 9, 2}), true)
	f.Add(cat(plain, next), acq([3]int64{3, 6, 1}, [3]int64{0, 2, 3}, [3]int64{5, 5, 4}), true) // out of order, overlapping
	f.Add(cat(plain, next), acq([3]int64{6, 2, 1}, [3]int64{-4, 1, -1}), true)                  // reversed; negative first and count
	f.Add(cat(plain, badCRC, next), acq([3]int64{0, 8, 1}), true)
	f.Add(cat(plain, badCRC), acq([3]int64{0, 8, 1}), false)
	f.Add(cat(plain, badMagic, next), acq([3]int64{0, 8, 1}), true)
	f.Add(cat(plain, next[:len(next)-5]), acq([3]int64{0, 6, 1}), true) // a partial batch at the end
	f.Add([]byte{}, acq([3]int64{100, 120, 1}), true)                   // offsets never fetched
	f.Add(cat(plain, next), acq([3]int64{math.MaxInt16, 0, 1}, [3]int64{math.MaxInt16 - 1, 0, 1}), true)
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		c := tCompressedBatch(f, plain, codec)
		f.Add(cat(c, next), acq([3]int64{0, 6, 1}), true)
		broken := append([]byte{}, c...)
		broken[len(broken)-3] ^= 0x5a
		f.Add(cat(broken, next), acq([3]int64{0, 6, 1}), false) // fails to decompress, or decompresses to garbage
	}

	dec := tDecoder()
	deadline := time.Unix(1, 0)
	f.Fuzz(func(t *testing.T, data, acquired []byte, checkCRC bool) {
		dec.checkCRC = checkCRC
		ranges := fuzzAcquired(acquired)
		want := acquiredSet(t, normalizeAcquired(ranges))
		d := dec.decodePartition("t", 3, data, ranges, deadline)

		seen := make(map[int64]string)
		account := func(o int64, as string) {
			_, ok := want[o]
			require.True(t, ok, "offset %d (%s) was not acquired", o, as)
			prev, dup := seen[o]
			require.False(t, dup, "offset %d accounted for twice: %s and %s", o, prev, as)
			seen[o] = as
		}
		prev := int64(-1)
		for _, ch := range d.chunks {
			require.True(t, (ch.corrupt == nil) != (len(ch.recs) == 0), "a chunk holds records or a corrupt batch")
			if ce := ch.corrupt; ce != nil {
				require.NotEmpty(t, ce.Offsets)
				require.Error(t, ce.Err)
				require.Equal(t, TopicPartition{"t", 3}, TopicPartition{ce.Topic, ce.Partition})
				for _, o := range ce.Offsets {
					require.Greater(t, o, prev, "chunks out of offset order")
					prev = o
					account(o, "corrupt")
				}
				continue
			}
			for _, r := range ch.recs {
				require.Greater(t, r.Offset, prev, "records out of offset order")
				prev = r.Offset
				account(r.Offset, "record")
				require.Equal(t, want[r.Offset], r.DeliveryCount)
				require.Equal(t, TopicPartition{"t", 3}, TopicPartition{r.Topic, r.Partition})
				require.Equal(t, deadline, r.LockDeadline)
			}
		}
		for i, g := range d.gaps {
			require.LessOrEqual(t, g.first, g.last)
			if i > 0 {
				require.Less(t, d.gaps[i-1].last+1, g.first, "gaps out of order or not merged")
			}
			for o := g.first; o <= g.last; o++ {
				account(o, "gap")
			}
		}
		lo, hi := dataSpan(data)
		for _, g := range d.gaps {
			require.True(t, g.first >= lo && g.last <= hi, "gap %d-%d lies outside the data's offsets %d-%d", g.first, g.last, lo, hi)
		}
		require.Equal(t, int64(len(want)-len(seen)), d.unfetched, "acquired offsets neither accounted for nor unfetched")
		require.NoError(t, d.invalid)
	})
}

// dataSpan returns the offsets record data covers as far as its framing can be read: from the
// first complete batch's base offset to the last offset of its last complete batch (lo > hi when there
// is none).
func dataSpan(data []byte) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for len(data) >= batchMagicOffset+1 {
		base := int64(binary.BigEndian.Uint64(data))
		length := int32(binary.BigEndian.Uint32(data[8:]))
		if data[batchMagicOffset] != 2 || length < batchHeaderSize-12 || int(length)+12 > len(data) {
			break
		}
		lo = min(lo, base)
		last := base + int64(int32(binary.BigEndian.Uint32(data[batchLastDeltaOff:])))
		if last < base {
			break
		}
		hi = max(hi, last)
		data = data[int(length)+12:]
	}
	return lo, hi
}

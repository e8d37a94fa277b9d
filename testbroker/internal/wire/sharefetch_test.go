package wire_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// codecs are every compression a record batch may use.
var codecs = []kgo.CompressionCodec{
	kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression(),
}

// recordBatch is a real v2 record batch of the given values, compressed with codec, and its
// values as a consumer reads them back.
func recordBatch(t testing.TB, base int64, values [][]byte, codec kgo.CompressionCodec) []byte {
	var raw []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                    // attributes
		body = kbin.AppendVarlong(body, int64(i)) // timestamp delta
		body = kbin.AppendVarint(body, int32(i))  // offset delta
		body = kbin.AppendVarint(body, -1)        // null key
		body = kbin.AppendVarintBytes(body, v)
		body = kbin.AppendVarint(body, 0) // no headers
		raw = kbin.AppendVarint(raw, int32(len(body)))
		raw = append(raw, body...)
	}
	comp, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	records, attrs := raw, int16(0)
	if comp != nil {
		var buf bytes.Buffer
		var typ kgo.CompressionCodecType
		records, typ = comp.Compress(&buf, raw)
		records, attrs = bytes.Clone(records), int16(typ)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(values) - 1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: records,
	}
	out := b.AppendTo(nil)
	kbin.AppendInt32(out[8:8], int32(len(out)-12))
	kbin.AppendInt32(out[17:17], int32(crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))))
	return out
}

// batchValues decodes the record batches in b and returns the records' values.
func batchValues(t testing.TB, b []byte) [][]byte {
	var values [][]byte
	dec := kgo.DefaultDecompressor()
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 12)
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		var rb kmsg.RecordBatch
		require.NoError(t, rb.ReadFrom(b[:n]))
		require.Equal(t, uint32(rb.CRC), crc32.Checksum(b[21:n], crc32.MakeTable(crc32.Castagnoli)), "the batch's CRC")
		raw := rb.Records
		if codec := kgo.CompressionCodecType(rb.Attributes & 7); codec != 0 {
			var err error
			raw, err = dec.Decompress(raw, codec)
			require.NoError(t, err)
		}
		for range rb.NumRecords {
			r := kbin.Reader{Src: raw}
			size := r.Varint()
			rec := r.Span(int(size))
			raw = r.Src
			var kr kmsg.Record
			require.NoError(t, kr.ReadFrom(append(kbin.AppendVarint(nil, size), rec...)))
			values = append(values, kr.Value)
		}
		b = b[n:]
	}
	return values
}

// shareFetchCase is a ShareFetch response as kmsg encodes it, the same response with the
// records of some partitions moved into pieces of Records, as the broker builds it, and each
// partition's record values (nil where its records are not batches).
type shareFetchCase struct {
	want   *kmsg.ShareFetchResponse
	got    *wire.ShareFetchResponse
	values [][][]byte
}

// randomShareFetch returns a ShareFetch response of the given version with every field set at
// random, defaults and null values included, and records that are random bytes or real record
// batches compressed with a random codec.
func randomShareFetch(t testing.TB, r *rand.Rand, version int16) shareFetchCase {
	want := kmsg.NewPtrShareFetchResponse()
	want.Version = version
	want.ThrottleMillis = r.Int32N(1000)
	want.ErrorCode = int16(r.IntN(3))
	str := func() *string {
		if r.IntN(2) == 0 {
			return nil
		}
		return ptr(string(randomBytes(r, r.IntN(20))))
	}
	tags := func(t *kmsg.Tags) {
		for range r.IntN(4) / 2 { // mostly none
			t.Set(uint32(10+r.IntN(20)), randomBytes(r, r.IntN(3)))
		}
	}
	want.ErrorMessage = str()
	want.AcquisitionLockTimeoutMillis = r.Int32N(60000)
	tags(&want.UnknownTags)
	for range r.IntN(3) {
		e := kmsg.NewShareFetchResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port, e.Rack = r.Int32N(5), string(randomBytes(r, r.IntN(12))), r.Int32N(65536), str()
		tags(&e.UnknownTags)
		want.NodeEndpoints = append(want.NodeEndpoints, e)
	}

	var pieces, values [][][]byte
	for range r.IntN(4) {
		rt := kmsg.NewShareFetchResponseTopic()
		copy(rt.TopicID[:], randomBytes(r, 16))
		tags(&rt.UnknownTags)
		for range r.IntN(5) {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition, p.ErrorCode, p.AcknowledgeErrorCode = r.Int32N(100), int16(r.IntN(3)), int16(r.IntN(3))
			p.ErrorMessage, p.AcknowledgeErrorMessage = str(), str()
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = r.Int32N(5)-1, r.Int32N(5)-1
			tags(&p.CurrentLeader.UnknownTags)
			tags(&p.UnknownTags)
			var vals [][]byte
			switch r.IntN(5) {
			case 0: // null
			case 1:
				p.Records = []byte{}
			case 2:
				p.Records = randomBytes(r, 1+r.IntN(12<<10))
			default:
				codec := codecs[r.IntN(len(codecs))]
				base := r.Int64N(1 << 40)
				for range 1 + r.IntN(4) {
					batch := make([][]byte, 1+r.IntN(50))
					for k := range batch {
						// Repeated bytes compress; random ones make a batch large.
						if r.IntN(2) == 0 {
							batch[k] = bytes.Repeat([]byte{byte(k)}, r.IntN(300))
						} else {
							batch[k] = randomBytes(r, r.IntN(300))
						}
					}
					p.Records = append(p.Records, recordBatch(t, base, batch, codec)...)
					vals = append(vals, batch...)
					base += int64(len(batch))
				}
				first := r.Int64N(1 << 40)
				for range r.IntN(4) {
					a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					a.FirstOffset, a.LastOffset, a.DeliveryCount = first, first+r.Int64N(10), int16(1+r.IntN(5))
					first = a.LastOffset + 1 + r.Int64N(3)
					tags(&a.UnknownTags)
					p.AcquiredRecords = append(p.AcquiredRecords, a)
				}
			}
			if r.IntN(8) == 0 {
				p.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}
			}
			rt.Partitions = append(rt.Partitions, p)
			var split [][]byte
			if p.Records != nil && r.IntN(4) > 0 {
				split = splitRandomly(r, p.Records)
			}
			pieces = append(pieces, split)
			values = append(values, vals)
		}
		want.Topics = append(want.Topics, rt)
	}

	// The broker's response: the same fields, with the split partitions' records in Records.
	got := &wire.ShareFetchResponse{ShareFetchResponse: new(kmsg.ShareFetchResponse)}
	*got.ShareFetchResponse = *want
	got.Topics = make([]kmsg.ShareFetchResponseTopic, len(want.Topics))
	i := 0
	for ti, rt := range want.Topics {
		got.Topics[ti] = rt
		got.Topics[ti].Partitions = append([]kmsg.ShareFetchResponseTopicPartition(nil), rt.Partitions...)
		for pi := range rt.Partitions {
			if pieces[i] != nil {
				got.Topics[ti].Partitions[pi].Records = nil
			}
			i++
		}
	}
	// Records may stop before the last partitions when they have no pieces.
	for len(pieces) > 0 && pieces[len(pieces)-1] == nil {
		pieces = pieces[:len(pieces)-1]
	}
	got.Records = pieces
	return shareFetchCase{want: want, got: got, values: values}
}

// TestShareFetchResponseMatchesKmsg checks that the hand encoder of ShareFetch responses writes
// what kmsg writes, for every version kmsg knows, through every path: AppendTo,
// AppendResponse, and a Frame written as pieces; and that kmsg reads back every field, and
// the records as batches that decompress to the values they were made of.
func TestShareFetchResponseMatchesKmsg(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for version := int16(0); version <= kmsg.NewPtrShareFetchResponse().MaxVersion(); version++ {
		for range 100 {
			c := randomShareFetch(t, r, version)
			want := c.want.AppendTo(nil)
			got := c.got.AppendTo(nil)
			require.Equal(t, want, got, "v%d AppendTo", version)

			wantFrame := wire.AppendResponse([]byte("x"), 78, 7, c.want)
			require.Equal(t, wantFrame, wire.AppendResponse([]byte("x"), 78, 7, c.got), "v%d AppendResponse", version)

			var f wire.Frame
			f.AppendResponse(78, 7, c.got)
			f.AppendResponse(78, 8, c.got) // a second frame after the first one's pieces
			var out bytes.Buffer
			n, err := f.WriteTo(&out)
			require.NoError(t, err)
			require.Equal(t, int64(f.Len()), n)
			wantTwo := wire.AppendResponse(wire.AppendResponse(nil, 78, 7, c.want), 78, 8, c.want)
			require.Equal(t, wantTwo, out.Bytes(), "v%d Frame", version)

			read := kmsg.NewPtrShareFetchResponse()
			read.Version = version
			require.NoError(t, read.ReadFrom(got), "v%d ReadFrom", version)
			assert.Equal(t, want, read.AppendTo(nil), "v%d: what kmsg reads encodes the same", version)
			assertShareFetchRead(t, c, read)
		}
	}
}

// assertShareFetchRead checks the fields of a response as kmsg read it against the response
// the case was made of, and the records of each partition against their values.
func assertShareFetchRead(t *testing.T, c shareFetchCase, read *kmsg.ShareFetchResponse) {
	w := c.want
	assert.Equal(t, w.ThrottleMillis, read.ThrottleMillis)
	assert.Equal(t, w.ErrorCode, read.ErrorCode)
	assert.Equal(t, w.ErrorMessage, read.ErrorMessage)
	if w.Version >= 1 {
		assert.Equal(t, w.AcquisitionLockTimeoutMillis, read.AcquisitionLockTimeoutMillis)
	}
	assert.Equal(t, len(w.NodeEndpoints), len(read.NodeEndpoints))
	require.Equal(t, len(w.Topics), len(read.Topics))
	i := 0
	for ti := range w.Topics {
		wt, rt := &w.Topics[ti], &read.Topics[ti]
		assert.Equal(t, wt.TopicID, rt.TopicID)
		require.Equal(t, len(wt.Partitions), len(rt.Partitions))
		for pi := range wt.Partitions {
			wp, rp := &wt.Partitions[pi], &rt.Partitions[pi]
			assert.Equal(t, wp.Partition, rp.Partition)
			assert.Equal(t, wp.ErrorCode, rp.ErrorCode)
			assert.Equal(t, wp.AcknowledgeErrorMessage, rp.AcknowledgeErrorMessage)
			assert.Equal(t, wp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderID)
			assert.Equal(t, wp.Records == nil, rp.Records == nil, "null records stay null")
			assert.True(t, bytes.Equal(wp.Records, rp.Records), "records")
			require.Equal(t, len(wp.AcquiredRecords), len(rp.AcquiredRecords))
			for ai := range wp.AcquiredRecords {
				wa, ra := wp.AcquiredRecords[ai], rp.AcquiredRecords[ai]
				assert.Equal(t, [3]int64{wa.FirstOffset, wa.LastOffset, int64(wa.DeliveryCount)}, [3]int64{ra.FirstOffset, ra.LastOffset, int64(ra.DeliveryCount)})
			}
			if c.values[i] != nil {
				assert.Equal(t, c.values[i], batchValues(t, rp.Records), "the batches' values")
			}
			i++
		}
	}
}

// TestRecordBatchCodecs checks the test's own batches: each codec is the one the batch
// says, and compression changes the bytes.
func TestRecordBatchCodecs(t *testing.T) {
	t.Parallel()
	values := [][]byte{bytes.Repeat([]byte("a"), 200), []byte("b"), {}}
	plain := recordBatch(t, 5, values, kgo.NoCompression())
	for _, codec := range codecs {
		b := recordBatch(t, 5, values, codec)
		var rb kmsg.RecordBatch
		require.NoError(t, rb.ReadFrom(b))
		assert.Equal(t, int64(5), rb.FirstOffset)
		if codec == kgo.NoCompression() {
			assert.Zero(t, rb.Attributes&7)
			assert.Equal(t, plain, b)
		} else {
			assert.NotZero(t, rb.Attributes&7)
			assert.Less(t, len(b), len(plain))
		}
		assert.Equal(t, values, batchValues(t, b))
	}
}

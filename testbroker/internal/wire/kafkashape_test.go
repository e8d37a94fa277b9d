package wire_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// The tests in this file build Fetch and ShareFetch answers the way Kafka builds them (every
// partition's records non-null: KafkaApis passes each through FetchResponse.recordsOrFail, and
// ShareFetchResponse.toMessage turns null into MemoryRecords.EMPTY), encode them as the broker
// does (records of the partitions with data referred to, the others empty), and check the bytes
// against kmsg's encoding of the same answer and against the rules librdkafka applies when it
// reads one (rdkafka_fetcher.c).

// rdPartition is one partition of a response as the librdkafka-rules reader saw it.
type rdPartition struct {
	Partition int32
	ErrorCode int16
	Records   []byte
}

// rdReader reads a response body as librdkafka does: array counts of -1 (null) are read as
// empty where librdkafka allows them, a records size below 0 fails the whole response, and
// bytes left over after the last field fail it too.
type rdReader struct {
	b    []byte
	flex bool
	err  error
}

func (r *rdReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *rdReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("read of %d bytes with %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *rdReader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *rdReader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *rdReader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *rdReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// arrayCount is rd_kafka_buf_read_arraycnt: a compact count (uvarint, plus one) when flexible,
// an int32 otherwise; below -1 fails.
func (r *rdReader) arrayCount() int32 {
	var n int32
	if r.flex {
		n = int32(r.uvarint()) - 1
	} else {
		n = r.i32()
	}
	if n < -1 {
		r.fail("invalid array count %d", n)
	}
	return n
}

// str skips a string: compact and nullable when flexible, int16-sized otherwise.
func (r *rdReader) str() {
	if r.flex {
		if n := int(r.uvarint()) - 1; n > 0 {
			r.take(n)
		}
		return
	}
	if n := int(r.i16()); n > 0 {
		r.take(n)
	}
}

// skipTags is rd_kafka_buf_skip_tags: nothing unless flexible.
func (r *rdReader) skipTags() {
	if !r.flex {
		return
	}
	for range r.uvarint() {
		r.uvarint()
		r.take(int(r.uvarint()))
	}
}

// records reads a partition's records as librdkafka reads MessageSetSize: the size as an array
// count, which must not be below 0.
func (r *rdReader) records(partition int32) []byte {
	n := r.arrayCount()
	if r.err == nil && n < 0 {
		r.fail("partition %d: invalid MessageSetSize %d", partition, n)
	}
	return r.take(int(n))
}

func (r *rdReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("Remaining data after message set parse: %d bytes", len(r.b))
	}
	return r.err
}

// rdReadFetch reads a Fetch response body of the given version by librdkafka's rules
// (rd_kafka_fetch_reply_handle and rd_kafka_fetch_reply_handle_partition).
func rdReadFetch(body []byte, version int16) ([]rdPartition, error) {
	r := &rdReader{b: body, flex: version >= 12}
	if version >= 1 {
		r.i32()
	}
	if version >= 7 {
		r.i16()
		r.i32()
	}
	var out []rdPartition
	for range max(r.arrayCount(), 0) {
		if version > 12 {
			r.take(16)
		} else {
			r.str()
		}
		for range max(r.arrayCount(), 0) {
			var p rdPartition
			p.Partition, p.ErrorCode = r.i32(), r.i16()
			r.i64() // high watermark
			if version >= 4 {
				r.i64() // last stable offset
				if version >= 5 {
					r.i64() // log start offset
				}
				for range max(r.arrayCount(), 0) {
					r.i64()
					r.i64()
					r.skipTags()
				}
			}
			preferred := int32(-1)
			if version >= 11 {
				preferred = r.i32()
			}
			p.Records = r.records(p.Partition)
			if r.err == nil && preferred != -1 && len(p.Records) != 0 {
				// librdkafka skips such records with a warning; Kafka never sends them.
				r.fail("partition %d: both a preferred read replica and %d bytes of records", p.Partition, len(p.Records))
			}
			r.skipTags()
			out = append(out, p)
		}
		r.skipTags()
	}
	r.skipTags()
	return out, r.done()
}

// rdReadShareFetch reads a ShareFetch response body by the same rules: every field of the
// message in order, records sizes not below 0, nothing left over.
func rdReadShareFetch(body []byte, version int16) ([]rdPartition, error) {
	r := &rdReader{b: body, flex: true}
	r.i32()
	r.i16()
	r.str()
	if version >= 1 {
		r.i32()
	}
	var out []rdPartition
	for range max(r.arrayCount(), 0) {
		r.take(16)
		for range max(r.arrayCount(), 0) {
			var p rdPartition
			p.Partition, p.ErrorCode = r.i32(), r.i16()
			r.str()
			r.i16()
			r.str()
			r.i32() // current leader
			r.i32()
			r.skipTags()
			p.Records = r.records(p.Partition)
			for range max(r.arrayCount(), 0) {
				r.i64()
				r.i64()
				r.i16()
				r.skipTags()
			}
			r.skipTags()
			out = append(out, p)
		}
		r.skipTags()
	}
	for range max(r.arrayCount(), 0) {
		r.i32()
		r.str()
		r.i32()
		r.str()
		r.skipTags()
	}
	r.skipTags()
	return out, r.done()
}

// partKind is what one partition of an answer holds.
type partKind int

const (
	partData      partKind = iota // record batches
	partEmpty                     // no records: caught up
	partError                     // a partition error
	partDiverging                 // a follower's diverging epoch (Fetch v12+)
	partPreferred                 // a preferred read replica (Fetch v11+)
	partAckOnly                   // only an acknowledgement result (ShareFetch)
)

// shapes are the answers each version is checked with: empty (no partition has data), partial
// (some with data, some without, some failed) and full (every partition has data).
var shapes = map[string][]partKind{
	"empty":   {partEmpty, partEmpty, partError},
	"partial": {partEmpty, partData, partError, partDiverging, partPreferred, partAckOnly, partData, partEmpty},
	"full":    {partData, partData, partData},
	"none":    nil, // a throttled answer, or one failed as a whole: no partitions at all
}

// kafkaBatches returns real record batches and their values for partition i.
func kafkaBatches(t testing.TB, r *rand.Rand, i int) ([]byte, [][]byte) {
	var b []byte
	var values [][]byte
	base := int64(10 * i)
	for range 1 + r.IntN(3) {
		vals := make([][]byte, 1+r.IntN(5))
		for k := range vals {
			vals[k] = fmt.Appendf(nil, "p%d-%d", i, base+int64(k))
		}
		b = append(b, recordBatch(t, base, vals, codecs[r.IntN(len(codecs))])...)
		values = append(values, vals...)
		base += int64(len(vals))
	}
	return b, values
}

// TestFetchAnswersAsKafkaEncodesThem checks empty, partial and full Fetch answers at every
// version the broker offers (4-18): the broker's encoding (records referred to, empty records
// elsewhere) is kmsg's encoding of Kafka's answer byte for byte, and librdkafka's rules read
// every partition, with the records it was given.
func TestFetchAnswersAsKafkaEncodesThem(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 1))
	for version := int16(4); version <= 18; version++ {
		for name, kinds := range shapes {
			t.Run(fmt.Sprintf("v%d/%s", version, name), func(t *testing.T) {
				want := kmsg.NewPtrFetchResponse()
				want.Version = version
				if name == "none" {
					want.ThrottleMillis = 250
				}
				got := &wire.FetchResponse{FetchResponse: new(kmsg.FetchResponse)}
				*got.FetchResponse = *want
				var values [][][]byte
				for ti := range 2 {
					wt, gt := kmsg.NewFetchResponseTopic(), kmsg.NewFetchResponseTopic()
					wt.Topic, wt.TopicID = fmt.Sprintf("t%d", ti), [16]byte{byte(ti + 1)}
					gt.Topic, gt.TopicID = wt.Topic, wt.TopicID
					for i, kind := range kinds {
						if i%2 != ti || kind == partAckOnly {
							continue
						}
						p := kmsg.NewFetchResponseTopicPartition()
						p.Partition = int32(i)
						p.HighWatermark, p.LastStableOffset, p.LogStartOffset = 100, 100, 0
						p.RecordBatches = []byte{} // Kafka's MemoryRecords.EMPTY
						gp := p
						var vals [][]byte
						switch kind {
						case partData:
							p.RecordBatches, vals = kafkaBatches(t, r, i)
							got.Records = append(got.Records, splitRandomly(r, p.RecordBatches))
						case partError:
							p.ErrorCode = kerr.NotLeaderForPartition.Code
							p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
						case partDiverging:
							if version < 12 {
								continue
							}
							p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 42
						case partPreferred:
							if version < 11 {
								continue
							}
							p.PreferredReadReplica = 2
						}
						if kind != partData {
							got.Records = append(got.Records, nil)
						}
						gp.ErrorCode, gp.HighWatermark, gp.LastStableOffset, gp.LogStartOffset = p.ErrorCode, p.HighWatermark, p.LastStableOffset, p.LogStartOffset
						gp.DivergingEpoch, gp.PreferredReadReplica = p.DivergingEpoch, p.PreferredReadReplica
						wt.Partitions = append(wt.Partitions, p)
						gt.Partitions = append(gt.Partitions, gp)
						values = append(values, vals)
					}
					if len(wt.Partitions) > 0 {
						want.Topics = append(want.Topics, wt)
						got.Topics = append(got.Topics, gt)
					}
				}

				wantBody := want.AppendTo(nil)
				require.Equal(t, wantBody, got.AppendTo(nil), "the broker's encoding is kmsg's")
				var f wire.Frame
				f.AppendResponse(1, 9, got)
				var framed bytes.Buffer
				_, err := f.WriteTo(&framed)
				require.NoError(t, err)
				require.Equal(t, wire.AppendResponse(nil, 1, 9, want), framed.Bytes(), "the broker's frame is kmsg's")

				parts, err := rdReadFetch(wantBody, version)
				require.NoError(t, err, "librdkafka's rules")
				require.Len(t, parts, len(values))
				for i, p := range parts {
					if values[i] == nil {
						assert.Empty(t, p.Records, "partition %d", p.Partition)
					} else {
						assert.Equal(t, values[i], batchValues(t, p.Records), "partition %d", p.Partition)
					}
				}

				read := kmsg.NewPtrFetchResponse()
				read.Version = version
				require.NoError(t, read.ReadFrom(wantBody))
				for _, rt := range read.Topics {
					for _, rp := range rt.Partitions {
						assert.NotNil(t, rp.RecordBatches, "kmsg reads records, never null, for partition %d", rp.Partition)
					}
				}
			})
		}
	}
}

// TestShareFetchAnswersAsKafkaEncodesThem is TestFetchAnswersAsKafkaEncodesThem for ShareFetch
// v1-2, with partitions that carry only an acknowledgement result.
func TestShareFetchAnswersAsKafkaEncodesThem(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 2))
	for version := int16(1); version <= 2; version++ {
		for name, kinds := range shapes {
			t.Run(fmt.Sprintf("v%d/%s", version, name), func(t *testing.T) {
				want := kmsg.NewPtrShareFetchResponse()
				want.Version = version
				want.AcquisitionLockTimeoutMillis = 30000
				got := &wire.ShareFetchResponse{ShareFetchResponse: new(kmsg.ShareFetchResponse)}
				*got.ShareFetchResponse = *want
				var values [][][]byte
				for ti := range 2 {
					wt, gt := kmsg.NewShareFetchResponseTopic(), kmsg.NewShareFetchResponseTopic()
					wt.TopicID = [16]byte{byte(ti + 1)}
					gt.TopicID = wt.TopicID
					for i, kind := range kinds {
						if i%2 != ti || kind == partDiverging || kind == partPreferred {
							continue
						}
						p := kmsg.NewShareFetchResponseTopicPartition()
						p.Partition = int32(i)
						p.Records = []byte{}
						gp := p
						var vals [][]byte
						switch kind {
						case partData:
							p.Records, vals = kafkaBatches(t, r, i)
							got.Records = append(got.Records, splitRandomly(r, p.Records))
							p.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: int64(10 * i), LastOffset: int64(10*i + len(vals) - 1), DeliveryCount: 1}}
						case partError:
							p.ErrorCode = kerr.NotLeaderForPartition.Code
							p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 4
						case partAckOnly:
							p.AcknowledgeErrorCode = kerr.InvalidRecordState.Code
						}
						if kind != partData {
							got.Records = append(got.Records, nil)
						}
						gp.ErrorCode, gp.AcknowledgeErrorCode, gp.CurrentLeader, gp.AcquiredRecords = p.ErrorCode, p.AcknowledgeErrorCode, p.CurrentLeader, p.AcquiredRecords
						wt.Partitions = append(wt.Partitions, p)
						gt.Partitions = append(gt.Partitions, gp)
						values = append(values, vals)
					}
					if len(wt.Partitions) > 0 {
						want.Topics = append(want.Topics, wt)
						got.Topics = append(got.Topics, gt)
					}
				}

				wantBody := want.AppendTo(nil)
				require.Equal(t, wantBody, got.AppendTo(nil), "the broker's encoding is kmsg's")
				var f wire.Frame
				f.AppendResponse(78, 9, got)
				var framed bytes.Buffer
				_, err := f.WriteTo(&framed)
				require.NoError(t, err)
				require.Equal(t, wire.AppendResponse(nil, 78, 9, want), framed.Bytes(), "the broker's frame is kmsg's")

				parts, err := rdReadShareFetch(wantBody, version)
				require.NoError(t, err, "librdkafka's rules")
				require.Len(t, parts, len(values))
				for i, p := range parts {
					if values[i] == nil {
						assert.Empty(t, p.Records, "partition %d", p.Partition)
					} else {
						assert.Equal(t, values[i], batchValues(t, p.Records), "partition %d", p.Partition)
					}
				}
			})
		}
	}
}

// TestRdReaderRefusesNullRecords checks that the librdkafka-rules reader fails where
// librdkafka does: null records (what the broker sent before), at every version and in
// either position, make the whole response unreadable.
func TestRdReaderRefusesNullRecords(t *testing.T) {
	t.Parallel()
	for version := int16(4); version <= 18; version++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		for i := range 2 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(i)
			if i == 1 {
				p.RecordBatches = []byte{}
			}
			rt.Partitions = append(rt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, rt)
		_, err := rdReadFetch(resp.AppendTo(nil), version)
		require.Error(t, err, "v%d", version)
		assert.Contains(t, err.Error(), "invalid MessageSetSize -1", "v%d", version)

		_, err = rdReadFetch(append(resp.AppendTo(nil), 0), version)
		assert.Error(t, err, "v%d: a byte left over", version)
	}
	for version := int16(1); version <= 2; version++ {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.Version = version
		rt := kmsg.NewShareFetchResponseTopic()
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchResponseTopicPartition())
		resp.Topics = append(resp.Topics, rt)
		_, err := rdReadShareFetch(resp.AppendTo(nil), version)
		require.Error(t, err, "v%d", version)
		assert.Contains(t, err.Error(), "invalid MessageSetSize -1", "v%d", version)
	}
}

package testbroker_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestProduceConsumeCodecs produces with franz-go's idempotent producer, once per compression
// codec, to a 3-partition topic led by three brokers, and reads everything back with a
// consumer that names its partitions: every partition holds offsets 0..n-1 with the records in
// the order produced, keys, values and headers intact.
func TestProduceConsumeCodecs(t *testing.T) {
	t.Parallel()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	const partitions, perPartition = 3, 100
	for _, tc := range codecs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("codec", partitions))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()

			producer, err := kgo.NewClient(
				kgo.SeedBrokers(c.Addrs()...),
				kgo.ProducerBatchCompression(tc.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(time.Millisecond),
			)
			require.NoError(t, err)
			defer producer.Close()
			var recs []*kgo.Record
			for i := range partitions * perPartition {
				recs = append(recs, &kgo.Record{
					Topic:     "codec",
					Partition: int32(i % partitions),
					Key:       []byte("key-" + strconv.Itoa(i)),
					Value:     []byte(fmt.Sprintf("value-%d-%s", i, tc.name)),
					Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}},
				})
			}
			require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())
			for _, r := range recs {
				// Each record's offset is its rank within its partition.
				require.Equal(t, int64(r.Partition)+r.Offset*partitions, keyIndex(t, r.Key))
			}

			for p := range int32(partitions) {
				info, ok := c.Partition("codec", p)
				require.True(t, ok)
				assert.Equal(t, int64(perPartition), info.LogEndOffset, "partition %d", p)
				assert.Equal(t, int64(perPartition), info.HighWatermark, "partition %d", p)
				assert.Equal(t, int64(0), info.LogStartOffset, "partition %d", p)
				assert.Equal(t, p%3, info.Leader, "partition %d", p)
			}

			offsets := map[int32]kgo.Offset{}
			for p := range int32(partitions) {
				offsets[p] = kgo.NewOffset().AtStart()
			}
			consumer, err := kgo.NewClient(
				kgo.SeedBrokers(c.Addrs()...),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"codec": offsets}),
			)
			require.NoError(t, err)
			defer consumer.Close()
			got := map[int32][]*kgo.Record{}
			for n := 0; n < len(recs); {
				fs := consumer.PollFetches(ctx)
				require.NoError(t, ctx.Err(), "consumed %d of %d records", n, len(recs))
				require.Empty(t, fs.Errors())
				fs.EachRecord(func(r *kgo.Record) {
					got[r.Partition] = append(got[r.Partition], r)
					n++
				})
			}
			for p := range int32(partitions) {
				require.Len(t, got[p], perPartition, "partition %d", p)
				for i, r := range got[p] {
					want := recs[i*partitions+int(p)]
					assert.Equal(t, int64(i), r.Offset)
					assert.Equal(t, want.Key, r.Key)
					assert.Equal(t, want.Value, r.Value)
					assert.Equal(t, want.Headers, r.Headers)
				}
			}
		})
	}
}

// keyIndex returns i of a key "key-i".
func keyIndex(t *testing.T, key []byte) int64 {
	t.Helper()
	i, err := strconv.ParseInt(string(key[len("key-"):]), 10, 64)
	require.NoError(t, err)
	return i
}

// TestProduceErrors sends requests that Kafka refuses and checks each partition's answer.
func TestProduceErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	addr := c.Addrs()[0]
	var unknownID [16]byte
	_, _ = rand.Read(unknownID[:])

	cases := []struct {
		name    string
		req     func() *kmsg.ProduceRequest
		code    *kerr.Error
		message string // checked when set
	}{
		{
			name: "unknown topic",
			req:  func() *kmsg.ProduceRequest { return produceRequest("nope", 0, plainBatch("a")) },
			code: kerr.UnknownTopicOrPartition,
		},
		{
			name: "unknown partition",
			req:  func() *kmsg.ProduceRequest { return produceRequest("t", 7, plainBatch("a")) },
			code: kerr.UnknownTopicOrPartition,
		},
		{
			name: "unknown topic id",
			req: func() *kmsg.ProduceRequest {
				r := produceRequest("", 0, plainBatch("a"))
				r.Version = 13
				r.Topics[0].TopicID = unknownID
				return r
			},
			code: kerr.UnknownTopicID,
		},
		{
			name: "invalid acks",
			req: func() *kmsg.ProduceRequest {
				r := produceRequest("t", 0, plainBatch("a"))
				r.Acks = 2
				return r
			},
			code: kerr.InvalidRequiredAcks,
		},
		{
			name: "control batch",
			req: func() *kmsg.ProduceRequest {
				return produceRequest("t", 0, recordBatch(batchSpec{producerID: 1, attributes: 0x30, values: []string{"a"}}))
			},
			code: kerr.InvalidRecord,
		},
		{
			name: "zstd before v7",
			req: func() *kmsg.ProduceRequest {
				r := produceRequest("t", 0, recordBatch(batchSpec{producerID: -1, attributes: 4, values: []string{"a"}}))
				r.Version = 6
				return r
			},
			code: kerr.UnsupportedCompressionType,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := roundTrip[*kmsg.ProduceResponse](t, addr, tc.req())
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			p := resp.Topics[0].Partitions[0]
			assert.Equal(t, tc.code.Code, p.ErrorCode, "got %v", kerr.ErrorForCode(p.ErrorCode))
			assert.Equal(t, int64(-1), p.BaseOffset)
			if tc.message != "" {
				require.NotNil(t, p.ErrorMessage)
				assert.Equal(t, tc.message, *p.ErrorMessage)
			}
		})
	}
	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(0), info.LogEndOffset, "no refused batch was appended")
}

// TestProduceV13TopicID produces to a topic named by id and gets the answer under that id.
func TestProduceV13TopicID(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	info, ok := c.Topic("t")
	require.True(t, ok)
	req := produceRequest("", 0, plainBatch("a", "b"))
	req.Version = 13
	req.Topics[0].TopicID = info.ID
	resp := roundTrip[*kmsg.ProduceResponse](t, c.Addrs()[0], req)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, info.ID, resp.Topics[0].TopicID)
	p := resp.Topics[0].Partitions[0]
	assert.Zero(t, p.ErrorCode)
	assert.Equal(t, int64(0), p.BaseOffset)
	assert.Equal(t, int64(-1), p.LogAppendTime)
	assert.Equal(t, int64(0), p.LogStartOffset)
	part, _ := c.Partition("t", 0)
	assert.Equal(t, int64(2), part.HighWatermark)
}

// TestProduceNotLeader sends a produce to a broker that does not lead the partition: the answer
// names the leader and its address, so that the client moves.
func TestProduceNotLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	info, ok := c.Partition("t", 0)
	require.True(t, ok)
	other := (info.Leader + 1) % 3
	resp := roundTrip[*kmsg.ProduceResponse](t, c.Addrs()[other], produceRequest("t", 0, plainBatch("a")))
	p := resp.Topics[0].Partitions[0]
	assert.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode)
	assert.Equal(t, info.Leader, p.CurrentLeader.LeaderID)
	assert.Equal(t, info.LeaderEpoch, p.CurrentLeader.LeaderEpoch)
	require.Len(t, resp.Brokers, 1)
	assert.Equal(t, info.Leader, resp.Brokers[0].NodeID)
	assert.Equal(t, c.Addrs()[info.Leader], fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port))
}

// TestProduceCorruptCRC sends a batch whose bytes do not match its CRC: CORRUPT_MESSAGE, and
// the log is unchanged.
func TestProduceCorruptCRC(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("ok")).ErrorCode)

	records := plainBatch("hello")
	records[len(records)-1] ^= 0xff
	p := produceOne(t, rc, "t", 0, records)
	assert.Equal(t, kerr.CorruptMessage.Code, p.ErrorCode)
	assert.Equal(t, int64(-1), p.BaseOffset)
	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(1), info.LogEndOffset)
	assert.Equal(t, int64(1), info.HighWatermark)
}

// TestProduceIdempotent checks the idempotent producer's rules: a retried batch gets its
// original offset and is not appended twice; a gap in the sequence is refused.
func TestProduceIdempotent(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.Version = 4
	id := request[*kmsg.InitProducerIDResponse](t, rc, initReq)
	require.Zero(t, id.ErrorCode)
	batch := func(seq int32, values ...string) []byte {
		return recordBatch(batchSpec{producerID: id.ProducerID, producerEpoch: id.ProducerEpoch, sequence: seq, values: values})
	}

	first := produceOne(t, rc, "t", 0, batch(0, "a", "b", "c"))
	require.Zero(t, first.ErrorCode)
	assert.Equal(t, int64(0), first.BaseOffset)
	second := produceOne(t, rc, "t", 0, batch(3, "d"))
	require.Zero(t, second.ErrorCode)
	assert.Equal(t, int64(3), second.BaseOffset)

	retry := produceOne(t, rc, "t", 0, batch(0, "a", "b", "c"))
	assert.Zero(t, retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "a retry gets its original offset")

	gap := produceOne(t, rc, "t", 0, batch(6, "x"))
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, gap.ErrorCode)
	assert.Equal(t, int64(0), gap.LogStartOffset, "sequence errors carry the log start offset")

	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(4), info.LogEndOffset)
}

// TestProduceAcksZero sends a produce with acks=0: there is no response, the records are
// appended, and the next request on the same connection is answered as usual.
func TestProduceAcksZero(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	req := produceRequest("t", 0, plainBatch("a", "b"))
	req.Acks = 0
	rc.send(t, req)

	next := produceOne(t, rc, "t", 0, plainBatch("c"))
	require.Zero(t, next.ErrorCode)
	assert.Equal(t, int64(2), next.BaseOffset, "the acks=0 batch came first")
	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(3), info.HighWatermark)
}

// TestProduceAcksZeroFailureClosesConnection checks Kafka's answer to a failed acks=0 produce:
// the connection is closed, so that the producer notices.
func TestProduceAcksZeroFailureClosesConnection(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	req := produceRequest("nope", 0, plainBatch("a"))
	req.Acks = 0
	rc.send(t, req)
	_, err := receive[*kmsg.ProduceResponse](rc, req, 1)
	require.ErrorIs(t, err, io.EOF)
}

// TestInitProducerID checks that every idempotent producer gets a producer id of its own with
// epoch 0, also when it names its previous id (Kafka bumps epochs of transactional producers
// only), and the refusals.
func TestInitProducerID(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2))
	newReq := func(version int16) *kmsg.InitProducerIDRequest {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = version
		return r
	}
	a := roundTrip[*kmsg.InitProducerIDResponse](t, c.Addrs()[0], newReq(0))
	b := roundTrip[*kmsg.InitProducerIDResponse](t, c.Addrs()[1], newReq(5))
	require.Zero(t, a.ErrorCode)
	require.Zero(t, b.ErrorCode)
	assert.NotEqual(t, a.ProducerID, b.ProducerID, "ids are unique across brokers")
	assert.Zero(t, a.ProducerEpoch)
	assert.Zero(t, b.ProducerEpoch)

	bump := newReq(5)
	bump.ProducerID, bump.ProducerEpoch = b.ProducerID, b.ProducerEpoch
	bumped := roundTrip[*kmsg.InitProducerIDResponse](t, c.Addrs()[0], bump)
	require.Zero(t, bumped.ErrorCode)
	assert.NotContains(t, []int64{a.ProducerID, b.ProducerID}, bumped.ProducerID)
	assert.Zero(t, bumped.ProducerEpoch)

	txn, empty := "txn", ""
	refusals := []struct {
		name string
		req  func() *kmsg.InitProducerIDRequest
		code *kerr.Error
	}{
		{"id without epoch", func() *kmsg.InitProducerIDRequest {
			r := newReq(4)
			r.ProducerID = 7
			return r
		}, kerr.InvalidRequest},
		{"empty transactional id", func() *kmsg.InitProducerIDRequest {
			r := newReq(4)
			r.TransactionalID = &empty
			return r
		}, kerr.InvalidRequest},
		{"transaction timeout above transaction.max.timeout.ms", func() *kmsg.InitProducerIDRequest {
			r := newReq(4)
			r.TransactionalID = &txn
			r.TransactionTimeoutMillis = 900001
			return r
		}, kerr.InvalidTransactionTimeout},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			resp := roundTrip[*kmsg.InitProducerIDResponse](t, c.Addrs()[0], tc.req())
			assert.Equal(t, tc.code.Code, resp.ErrorCode)
			assert.Equal(t, int64(-1), resp.ProducerID)
			assert.Equal(t, int16(-1), resp.ProducerEpoch)
		})
	}
}

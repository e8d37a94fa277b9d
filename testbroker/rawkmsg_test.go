package testbroker_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// rawConn speaks raw kmsg to one broker, for tests that need exact requests: fields a client
// library would never set, or bytes it would never send.
type rawConn struct {
	nc   net.Conn
	r    *bufio.Reader
	corr int32
}

// dialRaw connects to addr; the connection is closed when the test ends.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, r: bufio.NewReader(nc)}
}

// send writes req with the next correlation id and returns that id. req must have its version
// set: kmsg's constructors leave it at 0.
func (rc *rawConn) send(t testing.TB, req kmsg.Request) int32 {
	t.Helper()
	rc.corr++
	clientID := "raw-test"
	_, err := rc.nc.Write(wire.AppendRequest(nil, rc.corr, &clientID, req))
	require.NoError(t, err)
	return rc.corr
}

// receive reads the response to req, sent with correlation id corr. It returns errors rather
// than failing the test so that it can run in a goroutine of its own (a long-polling fetch).
func receive[T kmsg.Response](rc *rawConn, req kmsg.Request, corr int32) (T, error) {
	var zero T
	frame, err := wire.ReadFrame(rc.r, 1<<30)
	if err != nil {
		return zero, err
	}
	if len(frame) < 4 {
		return zero, fmt.Errorf("response frame of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return zero, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != wire.ApiVersionsKey {
		body = body[1:] // the response header's empty tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		return zero, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	typed, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("response is a %T", resp)
	}
	return typed, nil
}

// request sends req on rc and returns its response.
func request[T kmsg.Response](t testing.TB, rc *rawConn, req kmsg.Request) T {
	t.Helper()
	corr := rc.send(t, req)
	resp, err := receive[T](rc, req, corr)
	require.NoError(t, err)
	return resp
}

// roundTrip sends req to addr on a connection of its own and returns the response.
func roundTrip[T kmsg.Response](t testing.TB, addr string, req kmsg.Request) T {
	t.Helper()
	return request[T](t, dialRaw(t, addr), req)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchSpec describes a v2 record batch to encode by hand.
type batchSpec struct {
	producerID    int64 // -1: not idempotent
	producerEpoch int16
	sequence      int32
	timestamp     time.Time // of every record; the zero time means 2024-01-01
	attributes    int16
	values        []string
}

// recordBatch encodes spec as a produce request's records: one uncompressed v2 batch with a
// valid CRC, base offset 0, one record per value.
func recordBatch(spec batchSpec) []byte {
	ts := spec.timestamp
	if ts.IsZero() {
		ts = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	var records []byte
	for i, v := range spec.values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the body after a one-byte length of 0
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           spec.attributes,
		LastOffsetDelta:      int32(len(spec.values) - 1),
		FirstTimestamp:       ts.UnixMilli(),
		MaxTimestamp:         ts.UnixMilli(),
		ProducerID:           spec.producerID,
		ProducerEpoch:        spec.producerEpoch,
		FirstSequence:        spec.sequence,
		NumRecords:           int32(len(spec.values)),
		Records:              records,
	}
	if spec.producerID < 0 {
		b.ProducerEpoch, b.FirstSequence = -1, -1
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// plainBatch is an uncompressed batch of a non-idempotent producer.
func plainBatch(values ...string) []byte {
	return recordBatch(batchSpec{producerID: -1, values: values})
}

// produceRequest builds a Produce v11 request (topics by name) with acks=all of records to
// one partition.
func produceRequest(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 11
	req.Acks = -1
	req.TimeoutMillis = 5000
	req.Topics = []kmsg.ProduceRequestTopic{{
		Topic:      topic,
		Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: records}},
	}}
	return req
}

// produceOne sends records to one partition and returns that partition's answer.
func produceOne(t testing.TB, rc *rawConn, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := request[*kmsg.ProduceResponse](t, rc, produceRequest(topic, partition, records))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// fetchRequest builds a sessionless Fetch v11 request (topics by name) of one partition.
func fetchRequest(topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = 1 << 20
	req.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return req
}

// fetched is one record of a fetch response.
type fetched struct {
	offset int64
	value  string
}

// fetchedRecords decodes the uncompressed records of a fetched partition, skipping those
// before from (a fetch returns whole batches, which may start before the fetch offset).
func fetchedRecords(t testing.TB, p kmsg.FetchResponseTopicPartition, from int64) []fetched {
	t.Helper()
	var out []fetched
	for b := p.RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		require.NoError(t, batch.ReadFrom(b))
		b = b[12+int(batch.Length):]
		require.Zero(t, batch.Attributes&0x07, "tests decode uncompressed batches only")
		recs := batch.Records
		for range batch.NumRecords {
			n, size := binary.Varint(recs)
			require.Positive(t, size)
			var r kmsg.Record
			require.NoError(t, r.ReadFrom(recs[:size+int(n)]))
			recs = recs[size+int(n):]
			if off := batch.FirstOffset + int64(r.OffsetDelta); off >= from {
				out = append(out, fetched{offset: off, value: string(r.Value)})
			}
		}
	}
	return out
}

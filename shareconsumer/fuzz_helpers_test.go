package shareconsumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/renewbuffer"
)

// The helpers of the fuzz targets. A fuzz target drives one consumer per process through many
// inputs, so the consumer is built once and its state reset before each input.

// fuzzTopic is the topic id fuzzReset gives topic "t".
var fuzzTopic = [16]byte{1}

// fuzzConsumer returns an explicit-mode consumer whose brokers do not exist, for driving its
// state directly. It never starts a metadata request (one is marked as running), so that no
// goroutine changes its state between the steps of a fuzz input.
func fuzzConsumer(tb testing.TB) *Consumer {
	tb.Helper()
	c, err := New(ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Group("g"), ExplicitAcknowledgement(), OnAcknowledgementCommit(func(AcknowledgementCommit) {}))
	require.NoError(tb, err)
	c.mu.Lock()
	c.member.metaRunning = true
	c.mu.Unlock()
	tb.Cleanup(func() {
		c.mu.Lock()
		fuzzReset(c)
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// fuzzReset gives c a fresh state: topic "t" (fuzzTopic) with partitions 0 and 1 led by
// broker 0 and partitions 2 and 3 led by broker 1, all at leader epoch 1; no assignment, no
// sessions, no records held and no acknowledgements, outcomes or errors waiting. Consumer.mu is
// held.
func fuzzReset(c *Consumer) {
	m := &c.member
	m.topics = map[[16]byte]*topicMeta{fuzzTopic: {name: "t", id: fuzzTopic, leaders: map[int32]leaderInfo{0: {0, 1}, 1: {0, 1}, 2: {1, 1}, 3: {1, 1}}}}
	m.byName = map[string][16]byte{"t": fuzzTopic}
	m.assignment, m.assigned = nil, make(map[TopicPartition]*assignedPart)
	m.metaAgain = false
	c.sessions = sessionSet{byNode: make(map[int32]*session), renews: pollRenews{c}}
	l := &c.ledger
	l.mu.Lock()
	l.buffer, l.bufRecords = nil, 0
	l.polled = polledSet{}
	l.renews = renewbuffer.Buffer[*renewEntry]{}
	l.parts = nil
	l.mu.Unlock()
	c.acks.completions = nil
	c.poll.errs = nil
	c.locks = lockReports{}
}

// fuzzInput reads numbers from fuzz bytes, zeros once they run out.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) more() bool { return len(in.b) > 0 }

func (in *fuzzInput) u8() uint8 {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *fuzzInput) i16() int16 { return int16(uint16(in.u8())<<8 | uint16(in.u8())) }

// fuzzAckType returns a type from 0 to 5: Gap, the four the application may use, and one that
// does not exist.
func fuzzAckType(in *fuzzInput) acktype.Type { return acktype.Type(in.u8() % 6) }

// checkBatches fails unless batches are as Kafka takes them: in offset order, disjoint, each
// with one type or one per offset.
func checkBatches(t *testing.T, batches []acktype.Batch) {
	t.Helper()
	for i, b := range batches {
		require.LessOrEqual(t, b.FirstOffset, b.LastOffset, "batch %d is reversed", i)
		if i > 0 {
			require.Less(t, batches[i-1].LastOffset, b.FirstOffset, "batch %d overlaps or precedes the one before", i)
		}
		span := b.LastOffset - b.FirstOffset + 1
		require.True(t, len(b.Types) == 1 || int64(len(b.Types)) == span, "batch %d: %d types for %d offsets", i, len(b.Types), span)
		require.Len(t, b.Wire(), len(b.Types))
	}
}

// batchTypes returns the type batches give each offset.
func batchTypes(batches []acktype.Batch) map[int64]acktype.Type {
	out := make(map[int64]acktype.Type)
	for _, b := range batches {
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			ty := b.Types[0]
			if len(b.Types) > 1 {
				ty = b.Types[o-b.FirstOffset]
			}
			out[o] = ty
		}
	}
	return out
}

// tCompressedBatch returns batch (made by tBatch) with its records compressed with codec.
func tCompressedBatch(tb testing.TB, batch []byte, codec kgo.CompressionCodec) []byte {
	tb.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	require.NoError(tb, err)
	body, codecID := comp.Compress(new(bytes.Buffer), batch[batchHeaderSize:])
	out := append(append([]byte{}, batch[:batchHeaderSize]...), body...)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-12))
	attrs := binary.BigEndian.Uint16(out[batchAttrsOffset:])
	binary.BigEndian.PutUint16(out[batchAttrsOffset:], attrs&^attrCompression|uint16(codecID))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32.Checksum(out[batchAttrsOffset:], crc32c))
	return out
}

package wire_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// fetchCase is a Fetch response as kmsg encodes it, and the same response with the record
// batches of some partitions moved into pieces of Records, as the broker builds it.
type fetchCase struct {
	want *kmsg.FetchResponse
	got  *wire.FetchResponse
}

// randomFetch returns a Fetch response of the given version with every field of the message
// set at random, defaults and null values included, and record batches of every size class.
func randomFetch(r *rand.Rand, version int16) fetchCase {
	want := kmsg.NewPtrFetchResponse()
	want.Version = version
	want.ThrottleMillis = r.Int32N(1000)
	want.ErrorCode = int16(r.IntN(3))
	want.SessionID = r.Int32()
	tags := func(t *kmsg.Tags) {
		for range r.IntN(4) / 2 { // mostly none
			t.Set(uint32(10+r.IntN(20)), randomBytes(r, r.IntN(3)))
		}
	}
	tags(&want.UnknownTags)
	for range r.IntN(3) {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = r.Int32N(5), string(randomBytes(r, r.IntN(12))), r.Int32N(65536)
		if r.IntN(2) == 0 {
			b.Rack = ptr(string(randomBytes(r, r.IntN(5))))
		}
		tags(&b.UnknownTags)
		want.Brokers = append(want.Brokers, b)
	}

	got := &wire.FetchResponse{FetchResponse: new(kmsg.FetchResponse)}
	var pieces [][][]byte
	for range r.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(randomBytes(r, r.IntN(10)))
		copy(t.TopicID[:], randomBytes(r, 16))
		tags(&t.UnknownTags)
		for range r.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = r.Int32N(100), int16(r.IntN(3))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.Int64N(1<<40)-1, r.Int64N(1<<40)-1, r.Int64N(1<<40)-1
			switch r.IntN(3) {
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + r.IntN(2) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = r.Int64(), r.Int64()
					tags(&a.UnknownTags)
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			p.PreferredReadReplica = r.Int32N(3) - 1
			// Each field of the tagged structs keeps its default (-1) or not on its own, since
			// any one of them decides whether the struct is written.
			set32 := func(v *int32) {
				if r.IntN(4) == 0 {
					*v = r.Int32N(10)
				}
			}
			set64 := func(v *int64) {
				if r.IntN(4) == 0 {
					*v = r.Int64N(100)
				}
			}
			set32(&p.DivergingEpoch.Epoch)
			set64(&p.DivergingEpoch.EndOffset)
			set32(&p.CurrentLeader.LeaderID)
			set32(&p.CurrentLeader.LeaderEpoch)
			set64(&p.SnapshotID.EndOffset)
			set32(&p.SnapshotID.Epoch)
			tags(&p.DivergingEpoch.UnknownTags)
			tags(&p.CurrentLeader.UnknownTags)
			tags(&p.SnapshotID.UnknownTags)
			tags(&p.UnknownTags)
			switch r.IntN(5) {
			case 0: // null
			case 1:
				p.RecordBatches = []byte{}
			case 2:
				p.RecordBatches = randomBytes(r, 1+r.IntN(100))
			default:
				p.RecordBatches = randomBytes(r, 1+r.IntN(12<<10))
			}
			t.Partitions = append(t.Partitions, p)
			var split [][]byte
			if p.RecordBatches != nil && r.IntN(4) > 0 {
				split = splitRandomly(r, p.RecordBatches)
			}
			pieces = append(pieces, split)
		}
		want.Topics = append(want.Topics, t)
	}

	// The broker's response: the same fields, with the split partitions' records in Records.
	*got.FetchResponse = *want
	got.Topics = make([]kmsg.FetchResponseTopic, len(want.Topics))
	i := 0
	for ti, t := range want.Topics {
		got.Topics[ti] = t
		got.Topics[ti].Partitions = append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions...)
		for pi := range t.Partitions {
			if pieces[i] != nil {
				got.Topics[ti].Partitions[pi].RecordBatches = nil
			}
			i++
		}
	}
	// Records may stop before the last partitions when they have no pieces.
	for len(pieces) > 0 && pieces[len(pieces)-1] == nil {
		pieces = pieces[:len(pieces)-1]
	}
	got.Records = pieces
	return fetchCase{want: want, got: got}
}

// noise is random bytes for randomBytes to cut from: filling each slice byte by byte would be
// slow with the race detector.
var noise = func() []byte {
	b := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{}).Read(b)
	return b
}()

// randomBytes returns n random bytes, n at most len(noise).
func randomBytes(r *rand.Rand, n int) []byte {
	at := r.IntN(len(noise) - n + 1)
	return bytes.Clone(noise[at : at+n])
}

// splitRandomly cuts b into up to five pieces, some of them empty, some below the size that a
// frame refers to rather than copies.
func splitRandomly(r *rand.Rand, b []byte) [][]byte {
	var out [][]byte
	for range r.IntN(5) {
		n := r.IntN(len(b) + 1)
		out = append(out, b[:n:n])
		b = b[n:]
	}
	return append(out, b)
}

// TestFetchResponseMatchesKmsg checks that the hand encoder of Fetch responses writes what kmsg
// writes, for every version, through every path: AppendTo, AppendResponse, and a Frame written
// as pieces.
func TestFetchResponseMatchesKmsg(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for version := int16(0); version <= 18; version++ {
		for range 100 {
			c := randomFetch(r, version)
			want := c.want.AppendTo(nil)
			require.Equal(t, want, c.got.AppendTo(nil), "v%d AppendTo", version)

			wantFrame := wire.AppendResponse([]byte("x"), 1, 7, c.want)
			require.Equal(t, wantFrame, wire.AppendResponse([]byte("x"), 1, 7, c.got), "v%d AppendResponse", version)

			var f wire.Frame
			f.AppendResponse(1, 7, c.got)
			f.AppendResponse(1, 8, c.got) // a second frame after the first one's pieces
			var out bytes.Buffer
			n, err := f.WriteTo(&out)
			require.NoError(t, err)
			require.Equal(t, int64(f.Len()), n)
			wantTwo := wire.AppendResponse(wire.AppendResponse(nil, 1, 7, c.want), 1, 8, c.want)
			require.Equal(t, wantTwo, out.Bytes(), "v%d Frame", version)
		}
	}
}

// TestFrameWritev writes a frame of many referenced slices over TCP, where net.Buffers uses
// writev, in more vectors than one writev takes.
func TestFrameWritev(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	r := rand.New(rand.NewPCG(3, 4))
	var f wire.Frame
	var want []byte
	for i := range 3000 {
		f.B = append(f.B, byte(i))
		want = append(want, byte(i))
		b := randomBytes(r, 4<<10+r.IntN(100))
		f.Ref(b)
		want = append(want, b...)
	}
	require.Equal(t, len(want), f.Len())

	done := make(chan []byte)
	go func() {
		c, err := ln.Accept()
		if !assert.NoError(t, err) {
			close(done)
			return
		}
		defer c.Close()
		got, err := io.ReadAll(c)
		assert.NoError(t, err)
		done <- got
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	n, err := f.WriteTo(c)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n)
	require.NoError(t, c.Close())
	require.Equal(t, want, <-done)

	f.Reset()
	assert.Zero(t, f.Len())
}

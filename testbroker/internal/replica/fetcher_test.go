package replica

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// fakeLeader answers a follower's connection as a leader would: ApiVersions, then each FETCH
// with the answer the test gives for it. It hands every fetch request to the test first.
type fakeLeader struct {
	requests chan *kmsg.FetchRequest
	answers  chan *kmsg.FetchResponse
	done     chan struct{} // closed when the test ends
}

func (l *fakeLeader) serve(t *testing.T, nc net.Conn) {
	defer nc.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(nc, frame); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		corr := frame[4:8]
		idLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
		body := frame[10+max(idLen, 0):]
		var resp kmsg.Response
		switch kmsg.Key(key) {
		case kmsg.ApiVersions:
			r := kmsg.NewPtrApiVersionsResponse()
			r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.Fetch.Int16(), MinVersion: 4, MaxVersion: 18}}
			resp = r
		case kmsg.Fetch:
			req := kmsg.NewPtrFetchRequest()
			req.Version = version
			_, n := binary.Uvarint(body) // the header's tagged fields
			if !assert.NoError(t, req.ReadFrom(body[n:])) {
				return
			}
			select {
			case l.requests <- req:
			case <-l.done:
				return
			}
			select {
			case resp = <-l.answers:
			case <-l.done:
				return
			}
		default:
			t.Errorf("unexpected API %d", key)
			return
		}
		resp.SetVersion(version)
		out := append([]byte{0, 0, 0, 0}, corr...)
		if resp.IsFlexible() && kmsg.Key(key) != kmsg.ApiVersions {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// batch is an uncompressed v2 batch of n records at offset base, written by leaderEpoch.
func batch(base int64, leaderEpoch int32, n int) []byte {
	rb := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: leaderEpoch, Magic: 2,
		LastOffsetDelta: int32(n - 1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n)}
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestFetcherSendsUnknownThenKnownHighWatermark checks the follower side of KIP-1166: until it
// has an answer from the leader of the current epoch its FETCH v18 carries HighWatermark -1,
// then the watermark it took from the answer (the leader's, capped at its own log end offset),
// with FetchOffset and LastFetchedEpoch from its log.
func TestFetcherSendsUnknownThenKnownHighWatermark(t *testing.T) {
	clk := clock.NewManual(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	leader := &fakeLeader{requests: make(chan *kmsg.FetchRequest), answers: make(chan *kmsg.FetchResponse), done: make(chan struct{})}
	defer close(leader.done)
	m := NewManager(Config{
		Brokers: 2,
		Clock:   clk,
		Settings: func() Settings {
			return Settings{LagTimeMax: 30 * time.Second, FetchWaitMax: 500 * time.Millisecond, FetchMinBytes: 1,
				FetchMaxBytes: 1 << 20, FetchResponseMaxBytes: 10 << 20, FetchBackoff: time.Second, KIP1166: true}
		},
		Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			require.Equal(t, "leader-0", addr)
			a, b := net.Pipe()
			go leader.serve(t, b)
			return a, nil
		},
		Addr: func(broker int32) string { return "leader-" + string(rune('0'+broker)) },
	})
	p := m.NewPartition([16]byte{1}, "t", 0, []int32{0, 1}, log.Config{})
	m.Start()
	defer m.Close()

	answer := func(records []byte, hw int64) {
		resp := kmsg.NewPtrFetchResponse()
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark, rp.LastStableOffset, rp.RecordBatches = hw, hw, records
		resp.Topics = []kmsg.FetchResponseTopic{{Topic: "t", TopicID: [16]byte{1}, Partitions: []kmsg.FetchResponseTopicPartition{rp}}}
		leader.answers <- resp
	}
	next := func() kmsg.FetchRequestTopicPartition {
		req := <-leader.requests
		require.Equal(t, int16(18), req.Version)
		assert.Equal(t, int32(1), req.ReplicaState.ID)
		assert.Equal(t, int64(1), req.ReplicaState.Epoch)
		require.Len(t, req.Topics, 1)
		require.Len(t, req.Topics[0].Partitions, 1)
		return req.Topics[0].Partitions[0]
	}

	first := next()
	assert.Equal(t, int64(-1), first.HighWatermark, "no answer from this leader yet")
	assert.Equal(t, int64(0), first.FetchOffset)
	assert.Equal(t, int32(-1), first.LastFetchedEpoch)
	answer(batch(0, 0, 3), 5) // the leader knows 5, the follower has 3

	second := next()
	assert.Equal(t, int64(3), second.FetchOffset)
	assert.Equal(t, int32(0), second.LastFetchedEpoch)
	assert.Equal(t, int64(3), second.HighWatermark, "the leader's watermark, capped at the follower's log end")
	answer(nil, 3)

	third := next()
	assert.Equal(t, int64(3), third.HighWatermark)
	assert.Equal(t, int64(3), p.State().Log(1).HighWatermark())
	answer(nil, 3)
}

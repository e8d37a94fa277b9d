package wiretap

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame encodes req as a client writes it, with header v2 (flexible) and no size prefix.
func frame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7) // correlation id
	id := "client"
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	b = append(b, 0) // no header tags
	return req.AppendTo(b)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.IsRenewAck = true
	ft := kmsg.NewShareFetchRequestTopic()
	fp := kmsg.NewShareFetchRequestTopicPartition()
	fp.AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 3, LastOffset: 4, AcknowledgeTypes: []int8{1, 4}}}
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	ack := kmsg.NewPtrShareAcknowledgeRequest()
	at := kmsg.NewShareAcknowledgeRequestTopic()
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 9, LastOffset: 12, AcknowledgeTypes: []int8{2}}}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)

	r, ok, err := Decode(frame(fetch, 2))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Request{Key: kmsg.ShareFetch, IsRenewAck: true, Batches: []Batch{{3, 4, []int8{1, 4}}}}, r)

	r, ok, err = Decode(frame(ack, 1))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Request{Key: kmsg.ShareAcknowledge, Batches: []Batch{{9, 12, []int8{2}}}}, r)

	_, ok, err = Decode(frame(kmsg.NewPtrMetadataRequest(), 12))
	assert.NoError(t, err)
	assert.False(t, ok, "not a share request")

	full := frame(fetch, 2)
	_, _, err = Decode(full[:len(full)-3])
	assert.Error(t, err, "truncated body")
	_, _, err = Decode(full[:5])
	assert.Error(t, err, "truncated header")
}

// TestDialerSplitsFrames writes two share requests and a Metadata request in uneven pieces
// through a connection of Dialer: fn sees the two share requests, whole.
func TestDialerSplitsFrames(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	var mu sync.Mutex
	var got []kmsg.Key
	conn, err := Dialer(func(r Request, err error) {
		mu.Lock()
		defer mu.Unlock()
		assert.NoError(t, err)
		got = append(got, r.Key)
	})(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()

	var stream []byte
	for _, req := range []kmsg.Request{kmsg.NewPtrShareFetchRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrShareAcknowledgeRequest()} {
		f := frame(req, req.MaxVersion())
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(f)))
		stream = append(stream, f...)
	}
	for len(stream) > 0 {
		n := min(len(stream), 7)
		_, err := conn.Write(stream[:n])
		require.NoError(t, err)
		stream = stream[n:]
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge}, got)
}

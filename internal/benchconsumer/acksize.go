package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Counting what a client writes: requestBytes counts whole ShareFetch and ShareAcknowledge
// frames through kgo's write hook; ackDecoder decodes every such request off the connection and
// adds up the wire size of its acknowledgement batches.

// requestBytes is a kgo.HookBrokerWrite counting the bytes of ShareFetch and ShareAcknowledge
// requests.
type requestBytes struct {
	fetchReqs, fetchBytes atomic.Int64
	ackReqs, ackBytes     atomic.Int64
}

func (h *requestBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch kmsg.Key(key) {
	case kmsg.ShareFetch:
		h.fetchReqs.Add(1)
		h.fetchBytes.Add(int64(n))
	case kmsg.ShareAcknowledge:
		h.ackReqs.Add(1)
		h.ackBytes.Add(int64(n))
	}
}

// ackCount is what an ackDecoder found.
type ackCount struct {
	batches  atomic.Int64 // acknowledgement batches
	bytes    atomic.Int64 // their encoded size
	offsets  atomic.Int64 // offsets they cover
	badFrame atomic.Int64 // requests that could not be decoded

	// releaseEvery is the release scenario's N: a batch of one offset divisible by N with the
	// single type Accept is the acceptance of a redelivered record.
	releaseEvery int64
	redelBatches atomic.Int64
	redelBytes   atomic.Int64
}

// dialer returns a kgo.Dialer function whose connections feed every frame written to c.
func (c *ackCount) dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &decodingConn{Conn: conn, count: c}, nil
	}
}

// decodingConn passes writes through and splits what was written into request frames.
type decodingConn struct {
	net.Conn
	count   *ackCount
	mu      sync.Mutex
	pending []byte
}

func (c *decodingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p[:n]...)
	for len(c.pending) >= 4 {
		size := int(binary.BigEndian.Uint32(c.pending))
		if len(c.pending) < 4+size {
			break
		}
		if err := c.count.frame(c.pending[4 : 4+size]); err != nil {
			c.count.badFrame.Add(1)
		}
		c.pending = c.pending[4+size:]
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return n, err
}

var errShortFrame = errors.New("short request frame")

// frame decodes one request (header v2 and body) and counts its acknowledgement batches when
// it is a ShareFetch or ShareAcknowledge.
func (c *ackCount) frame(b []byte) error {
	if len(b) < 10 {
		return errShortFrame
	}
	key, version := kmsg.Key(int16(binary.BigEndian.Uint16(b))), int16(binary.BigEndian.Uint16(b[2:]))
	if key != kmsg.ShareFetch && key != kmsg.ShareAcknowledge {
		return nil
	}
	b = b[8:] // key, version, correlation id
	idLen := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if idLen > 0 {
		if len(b) < int(idLen) {
			return errShortFrame
		}
		b = b[idLen:]
	}
	// Share requests are flexible: the header ends with a tag buffer.
	tags, n := binary.Uvarint(b)
	if n <= 0 {
		return errShortFrame
	}
	b = b[n:]
	for range tags {
		if _, n = binary.Uvarint(b); n <= 0 {
			return errShortFrame
		}
		b = b[n:]
		size, m := binary.Uvarint(b)
		if m <= 0 || uint64(len(b)-m) < size {
			return errShortFrame
		}
		b = b[m+int(size):]
	}
	switch key {
	case kmsg.ShareFetch:
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = version
		if err := req.ReadFrom(b); err != nil {
			return fmt.Errorf("ShareFetch v%d: %w", version, err)
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				for _, ab := range p.AcknowledgementBatches {
					c.add(ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes)
				}
			}
		}
	case kmsg.ShareAcknowledge:
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = version
		if err := req.ReadFrom(b); err != nil {
			return fmt.Errorf("ShareAcknowledge v%d: %w", version, err)
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				for _, ab := range p.AcknowledgementBatches {
					c.add(ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes)
				}
			}
		}
	}
	return nil
}

// add counts one batch: FirstOffset and LastOffset (int64 each), AcknowledgeTypes as a compact
// array (uvarint of its length plus one, then one byte per type) and an empty tag buffer.
func (c *ackCount) add(first, last int64, types []int8) {
	var tmp [binary.MaxVarintLen64]byte
	size := int64(8 + 8 + binary.PutUvarint(tmp[:], uint64(len(types))+1) + len(types) + 1)
	c.batches.Add(1)
	c.bytes.Add(size)
	c.offsets.Add(last - first + 1)
	if c.releaseEvery > 0 && first == last && first%c.releaseEvery == 0 && len(types) == 1 && types[0] == 1 {
		c.redelBatches.Add(1)
		c.redelBytes.Add(size)
	}
}

// Package wiretap shows the benchmarks what a kgo client writes: a dialer whose connections
// split the bytes written into Kafka request frames and decode every ShareFetch and
// ShareAcknowledge among them. kgo's write hook knows a request's key and size, not its
// content; the benchmarks need the content (acknowledgement batches, IsRenewAck).
package wiretap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Batch is one acknowledgement batch of a share request.
type Batch struct {
	FirstOffset, LastOffset int64
	Types                   []int8
}

// Request is a decoded ShareFetch or ShareAcknowledge.
type Request struct {
	Key        kmsg.Key
	IsRenewAck bool
	Batches    []Batch
}

// Dialer returns a function for kgo.Dialer. Every ShareFetch and ShareAcknowledge written on
// its connections is decoded and handed to fn, with the error for a frame that could not be
// decoded; fn may be called from several goroutines at once.
func Dialer(fn func(Request, error)) func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &conn2{Conn: conn, fn: fn}, nil
	}
}

// conn2 passes writes through and splits what was written into request frames.
type conn2 struct {
	net.Conn
	fn      func(Request, error)
	mu      sync.Mutex
	pending []byte
}

func (c *conn2) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p[:n]...)
	for len(c.pending) >= 4 {
		size := int(binary.BigEndian.Uint32(c.pending))
		if len(c.pending) < 4+size {
			break
		}
		if r, ok, err := Decode(c.pending[4 : 4+size]); ok || err != nil {
			c.fn(r, err)
		}
		c.pending = c.pending[4+size:]
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return n, err
}

var errShortFrame = errors.New("short request frame")

// Decode decodes one request frame (header v2 and body, without the size prefix). ok is false,
// with no error, for a request other than ShareFetch and ShareAcknowledge.
func Decode(b []byte) (r Request, ok bool, err error) {
	if len(b) < 10 {
		return r, false, errShortFrame
	}
	r.Key = kmsg.Key(int16(binary.BigEndian.Uint16(b)))
	version := int16(binary.BigEndian.Uint16(b[2:]))
	if r.Key != kmsg.ShareFetch && r.Key != kmsg.ShareAcknowledge {
		return r, false, nil
	}
	b = b[8:] // key, version, correlation id
	idLen := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if idLen > 0 {
		if len(b) < int(idLen) {
			return r, false, errShortFrame
		}
		b = b[idLen:]
	}
	// Share requests are flexible: the header ends with a tag buffer.
	tags, n := binary.Uvarint(b)
	if n <= 0 {
		return r, false, errShortFrame
	}
	b = b[n:]
	for range tags {
		if _, n = binary.Uvarint(b); n <= 0 {
			return r, false, errShortFrame
		}
		b = b[n:]
		size, m := binary.Uvarint(b)
		if m <= 0 || uint64(len(b)-m) < size {
			return r, false, errShortFrame
		}
		b = b[m+int(size):]
	}
	req := kmsg.RequestForKey(int16(r.Key))
	req.SetVersion(version)
	if err := req.ReadFrom(b); err != nil {
		return r, false, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(int16(r.Key)), version, err)
	}
	switch req := req.(type) {
	case *kmsg.ShareFetchRequest:
		r.IsRenewAck = req.IsRenewAck
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				r.Batches = appendBatches(r.Batches, p.AcknowledgementBatches)
			}
		}
	case *kmsg.ShareAcknowledgeRequest:
		r.IsRenewAck = req.IsRenewAck
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				r.Batches = appendBatches(r.Batches, p.AcknowledgementBatches)
			}
		}
	}
	return r, true, nil
}

// appendBatches appends either request's acknowledgement batches, which have the same fields.
func appendBatches[B kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch | kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch](dst []Batch, batches []B) []Batch {
	for _, b := range batches {
		fb := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch(b)
		dst = append(dst, Batch{fb.FirstOffset, fb.LastOffset, fb.AcknowledgeTypes})
	}
	return dst
}

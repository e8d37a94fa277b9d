package main

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/wiretap"
)

// Telling renew requests from the rest: kgo's write hook knows a request's key but not its
// content, so the consumer's connections are wrapped, and every ShareFetch and ShareAcknowledge
// written is decoded to see whether it carries IsRenewAck and how many offsets it renews.

// requestKinds counts the share requests written, by kind.
type requestKinds struct {
	renewFetch   int64 // ShareFetch with IsRenewAck
	plainFetch   int64 // ShareFetch without
	renewAck     int64 // ShareAcknowledge with IsRenewAck
	plainAck     int64 // ShareAcknowledge without
	renewOffsets int64 // offsets acknowledged with type Renew (4)
	badFrames    int64 // share requests that could not be decoded
}

func (k requestKinds) minus(o requestKinds) requestKinds {
	return requestKinds{
		renewFetch:   k.renewFetch - o.renewFetch,
		plainFetch:   k.plainFetch - o.plainFetch,
		renewAck:     k.renewAck - o.renewAck,
		plainAck:     k.plainAck - o.plainAck,
		renewOffsets: k.renewOffsets - o.renewOffsets,
		badFrames:    k.badFrames - o.badFrames,
	}
}

// requestDecoder decodes the share requests written on the connections of its dialer.
type requestDecoder struct {
	mu sync.Mutex
	k  requestKinds
}

func (d *requestDecoder) snapshot() requestKinds {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.k
}

// onRequest counts one share request wiretap decoded.
func (d *requestDecoder) onRequest(r wiretap.Request, err error) {
	var offsets int64
	for _, b := range r.Batches {
		if len(b.Types) == 1 {
			if b.Types[0] == 4 {
				offsets += b.LastOffset - b.FirstOffset + 1
			}
			continue
		}
		for _, t := range b.Types {
			if t == 4 {
				offsets++
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err != nil:
		d.k.badFrames++
	case r.Key == kmsg.ShareFetch && r.IsRenewAck:
		d.k.renewFetch++
	case r.Key == kmsg.ShareFetch:
		d.k.plainFetch++
	case r.IsRenewAck:
		d.k.renewAck++
	default:
		d.k.plainAck++
	}
	d.k.renewOffsets += offsets
}

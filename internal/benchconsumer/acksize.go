package main

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/wiretap"
)

// Counting what a client writes: requestBytes counts whole ShareFetch and ShareAcknowledge
// frames through kgo's write hook; ackCount, fed by internal/wiretap, decodes every such request and
// adds up the wire size of its acknowledgement batches.

// requestBytes is a kgo.HookBrokerWrite counting the bytes of ShareFetch and ShareAcknowledge
// requests, and of Fetch requests (the floor's), counted as fetches.
type requestBytes struct {
	fetchReqs, fetchBytes atomic.Int64
	ackReqs, ackBytes     atomic.Int64
}

func (h *requestBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch kmsg.Key(key) {
	case kmsg.ShareFetch, kmsg.Fetch:
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

	// releaseEvery is the release scenario's N: an offset divisible by N acknowledged with
	// Accept is a redelivered record's acceptance (its first delivery was released). redelAcks
	// counts those; redelBytes the size of the batches that hold one alone, what redeliveries
	// add to the acknowledgements. Such a record usually has a batch of its own, but one
	// redelivered with the records after it, never delivered before (its first delivery ended
	// a fetch), shares theirs.
	releaseEvery int64
	redelAcks    atomic.Int64
	redelBytes   atomic.Int64
}

// onRequest counts the acknowledgement batches of one request wiretap decoded.
func (c *ackCount) onRequest(r wiretap.Request, err error) {
	if err != nil {
		c.badFrame.Add(1)
		return
	}
	for _, b := range r.Batches {
		c.add(b.FirstOffset, b.LastOffset, b.Types)
	}
}

// add counts one batch: FirstOffset and LastOffset (int64 each), AcknowledgeTypes as a compact
// array (uvarint of its length plus one, then one byte per type) and an empty tag buffer.
func (c *ackCount) add(first, last int64, types []int8) {
	var tmp [binary.MaxVarintLen64]byte
	size := int64(8 + 8 + binary.PutUvarint(tmp[:], uint64(len(types))+1) + len(types) + 1)
	c.batches.Add(1)
	c.bytes.Add(size)
	c.offsets.Add(last - first + 1)
	if c.releaseEvery <= 0 || first < 0 || last < first {
		return // not a batch a client sends
	}
	const accept = 1
	n := c.releaseEvery
	firstMultiple := first / n
	if first%n != 0 {
		firstMultiple++
	}
	if len(types) == 1 {
		// One type for the whole batch: count its multiples of n without walking it.
		if k := last/n - firstMultiple + 1; types[0] == accept && k > 0 {
			c.redelAcks.Add(k)
			if first == last {
				c.redelBytes.Add(size)
			}
		}
		return
	}
	// One type per offset: walk only the offsets that have one, by index from first.
	for i := (n - first%n) % n; i < int64(len(types)) && i <= last-first; i += n {
		if types[i] == accept {
			c.redelAcks.Add(1)
		}
	}
}

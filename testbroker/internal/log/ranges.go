package log

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// Extent locates one stored batch without decoding it: the offsets of its first and last
// records and its bytes. Data aliases the log's storage, which never changes once appended:
// a reader may keep it but must not modify it.
type Extent struct {
	Base, Last int64
	Data       []byte
}

// AppendExtents appends to dst the extents of the batches that AppendRecords(offset, maxBytes,
// limit) returns, and returns the extended slice, so that a caller can decide what to send by
// offsets before it copies any bytes. The same rules apply: the first extent is the batch
// holding offset, even when it alone exceeds maxBytes; each extent lies wholly below limit; an
// offset equal to the log end offset, or at or past limit, appends nothing; an offset below the
// log start offset or past the log end offset fails with kerr.OffsetOutOfRange. In addition the
// extents stop before the first batch that starts after upTo, so that a caller that will use
// records only up to there does not list a whole backlog.
func (p *Partition) AppendExtents(dst []Extent, offset int64, maxBytes int, limit, upTo int64) ([]Extent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < p.logStart || offset > p.leo {
		return dst, kafkaerr.Detailed(kerr.OffsetOutOfRange, "offset %d is outside the log, which spans [%d, %d)", offset, p.logStart, p.leo)
	}
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset })
	total := 0
	for ; i < len(p.batches) && p.batches[i].last < limit && p.batches[i].base <= upTo; i++ {
		b := &p.batches[i]
		if total > 0 && total+len(b.data) > maxBytes {
			break
		}
		dst = append(dst, Extent{Base: b.base, Last: b.last, Data: b.data[:len(b.data):len(b.data)]})
		total += len(b.data)
	}
	return dst, nil
}

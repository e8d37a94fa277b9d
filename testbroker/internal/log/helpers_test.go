package log

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// spec describes a test batch. The zero value is one 16-byte record with timestamp 1000 from a
// producer that is not idempotent.
type spec struct {
	n          int     // records; 0 means 1
	timestamps []int64 // one per record; nil means 1000 for each
	pid        int64   // producer ID; 0 means none, so tests use IDs from 1
	epoch      int16
	seq        int32
	attrs      int16
}

// encode builds the batch s describes, with a valid CRC. The header goes through kmsg, so the
// tests do not check the package's parser against an encoder of its own.
func encode(s spec) []byte {
	n := max(s.n, 1)
	ts := s.timestamps
	if ts == nil {
		ts = slices.Repeat([]int64{1000}, n)
	}
	var records []byte
	for i := range n {
		var body []byte
		body = append(body, 0)                             // attributes
		body = binary.AppendVarint(body, ts[i]-ts[0])      // timestamp delta
		body = binary.AppendVarint(body, int64(i))         // offset delta
		body = binary.AppendVarint(body, -1)               // null key
		body = binary.AppendVarint(body, 16)               // value length
		body = append(body, []byte("value-0123456789")...) // 16 bytes
		body = binary.AppendVarint(body, 0)                // no headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if s.pid != 0 {
		pid, epoch, seq = s.pid, s.epoch, s.seq
	}
	rb := kmsg.RecordBatch{
		Length:               int32(minBatchLength + len(records)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           s.attrs,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts[0],
		MaxTimestamp:         slices.Max(ts),
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(n),
		Records:              records,
	}
	return recrc(rb.AppendTo(nil))
}

// recrc writes the CRC that b's bytes call for, after a test changed covered bytes.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// edit returns a copy of b changed by f, with its CRC recomputed.
func edit(b []byte, f func([]byte)) []byte {
	c := slices.Clone(b)
	f(c)
	return recrc(c)
}

// requireCode checks that err carries the Kafka error code of want.
func requireCode(t *testing.T, want *kerr.Error, err error) {
	t.Helper()
	require.Error(t, err)
	var ke *kerr.Error
	require.True(t, errors.As(err, &ke), "error %q carries no Kafka code", err)
	require.Equal(t, want.Code, ke.Code, "error %q", err)
}

// split is SplitBatches for bytes the test knows to be valid.
func split(t *testing.T, records []byte) []Batch {
	t.Helper()
	batches, err := SplitBatches(records)
	require.NoError(t, err)
	return batches
}

func concat(bs ...[]byte) []byte { return slices.Concat(bs...) }

func clone(b []byte) []byte { return slices.Clone(b) }

// now is the cluster time the tests append at.
var now = time.UnixMilli(1_700_000_000_000)

package share

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// t0 is the time the tests' clocks start at.
var t0 = time.UnixMilli(1_700_000_000_000)

// encode builds a valid v2 batch of n records, each with a value of valueSize bytes and
// timestamp ts. The header goes through kmsg, as in the log package's tests.
func encode(n, valueSize int, ts int64) []byte {
	var records []byte
	for i := range n {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(valueSize))
		body = append(body, make([]byte, valueSize)...) // value
		body = binary.AppendVarint(body, 0)             // no headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	rb := kmsg.RecordBatch{
		Length:               int32(log.HeaderSize - 12 + len(records)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              records,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fixture is a share partition over a real log, on a manual clock, with settings a test may
// change between calls.
type fixture struct {
	t   *testing.T
	clk *clock.Manual
	log *log.Partition
	set Settings
	p   *Partition
}

// defaults are Kafka's defaults, except earliest so that records produced first are delivered.
func defaults() Settings {
	return Settings{
		LockDuration:       30 * time.Second,
		DeliveryCountLimit: 5,
		MaxRecordLocks:     2000,
		RenewEnabled:       true,
		AutoOffsetReset:    "earliest",
	}
}

// newFixture returns a fixture whose log first holds batches of the given sizes (timestamps
// t0), with the share partition created after them.
func newFixture(t *testing.T, set Settings, sizes ...int) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clock.NewManual(t0), log: log.NewPartition(log.Config{}), set: set}
	f.produce(sizes...)
	f.p = NewPartition("g", f.log, f.clk, func() Settings { return f.set })
	t.Cleanup(f.p.Close)
	return f
}

// produce appends one batch per size and moves the high watermark to the end of the log.
func (f *fixture) produce(sizes ...int) {
	f.t.Helper()
	for _, n := range sizes {
		_, err := f.log.Append(encode(n, 16, f.clk.Now().UnixMilli()), f.clk.Now())
		require.NoError(f.t, err)
	}
	f.log.SetHighWatermark(f.log.LogEndOffset())
}

// acquire acquires for member in BatchOptimized mode with no byte or batch-size limit.
func (f *fixture) acquire(member string, maxRecords int) []AcquiredRange {
	f.t.Helper()
	ranges, _, err := f.p.Acquire(nil, member, maxRecords, 0, 1<<30, BatchOptimized)
	require.NoError(f.t, err)
	return ranges
}

// ack acknowledges [first, last] for member with types.
func (f *fixture) ack(member string, first, last int64, types ...int8) error {
	return f.p.Acknowledge(member, []AckBatch{{FirstOffset: first, LastOffset: last, Types: types}})
}

// record returns the state of offset, which the partition must track.
func (f *fixture) record(offset int64) RecordInfo {
	f.t.Helper()
	ri, ok := f.p.Record(offset)
	require.True(f.t, ok, "offset %d is not tracked", offset)
	return ri
}

// requireStates checks the state and delivery count of the records from first on.
func (f *fixture) requireStates(first int64, want ...RecordInfo) {
	f.t.Helper()
	for i, w := range want {
		got := f.record(first + int64(i))
		require.Equal(f.t, w.State, got.State, "state of offset %d", first+int64(i))
		require.Equal(f.t, w.DeliveryCount, got.DeliveryCount, "delivery count of offset %d", first+int64(i))
	}
}

// st is a RecordInfo with just a state and a delivery count, for requireStates.
func st(s RecordState, count int16) RecordInfo { return RecordInfo{State: s, DeliveryCount: count} }

// rng is an AcquiredRange literal.
func rng(first, last int64, count int16) AcquiredRange {
	return AcquiredRange{FirstOffset: first, LastOffset: last, DeliveryCount: count}
}

// requireShareError checks that err is a *kafkaerr.Error with code and message.
func requireShareError(t *testing.T, err error, code *kerr.Error, message string) {
	t.Helper()
	require.Error(t, err)
	var se *kafkaerr.Error
	require.True(t, errors.As(err, &se), "error %v is not a *kafkaerr.Error", err)
	require.ErrorIs(t, err, code)
	require.Equal(t, message, se.Message)
}

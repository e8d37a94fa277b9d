package share

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeTxn is a batch of n records in producer pid's transaction, at sequence seq of epoch 0.
func encodeTxn(pid int64, seq int32, n int) []byte {
	b := encode(n, 16, t0.UnixMilli())
	be := binary.BigEndian
	be.PutUint16(b[21:], 0x10)
	be.PutUint64(b[43:], uint64(pid))
	be.PutUint16(b[51:], 0)
	be.PutUint32(b[53:], uint32(seq))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// txnLog fills f's log, moving the high watermark to its end:
//
//	0      plain
//	1-2    producer 1, aborted by the marker at 5
//	3      producer 2, committed by the marker at 6
//	4      plain
//	5      ABORT marker of producer 1
//	6      COMMIT marker of producer 2
//	7-8    producer 3, ongoing
//	9      plain
func txnLog(t *testing.T, f *fixture) {
	t.Helper()
	appendBatch := func(b []byte) {
		_, err := f.log.Append(b, f.clk.Now())
		require.NoError(t, err)
	}
	f.produce(1)
	appendBatch(encodeTxn(1, 0, 2))
	appendBatch(encodeTxn(2, 0, 1))
	f.produce(1)
	_, err := f.log.AppendTxnMarker(1, 0, false, 0)
	require.NoError(t, err)
	_, err = f.log.AppendTxnMarker(2, 0, true, 0)
	require.NoError(t, err)
	appendBatch(encodeTxn(3, 0, 2))
	f.produce(1)
	require.Equal(t, int64(7), f.log.LastStableOffset())
}

func readCommitted() Settings {
	s := defaults()
	s.ReadCommitted = true
	return s
}

func TestReadCommittedShareAcquire(t *testing.T) {
	f := newFixture(t, readCommitted())
	txnLog(t, f)

	assert.Equal(t, []AcquiredRange{rng(0, 0, 1), rng(3, 6, 1)}, f.acquire("m", 100),
		"up to the last stable offset, without the aborted records; the markers are acquired for the client to gap")
	f.requireStates(0, st(Acquired, 1), st(Archived, 1), st(Archived, 1), st(Acquired, 1), st(Acquired, 1),
		st(Acquired, 1), st(Acquired, 1))
	assert.Empty(t, f.acquire("m", 100), "nothing past the last stable offset")

	require.NoError(t, f.ack("m", 0, 0, 1))
	require.NoError(t, f.ack("m", 3, 4, 1))
	require.NoError(t, f.ack("m", 5, 6, 0)) // the client acknowledges control records as gaps
	assert.Equal(t, int64(7), f.p.StartOffset())

	_, err := f.log.AppendTxnMarker(3, 0, false, 0) // 10
	require.NoError(t, err)
	f.log.SetHighWatermark(f.log.LogEndOffset())
	assert.Equal(t, []AcquiredRange{rng(9, 10, 1)}, f.acquire("m", 100))
	f.requireStates(7, st(Archived, 1), st(Archived, 1), st(Acquired, 1), st(Acquired, 1))
}

func TestReadUncommittedShareAcquire(t *testing.T) {
	f := newFixture(t, defaults())
	txnLog(t, f)
	assert.Equal(t, []AcquiredRange{rng(0, 9, 1)}, f.acquire("m", 100), "everything below the high watermark")
}

func TestReadCommittedShareAbortedBatchAlone(t *testing.T) {
	// An acquisition that takes only an aborted batch archives it, returns nothing, stops its
	// lock and moves the SPSO past it; the next one goes on after it.
	f := newFixture(t, readCommitted())
	_, err := f.log.Append(encodeTxn(1, 0, 2), f.clk.Now())
	require.NoError(t, err)
	_, err = f.log.AppendTxnMarker(1, 0, false, 0)
	require.NoError(t, err)
	f.produce(1)

	ch := f.p.Notify()
	assert.Empty(t, f.acquire("m", 1))
	assert.Zero(t, f.clk.Pending(), "the archived batch's lock is stopped")
	assert.Equal(t, int64(2), f.p.StartOffset())
	select {
	case <-ch:
	default:
		t.Fatal("a waiting fetch is woken to try again")
	}
	assert.Equal(t, []AcquiredRange{rng(2, 3, 1)}, f.acquire("m", 100))
}

func TestReadCommittedShareRedelivery(t *testing.T) {
	// Released records are acquired again without the archived ones, which stay archived.
	f := newFixture(t, readCommitted())
	txnLog(t, f)
	require.Len(t, f.acquire("m", 100), 2)
	f.p.ReleaseMember("m")
	assert.Equal(t, []AcquiredRange{rng(0, 0, 2), rng(3, 6, 2)}, f.acquire("n", 100))
	f.requireStates(1, st(Archived, 1), st(Archived, 1))
}

func TestReadCommittedShareRecordLimit(t *testing.T) {
	// In record-limit mode an aborted batch acquired in parts is archived part by part.
	f := newFixture(t, readCommitted())
	_, err := f.log.Append(encodeTxn(1, 0, 4), f.clk.Now()) // 0-3
	require.NoError(t, err)
	_, err = f.log.AppendTxnMarker(1, 0, false, 0) // 4
	require.NoError(t, err)
	f.produce(1) // 5
	ranges, _, err := f.p.Acquire(nil, "m", 2, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Empty(t, ranges)
	f.requireStates(0, st(Archived, 1), st(Archived, 1), st(Available, 0), st(Available, 0))
	ranges, _, err = f.p.Acquire(nil, "m", 3, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(4, 4, 1)}, ranges, "the rest of the aborted batch is archived, the marker acquired")
	assert.Equal(t, int64(4), f.p.StartOffset(), "the SPSO moved past the archived batch")
	f.requireStates(4, st(Acquired, 1))
}

func TestSubtractSpans(t *testing.T) {
	tests := []struct {
		out  []AcquiredRange
		drop []span
		want []AcquiredRange
	}{
		{out: []AcquiredRange{rng(0, 9, 1)}, drop: []span{{2, 3}, {5, 5}}, want: []AcquiredRange{rng(0, 1, 1), rng(4, 4, 1), rng(6, 9, 1)}},
		{out: []AcquiredRange{rng(0, 3, 1), rng(4, 6, 2)}, drop: []span{{3, 4}}, want: []AcquiredRange{rng(0, 2, 1), rng(5, 6, 2)}},
		{out: []AcquiredRange{rng(2, 3, 1)}, drop: []span{{0, 5}}, want: nil},
		{out: []AcquiredRange{rng(2, 3, 1)}, drop: []span{{4, 5}}, want: []AcquiredRange{rng(2, 3, 1)}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, subtractSpans(tt.out, tt.drop))
	}
}

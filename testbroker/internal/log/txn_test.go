package log

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// txn is a batch of n records in producer pid's transaction, at sequence seq of epoch.
func txn(pid int64, epoch int16, seq int32, n int) []byte {
	return encode(spec{n: n, pid: pid, epoch: epoch, seq: seq, attrs: attrTransactional})
}

// appendAll appends the batches and moves the high watermark to the log end offset.
func appendAll(t *testing.T, p *Partition, batches ...[]byte) {
	t.Helper()
	for _, b := range batches {
		_, err := p.Append(b, now)
		require.NoError(t, err)
	}
	p.SetHighWatermark(p.LogEndOffset())
}

func marker(t *testing.T, p *Partition, pid int64, epoch int16, commit bool) int64 {
	t.Helper()
	off, err := p.AppendTxnMarker(pid, epoch, commit, 0)
	require.NoError(t, err)
	p.SetHighWatermark(p.LogEndOffset())
	return off
}

func TestLastStableOffset(t *testing.T) {
	p := NewPartition(Config{})
	appendAll(t, p, encode(spec{n: 2}))
	assert.Equal(t, int64(2), p.LastStableOffset(), "no transaction: the high watermark")

	appendAll(t, p, txn(1, 0, 0, 3)) // [2, 4]
	assert.Equal(t, int64(2), p.LastStableOffset(), "stuck at the ongoing transaction's first offset")
	appendAll(t, p, txn(2, 0, 0, 1), encode(spec{n: 4})) // 5, [6, 9]
	assert.Equal(t, int64(2), p.LastStableOffset(), "later batches do not move it")
	first, ok := p.OngoingTxn(1)
	assert.True(t, ok)
	assert.Equal(t, int64(2), first)

	assert.Equal(t, int64(10), marker(t, p, 1, 0, true))
	assert.Equal(t, int64(5), p.LastStableOffset(), "on to producer 2's transaction")
	_, ok = p.OngoingTxn(1)
	assert.False(t, ok, "the commit ended producer 1's transaction")

	assert.Equal(t, int64(11), marker(t, p, 2, 0, false))
	assert.Equal(t, int64(12), p.LastStableOffset(), "no transaction left: the high watermark")

	appendAll(t, p, txn(1, 0, 3, 1)) // 12: a new transaction of producer 1, continuing its sequence
	p.SetHighWatermark(12)
	assert.Equal(t, int64(12), p.LastStableOffset(), "never above the high watermark")
}

func TestLastStableOffsetBelowHighWatermark(t *testing.T) {
	p := NewPartition(Config{})
	_, err := p.Append(encode(spec{n: 3}), now)
	require.NoError(t, err)
	_, err = p.Append(txn(1, 0, 0, 1), now) // 3
	require.NoError(t, err)
	p.SetHighWatermark(2)
	assert.Equal(t, int64(2), p.LastStableOffset(), "a transaction past the high watermark does not count")
	p.SetHighWatermark(4)
	assert.Equal(t, int64(3), p.LastStableOffset())
}

func TestAbortedTransactions(t *testing.T) {
	// 0-1 producer 1 aborted (marker 4), 2-3 producer 2 committed (marker 5), 6 producer 3
	// aborted (marker 8), 7 plain, 9 producer 1 aborted (marker 10), 11 plain.
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 0, 0, 2), txn(2, 0, 0, 2))
	marker(t, p, 1, 0, false)
	marker(t, p, 2, 0, true)
	appendAll(t, p, txn(3, 0, 0, 1), encode(spec{}))
	marker(t, p, 3, 0, false)
	appendAll(t, p, txn(1, 0, 2, 1))
	marker(t, p, 1, 0, false)
	appendAll(t, p, encode(spec{}))
	require.Equal(t, int64(12), p.LastStableOffset())

	tests := []struct {
		from, to int64
		want     []AbortedTxn
	}{
		{from: 0, to: 12, want: []AbortedTxn{{1, 0}, {3, 6}, {1, 9}}},
		{from: 0, to: 1, want: []AbortedTxn{{1, 0}}},
		{from: 4, to: 7, want: []AbortedTxn{{1, 0}, {3, 6}}},
		{from: 5, to: 7, want: []AbortedTxn{{3, 6}}},
		{from: 5, to: 6, want: nil},
		{from: 9, to: 12, want: []AbortedTxn{{1, 9}}},
		{from: 11, to: 12, want: nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, p.AbortedTransactions(tt.from, tt.to), "[%d, %d)", tt.from, tt.to)
	}
}

func TestAbortedTransactionsInterleaved(t *testing.T) {
	// Producer 1's transaction [0, ...] stays open while producer 2's aborts: an abort index entry
	// whose last stable offset is producer 1's first offset must not stop the search early.
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 0, 0, 1), txn(2, 0, 0, 1)) // 0, 1
	marker(t, p, 2, 0, false)                         // 2
	appendAll(t, p, txn(1, 0, 1, 1))                  // 3
	marker(t, p, 1, 0, false)                         // 4
	assert.Equal(t, []AbortedTxn{{2, 1}, {1, 0}}, p.AbortedTransactions(0, 5))
	assert.Equal(t, []AbortedTxn{{2, 1}, {1, 0}}, p.AbortedTransactions(2, 3))
}

func TestReadCommittedRead(t *testing.T) {
	// A read_committed reader reads below the last stable offset, a read_uncommitted one below
	// the high watermark.
	p := NewPartition(Config{})
	appendAll(t, p, encode(spec{}), txn(1, 0, 0, 2), encode(spec{})) // 0, [1, 2], 3
	committed, err := p.AppendRecords(nil, 0, 1<<20, p.LastStableOffset())
	require.NoError(t, err)
	assert.Len(t, split(t, committed), 1, "only the batch before the transaction")
	uncommitted, err := p.AppendRecords(nil, 0, 1<<20, p.HighWatermark())
	require.NoError(t, err)
	assert.Len(t, split(t, uncommitted), 3)

	marker(t, p, 1, 0, false)
	committed, err = p.AppendRecords(nil, 0, 1<<20, p.LastStableOffset())
	require.NoError(t, err)
	batches := split(t, committed)
	require.Len(t, batches, 4, "the aborted batch, the plain one and the marker")
	last := batches[3].Header
	assert.Equal(t, int16(attrControl|attrTransactional), last.Attributes)
	assert.Equal(t, int64(4), last.BaseOffset)
	assert.Equal(t, int32(-1), last.BaseSequence)
	commit, coordEpoch, ok := readMarker(batches[3].Bytes)
	assert.True(t, ok)
	assert.False(t, commit)
	assert.Zero(t, coordEpoch)
	assert.Equal(t, []AbortedTxn{{1, 1}}, p.AbortedTransactions(0, 5))
}

func TestTxnMarkerChecks(t *testing.T) {
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 3, 0, 1))
	_, err := p.AppendTxnMarker(1, 2, true, 0)
	requireCode(t, kerr.InvalidProducerEpoch, err)
	_, err = p.AppendTxnMarker(1, 3, true, 5)
	require.NoError(t, err)
	appendAll(t, p, txn(1, 3, 1, 1))
	_, err = p.AppendTxnMarker(1, 3, false, 4)
	requireCode(t, kerr.TransactionCoordinatorFenced, err)
	_, ok := p.OngoingTxn(1)
	assert.True(t, ok, "a refused marker changes nothing")
	assert.Equal(t, int64(3), p.LogEndOffset())

	off, err := p.AppendTxnMarker(9, 0, true, 0)
	require.NoError(t, err, "a marker for a producer without a transaction is appended")
	assert.Equal(t, int64(3), off)

	// A marker in a newer epoch (transaction version 2 bumps the epoch at each end) makes the
	// producer's next batch start at sequence 0.
	_, err = p.AppendTxnMarker(1, 4, false, 5)
	require.NoError(t, err)
	_, err = p.Append(txn(1, 4, 2, 1), now)
	requireCode(t, kerr.OutOfOrderSequenceNumber, err)
	_, err = p.Append(txn(1, 4, 0, 1), now)
	require.NoError(t, err)
	_, err = p.Append(txn(1, 3, 2, 1), now)
	requireCode(t, kerr.InvalidProducerEpoch, err)
}

func TestTxnMarkerTimestamp(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	p := NewPartition(Config{Now: func() time.Time { return at }})
	off, err := p.AppendTxnMarker(1, 0, true, 0)
	require.NoError(t, err)
	p.SetHighWatermark(1)
	b, err := p.AppendRecords(nil, off, 1<<20, 1)
	require.NoError(t, err)
	h := split(t, b)[0].Header
	assert.Equal(t, at.UnixMilli(), h.MaxTimestamp)
	assert.Equal(t, at.UnixMilli(), h.BaseTimestamp)
}

func TestNonTransactionalWriteInTransaction(t *testing.T) {
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 0, 0, 1))
	_, err := p.Append(encode(spec{pid: 1, seq: 1}), now)
	requireCode(t, kerr.InvalidTxnState, err)
	assert.Equal(t, int64(1), p.LogEndOffset())
	_, err = p.Append(txn(1, 0, 1, 1), now)
	require.NoError(t, err, "the refused batch left the sequence where it was")
}

func TestMarkerWakesNotify(t *testing.T) {
	p := NewPartition(Config{})
	ch := p.Notify()
	_, err := p.AppendTxnMarker(1, 0, true, 0)
	require.NoError(t, err)
	assert.True(t, isClosed(ch))
}

// leaderWithTxns is a leader's log in epoch 1: 0 plain, [1, 2] producer 1's transaction (open),
// 3 producer 2's transaction, 4 producer 2's abort marker, 5 producer 3's transaction, 6 its
// commit marker.
func leaderWithTxns(t *testing.T) *Partition {
	leader := NewPartition(Config{})
	leader.StartLeaderEpoch(1)
	appendAll(t, leader, encode(spec{}), txn(1, 0, 0, 2), txn(2, 0, 0, 1))
	marker(t, leader, 2, 0, false)
	appendAll(t, leader, txn(3, 0, 0, 1))
	marker(t, leader, 3, 0, true)
	return leader
}

func TestReplicatedTxnState(t *testing.T) {
	// A follower rebuilds the transactions from the batches it replicates; once it leads, the
	// ongoing transaction continues and the coordinator's marker ends it.
	leader := leaderWithTxns(t)
	records, err := leader.AppendRecords(nil, 0, 1<<20, leader.LogEndOffset())
	require.NoError(t, err)
	follower := NewPartition(Config{})
	_, err = follower.AppendReplicated(records)
	require.NoError(t, err)
	follower.SetHighWatermark(leader.HighWatermark())

	assert.Equal(t, leader.LastStableOffset(), follower.LastStableOffset())
	assert.Equal(t, int64(1), follower.LastStableOffset())
	assert.Equal(t, leader.AbortedTransactions(0, 7), follower.AbortedTransactions(0, 7))
	assert.Equal(t, []AbortedTxn{{2, 3}}, follower.AbortedTransactions(0, 7))

	// Leader move: the follower leads in epoch 2.
	follower.StartLeaderEpoch(2)
	res, err := follower.Append(txn(1, 0, 0, 2), now)
	require.NoError(t, err, "a retry of the open transaction's batch")
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(1), res.BaseOffset)
	_, err = follower.Append(txn(1, 0, 2, 1), now) // 7
	require.NoError(t, err, "the producer's next sequence")
	_, err = follower.AppendTxnMarker(3, 0, true, -1)
	requireCode(t, kerr.TransactionCoordinatorFenced, err)
	off, err := follower.AppendTxnMarker(1, 0, false, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(8), off)
	follower.SetHighWatermark(9)
	assert.Equal(t, int64(9), follower.LastStableOffset())
	assert.Equal(t, []AbortedTxn{{2, 3}, {1, 1}}, follower.AbortedTransactions(0, 9))
}

func TestTruncationRollsBackTxnState(t *testing.T) {
	tests := []struct {
		name    string
		to      int64
		lso     int64 // with the high watermark at the log end offset
		aborted []AbortedTxn
		open    []int64 // producers with an ongoing transaction
	}{
		{name: "before the commit marker", to: 6, lso: 1, aborted: []AbortedTxn{{2, 3}}, open: []int64{1, 3}},
		{name: "before the abort marker", to: 4, lso: 1, aborted: nil, open: []int64{1, 2}},
		{name: "inside the first transaction", to: 1, lso: 1, aborted: nil, open: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader := leaderWithTxns(t)
			require.NoError(t, leader.TruncateTo(tt.to))
			leader.SetHighWatermark(leader.LogEndOffset())
			assert.Equal(t, tt.lso, leader.LastStableOffset())
			assert.Equal(t, tt.aborted, leader.AbortedTransactions(0, 100))
			for pid := int64(1); pid <= 3; pid++ {
				_, ok := leader.OngoingTxn(pid)
				assert.Equal(t, contains(tt.open, pid), ok, "producer %d", pid)
			}
		})
	}
	p := leaderWithTxns(t)
	require.NoError(t, p.TruncateFullyAndStartAt(20))
	assert.Equal(t, int64(20), p.LastStableOffset())
	assert.Empty(t, p.AbortedTransactions(0, 100))
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestLastStableOffsetWaitsForMarkerReplication(t *testing.T) {
	// A completed transaction holds the last stable offset back until its marker is below the
	// high watermark, as Kafka's unreplicated transactions do.
	p := NewPartition(Config{})
	appendAll(t, p, encode(spec{}), txn(1, 0, 0, 2)) // 0, [1, 2]
	_, err := p.AppendTxnMarker(1, 0, true, 0)       // 3
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.LastStableOffset(), "the marker is at the high watermark")
	p.SetHighWatermark(4)
	assert.Equal(t, int64(4), p.LastStableOffset())

	// A follower that replicates the marker ahead of the leader's high watermark waits too.
	records, err := p.AppendRecords(nil, 0, 1<<20, 4)
	require.NoError(t, err)
	follower := NewPartition(Config{})
	_, err = follower.AppendReplicated(records)
	require.NoError(t, err)
	follower.SetHighWatermark(3)
	assert.Equal(t, int64(1), follower.LastStableOffset())
	follower.SetHighWatermark(4)
	assert.Equal(t, int64(4), follower.LastStableOffset())
}

func TestTxnMarkerVersion2Epochs(t *testing.T) {
	// Transactions v2 bump the producer's epoch before the markers: a marker not above the
	// producer's epoch is a late one (KIP-1228). Version 1 accepts the same epoch.
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 3, 0, 1))
	_, err := p.AppendTxnMarkerVersion(1, 3, true, 0, 2)
	requireCode(t, kerr.InvalidProducerEpoch, err)
	var ke *kafkaerr.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "epoch of producer 1 at offset 1 is 3, which is <= the last seen epoch 3 (TV2)", ke.Detail)
	_, ok := p.OngoingTxn(1)
	assert.True(t, ok)
	off, err := p.AppendTxnMarkerVersion(1, 4, true, 0, 2)
	require.NoError(t, err)
	assert.Equal(t, int64(1), off)
	_, err = p.AppendTxnMarkerVersion(1, 4, true, 0, 2)
	requireCode(t, kerr.InvalidProducerEpoch, err) // a repeated marker
	_, err = p.AppendTxnMarkerVersion(1, 4, true, 0, 1)
	require.NoError(t, err, "version 1 accepts the producer's epoch")

	// A follower takes the leader's markers without the check.
	p.SetHighWatermark(p.LogEndOffset())
	records, err := p.AppendRecords(nil, 0, 1<<20, p.LogEndOffset())
	require.NoError(t, err)
	follower := NewPartition(Config{})
	_, err = follower.AppendReplicated(records)
	require.NoError(t, err)
	assert.Equal(t, int64(3), follower.LogEndOffset())
}

func TestLastStableOffsetNotBelowLogStart(t *testing.T) {
	p := NewPartition(Config{})
	appendAll(t, p, txn(1, 0, 0, 3), encode(spec{n: 4})) // [0, 2] ongoing, [3, 6]
	assert.Equal(t, int64(0), p.LastStableOffset())
	_, err := p.IncrementLogStartOffset(5)
	require.NoError(t, err)
	assert.Equal(t, int64(5), p.LastStableOffset(), "the ongoing transaction's deleted records no longer hold it back")
	marker(t, p, 1, 0, true)
	assert.Equal(t, int64(8), p.LastStableOffset())
}

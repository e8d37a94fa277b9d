package log

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fetchInto returns in buf what a leader's fetch response carries for a follower at offset:
// the bytes AppendSpans gives, at most maxBytes beyond the first batch, read up to the log end
// offset as a leader serves its followers.
func fetchInto(t *testing.T, leader *Partition, offset int64, maxBytes int, buf []byte) []byte {
	t.Helper()
	spans, _, err := leader.AppendSpans(nil, offset, maxBytes, leader.LogEndOffset())
	require.NoError(t, err)
	buf = buf[:0]
	for _, s := range spans {
		buf = append(buf, s...)
	}
	return buf
}

// replicate fetches from leader into follower until it has caught up, maxBytes at a time,
// through one buffer that is scribbled over after each append, as a fetcher reuses its own.
func replicate(t *testing.T, leader, follower *Partition, maxBytes int) {
	t.Helper()
	var buf []byte
	for follower.LogEndOffset() < leader.LogEndOffset() {
		buf = fetchInto(t, leader, follower.LogEndOffset(), maxBytes, buf)
		res, err := follower.AppendReplicated(buf)
		require.NoError(t, err)
		require.Positive(t, res.Bytes)
		for i := range buf {
			buf[i] = 0xee
		}
	}
}

// storage returns every byte the log holds, in offset order.
func storage(t *testing.T, p *Partition) []byte {
	t.Helper()
	out, err := p.AppendRecords(nil, p.LogStartOffset(), 1<<30, p.LogEndOffset())
	require.NoError(t, err)
	return out
}

// mixedLeader returns a leader log of small and large batches, plain and idempotent, written
// in the leader epochs 0, 2 and 5, with MaxTimestamps that are not in offset order.
func mixedLeader(t *testing.T, cfg Config) *Partition {
	t.Helper()
	leader := NewPartition(cfg)
	steps := []struct {
		epoch int32
		spec  spec
	}{
		{0, spec{timestamps: []int64{3000}}},
		{0, spec{n: 3, pid: 1, seq: 0}},
		{2, spec{n: 500, timestamps: nil}},
		{2, spec{n: 2, pid: 1, seq: 3, timestamps: []int64{4000, 6000}}},
		{2, spec{n: 2, pid: 2, epoch: 4, seq: 10}},
		{5, spec{pid: 1, seq: 5, timestamps: []int64{2000}}},
		{5, spec{n: 700}},
		{5, spec{n: 4}},
	}
	for _, s := range steps {
		leader.SetLeaderEpoch(s.epoch)
		_, err := leader.Append(encode(s.spec), now)
		require.NoError(t, err)
	}
	return leader
}

func TestAppendReplicatedMirrorsTheLeader(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		maxBytes int
	}{
		{name: "one batch per fetch", maxBytes: 1},
		{name: "a few batches per fetch", maxBytes: 200},
		{name: "one fetch", maxBytes: 1 << 20},
		{name: "LogAppendTime topic", cfg: Config{LogAppendTime: true}, maxBytes: 1 << 20},
		{name: "log start offset", cfg: Config{LogStartOffset: 1000}, maxBytes: 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader := mixedLeader(t, tt.cfg)
			follower := NewPartition(tt.cfg)
			wake := follower.Notify()
			replicate(t, leader, follower, tt.maxBytes)

			assert.True(t, isClosed(wake), "an append wakes the waiters")
			assert.Equal(t, storage(t, leader), storage(t, follower), "byte-identical storage")
			assert.Equal(t, leader.LogStartOffset(), follower.LogStartOffset())
			assert.Equal(t, leader.LogEndOffset(), follower.LogEndOffset())
			assert.Equal(t, tt.cfg.LogStartOffset, follower.HighWatermark(), "the high watermark is the caller's")
			assert.Equal(t, leader.LatestEpoch(), follower.LatestEpoch())
			for epoch := int32(-1); epoch <= 6; epoch++ {
				le, lo := leader.EndOffsetForEpoch(epoch)
				fe, fo := follower.EndOffsetForEpoch(epoch)
				assert.Equal(t, []any{le, lo}, []any{fe, fo}, "EndOffsetForEpoch(%d)", epoch)
			}
			leo, epoch := follower.LogEndOffsetAndEpoch()
			assert.Equal(t, leader.LogEndOffset(), leo)
			assert.Equal(t, int32(5), epoch)

			limit := leader.LogEndOffset()
			lo, lts, lok := leader.MaxTimestamp(limit)
			fo, fts, fok := follower.MaxTimestamp(limit)
			assert.Equal(t, []any{lo, lts, lok}, []any{fo, fts, fok}, "MaxTimestamp")
			for _, ts := range []int64{0, 1000, 2500, 3500, 5000, 7000, now.UnixMilli()} {
				lo, lts, lok := leader.OffsetForTimestamp(ts, limit)
				fo, fts, fok := follower.OffsetForTimestamp(ts, limit)
				assert.Equal(t, []any{lo, lts, lok}, []any{fo, fts, fok}, "OffsetForTimestamp(%d)", ts)
			}
		})
	}
}

func TestAppendReplicatedResult(t *testing.T) {
	leader := mixedLeader(t, Config{})
	follower := NewPartition(Config{})
	records := fetchInto(t, leader, 0, 1<<20, nil)[:0]
	records = fetchInto(t, leader, 0, 1<<20, records)
	batches := split(t, records)

	res, err := follower.AppendReplicated(records[:len(records)-1])
	require.NoError(t, err)
	last := batches[len(batches)-2].Header
	assert.Equal(t, ReplicatedAppendResult{
		FirstOffset: 0,
		LastOffset:  last.LastOffset(),
		LastEpoch:   last.PartitionLeaderEpoch,
		Bytes:       len(records) - len(batches[len(batches)-1].Bytes),
	}, res)
}

func TestAppendReplicatedPartialBatch(t *testing.T) {
	leader := NewPartition(Config{})
	appendInEpochs(t, leader, []int32{0, 0, 1}, []int{1, 3, 2})
	records := storage(t, leader)
	batches := split(t, records)
	whole := len(batches[0].Bytes) + len(batches[1].Bytes)
	third := len(batches[2].Bytes)

	tests := []struct {
		name  string
		bytes int // of the records given
		want  int // bytes appended
	}{
		{name: "nothing", bytes: 0},
		{name: "a few bytes of a first batch", bytes: 5},
		{name: "a first batch without its magic byte", bytes: 16},
		{name: "a first batch without its end", bytes: len(batches[0].Bytes) - 1},
		{name: "a few bytes of the third batch", bytes: whole + 1, want: whole},
		{name: "the third batch's offset and length", bytes: whole + frameOverhead, want: whole},
		{name: "the third batch up to its magic byte", bytes: whole + posMagic + 1, want: whole},
		{name: "the third batch's header", bytes: whole + HeaderSize, want: whole},
		{name: "the third batch but its last byte", bytes: whole + third - 1, want: whole},
		{name: "all", bytes: len(records), want: len(records)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			follower := NewPartition(Config{})
			res, err := follower.AppendReplicated(clone(records[:tt.bytes]))
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Bytes)
			assert.Equal(t, string(records[:tt.want]), string(storage(t, follower)))
			if tt.want == 0 {
				assert.Equal(t, ReplicatedAppendResult{FirstOffset: -1, LastOffset: -1, LastEpoch: UndefinedEpoch}, res)
			}
		})
	}
}

// at returns a copy of batch b moved to base offset base in leader epoch epoch, fields that lie
// outside the CRC.
func at(b []byte, base int64, epoch int32) []byte {
	c := clone(b)
	for i := range 8 {
		c[i] = byte(base >> (56 - 8*i))
	}
	for i := range 4 {
		c[posLeaderEpoch+i] = byte(epoch >> (24 - 8*i))
	}
	return c
}

func TestAppendReplicatedRefusals(t *testing.T) {
	one, three := encode(spec{}), encode(spec{n: 3})
	corrupt := at(one, 2, 0)
	corrupt[len(corrupt)-1] ^= 0x01
	shortLength := at(one, 2, 0)[:frameOverhead]
	shortLength[posBatchLength+3], shortLength[posBatchLength+2] = minRecordLength-1, 0

	tests := []struct {
		name    string
		records []byte // appended to a follower whose log end offset is 2
		want    *kerr.Error
		corrupt bool // the error is a *CorruptError
		offsets *UnexpectedOffsetError
	}{
		{name: "bad CRC in the second batch", records: concat(at(three, 2, 0), at(corrupt, 5, 0)), want: kerr.CorruptMessage, corrupt: true},
		{name: "bad CRC", records: corrupt, want: kerr.CorruptMessage, corrupt: true},
		{name: "a length no record has, even at the end", records: concat(at(one, 2, 0), shortLength), want: kerr.CorruptMessage, corrupt: true},
		{name: "magic 5", records: edit(at(one, 2, 0), func(b []byte) { b[posMagic] = 5 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "unknown codec", records: edit(at(one, 2, 0), func(b []byte) { b[posAttributes+1] = 7 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "length below a v2 header", records: edit(at(one, 2, 0), func(b []byte) { b[posBatchLength+3] = minBatchLength - 1 }), want: kerr.CorruptMessage, corrupt: true},
		{name: "magic 1", records: edit(at(one, 2, 0), func(b []byte) { b[posMagic] = 1 }), want: kerr.InvalidRecord},
		{name: "count mismatch", records: edit(at(one, 2, 0), func(b []byte) { b[60] = 2 }), want: kerr.InvalidRecord},
		{name: "no leader epoch", records: at(one, 2, -1), want: kerr.InvalidRecord},
		{name: "negative base offset", records: at(one, -1, 0), want: kerr.InvalidRecord},
		{name: "control batch without a marker", records: at(encode(spec{pid: 1, attrs: attrControl | attrTransactional}), 2, 0), want: kerr.InvalidRecord},
		{name: "starts below the log end offset", records: at(three, 1, 0), want: kerr.UnknownServerError,
			offsets: &UnexpectedOffsetError{FirstOffset: 1, LastOffset: 3, NextOffset: 2}},
		{name: "starts past the log end offset", records: at(one, 3, 0), want: kerr.UnknownServerError,
			offsets: &UnexpectedOffsetError{FirstOffset: 3, LastOffset: 3, NextOffset: 2}},
		{name: "a gap between batches", records: concat(at(one, 2, 0), at(one, 4, 0)), want: kerr.UnknownServerError,
			offsets: &UnexpectedOffsetError{FirstOffset: 4, LastOffset: 4, NextOffset: 3}},
		{name: "batches out of order", records: concat(at(three, 2, 0), at(one, 3, 0)), want: kerr.UnknownServerError,
			offsets: &UnexpectedOffsetError{FirstOffset: 3, LastOffset: 3, NextOffset: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			follower := NewPartition(Config{})
			_, err := follower.AppendReplicated(concat(at(one, 0, 0), at(one, 1, 0)))
			require.NoError(t, err)
			before := storage(t, follower)

			res, err := follower.AppendReplicated(tt.records)
			requireCode(t, tt.want, err)
			var ce *CorruptError
			assert.Equal(t, tt.corrupt, errors.As(err, &ce), "a *CorruptError: %v", err)
			if tt.offsets != nil {
				var oe *UnexpectedOffsetError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, tt.offsets, oe)
			}
			assert.Equal(t, ReplicatedAppendResult{FirstOffset: -1, LastOffset: -1, LastEpoch: UndefinedEpoch}, res)
			assert.Equal(t, before, storage(t, follower), "a refused append changes nothing")
			assert.Equal(t, int64(2), follower.LogEndOffset())
		})
	}
}

func TestAppendReplicatedRestartsAnEmptyLog(t *testing.T) {
	// The leader's log start offset fell inside a batch: an empty follower takes the whole batch
	// and starts its log at the batch's base offset, as Kafka's Partition does.
	follower := NewPartition(Config{LogStartOffset: 5})
	follower.StartLeaderEpoch(1)
	res, err := follower.AppendReplicated(at(encode(spec{n: 4}), 3, 2))
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.FirstOffset)
	assert.Equal(t, int64(3), follower.LogStartOffset())
	assert.Equal(t, int64(7), follower.LogEndOffset())
	assert.Equal(t, int64(3), follower.HighWatermark())
	_, end := follower.EndOffsetForEpoch(1)
	assert.Equal(t, int64(3), end, "the restart forgets the epochs of the empty log")

	// The same batch on a log that holds records is refused.
	other := NewPartition(Config{LogStartOffset: 4})
	_, err = other.AppendReplicated(at(encode(spec{}), 4, 0))
	require.NoError(t, err)
	_, err = other.AppendReplicated(at(encode(spec{n: 4}), 3, 2))
	var oe *UnexpectedOffsetError
	assert.ErrorAs(t, err, &oe)
}

func TestReplicatedProducerState(t *testing.T) {
	// After a failover the new leader, a former follower, dedups a producer's retry and checks
	// its sequences as the old leader did.
	leader := NewPartition(Config{})
	for _, s := range []spec{{n: 3, pid: 1, seq: 0}, {n: 2, pid: 1, seq: 3}, {pid: 2, epoch: 3, seq: 7}} {
		_, err := leader.Append(encode(s), now)
		require.NoError(t, err)
	}
	follower := NewPartition(Config{})
	replicate(t, leader, follower, 1)
	follower.StartLeaderEpoch(1)

	steps := []struct {
		name string
		spec spec
		want *kerr.Error // nil: accepted at base
		base int64
		dup  bool
	}{
		{name: "retry of the last batch", spec: spec{n: 2, pid: 1, seq: 3}, base: 3, dup: true},
		{name: "retry of an earlier batch", spec: spec{n: 3, pid: 1, seq: 0}, base: 0, dup: true},
		{name: "sequence gap", spec: spec{pid: 1, seq: 6}, want: kerr.OutOfOrderSequenceNumber},
		{name: "next sequence", spec: spec{pid: 1, seq: 5}, base: 6},
		{name: "older producer epoch", spec: spec{pid: 2, epoch: 2, seq: 8}, want: kerr.InvalidProducerEpoch},
		{name: "another producer's retry", spec: spec{pid: 2, epoch: 3, seq: 7}, base: 5, dup: true},
	}
	for _, s := range steps {
		res, err := follower.Append(encode(s.spec), now)
		if s.want != nil {
			requireCode(t, s.want, err)
			continue
		}
		require.NoError(t, err, s.name)
		assert.Equal(t, AppendResult{BaseOffset: s.base, LogAppendTime: -1, Duplicate: s.dup}, res, s.name)
	}
}

// truncationLog returns a log of four batches: [0] in epoch 0 at 3000 ms, [1, 3] in epoch 1
// from producer 1 (sequences 0 to 2), [4, 503] in epoch 1 holding the largest timestamp, and
// [504, 505] in epoch 2 from producer 1 (sequences 3 and 4); its high watermark is its end.
func truncationLog(t *testing.T) *Partition {
	t.Helper()
	p := NewPartition(Config{})
	for _, s := range []struct {
		epoch int32
		spec  spec
	}{
		{0, spec{timestamps: []int64{3000}}},
		{1, spec{n: 3, pid: 1, seq: 0, timestamps: []int64{1000, 1000, 1000}}},
		{1, spec{n: 500, timestamps: append([]int64{5000}, make([]int64, 499)...)}},
		{2, spec{n: 2, pid: 1, seq: 3, timestamps: []int64{2000, 2000}}},
	} {
		p.SetLeaderEpoch(s.epoch)
		_, err := p.Append(encode(s.spec), now)
		require.NoError(t, err)
	}
	p.SetHighWatermark(p.LogEndOffset())
	return p
}

func TestTruncateTo(t *testing.T) {
	tests := []struct {
		name     string
		offset   int64
		leo      int64
		batches  int   // batches left
		epoch    int32 // latest epoch
		maxAt    int64 // offset of the largest timestamp, -1 if none
		retryDup bool  // a retry of producer 1's first batch is a duplicate
		nextSeq  int32 // producer 1's next sequence, -1 for any (no state)
	}{
		{name: "past the log end", offset: 600, leo: 506, batches: 4, epoch: 2, maxAt: 4, retryDup: true, nextSeq: 5},
		{name: "at the log end", offset: 506, leo: 506, batches: 4, epoch: 2, maxAt: 4, retryDup: true, nextSeq: 5},
		{name: "inside the last batch", offset: 505, leo: 504, batches: 3, epoch: 1, maxAt: 4, retryDup: true, nextSeq: 3},
		{name: "at a batch boundary", offset: 504, leo: 504, batches: 3, epoch: 1, maxAt: 4, retryDup: true, nextSeq: 3},
		{name: "inside the large batch", offset: 300, leo: 4, batches: 2, epoch: 1, maxAt: 0, retryDup: true, nextSeq: 3},
		{name: "at the producer's first batch", offset: 1, leo: 1, batches: 1, epoch: 0, maxAt: 0, nextSeq: -1},
		{name: "everything", offset: 0, leo: 0, batches: 0, epoch: -1, maxAt: -1, nextSeq: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := truncationLog(t)
			all := split(t, storage(t, p))
			require.NoError(t, p.TruncateTo(tt.offset))

			assert.Equal(t, int64(0), p.LogStartOffset())
			assert.Equal(t, tt.leo, p.LogEndOffset())
			assert.Equal(t, tt.leo, p.HighWatermark(), "the high watermark is at most the log end")
			assert.Equal(t, tt.epoch, p.LatestEpoch())
			leo, epoch := p.LogEndOffsetAndEpoch()
			assert.Equal(t, []any{tt.leo, tt.epoch}, []any{leo, epoch})
			var want []byte
			for _, b := range all[:tt.batches] {
				want = append(want, b.Bytes...)
			}
			got, err := p.AppendRecords(nil, 0, 1<<30, p.LogEndOffset())
			require.NoError(t, err)
			assert.Equal(t, want, got)
			at, _, found := p.MaxTimestamp(p.LogEndOffset())
			assert.Equal(t, tt.maxAt >= 0, found)
			if found {
				assert.Equal(t, tt.maxAt, at, "the largest timestamp left")
			}

			p.SetLeaderEpoch(3)
			res, err := p.Append(encode(spec{n: 3, pid: 1, seq: 0}), now)
			require.NoError(t, err)
			assert.Equal(t, tt.retryDup, res.Duplicate, "retry of producer 1's first batch")
			if tt.nextSeq >= 0 {
				_, err = p.Append(encode(spec{pid: 1, seq: tt.nextSeq + 1}), now)
				requireCode(t, kerr.OutOfOrderSequenceNumber, err)
				_, err = p.Append(encode(spec{pid: 1, seq: tt.nextSeq}), now)
				assert.NoError(t, err, "producer 1 continues at sequence %d", tt.nextSeq)
			}
		})
	}
}

func TestTruncateToEpochEntries(t *testing.T) {
	// A leader that recorded its epoch and appended nothing in it loses the entry when it turns
	// follower and truncates, even to its log end offset.
	p := truncationLog(t)
	p.StartLeaderEpoch(4)
	require.Equal(t, int32(4), p.LatestEpoch())
	require.NoError(t, p.TruncateTo(p.LogEndOffset()))
	assert.Equal(t, int32(2), p.LatestEpoch())
	assert.Equal(t, int64(506), p.LogEndOffset())

	// Truncation keeps an epoch that starts before the new end and drops the ones after.
	require.NoError(t, p.TruncateTo(4))
	start, ok := p.EpochStartOffset(1)
	assert.True(t, ok)
	assert.Equal(t, int64(1), start)
	_, ok = p.EpochStartOffset(2)
	assert.False(t, ok)
}

func TestTruncateToWakesAndClampsTheHighWatermark(t *testing.T) {
	p := truncationLog(t)
	p.SetHighWatermark(4)
	wake := p.Notify()
	require.NoError(t, p.TruncateTo(600))
	assert.False(t, isClosed(wake), "no change, no wake-up")
	require.NoError(t, p.TruncateTo(504))
	assert.True(t, isClosed(wake))
	assert.Equal(t, int64(4), p.HighWatermark(), "a high watermark below the cut stays")
	require.NoError(t, p.TruncateTo(1))
	assert.Equal(t, int64(1), p.HighWatermark())
}

func TestTruncateBelowLogStart(t *testing.T) {
	p := NewPartition(Config{LogStartOffset: 100})
	appendInEpochs(t, p, []int32{1, 2}, []int{3, 2})
	require.NoError(t, p.TruncateTo(40))
	assert.Equal(t, []int64{40, 40, 40}, []int64{p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark()})
	assert.Equal(t, UndefinedEpoch, p.LatestEpoch())
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	p := truncationLog(t)
	held, _, err := p.AppendSpans(nil, 0, 1<<30, p.LogEndOffset())
	require.NoError(t, err)
	heldCopy := concat(held...)
	wake := p.Notify()

	require.NoError(t, p.TruncateFullyAndStartAt(1000))
	assert.True(t, isClosed(wake))
	assert.Equal(t, []int64{1000, 1000, 1000}, []int64{p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark()})
	leo, epoch := p.LogEndOffsetAndEpoch()
	assert.Equal(t, []any{int64(1000), UndefinedEpoch}, []any{leo, epoch})
	_, _, found := p.MaxTimestamp(2000)
	assert.False(t, found)
	_, err = p.AppendRecords(nil, 999, 1<<20, 2000)
	requireCode(t, kerr.OffsetOutOfRange, err)

	res, err := p.AppendReplicated(at(encode(spec{pid: 1, seq: 9}), 1000, 7))
	require.NoError(t, err)
	assert.Equal(t, int64(1000), res.FirstOffset)
	assert.Equal(t, int32(7), p.LatestEpoch())
	dup, err := p.Append(encode(spec{n: 3, pid: 1, seq: 0}), now)
	requireCode(t, kerr.OutOfOrderSequenceNumber, err)
	assert.False(t, dup.Duplicate, "the producer state before the restart is gone")

	assert.Equal(t, heldCopy, concat(held...), "bytes a reader held are never overwritten")
}

func TestTruncateNegativeOffset(t *testing.T) {
	p := truncationLog(t)
	requireCode(t, kerr.UnknownServerError, p.TruncateTo(-1))
	requireCode(t, kerr.UnknownServerError, p.TruncateFullyAndStartAt(-1))
	assert.Equal(t, int64(506), p.LogEndOffset())
}

func TestDivergingEpoch(t *testing.T) {
	// Epoch 1 starts at 2, epoch 3 at 7, epoch 4 at 11; the log spans [2, 14).
	p := NewPartition(Config{LogStartOffset: 2})
	appendInEpochs(t, p, []int32{1, 3, 4}, []int{5, 4, 3})

	tests := []struct {
		name      string
		epoch     int32
		offset    int64
		diverged  bool
		wantEpoch int32
		wantEnd   int64
		err       *kerr.Error
	}{
		{name: "no last fetched epoch", epoch: -1, offset: 0},
		{name: "the latest epoch at the log end", epoch: 4, offset: 14},
		{name: "the latest epoch inside the log", epoch: 4, offset: 12},
		{name: "an older epoch at its end", epoch: 3, offset: 11},
		{name: "an older epoch past its end", epoch: 3, offset: 12, diverged: true, wantEpoch: 3, wantEnd: 11},
		{name: "an epoch the leader never wrote", epoch: 2, offset: 7, diverged: true, wantEpoch: 1, wantEnd: 7},
		{name: "an epoch before the first", epoch: 0, offset: 2},
		{name: "an epoch after the latest", epoch: 5, offset: 14, err: kerr.OffsetOutOfRange},
		{name: "below the log start", epoch: 4, offset: 1, err: kerr.OffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			epoch, end, diverged, err := p.DivergingEpoch(tt.epoch, tt.offset)
			if tt.err != nil {
				requireCode(t, tt.err, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.diverged, diverged)
			if tt.diverged {
				assert.Equal(t, []any{tt.wantEpoch, tt.wantEnd}, []any{epoch, end})
			}
		})
	}
}

func TestFollowerRecoversFromDivergence(t *testing.T) {
	// The follower holds the old leader's last batch, written in epoch 2, which the new leader
	// never received: it truncates where the leader's answer says and then mirrors the new log.
	follower := truncationLog(t)
	newLeader := NewPartition(Config{})
	replicate(t, follower, newLeader, 1<<20)
	require.NoError(t, newLeader.TruncateTo(504))
	newLeader.StartLeaderEpoch(3)
	for _, s := range []spec{{n: 2}, {n: 600}, {pid: 1, seq: 3}} {
		_, err := newLeader.Append(encode(s), now)
		require.NoError(t, err)
	}

	held, _, err := follower.AppendSpans(nil, 0, 1<<30, follower.LogEndOffset())
	require.NoError(t, err)
	heldCopy := concat(held...)

	leo, lastEpoch := follower.LogEndOffsetAndEpoch()
	require.Equal(t, []any{int64(506), int32(2)}, []any{leo, lastEpoch})
	epoch, end, diverged, err := newLeader.DivergingEpoch(lastEpoch, leo)
	require.NoError(t, err)
	require.True(t, diverged)
	require.Equal(t, []any{int32(1), int64(504)}, []any{epoch, end})
	_, localEnd := follower.EndOffsetForEpoch(epoch)
	require.NoError(t, follower.TruncateTo(min(end, localEnd)))
	replicate(t, newLeader, follower, 1000)

	assert.Equal(t, storage(t, newLeader), storage(t, follower))
	leo, lastEpoch = follower.LogEndOffsetAndEpoch()
	_, _, diverged, err = newLeader.DivergingEpoch(lastEpoch, leo)
	require.NoError(t, err)
	assert.False(t, diverged)
	assert.Equal(t, heldCopy, concat(held...), "bytes a reader held before the truncation are unchanged")

	// The follower becomes leader: producer 1's state is the new leader's.
	follower.StartLeaderEpoch(4)
	res, err := follower.Append(encode(spec{pid: 1, seq: 3}), now)
	require.NoError(t, err)
	assert.True(t, res.Duplicate)
}

func TestConcurrentReplication(t *testing.T) {
	const appends = 300
	leader := NewPartition(Config{})
	follower := NewPartition(Config{})
	leaderDone := make(chan struct{})
	var wg sync.WaitGroup

	wg.Go(func() {
		defer close(leaderDone)
		seq := int32(0)
		for i := range appends {
			if i%50 == 0 {
				leader.StartLeaderEpoch(int32(i / 50))
			}
			n := i%4*200 + 1
			if _, err := leader.Append(encode(spec{n: n, pid: 1, seq: seq}), now); !assert.NoError(t, err) {
				return
			}
			seq += int32(n)
		}
	})
	// The fetcher replicates, and now and then truncates a little and fetches again, while
	// readers read the follower.
	wg.Go(func() {
		var buf []byte
		for round := 0; ; round++ {
			wake := leader.Notify()
			leo := follower.LogEndOffset()
			if round%7 == 6 && leo > 0 {
				if !assert.NoError(t, follower.TruncateTo(leo-1)) {
					return
				}
				continue
			}
			spans, _, err := leader.AppendSpans(nil, leo, 4096, leader.LogEndOffset())
			if !assert.NoError(t, err) {
				return
			}
			if len(spans) == 0 {
				select {
				case <-wake:
					continue
				case <-leaderDone:
					if follower.LogEndOffset() == leader.LogEndOffset() {
						return
					}
					continue
				}
			}
			buf = buf[:0]
			for _, s := range spans {
				buf = append(buf, s...)
			}
			if _, err := follower.AppendReplicated(buf); !assert.NoError(t, err) {
				return
			}
			clear(buf)
		}
	})
	type held struct{ spans, copy []byte }
	var heldMu sync.Mutex
	var kept []held
	for range 3 {
		wg.Go(func() {
			for range appends {
				spans, _, err := follower.AppendSpans(nil, follower.LogStartOffset(), 1<<16, follower.LogEndOffset())
				if !assert.NoError(t, err) {
					return
				}
				data := concat(spans...)
				if len(data) > 0 {
					_, err := SplitBatches(data)
					assert.NoError(t, err)
				}
				if len(spans) > 0 {
					heldMu.Lock()
					kept = append(kept, held{spans: spans[len(spans)-1], copy: clone(spans[len(spans)-1])})
					heldMu.Unlock()
				}
				follower.EndOffsetForEpoch(follower.LatestEpoch() - 1)
				follower.LogEndOffsetAndEpoch()
				_, _, _ = follower.MaxTimestamp(follower.LogEndOffset())
			}
		})
	}
	wg.Wait()

	assert.Equal(t, storage(t, leader), storage(t, follower))
	for epoch := int32(-1); epoch <= appends/50; epoch++ {
		le, lo := leader.EndOffsetForEpoch(epoch)
		fe, fo := follower.EndOffsetForEpoch(epoch)
		assert.Equal(t, []any{le, lo}, []any{fe, fo}, "EndOffsetForEpoch(%d)", epoch)
	}
	for _, h := range kept {
		require.Equal(t, h.copy, h.spans, "bytes a reader held are never overwritten")
	}
}

// FuzzAppendReplicated checks that no fetched records panic AppendReplicated or a truncation
// after it, that every refusal carries a Kafka code and changes nothing, and that an accepted
// append stores a prefix of the records. With fixCRC every whole batch is given the CRC it calls
// for, so that the fuzzer reaches the checks behind the CRC check.
func FuzzAppendReplicated(f *testing.F) {
	leader := NewPartition(Config{})
	appendInEpochs(f, leader, []int32{0, 0, 2}, []int{1, 3, 2})
	records, err := leader.AppendRecords(nil, 0, 1<<20, leader.LogEndOffset())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(records, int64(0), false)
	f.Add(records[:len(records)-3], int64(0), false)
	f.Add(records, int64(1), false)
	f.Add(at(encode(spec{n: 4}), 3, 1), int64(5), true)
	f.Add([]byte{}, int64(0), false)

	f.Fuzz(func(t *testing.T, records []byte, start int64, fixCRC bool) {
		if fixCRC {
			records = clone(records)
			for pos := 0; pos+HeaderSize <= len(records); {
				n := frameOverhead + int(int32(binary.BigEndian.Uint32(records[pos+posBatchLength:])))
				if n < HeaderSize || n > len(records)-pos {
					break
				}
				recrc(records[pos : pos+n])
				pos += n
			}
		}
		p := NewPartition(Config{LogStartOffset: start})
		before := p.LogEndOffset()
		res, err := p.AppendReplicated(records)
		if err != nil {
			var ke *kerr.Error
			require.ErrorAs(t, err, &ke)
			require.Equal(t, before, p.LogEndOffset())
			return
		}
		stored := storage(t, p)
		require.Equal(t, res.Bytes, len(stored))
		require.Equal(t, string(records[:res.Bytes]), string(stored))
		if res.Bytes > 0 {
			require.Equal(t, res.LastOffset+1, p.LogEndOffset())
			require.NoError(t, p.TruncateTo((res.FirstOffset+res.LastOffset)/2))
			_, err = SplitBatches(storage(t, p))
			if p.LogEndOffset() > p.LogStartOffset() {
				require.NoError(t, err)
			}
		}
	})
}

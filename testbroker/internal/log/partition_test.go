package log

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// readAll returns the batches a consumer may read, from offset to the high watermark.
func readAll(t *testing.T, p *Partition, offset int64) []Batch {
	t.Helper()
	out, err := p.AppendRecords(nil, offset, 1<<30, p.HighWatermark())
	require.NoError(t, err)
	if len(out) == 0 {
		return nil
	}
	return split(t, out)
}

func baseOffsets(batches []Batch) []int64 {
	var offsets []int64
	for _, b := range batches {
		offsets = append(offsets, b.Header.BaseOffset)
	}
	return offsets
}

func TestAppendAssignsOffsets(t *testing.T) {
	p := NewPartition(Config{LogStartOffset: 100})
	var inputs [][]byte
	for _, n := range []int{1, 3, 500, 2} {
		in := encode(spec{n: n})
		inputs = append(inputs, clone(in))
		res, err := p.Append(in, now)
		require.NoError(t, err)
		assert.Equal(t, AppendResult{BaseOffset: p.LogEndOffset() - int64(n), LogAppendTime: -1}, res)
	}
	assert.Equal(t, int64(100), p.LogStartOffset())
	assert.Equal(t, int64(606), p.LogEndOffset())
	assert.Equal(t, int64(100), p.HighWatermark(), "Append leaves the high watermark to the caller")

	p.SetHighWatermark(p.LogEndOffset())
	batches := readAll(t, p, 100)
	require.Len(t, batches, len(inputs))
	assert.Equal(t, []int64{100, 101, 104, 604}, baseOffsets(batches))
	for i, b := range batches {
		assert.Equal(t, int32(0), b.Header.PartitionLeaderEpoch)
		assert.Equal(t, inputs[i][16:], b.Bytes[16:], "the bytes after the leader epoch are stored as produced")
	}
}

func TestAppendRefusals(t *testing.T) {
	one := encode(spec{})
	corrupt := clone(one)
	corrupt[len(corrupt)-2] ^= 0x10

	tests := []struct {
		name    string
		cfg     Config
		records []byte
		want    *kerr.Error // nil: accepted
	}{
		{name: "empty", records: nil, want: kerr.InvalidRecord},
		{name: "bad CRC", records: corrupt, want: kerr.CorruptMessage},
		{name: "truncated", records: one[:len(one)-4], want: kerr.CorruptMessage},
		{name: "two batches", records: concat(one, one), want: kerr.InvalidRecord},
		{name: "two batches, the second corrupt", records: concat(one, corrupt), want: kerr.InvalidRecord},
		{name: "trailing bytes", records: concat(one, []byte{1, 2}), want: kerr.InvalidRecord},
		{name: "magic 1", records: edit(one, func(b []byte) { b[16] = 1 }), want: kerr.InvalidRecord},
		{name: "magic 5", records: edit(one, func(b []byte) { b[16] = 5 }), want: kerr.CorruptMessage},
		{name: "non-zero base offset", records: edit(one, func(b []byte) { b[7] = 5 }), want: kerr.InvalidRecord},
		{name: "count mismatch", records: edit(one, func(b []byte) { b[60] = 2 }), want: kerr.InvalidRecord},
		{name: "larger than max.message.bytes", cfg: Config{MaxMessageBytes: len(one) - 1}, records: one, want: kerr.MessageTooLarge},
		{name: "exactly max.message.bytes", cfg: Config{MaxMessageBytes: len(one)}, records: one},
		{name: "transactional", records: encode(spec{pid: 1, attrs: attrTransactional})},
		{name: "control", records: encode(spec{pid: 1, attrs: attrControl}), want: kerr.InvalidRecord},
		{name: "control marker", records: encode(spec{pid: 1, attrs: attrControl | attrTransactional}), want: kerr.InvalidRecord},
		{name: "idempotent with a negative sequence", records: encode(spec{pid: 1, seq: -3}), want: kerr.InvalidRecord},
		{name: "LogAppendTime type from the producer on a LogAppendTime topic", cfg: Config{LogAppendTime: true}, records: encode(spec{attrs: attrLogAppendTime}), want: kerr.InvalidTimestamp},
		{name: "LogAppendTime type without a timestamp on a CreateTime topic", records: encode(spec{attrs: attrLogAppendTime, timestamps: []int64{-1}}), want: kerr.InvalidTimestamp},
		{name: "LogAppendTime type with a timestamp on a CreateTime topic", records: encode(spec{attrs: attrLogAppendTime})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPartition(tt.cfg)
			p.SetHighWatermark(1)
			ch := p.Notify()
			_, err := p.Append(tt.records, now)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, int64(1), p.LogEndOffset())
				return
			}
			requireCode(t, tt.want, err)
			assert.Equal(t, int64(0), p.LogEndOffset(), "nothing is appended")
			assert.False(t, isClosed(ch), "a refused append wakes nobody")
			out, err := p.AppendRecords(nil, 0, 1<<20, 1)
			require.NoError(t, err)
			assert.Empty(t, out)
		})
	}
}

func TestAppendRecords(t *testing.T) {
	p := NewPartition(Config{})
	var sizes []int
	for _, n := range []int{3, 1, 5, 2} { // offsets 0-2, 3, 4-8, 9-10
		b := encode(spec{n: n})
		sizes = append(sizes, len(b))
		_, err := p.Append(b, now)
		require.NoError(t, err)
	}
	require.Equal(t, int64(11), p.LogEndOffset())

	tests := []struct {
		name     string
		offset   int64
		maxBytes int
		limit    int64
		want     []int64 // base offsets of the batches returned
		err      *kerr.Error
	}{
		{name: "everything", offset: 0, maxBytes: 1 << 20, limit: 11, want: []int64{0, 3, 4, 9}},
		{name: "from the middle of a batch", offset: 1, maxBytes: 1 << 20, limit: 11, want: []int64{0, 3, 4, 9}},
		{name: "from the middle of a later batch", offset: 6, maxBytes: 1 << 20, limit: 11, want: []int64{4, 9}},
		{name: "from a batch's last offset", offset: 8, maxBytes: 1 << 20, limit: 11, want: []int64{4, 9}},
		{name: "maxBytes below the first batch", offset: 0, maxBytes: 1, limit: 11, want: []int64{0}},
		{name: "zero maxBytes", offset: 4, maxBytes: 0, limit: 11, want: []int64{4}},
		{name: "maxBytes fitting two batches exactly", offset: 0, maxBytes: sizes[0] + sizes[1], limit: 11, want: []int64{0, 3}},
		{name: "maxBytes a byte short of three batches", offset: 0, maxBytes: sizes[0] + sizes[1] + sizes[2] - 1, limit: 11, want: []int64{0, 3}},
		{name: "limit at a batch boundary", offset: 0, maxBytes: 1 << 20, limit: 9, want: []int64{0, 3, 4}},
		{name: "limit inside a batch", offset: 0, maxBytes: 1 << 20, limit: 8, want: []int64{0, 3}},
		{name: "offset at the limit", offset: 9, maxBytes: 1 << 20, limit: 9},
		{name: "offset past the limit", offset: 10, maxBytes: 1 << 20, limit: 9},
		{name: "limit below the first batch's end", offset: 0, maxBytes: 1 << 20, limit: 2},
		{name: "offset at the log end", offset: 11, maxBytes: 1 << 20, limit: 11},
		{name: "offset past the log end", offset: 12, maxBytes: 1 << 20, limit: 11, err: kerr.OffsetOutOfRange},
		{name: "negative offset", offset: -1, maxBytes: 1 << 20, limit: 11, err: kerr.OffsetOutOfRange},
	}
	prefix := []byte("prefix")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := p.AppendRecords(clone(prefix), tt.offset, tt.maxBytes, tt.limit)
			require.Equal(t, prefix, out[:len(prefix)], "dst is extended, not overwritten")
			if tt.err != nil {
				requireCode(t, tt.err, err)
				assert.Len(t, out, len(prefix))
				return
			}
			require.NoError(t, err)
			if tt.want == nil {
				assert.Len(t, out, len(prefix))
				return
			}
			assert.Equal(t, tt.want, baseOffsets(split(t, out[len(prefix):])))
		})
	}
}

// TestAppendSpans checks that AppendSpans returns what AppendRecords returns, without copying:
// large batches as they were appended, small ones copied next to each other and merged.
func TestAppendSpans(t *testing.T) {
	p := NewPartition(Config{})
	large := encode(spec{n: 500})
	require.GreaterOrEqual(t, len(large), keepBytes)
	// Small batches of 100 records (about 2.3 KiB) fill the first 4 KiB chunk after one batch.
	inputs := [][]byte{encode(spec{n: 1}), encode(spec{n: 2}), large, encode(spec{n: 100}), encode(spec{n: 100}), encode(spec{n: 3})}
	var bases []int64
	for _, in := range inputs {
		res, err := p.Append(in, now)
		require.NoError(t, err)
		bases = append(bases, res.BaseOffset)
	}
	p.SetHighWatermark(p.LogEndOffset())

	spans, n, err := p.AppendSpans(nil, 0, 1<<30, p.HighWatermark())
	require.NoError(t, err)
	require.Len(t, spans, 4, "[1 2] in the first chunk, the large batch, [100] at the end of the first chunk, [100 3] in the second")
	assert.Len(t, spans[0], len(inputs[0])+len(inputs[1]))
	assert.Same(t, &large[0], &spans[1][0], "a large batch is stored without a copy")
	assert.Len(t, spans[3], len(inputs[4])+len(inputs[5]))
	for _, s := range spans {
		assert.Equal(t, len(s), cap(s), "a span cannot be appended to")
	}

	for _, offset := range append(bases, -1, p.LogEndOffset(), p.LogEndOffset()+1) {
		for _, maxBytes := range []int{0, len(inputs[0]) + len(inputs[1]), len(large) + 1, 1 << 30} {
			for _, limit := range []int64{bases[3], p.LogEndOffset()} {
				want, wantErr := p.AppendRecords(nil, offset, maxBytes, limit)
				spans, n, err = p.AppendSpans([][]byte{[]byte("kept")}, offset, maxBytes, limit)
				require.Equal(t, wantErr, err)
				require.Equal(t, []byte("kept"), spans[0], "dst is extended, not overwritten")
				got := concat(spans[1:]...)
				require.Equal(t, want, got, "offset %d, maxBytes %d, limit %d", offset, maxBytes, limit)
				require.Len(t, got, n)
			}
		}
	}
}

func TestAppendRecordsBelowLogStart(t *testing.T) {
	p := NewPartition(Config{LogStartOffset: 50})
	_, err := p.Append(encode(spec{}), now)
	require.NoError(t, err)

	_, err = p.AppendRecords(nil, 49, 1<<20, 51)
	requireCode(t, kerr.OffsetOutOfRange, err)
	out, err := p.AppendRecords(nil, 50, 1<<20, 51)
	require.NoError(t, err)
	assert.Equal(t, []int64{50}, baseOffsets(split(t, out)))
}

func TestIdempotentProducer(t *testing.T) {
	type step struct {
		spec spec
		want *kerr.Error // nil: accepted at base
		base int64
		dup  bool
	}
	seq := func(pid int64, epoch int16, seq int32, n int) spec {
		return spec{pid: pid, epoch: epoch, seq: seq, n: n}
	}
	const maxSeq = 1<<31 - 1
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "in order", steps: []step{
			{spec: seq(1, 0, 0, 2), base: 0},
			{spec: seq(1, 0, 2, 3), base: 2},
			{spec: seq(1, 0, 5, 1), base: 5},
		}},
		{name: "gap", steps: []step{
			{spec: seq(1, 0, 0, 2), base: 0},
			{spec: seq(1, 0, 3, 1), want: kerr.OutOfOrderSequenceNumber},
			{spec: seq(1, 0, 2, 1), base: 2},
		}},
		{name: "retry of the last batch", steps: []step{
			{spec: seq(1, 0, 0, 2), base: 0},
			{spec: seq(1, 0, 2, 3), base: 2},
			{spec: seq(1, 0, 2, 3), base: 2, dup: true},
			{spec: seq(1, 0, 5, 1), base: 5},
		}},
		{name: "retry of the fifth-last batch, not of the sixth", steps: []step{
			{spec: seq(1, 0, 0, 1), base: 0},
			{spec: seq(1, 0, 1, 1), base: 1},
			{spec: seq(1, 0, 2, 1), base: 2},
			{spec: seq(1, 0, 3, 1), base: 3},
			{spec: seq(1, 0, 4, 1), base: 4},
			{spec: seq(1, 0, 5, 1), base: 5},
			{spec: seq(1, 0, 1, 1), base: 1, dup: true},
			{spec: seq(1, 0, 0, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{name: "same first sequence, other range", steps: []step{
			{spec: seq(1, 0, 0, 2), base: 0},
			{spec: seq(1, 0, 0, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{name: "older epoch", steps: []step{
			{spec: seq(1, 3, 0, 1), base: 0},
			{spec: seq(1, 2, 1, 1), want: kerr.InvalidProducerEpoch},
			{spec: seq(1, 2, 0, 1), want: kerr.InvalidProducerEpoch},
			{spec: seq(1, 3, 1, 1), base: 1},
		}},
		{name: "newer epoch from 0", steps: []step{
			{spec: seq(1, 0, 0, 3), base: 0},
			{spec: seq(1, 1, 0, 1), base: 3},
			{spec: seq(1, 1, 1, 1), base: 4},
			{spec: seq(1, 0, 0, 3), want: kerr.InvalidProducerEpoch},
		}},
		{name: "newer epoch not from 0", steps: []step{
			{spec: seq(1, 0, 0, 1), base: 0},
			{spec: seq(1, 1, 5, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{name: "unknown producer at any sequence", steps: []step{
			{spec: seq(1, 4, 77, 1), base: 0},
			{spec: seq(1, 4, 78, 2), base: 1},
			{spec: seq(1, 4, 81, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{name: "sequence wraps inside a batch", steps: []step{
			{spec: seq(1, 0, maxSeq-1, 3), base: 0},
			{spec: seq(1, 0, maxSeq-1, 3), base: 0, dup: true},
			{spec: seq(1, 0, 1, 1), base: 3},
		}},
		{name: "sequence wraps between batches", steps: []step{
			{spec: seq(1, 0, maxSeq, 1), base: 0},
			{spec: seq(1, 0, 0, 1), base: 1},
		}},
		{name: "producers are independent", steps: []step{
			{spec: seq(1, 0, 0, 1), base: 0},
			{spec: seq(2, 0, 0, 1), base: 1},
			{spec: seq(2, 0, 0, 1), base: 1, dup: true},
			{spec: seq(1, 0, 1, 1), base: 2},
		}},
		{name: "batches without a producer are not checked", steps: []step{
			{spec: spec{}, base: 0},
			{spec: spec{}, base: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPartition(Config{})
			for i, s := range tt.steps {
				leo := p.LogEndOffset()
				res, err := p.Append(encode(s.spec), now)
				if s.want != nil {
					requireCode(t, s.want, err)
					assert.Equal(t, leo, p.LogEndOffset(), "step %d appended", i)
					continue
				}
				require.NoError(t, err, "step %d", i)
				assert.Equal(t, AppendResult{BaseOffset: s.base, LogAppendTime: -1, Duplicate: s.dup}, res, "step %d", i)
				if s.dup {
					assert.Equal(t, leo, p.LogEndOffset(), "step %d appended a duplicate", i)
				}
			}
		})
	}
}

func TestLogAppendTime(t *testing.T) {
	p := NewPartition(Config{LogAppendTime: true})
	in := encode(spec{n: 2, timestamps: []int64{5, 9}, pid: 1})
	res, err := p.Append(in, now)
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 0, LogAppendTime: now.UnixMilli()}, res)

	p.SetHighWatermark(p.LogEndOffset())
	batches := readAll(t, p, 0) // SplitBatches checks the recomputed CRC
	require.Len(t, batches, 1)
	h := batches[0].Header
	assert.NotZero(t, h.Attributes&attrLogAppendTime)
	assert.Equal(t, now.UnixMilli(), h.MaxTimestamp)
	assert.Equal(t, int64(5), h.BaseTimestamp, "only the type and MaxTimestamp change")
	assert.Equal(t, in[HeaderSize:], batches[0].Bytes[HeaderSize:], "the records are not re-encoded")

	res, err = p.Append(in, now.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 0, LogAppendTime: now.UnixMilli(), Duplicate: true}, res, "a retry reports the original append time")

	offset, ts, found := p.OffsetForTimestamp(now.UnixMilli(), p.HighWatermark())
	assert.True(t, found)
	assert.Equal(t, int64(0), offset)
	assert.Equal(t, now.UnixMilli(), ts)
}

func TestCreateTime(t *testing.T) {
	p := NewPartition(Config{})
	plain := encode(spec{n: 2, timestamps: []int64{5, 9}})
	stamped := encode(spec{timestamps: []int64{7}, attrs: attrLogAppendTime})
	for _, in := range [][]byte{plain, stamped} {
		res, err := p.Append(in, now)
		require.NoError(t, err)
		assert.Equal(t, int64(-1), res.LogAppendTime)
	}

	p.SetHighWatermark(p.LogEndOffset())
	batches := readAll(t, p, 0)
	require.Len(t, batches, 2)
	assert.Equal(t, plain[16:], batches[0].Bytes[16:], "a CreateTime batch keeps its covered bytes and CRC")
	h := batches[1].Header
	assert.Zero(t, h.Attributes&attrLogAppendTime, "the producer's LogAppendTime type is cleared, the CRC recomputed")
	assert.Equal(t, int64(7), h.MaxTimestamp)
}

func TestTimestampLookups(t *testing.T) {
	p := NewPartition(Config{})
	for _, ts := range [][]int64{{90, 100}, {300}, {150, 200, 120}, {300}, {50}} { // bases 0, 2, 3, 6, 7
		_, err := p.Append(encode(spec{n: len(ts), timestamps: ts}), now)
		require.NoError(t, err)
	}

	tests := []struct {
		name   string
		ts     int64
		limit  int64
		offset int64
		stamp  int64
		found  bool
	}{
		{name: "before everything", ts: 0, limit: 8, offset: 0, stamp: 100, found: true},
		{name: "a batch's max", ts: 100, limit: 8, offset: 0, stamp: 100, found: true},
		{name: "between batches", ts: 101, limit: 8, offset: 2, stamp: 300, found: true},
		{name: "the largest", ts: 300, limit: 8, offset: 2, stamp: 300, found: true},
		{name: "after everything", ts: 301, limit: 8, offset: -1, stamp: -1},
		{name: "answer at the limit", ts: 150, limit: 2, offset: -1, stamp: -1},
		{name: "answer below the limit", ts: 150, limit: 3, offset: 2, stamp: 300, found: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offset, stamp, found := p.OffsetForTimestamp(tt.ts, tt.limit)
			assert.Equal(t, tt.found, found)
			assert.Equal(t, tt.offset, offset)
			assert.Equal(t, tt.stamp, stamp)
		})
	}

	t.Run("max timestamp", func(t *testing.T) {
		offset, stamp, found := p.MaxTimestamp(8)
		assert.True(t, found)
		assert.Equal(t, int64(2), offset, "the first batch holding the largest timestamp")
		assert.Equal(t, int64(300), stamp)

		_, _, found = p.MaxTimestamp(2)
		assert.False(t, found, "hidden at or past the limit")

		_, _, found = NewPartition(Config{}).MaxTimestamp(0)
		assert.False(t, found, "empty log")
	})
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNotify(t *testing.T) {
	p := NewPartition(Config{})
	ch := p.Notify()
	assert.Equal(t, ch, p.Notify(), "waiters share the channel until a change")

	_, err := p.Append(encode(spec{pid: 1}), now)
	require.NoError(t, err)
	assert.True(t, isClosed(ch), "an append wakes waiters")

	ch = p.Notify()
	assert.False(t, isClosed(ch), "a new channel after the change")
	p.SetHighWatermark(0)
	assert.False(t, isClosed(ch), "setting the high watermark it already has")
	p.SetHighWatermark(1)
	assert.True(t, isClosed(ch), "a high watermark change wakes waiters")

	ch = p.Notify()
	_, err = p.Append(encode(spec{pid: 1}), now)
	require.NoError(t, err)
	assert.False(t, isClosed(ch), "a duplicate appends nothing and wakes nobody")
}

func TestNotifyWakesWaiter(t *testing.T) {
	p := NewPartition(Config{})
	woken := make(chan struct{})
	ch := p.Notify()
	go func() {
		<-ch
		close(woken)
	}()
	_, err := p.Append(encode(spec{}), now)
	require.NoError(t, err)
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken")
	}
}

func TestSetHighWatermarkClamps(t *testing.T) {
	p := NewPartition(Config{LogStartOffset: 10})
	_, err := p.Append(encode(spec{n: 3}), now)
	require.NoError(t, err)
	p.SetHighWatermark(100)
	assert.Equal(t, int64(13), p.HighWatermark())
	p.SetHighWatermark(0)
	assert.Equal(t, int64(10), p.HighWatermark())
}

func TestNegativeLogStartOffset(t *testing.T) {
	p := NewPartition(Config{LogStartOffset: -5})
	assert.Equal(t, int64(0), p.LogStartOffset())
	assert.Equal(t, int64(0), p.LogEndOffset())
}

func TestLeaderEpoch(t *testing.T) {
	p := NewPartition(Config{})
	_, err := p.Append(encode(spec{}), now)
	require.NoError(t, err)
	p.SetLeaderEpoch(7)
	_, err = p.Append(encode(spec{}), now)
	require.NoError(t, err)

	p.SetHighWatermark(p.LogEndOffset())
	batches := readAll(t, p, 0)
	require.Len(t, batches, 2)
	assert.Equal(t, int32(0), batches[0].Header.PartitionLeaderEpoch)
	assert.Equal(t, int32(7), batches[1].Header.PartitionLeaderEpoch)
}

func TestConcurrentAppendAndRead(t *testing.T) {
	const writers, appends = 8, 50
	p := NewPartition(Config{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range appends {
				res, err := p.Append(encode(spec{n: w%3 + 1}), now)
				if !assert.NoError(t, err) {
					return
				}
				p.SetHighWatermark(res.BaseOffset + int64(w%3+1))
			}
		})
		wg.Go(func() {
			for range appends {
				out, err := p.AppendRecords(nil, 0, 1<<20, p.HighWatermark())
				if !assert.NoError(t, err) {
					return
				}
				if len(out) > 0 {
					_, err = SplitBatches(out)
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()

	p.SetHighWatermark(p.LogEndOffset())
	want := int64(0)
	for w := range writers {
		want += int64(appends * (w%3 + 1))
	}
	require.Equal(t, want, p.LogEndOffset())
	next := int64(0)
	for _, b := range readAll(t, p, 0) {
		require.Equal(t, next, b.Header.BaseOffset, "offsets are contiguous")
		next = b.Header.LastOffset() + 1
	}
	assert.Equal(t, want, next)
}

// BenchmarkAppend appends batches of 500 records with 16-byte values, each a fresh copy as a
// request frame is, since the log keeps large batches. Each partition takes 4096 batches (about
// 50 MB) before the next replaces it, so memory stays bounded.
func BenchmarkAppend(b *testing.B) {
	const records, perPartition = 500, 4096
	plain := encode(spec{n: records})
	idempotent := make([][]byte, perPartition)
	for i := range idempotent {
		idempotent[i] = encode(spec{n: records, pid: 1, seq: int32(i * records)})
	}
	benchmarks := []struct {
		name  string
		cfg   Config
		batch func(i int) []byte
	}{
		{name: "CreateTime", batch: func(int) []byte { return plain }},
		{name: "LogAppendTime", cfg: Config{LogAppendTime: true}, batch: func(int) []byte { return plain }},
		{name: "Idempotent", batch: func(i int) []byte { return idempotent[i] }},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			var p *Partition
			n := 0
			for b.Loop() {
				if n%perPartition == 0 {
					p = NewPartition(bm.cfg)
				}
				if _, err := p.Append(clone(bm.batch(n%perPartition)), now); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*records), "ns/record")
		})
	}
}

package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

func TestAcquireWholeBatchesAndRecords(t *testing.T) {
	f := newFixture(t, defaults(), 3, 4, 5)
	prefix := []byte("prefix")
	ranges, records, err := f.p.Acquire([][]byte{prefix}, "m1", 5, 0, 1<<30, BatchOptimized)
	require.NoError(t, err)
	// The soft limit of 5 is rounded up to the end of the second batch.
	assert.Equal(t, []AcquiredRange{rng(0, 6, 1)}, ranges)
	require.Len(t, records, 3, "the batches are appended to dst, one slice each")
	require.Equal(t, prefix, records[0])
	first, err := log.SplitBatches(records[1])
	require.NoError(t, err)
	second, err := log.SplitBatches(records[2])
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Len(t, second, 1)
	assert.Equal(t, int64(0), first[0].Header.BaseOffset)
	assert.Equal(t, int64(6), second[0].Header.LastOffset())
	stored, err := f.log.AppendExtents(nil, 0, 1<<30, f.log.HighWatermark(), 6)
	require.NoError(t, err)
	assert.Same(t, &stored[0].Data[0], &records[1][0], "the batch is the log's storage, not a copy")

	ri := f.record(3)
	assert.Equal(t, RecordInfo{Offset: 3, State: Acquired, DeliveryCount: 1, Member: "m1", LockDeadline: t0.Add(30 * time.Second)}, ri)
	assert.Equal(t, int64(0), f.p.StartOffset())
	assert.Equal(t, int64(6), f.p.EndOffset())

	// The rest goes to the next fetch; then nothing is left.
	assert.Equal(t, []AcquiredRange{rng(7, 11, 1)}, f.acquire("m2", 100))
	assert.Empty(t, f.acquire("m2", 100))
	assert.Equal(t, 2, f.clk.Pending(), "one lock timer per acquired range")
}

func TestAcquireRespectsMaxBytesAndLimits(t *testing.T) {
	f := newFixture(t, defaults(), 2, 2, 2)
	// maxBytes of 1 still returns the first batch (KIP-74).
	ranges, records, err := f.p.Acquire(nil, "m", 100, 0, 1, BatchOptimized)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(0, 1, 1)}, ranges)
	require.Len(t, records, 1)
	batches, err := log.SplitBatches(records[0])
	require.NoError(t, err)
	assert.Len(t, batches, 1)

	for _, zero := range []struct{ maxRecords, maxBytes int }{{0, 100}, {100, 0}, {-1, 100}} {
		ranges, records, err := f.p.Acquire(nil, "m", zero.maxRecords, 0, zero.maxBytes, BatchOptimized)
		require.NoError(t, err)
		assert.Empty(t, ranges)
		assert.Empty(t, records)
	}
}

func TestAcquireStopsAtHighWatermark(t *testing.T) {
	f := newFixture(t, defaults(), 3)
	_, err := f.log.Append(encode(2, 16, t0.UnixMilli()), t0) // not yet below the high watermark
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(0, 2, 1)}, f.acquire("m", 100))
	assert.Empty(t, f.acquire("m", 100))
	f.log.SetHighWatermark(4)
	assert.Empty(t, f.acquire("m", 100), "a batch is delivered only once wholly below the high watermark")
	f.log.SetHighWatermark(5)
	assert.Equal(t, []AcquiredRange{rng(3, 4, 1)}, f.acquire("m", 100))
}

func TestManySmallBatches(t *testing.T) {
	sizes := make([]int, 300)
	for i := range sizes {
		sizes[i] = 1
	}
	f := newFixture(t, defaults(), sizes...)
	for o := range int64(300) {
		require.Equal(t, []AcquiredRange{rng(o, o, 1)}, f.acquire("m", 1))
	}
	require.NoError(t, f.ack("m", 299, 299, ackAccept))
	for o := range int64(299) {
		require.NoError(t, f.ack("m", o, o, ackAccept))
		if o < 298 {
			require.Equal(t, o+1, f.p.StartOffset())
			require.Equal(t, Acquired, f.record(o+1).State)
		}
	}
	assert.Equal(t, int64(300), f.p.StartOffset())
	assert.Empty(t, f.p.Records())
}

func TestBatchSizeShapesRanges(t *testing.T) {
	f := newFixture(t, defaults(), 3, 3, 3, 3)
	ranges, _, err := f.p.Acquire(nil, "m", 100, 5, 1<<30, BatchOptimized)
	require.NoError(t, err)
	// Cut at the first batch boundary once 5 records or more are in a range.
	assert.Equal(t, []AcquiredRange{rng(0, 5, 1), rng(6, 11, 1)}, ranges)
	assert.Equal(t, 2, f.clk.Pending())
}

func TestRecordLimitSplitsBatch(t *testing.T) {
	f := newFixture(t, defaults(), 10)
	ranges, records, err := f.p.Acquire(nil, "m1", 3, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(0, 2, 1)}, ranges)
	require.Len(t, records, 1)
	batches, err := log.SplitBatches(records[0])
	require.NoError(t, err)
	require.Len(t, batches, 1, "the whole log batch is sent")
	f.requireStates(0, st(Acquired, 1), st(Acquired, 1), st(Acquired, 1), st(Available, 0))
	assert.Equal(t, int64(9), f.p.EndOffset())

	ranges, _, err = f.p.Acquire(nil, "m2", 3, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(3, 5, 1)}, ranges)
	assert.Equal(t, "m2", f.record(4).Member)

	// BatchOptimized takes the rest, whatever the limit.
	assert.Equal(t, []AcquiredRange{rng(6, 9, 1)}, f.acquire("m3", 1))
}

func TestRecordLimitAcrossBatches(t *testing.T) {
	f := newFixture(t, defaults(), 2, 2, 2)
	ranges, _, err := f.p.Acquire(nil, "m", 3, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(0, 2, 1)}, ranges)
	f.requireStates(2, st(Acquired, 1), st(Available, 0))
	ranges, _, err = f.p.Acquire(nil, "m", 2, 0, 1<<30, RecordLimit)
	require.NoError(t, err)
	// The rest of the split batch, then the first record of a new one.
	assert.Equal(t, []AcquiredRange{rng(3, 3, 1), rng(4, 4, 1)}, ranges)
}

func TestDeliveryCountIncrementsPerAcquisition(t *testing.T) {
	f := newFixture(t, defaults(), 4)
	for want := int16(1); want <= 3; want++ {
		require.Equal(t, []AcquiredRange{rng(0, 3, want)}, f.acquire("m", 10))
		require.NoError(t, f.ack("m", 0, 3, ackRelease))
		f.requireStates(0, st(Available, want))
	}
}

func TestInFlightCap(t *testing.T) {
	set := defaults()
	set.MaxRecordLocks = 10
	f := newFixture(t, set, 6, 6, 6)
	// 10 records of capacity: the soft limit rounds up to the second batch's end.
	assert.Equal(t, []AcquiredRange{rng(0, 11, 1)}, f.acquire("m", 100))
	assert.Empty(t, f.acquire("m", 100), "at capacity")

	// A released record inside the in-flight range may be acquired again, nothing past it.
	require.NoError(t, f.p.Acknowledge("m", []AckBatch{{FirstOffset: 3, LastOffset: 3, Types: []int8{ackRelease}}}))
	assert.Equal(t, []AcquiredRange{rng(3, 3, 2)}, f.acquire("m2", 100))
	assert.Empty(t, f.acquire("m2", 100))

	// Accepting the front frees capacity.
	require.NoError(t, f.p.Acknowledge("m", []AckBatch{{FirstOffset: 0, LastOffset: 2, Types: []int8{ackAccept}}, {FirstOffset: 4, LastOffset: 11, Types: []int8{ackAccept}}}))
	assert.Equal(t, int64(3), f.p.StartOffset())
	require.NoError(t, f.ack("m2", 3, 3, ackAccept))
	assert.Equal(t, int64(12), f.p.StartOffset())
	assert.Equal(t, []AcquiredRange{rng(12, 17, 1)}, f.acquire("m", 100))
}

func TestThrottledRedelivery(t *testing.T) {
	// Limit 5: throttled from delivery count 3 (max(2, ceil(5/2))), alone on the last attempt.
	f := newFixture(t, defaults(), 8)
	var sizes []int64
	for range 40 {
		ranges := f.acquire("m", 500)
		if len(ranges) == 0 {
			break
		}
		var n int64
		for _, r := range ranges {
			n += r.LastOffset - r.FirstOffset + 1
			require.LessOrEqual(t, r.DeliveryCount, int16(5))
			require.NoError(t, f.ack("m", r.FirstOffset, r.LastOffset, ackRelease))
		}
		sizes = append(sizes, n)
	}
	// Three full deliveries; from delivery count 3 half the batch (8>>1) at a time, each half
	// followed by its records one per fetch on their last attempt.
	assert.Equal(t, []int64{8, 8, 8, 4, 1, 1, 1, 1, 4, 1, 1, 1, 1}, sizes)
	// Every record was archived on its fifth release.
	assert.Equal(t, int64(8), f.p.StartOffset())
	assert.Zero(t, f.p.Lag())
}

func TestThrottledRedeliveryOfASplitBatch(t *testing.T) {
	// A batch of 16 split by a record-limit acquisition while its counts are low, then a batch
	// of 4. With limit 5 the throttle starts at count 3: once acquisitions have raised the
	// first 12 records to count 3, they go at most 8 (16>>1) at a time, and nothing after them.
	f := newFixture(t, defaults(), 16, 4)
	for count := int16(1); count <= 3; count++ {
		got, _, err := f.p.Acquire(nil, "m", 12, 12, 1<<30, RecordLimit)
		require.NoError(t, err)
		require.Equal(t, []AcquiredRange{rng(0, 11, count)}, got)
		require.NoError(t, f.ack("m", 0, 11, ackRelease))
	}
	got, _, err := f.p.Acquire(nil, "m", 100, 100, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(0, 7, 4)}, got, "throttled records end the fetch")
}

func TestThrottledRedeliveryOfABatchSplitByAnAcknowledgement(t *testing.T) {
	// A batch of 16 delivered whole three times (limit 5: throttled from count 3), then split
	// by an acknowledgement that accepts 4 and releases 12: the released records go at most
	// 8 (16>>1) at a time, and nothing after them, not the batch of 4 behind.
	f := newFixture(t, defaults(), 16, 4)
	for count := int16(1); count <= 3; count++ {
		require.Equal(t, []AcquiredRange{rng(0, 15, count)}, f.acquire("m", 16))
		if count < 3 {
			require.NoError(t, f.ack("m", 0, 15, ackRelease))
		}
	}
	require.NoError(t, f.p.Acknowledge("m", []AckBatch{
		{FirstOffset: 0, LastOffset: 3, Types: []int8{ackAccept}},
		{FirstOffset: 4, LastOffset: 15, Types: []int8{ackRelease}},
	}))
	got, _, err := f.p.Acquire(nil, "m", 100, 100, 1<<30, RecordLimit)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(4, 11, 4)}, got, "throttled records end the fetch")
}

func TestThrottledRecordsStopTheFetch(t *testing.T) {
	// Limit 3 throttles from count 2 (and that is the last attempt but one).
	set := defaults()
	set.DeliveryCountLimit = 3
	f := newFixture(t, set, 2, 2)
	assert.Equal(t, []AcquiredRange{rng(0, 1, 1)}, f.acquire("m", 2))
	require.NoError(t, f.ack("m", 0, 1, ackRelease))
	// Count 1 is below the throttle: the released batch and the new one go together.
	assert.Equal(t, []AcquiredRange{rng(0, 1, 2), rng(2, 3, 1)}, f.acquire("m", 100))
	require.NoError(t, f.ack("m", 0, 1, ackRelease))
	require.NoError(t, f.ack("m", 2, 3, ackRelease))
	// Count 2 is throttled and on its last attempt: one record, nothing after it.
	assert.Equal(t, []AcquiredRange{rng(0, 0, 3)}, f.acquire("m", 100))
	assert.Equal(t, []AcquiredRange{rng(1, 1, 3)}, f.acquire("m", 100))
	assert.Equal(t, []AcquiredRange{rng(2, 3, 2)}, f.acquire("m", 100))
}

func TestAutoOffsetReset(t *testing.T) {
	// Nine single-record batches at offsets 100 to 108, an hour apart from t0; it is now t0+10h.
	const hwm = 109
	tests := []struct {
		reset string
		start int64
	}{
		{"latest", hwm},
		{"earliest", 100},
		{"by_duration:PT5H", 105},
		{"by_duration:pt18000s", 105}, // letters in either case
		{"by_duration:PT4H30M", 106},  // the first batch at or after t0+5h30
		{"by_duration:P1DT1H", 100},   // older than the log
		{"by_duration:PT0S", hwm},     // nothing that recent: the high watermark
		{"by_duration:-PT1H", hwm},    // negative: invalid, latest
		{"by_duration:PT5.5H", hwm},   // a fraction only on seconds: invalid, latest
		{"nonsense", hwm},
	}
	for _, tt := range tests {
		t.Run(tt.reset, func(t *testing.T) {
			lg := log.NewPartition(log.Config{LogStartOffset: 100})
			for h := range 9 {
				ts := t0.Add(time.Duration(h) * time.Hour)
				_, err := lg.Append(encode(1, 16, ts.UnixMilli()), ts)
				require.NoError(t, err)
			}
			lg.SetHighWatermark(lg.LogEndOffset())
			set := defaults()
			set.AutoOffsetReset = tt.reset
			p := NewPartition("g", lg, clock.NewManual(t0.Add(10*time.Hour)), func() Settings { return set })
			defer p.Close()
			assert.Equal(t, tt.start, p.StartOffset())
			assert.Equal(t, tt.start, p.EndOffset())
			assert.Equal(t, hwm-tt.start, p.Lag())
		})
	}
}

func TestParseISODuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true},
		{"P2D", 48 * time.Hour, true},
		{"P1DT2H3M4S", 26*time.Hour + 3*time.Minute + 4*time.Second, true},
		{"PT0.5S", 500 * time.Millisecond, true},
		{"PT1,25S", 1250 * time.Millisecond, true},
		{"PT-1H30M", -30 * time.Minute, true},
		{"-PT1M", -time.Minute, true},
		{"+PT1M", time.Minute, true},
		{"pt1m", time.Minute, true},
		{"PT-0.5S", -500 * time.Millisecond, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"P1DT", 0, false},
		{"PT1S1M", 0, false},
		{"P1H", 0, false},
		{"PT1D", 0, false},
		{"PT1.5M", 0, false},
		{"1H", 0, false},
		{"PT1", 0, false},
		{"PTH", 0, false},
		{"", 0, false},
		{"PT0.1234567891S", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseISODuration(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		if tt.ok {
			assert.Equal(t, tt.want, got, tt.in)
		}
	}
}

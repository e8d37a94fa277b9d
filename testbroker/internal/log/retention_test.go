package log

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// retentionLog holds four one-record batches with timestamps 1000, 2000, 3000 and 4000 at
// offsets 0-3, each len(batch) bytes, all below the high watermark but the last.
func retentionLog(t *testing.T) (*Partition, int) {
	t.Helper()
	p := NewPartition(Config{})
	var size int
	for _, ts := range []int64{1000, 2000, 3000, 4000} {
		b := encode(spec{timestamps: []int64{ts}})
		size = len(b)
		_, err := p.Append(b, now)
		require.NoError(t, err)
	}
	p.SetHighWatermark(3)
	return p, size
}

func TestApplyRetention(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	tests := []struct {
		name    string
		now     int64
		r       Retention
		deleted int
		start   int64
	}{
		{name: "unlimited", now: 1 << 40, r: Retention{Ms: -1, Bytes: -1}},
		{name: "nothing old enough", now: 1500, r: Retention{Ms: 1000, Bytes: -1}},
		{name: "exactly retention.ms old stays", now: 2000, r: Retention{Ms: 1000, Bytes: -1}},
		{name: "older than retention.ms", now: 2001, r: Retention{Ms: 1000, Bytes: -1}, deleted: 1, start: 1},
		{name: "never past the high watermark", now: 1 << 40, r: Retention{Ms: 0, Bytes: -1}, deleted: 3, start: 3},
		{name: "size", now: 0, r: Retention{Ms: -1, Bytes: 2}, deleted: 2, start: 2}, // Bytes in batches below
		{name: "time then size", now: 2001, r: Retention{Ms: 1000, Bytes: 1}, deleted: 3, start: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, size := retentionLog(t)
			r := tt.r
			if r.Bytes > 0 {
				r.Bytes *= int64(size) // in batches, as the table says
			}
			wake := p.Notify()
			assert.Equal(t, tt.deleted, p.ApplyRetention(at(tt.now), r))
			assert.Equal(t, tt.start, p.LogStartOffset())
			assert.Equal(t, tt.deleted > 0, isClosed(wake))
			_, err := p.AppendRecords(nil, tt.start, 1<<20, 3)
			require.NoError(t, err)
			if tt.start > 0 {
				_, err = p.AppendRecords(nil, tt.start-1, 1<<20, 3)
				requireCode(t, kerr.OffsetOutOfRange, err)
			}
		})
	}

	t.Run("everything, at the high watermark", func(t *testing.T) {
		p, _ := retentionLog(t)
		p.SetHighWatermark(4)
		assert.Equal(t, 4, p.ApplyRetention(at(1<<40), Retention{Ms: 0, Bytes: -1}))
		assert.Equal(t, []int64{4, 4, 4}, []int64{p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark()})
		_, found := p.OffsetForTimestamp(0, 4)
		assert.False(t, found, "no record is left to answer")
	})
}

package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// TestStartOffsetOutsideLog: an SPSO set below the log start offset or past the log end offset
// moves to the log start offset at the next acquisition, which then acquires from there.
func TestStartOffsetOutsideLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start int64
	}{
		{"below the log start offset", 3},
		{"past the log end offset", 100},
		{"negative", -5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, defaults())
			f.log = log.NewPartition(log.Config{LogStartOffset: 10})
			f.produce(4)
			f.p = newPartitionAt("g", f.log, f.clk, func() Settings { return f.set }, tc.start)
			t.Cleanup(f.p.Close)

			assert.Equal(t, tc.start, f.p.StartOffset(), "the SPSO stays as set until a fetch")
			assert.Equal(t, []AcquiredRange{rng(10, 13, 1)}, f.acquire("m", 10))
			assert.Equal(t, int64(10), f.p.StartOffset())
		})
	}
}

// TestStartOffsetInsideLog: an SPSO set inside the log, ahead of or behind the records, is
// where acquisition starts; one at the log end offset waits for new records.
func TestStartOffsetInsideLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, defaults(), 3, 3)
	f.p = newPartitionAt("g", f.log, f.clk, func() Settings { return f.set }, 6)
	t.Cleanup(f.p.Close)
	assert.Empty(t, f.acquire("m", 10))
	f.produce(2)
	assert.Equal(t, []AcquiredRange{rng(6, 7, 1)}, f.acquire("m", 10))

	q := newPartitionAt("g", f.log, f.clk, func() Settings { return f.set }, 4)
	t.Cleanup(q.Close)
	ranges, _, err := q.Acquire(nil, "m", 10, 0, 1<<30, BatchOptimized)
	require.NoError(t, err)
	assert.Equal(t, []AcquiredRange{rng(4, 7, 1)}, ranges, "the batch holding the SPSO is acquired from the SPSO")
}

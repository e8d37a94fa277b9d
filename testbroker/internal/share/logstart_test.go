package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogStartArchivesAvailable deletes records a share partition holds AVAILABLE (released)
// and ACKNOWLEDGED: the next acquisition finds its offset below the log start, archives the
// AVAILABLE ones, moves the SPSO and goes on from the log start.
func TestLogStartArchivesAvailable(t *testing.T) {
	f := newFixture(t, defaults(), 10, 10, 10) // log batches 0-9, 10-19, 20-29
	require.Equal(t, []AcquiredRange{rng(0, 19, 1)}, f.acquire("m", 20))
	require.NoError(t, f.ack("m", 0, 4, ackAccept))
	require.NoError(t, f.ack("m", 5, 19, ackRelease))
	require.Equal(t, int64(5), f.p.StartOffset())
	require.Equal(t, int64(30-5-0), f.p.Lag())

	_, err := f.log.IncrementLogStartOffset(15)
	require.NoError(t, err)
	got := f.acquire("m", 100)
	assert.Equal(t, []AcquiredRange{rng(15, 19, 2), rng(20, 29, 1)}, got, "acquisition goes on from the log start")
	assert.Equal(t, int64(15), f.p.StartOffset())
	f.requireStates(5, st(Archived, 1), st(Archived, 1))
	f.requireStates(14, st(Archived, 1), st(Acquired, 2))
	assert.Equal(t, int64(30-15), f.p.Lag(), "nothing past the SPSO is done")
}

// TestLogStartLeavesAcquired deletes records a member holds ACQUIRED: they stay ACQUIRED
// under their lock, an acknowledgement of them changes nothing, and the lock's expiry archives
// them; then the SPSO moves past whatever is done.
func TestLogStartLeavesAcquired(t *testing.T) {
	f := newFixture(t, defaults(), 10, 10) // 0-9, 10-19
	require.Equal(t, []AcquiredRange{rng(0, 9, 1)}, f.acquire("a", 10))
	require.Equal(t, []AcquiredRange{rng(10, 19, 1)}, f.acquire("b", 10))
	f.produce(10) // 20-29

	_, err := f.log.IncrementLogStartOffset(15)
	require.NoError(t, err)
	require.NoError(t, f.ack("b", 10, 19, ackRelease)) // 10-19 AVAILABLE: the next fetch is at 10
	got := f.acquire("c", 100)
	assert.Equal(t, []AcquiredRange{rng(15, 19, 2), rng(20, 29, 1)}, got)
	assert.Equal(t, int64(15), f.p.StartOffset())
	f.requireStates(10, st(Archived, 1))
	ri := f.record(0)
	assert.Equal(t, Acquired, ri.State, "an acquired record below the log start keeps its lock")
	assert.Equal(t, "a", ri.Member)

	require.NoError(t, f.ack("a", 0, 9, ackAccept))
	assert.Equal(t, Acquired, f.record(0).State, "records below the SPSO take no acknowledgement")

	require.NoError(t, f.ack("c", 15, 29, ackAccept))
	assert.Equal(t, int64(15), f.p.StartOffset(), "the acquired batch below holds the SPSO")
	f.clk.Advance(30 * time.Second)
	assert.Equal(t, int64(30), f.p.StartOffset(), "its lock expired: archived, and everything is done")
	assert.Empty(t, f.p.Records())
	assert.Zero(t, f.p.Lag())
}

// TestLogStartPastEverything deletes past every record the partition tracks.
func TestLogStartPastEverything(t *testing.T) {
	f := newFixture(t, defaults(), 10) // 0-9
	require.Equal(t, []AcquiredRange{rng(0, 9, 1)}, f.acquire("a", 10))
	f.produce(10, 10) // 10-19, 20-29
	_, err := f.log.IncrementLogStartOffset(25)
	require.NoError(t, err)

	got := f.acquire("b", 100)
	assert.Equal(t, []AcquiredRange{rng(25, 29, 1)}, got, "from the log start, inside its batch")
	start, end := f.p.StartOffset(), f.p.EndOffset()
	assert.Equal(t, []int64{25, 29}, []int64{start, end})
	assert.Equal(t, 10, f.p.ReleaseMember("a"))
	f.requireStates(0, st(Archived, 1), st(Archived, 1))
	require.NoError(t, f.ack("b", 25, 29, ackAccept))
	assert.Equal(t, int64(30), f.p.StartOffset())
}

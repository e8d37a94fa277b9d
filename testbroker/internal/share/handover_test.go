package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// handover hands f's partition over and makes the successor f's partition.
func (f *fixture) handover() *Partition {
	f.t.Helper()
	old := f.p
	f.p = old.Handover(nil)
	require.NotNil(f.t, f.p)
	f.t.Cleanup(f.p.Close)
	return old
}

func TestHandoverKeepsWhatKafkaPersists(t *testing.T) {
	f := newFixture(t, defaults(), 2, 3, 2, 2, 2)
	require.Equal(t, []AcquiredRange{rng(0, 1, 1)}, f.acquire("a", 2))
	require.Equal(t, []AcquiredRange{rng(2, 4, 1)}, f.acquire("a", 3))
	require.NoError(t, f.ack("a", 2, 4, ackRelease))
	require.Equal(t, []AcquiredRange{rng(2, 4, 2)}, f.acquire("b", 3))
	require.Equal(t, []AcquiredRange{rng(5, 6, 1)}, f.acquire("a", 2))
	require.NoError(t, f.ack("a", 5, 6, ackAccept))
	require.Equal(t, []AcquiredRange{rng(7, 8, 1)}, f.acquire("a", 2))
	require.NoError(t, f.ack("a", 7, 7, ackReject))
	require.Equal(t, []AcquiredRange{rng(9, 10, 1)}, f.acquire("a", 2))
	require.Equal(t, int64(10), f.p.EndOffset())

	f.handover()
	assert.Zero(t, f.clk.Pending(), "every lock of the old leader is stopped")
	assert.Equal(t, []RecordInfo{
		{Offset: 0, State: Available}, // acquired once: back to never delivered
		{Offset: 1, State: Available},
		{Offset: 2, State: Available, DeliveryCount: 1}, // acquired a second time: back to 1
		{Offset: 3, State: Available, DeliveryCount: 1},
		{Offset: 4, State: Available, DeliveryCount: 1},
		{Offset: 5, State: Acknowledged, DeliveryCount: 1},
		{Offset: 6, State: Acknowledged, DeliveryCount: 1},
		{Offset: 7, State: Archived, DeliveryCount: 1},
		{Offset: 8, State: Available},
	}, f.p.Records(), "offsets 9 and 10 were never persisted: the new leader does not track them")
	assert.Equal(t, int64(0), f.p.StartOffset())
	assert.Equal(t, int64(8), f.p.EndOffset())
	assert.Equal(t, int64(11-3), f.p.Lag())

	// Every record comes back with the delivery count its last owner saw.
	assert.Equal(t, []AcquiredRange{rng(0, 1, 1), rng(2, 4, 2), rng(8, 8, 1), rng(9, 10, 1)}, f.acquire("c", 20))
	require.NoError(t, f.p.Acknowledge("c", []AckBatch{{0, 4, []int8{ackAccept}}, {8, 10, []int8{ackAccept}}}))
	assert.Equal(t, int64(11), f.p.StartOffset())
	assert.Zero(t, f.p.Lag())
}

func TestHandoverFencesTheOldPartition(t *testing.T) {
	f := newFixture(t, defaults(), 3, 3)
	f.acquire("a", 3)
	wake := f.p.Notify()
	old := f.handover()

	select {
	case <-wake:
	default:
		t.Fatal("a waiter on the old partition is not woken")
	}
	requireShareError(t, old.Acknowledge("a", []AckBatch{{0, 2, []int8{ackAccept}}}), kerr.NotLeaderForPartition, "")
	ranges, records, err := old.Acquire(nil, "a", 10, 0, 1<<30, BatchOptimized)
	require.NoError(t, err)
	assert.Empty(t, ranges)
	assert.Empty(t, records)
	assert.Zero(t, old.ReleaseMember("a"))
	assert.Nil(t, old.Handover(nil), "a partition is handed over once")
	old.Close()
	requireShareError(t, old.Acknowledge("a", []AckBatch{{0, 2, []int8{ackAccept}}}), kerr.NotLeaderForPartition, "")

	// The successor is untouched by the old partition's fate.
	assert.Equal(t, []AcquiredRange{rng(0, 5, 1)}, f.acquire("b", 6), "offsets 0-2 are new again to the successor")
	assert.Nil(t, closedPartition(t).Handover(nil), "a closed partition has no successor")
}

// closedPartition returns a closed partition.
func closedPartition(t *testing.T) *Partition {
	f := newFixture(t, defaults(), 1)
	f.acquire("a", 1)
	f.p.Close()
	return f.p
}

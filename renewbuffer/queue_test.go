package renewbuffer

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStaleSlotsStayBounded checks that the slots left behind by records that leave Ready outside
// Take (replaced, removed, partition dropped, expired) never outnumber the live ones for long:
// after every operation, each structure holds at most twice as many slots as there are Ready
// records, and the hand-out order wastes at most half of its slice before head.
func TestStaleSlotsStayBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var b Buffer[int]
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for step := range 20000 {
		k := Key{Topic: "t", Partition: int32(r.IntN(4)), Offset: int64(r.IntN(500))}
		switch op := r.IntN(10); {
		case op < 4: // make k Ready
			b.Add(k, step)
			tk, _ := b.MarkSent(k, now)
			b.Complete(k, tk, time.Duration(r.IntN(1000))*time.Millisecond)
		case op < 6:
			b.Add(k, step)
		case op < 7:
			b.Remove(k)
		case op < 8 && step%50 == 0:
			b.RemovePartition(k.Topic, k.Partition)
		case op < 9:
			b.Take(now, r.IntN(5), nil)
		default:
			now = now.Add(time.Duration(r.IntN(100)) * time.Millisecond)
		}
		require.LessOrEqual(t, b.handOut.slots(), 2*b.ready, "step %d: hand-out slots", step)
		require.LessOrEqual(t, len(b.deadlines), 2*b.ready, "step %d: deadline slots", step)
		require.LessOrEqual(t, b.handOut.head, len(b.handOut.sorted)/2, "step %d: space before head", step)
	}
}

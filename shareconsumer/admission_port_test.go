package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAdmissionGrantsShareTheFreeRoom is what TestAdmission checked before the re-cut, asked of
// admission.grant: Process's ShareFetches share the room the workers and the queue leave, evenly
// among the leaders not fetching, at least one record while any room is left, never a negative
// count, and grants taken one after the other never add up to more than was free.
func TestAdmissionGrantsShareTheFreeRoom(t *testing.T) {
	t.Parallel()
	var a admission
	a.startPool(10, 10, time.Now()) // no rate measured yet: a queue of one record per worker
	assert.Equal(t, 20, a.capacity())
	leaders := func(n int) []int32 {
		ls := make([]int32, n)
		for i := range ls {
			ls[i] = int32(i)
		}
		return ls
	}
	for _, tc := range []struct {
		name     string
		held     int
		reserved int
		leaders  int
		want     int
	}{
		{"all free, one leader", 0, 0, 1, 20},
		{"held and reserved taken off", 10, 5, 1, 5},
		{"never negative", 15, 10, 1, 0},
		{"nothing free", 20, 0, 3, 0},
		{"an even share", 0, 0, 3, 6},
		{"at least one record", 18, 0, 3, 1},
		{"no leader known", 0, 0, 0, 20},
	} {
		a.reserved = tc.reserved
		assert.Equal(t, tc.want, a.grant(heldView{held: tc.held}, leaders(tc.leaders)), tc.name)
	}

	// Taken one after the other, the grants never add up to more than was free.
	a.reserved, a.fetchingLeaders = 0, 0
	hv, total := heldView{held: 13}, 0
	for l := range 3 {
		g := a.grant(hv, leaders(3))
		a.fetchSent(&session{node: int32(l)}, g)
		total += g
	}
	assert.Equal(t, 3, a.fetchingLeaders)
	assert.LessOrEqual(t, total, 7)
	assert.Equal(t, 0, a.grant(hv, leaders(3)), "nothing left to grant")
}

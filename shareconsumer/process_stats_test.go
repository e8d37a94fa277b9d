package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kshare/kshare/errors"
)

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	var pc processCounters
	for range 98 {
		pc.observeHandler(time.Millisecond)
	}
	pc.observeHandler(time.Second)
	pc.observeHandler(time.Second)
	h := pc.snapshot(0, 0, 0, 0).HandlerTime
	assert.Equal(t, uint64(100), h.Count)
	assert.Equal(t, 1600*time.Microsecond, h.Quantile(0.5), "the bucket above 1ms ends at 1.6ms")
	assert.Equal(t, 1638400*time.Microsecond, h.Quantile(0.99))
	assert.Equal(t, time.Duration(0), Histogram{}.Quantile(0.5))
	assert.Equal(t, 0, bucketOf(0))
	assert.Equal(t, 0, bucketOf(50*time.Microsecond))
	assert.Equal(t, 1, bucketOf(51*time.Microsecond))
	assert.Equal(t, histogramBuckets-1, bucketOf(1000*time.Hour))
}

func TestProcessStatsString(t *testing.T) {
	t.Parallel()
	s := ProcessStats{Delivered: 3, Accepted: 2, LocksLost: 1, LocksLostBy: map[errors.LockLostReason]uint64{errors.LockLeaderMoved: 1}, Held: 1}
	assert.Equal(t, "delivered=3 accepted=2 released=0 rejected=0 redeliveries=0 renew_requests=0 renewed=0 renew_failures=0 locks_lost=1 locks_lost_leader_moved=1 panics=0 dead_lettered=0 dead_letter_failures=0 held=1 handler_p50=0s handler_p99=0s", s.String())
}

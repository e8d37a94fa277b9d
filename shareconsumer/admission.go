package shareconsumer

// admission bounds what Process acquires: never more records than its workers plus its queue
// can hold, counting the records workers hold, those acquired and not handed out yet, and those
// the ShareFetches on their way may bring. A record waits for a worker no longer than the
// queue takes to drain, so no lock runs down in a queue.
type admission struct {
	capacity int // workers plus the queue bound
}

// free returns how many more records may be acquired now.
func (a admission) free(held, buffered, reserved int) int {
	return max(0, a.capacity-held-buffered-reserved)
}

// grant returns how many records the next ShareFetch to a leader may ask for: an even share of
// free among the leaders not fetching yet (idle, this one included), at least one while any is
// free. Grants are taken one after the other, each reserving its records, so their sum never
// exceeds what was free.
func (a admission) grant(free, idle int) int {
	if free <= 0 {
		return 0
	}
	return max(1, free/max(1, idle))
}

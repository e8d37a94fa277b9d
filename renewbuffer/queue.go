package renewbuffer

import (
	"cmp"
	"slices"
	"time"
)

// The two structures below hold the Ready entries. An entry that leaves Ready other than through
// them keeps its slot, which is stale from then on (an entry never becomes Ready twice, so a slot
// is stale exactly when its entry's state is not Ready): skipped when met, and dropped in bulk by
// compact once stale slots outnumber live ones, which keeps every operation O(log n) amortised
// without removing from the middle of either structure.

// compareReady orders Ready entries as Take hands them out: by round, then by key.
func compareReady[T any](a, b *entry[T]) int {
	if c := cmp.Compare(a.round, b.round); c != 0 {
		return c
	}
	return compareKeys(a.key, b.key)
}

// handOut keeps the Ready entries in the order Take hands them out.
type handOut[T any] struct {
	sorted []*entry[T] // the earlier rounds, in hand-out order from head on
	head   int
	fresh  []*entry[T] // the current round, in no order until seal
}

func live[T any](e *entry[T]) bool { return e.state == Ready }

// slots returns the number of slots, live or stale.
func (q *handOut[T]) slots() int { return len(q.sorted) - q.head + len(q.fresh) }

// seal ends the current round: its entries, sorted by key, go after those of earlier rounds.
func (q *handOut[T]) seal() {
	if len(q.fresh) == 0 {
		return
	}
	q.fresh = slices.DeleteFunc(q.fresh, func(e *entry[T]) bool { return !live(e) })
	slices.SortFunc(q.fresh, func(a, b *entry[T]) int { return compareKeys(a.key, b.key) })
	q.sorted = append(q.sorted, q.fresh...)
	clear(q.fresh)
	q.fresh = q.fresh[:0]
}

// pop removes and returns the first live entry of the sealed rounds, or nil.
func (q *handOut[T]) pop() *entry[T] {
	for q.head < len(q.sorted) {
		e := q.sorted[q.head]
		q.sorted[q.head] = nil
		q.head++
		if live(e) {
			return e
		}
	}
	q.sorted, q.head = q.sorted[:0], 0
	return nil
}

// compact drops the stale slots, and the space before head, when they are the majority.
func (q *handOut[T]) compact(ready int) {
	if q.slots() <= 2*ready && q.head <= len(q.sorted)/2 {
		return
	}
	n := 0
	for _, e := range q.sorted[q.head:] {
		if live(e) {
			q.sorted[n] = e
			n++
		}
	}
	clear(q.sorted[n:])
	q.sorted, q.head = q.sorted[:n], 0
	q.fresh = slices.DeleteFunc(q.fresh, func(e *entry[T]) bool { return !live(e) })
}

// deadlines is a binary min-heap of the Ready entries by deadline. Slots carry the deadline so
// that sifting does not visit the entries.
type deadlines[T any] []deadlineSlot[T]

type deadlineSlot[T any] struct {
	deadline time.Time
	e        *entry[T]
}

func (h *deadlines[T]) push(e *entry[T]) {
	*h = append(*h, deadlineSlot[T]{e.deadline, e})
	h.up(len(*h) - 1)
}

// first returns the live entry with the earliest deadline, or nil, dropping the stale slots
// before it.
func (h *deadlines[T]) first() *entry[T] {
	for len(*h) > 0 {
		if e := (*h)[0].e; live(e) {
			return e
		}
		h.pop()
	}
	return nil
}

// pop removes the first slot.
func (h *deadlines[T]) pop() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	s[n] = deadlineSlot[T]{}
	*h = s[:n]
	h.down(0)
}

// compact drops the stale slots when they are the majority.
func (h *deadlines[T]) compact(ready int) {
	if len(*h) <= 2*ready {
		return
	}
	*h = slices.DeleteFunc(*h, func(s deadlineSlot[T]) bool { return !live(s.e) })
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h deadlines[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].deadline.Before(h[p].deadline) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h deadlines[T]) down(i int) {
	for {
		m := 2*i + 1
		if m >= len(h) {
			return
		}
		if r := m + 1; r < len(h) && h[r].deadline.Before(h[m].deadline) {
			m = r
		}
		if !h[m].deadline.Before(h[i].deadline) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

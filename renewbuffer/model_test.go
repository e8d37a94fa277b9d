package renewbuffer_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/renewbuffer"
)

// model is the Buffer's specification written as plainly as possible: a slice of entries,
// scanned linearly by every operation.
type model struct {
	entries []*modelEntry
	round   int // Takes so far
}

type modelEntry struct {
	key      renewbuffer.Key
	v        int
	state    renewbuffer.State
	ticket   renewbuffer.Ticket
	sentAt   time.Time
	deadline time.Time
	round    int // the number of Takes before the entry became Ready
}

func (m *model) find(k renewbuffer.Key) (int, *modelEntry) {
	for i, e := range m.entries {
		if e.key == k {
			return i, e
		}
	}
	return -1, nil
}

func (m *model) remove(i int) { m.entries = slices.Delete(m.entries, i, i+1) }

func (m *model) add(k renewbuffer.Key, v int) {
	if i, _ := m.find(k); i >= 0 {
		m.remove(i)
	}
	m.entries = append(m.entries, &modelEntry{key: k, v: v, state: renewbuffer.Queued})
}

func (m *model) markSent(k renewbuffer.Key, at time.Time, issued renewbuffer.Ticket) bool {
	_, e := m.find(k)
	if e == nil || e.state != renewbuffer.Queued {
		return false
	}
	e.state, e.ticket, e.sentAt = renewbuffer.Sent, issued, at
	return true
}

func (m *model) complete(k renewbuffer.Key, t renewbuffer.Ticket, d time.Duration) bool {
	_, e := m.find(k)
	if e == nil || e.state != renewbuffer.Sent || e.ticket != t {
		return false
	}
	e.state, e.deadline, e.round = renewbuffer.Ready, e.sentAt.Add(d), m.round
	return true
}

func (m *model) fail(k renewbuffer.Key, t renewbuffer.Ticket) (int, bool) {
	i, e := m.find(k)
	if e == nil || e.state != renewbuffer.Sent || e.ticket != t {
		return 0, false
	}
	m.remove(i)
	return e.v, true
}

func (m *model) removeKey(k renewbuffer.Key) (int, bool) {
	i, e := m.find(k)
	if e == nil {
		return 0, false
	}
	m.remove(i)
	return e.v, true
}

func (m *model) removePartition(topic string, partition int32) []renewbuffer.Key {
	var keys []renewbuffer.Key
	m.entries = slices.DeleteFunc(m.entries, func(e *modelEntry) bool {
		if e.key.Topic == topic && e.key.Partition == partition {
			keys = append(keys, e.key)
			return true
		}
		return false
	})
	slices.SortFunc(keys, func(a, b renewbuffer.Key) int { return cmp.Compare(a.Offset, b.Offset) })
	return keys
}

// handOutOrder is the order of Take: round, then topic, partition, offset.
func handOutOrder(a, b *modelEntry) int {
	return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.key.Topic, b.key.Topic),
		cmp.Compare(a.key.Partition, b.key.Partition), cmp.Compare(a.key.Offset, b.key.Offset))
}

func (m *model) take(now time.Time, limit int, dst []int) ([]int, []renewbuffer.Key) {
	m.round++
	var gone, ready []*modelEntry
	for _, e := range m.entries {
		if e.state != renewbuffer.Ready {
			continue
		}
		if e.deadline.After(now) {
			ready = append(ready, e)
		} else {
			gone = append(gone, e)
		}
	}
	slices.SortFunc(gone, handOutOrder)
	slices.SortFunc(ready, handOutOrder)
	ready = ready[:min(len(ready), max(limit, 0))]
	var expired []renewbuffer.Key
	for _, e := range gone {
		expired = append(expired, e.key)
	}
	for _, e := range ready {
		dst = append(dst, e.v)
	}
	m.entries = slices.DeleteFunc(m.entries, func(e *modelEntry) bool {
		return slices.Contains(gone, e) || slices.Contains(ready, e)
	})
	return dst, expired
}

func (m *model) get(k renewbuffer.Key) (int, renewbuffer.State, time.Time, bool) {
	_, e := m.find(k)
	if e == nil {
		return 0, 0, time.Time{}, false
	}
	if e.state != renewbuffer.Ready {
		return e.v, e.state, time.Time{}, true
	}
	return e.v, e.state, e.deadline, true
}

func (m *model) queuedOffsets(topic string, partition int32) []int64 {
	var offsets []int64
	for _, e := range m.entries {
		if e.key.Topic == topic && e.key.Partition == partition && e.state == renewbuffer.Queued {
			offsets = append(offsets, e.key.Offset)
		}
	}
	slices.Sort(offsets)
	return offsets
}

func (m *model) count(s renewbuffer.State) int {
	n := 0
	for _, e := range m.entries {
		if e.state == s {
			n++
		}
	}
	return n
}

func (m *model) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, e := range m.entries {
		if e.state == renewbuffer.Ready && (!found || e.deadline.Before(next)) {
			next, found = e.deadline, true
		}
	}
	return next, found
}

func (m *model) ticketOf(k renewbuffer.Key) renewbuffer.Ticket {
	if _, e := m.find(k); e != nil {
		return e.ticket
	}
	return 0
}

// chooser supplies the choices of a random run: from math/rand/v2 in the property test, from the
// fuzzer's bytes in the fuzz target.
type chooser interface {
	intn(n int) int // in [0, n)
	done() bool
}

type randChooser struct {
	r     *rand.Rand
	steps int
}

func (c *randChooser) intn(n int) int { return c.r.IntN(n) }
func (c *randChooser) done() bool     { c.steps--; return c.steps < 0 }

type byteChooser struct{ data []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	v := int(c.data[0]) % n
	c.data = c.data[1:]
	return v
}
func (c *byteChooser) done() bool { return len(c.data) == 0 }

var (
	modelTopics = []string{"a", "b"}
	modelKeys   = func() []renewbuffer.Key {
		var keys []renewbuffer.Key
		for _, topic := range modelTopics {
			for p := range int32(3) {
				for o := range int64(8) {
					keys = append(keys, key(topic, p, o))
				}
			}
		}
		return keys
	}()
)

// runModel applies random operations to a Buffer and to the model and requires every result,
// and the whole observable state after every step, to agree.
func runModel(t *testing.T, c chooser) {
	var b renewbuffer.Buffer[int]
	var m model
	var issued []renewbuffer.Ticket
	now := t0
	nextV := 0
	pickKey := func() renewbuffer.Key { return modelKeys[c.intn(len(modelKeys))] }
	// pickTicket is usually the one that matches, sometimes a stale or unknown one.
	pickTicket := func(k renewbuffer.Key) renewbuffer.Ticket {
		switch r := c.intn(10); {
		case r < 7:
			return m.ticketOf(k)
		case r < 9 && len(issued) > 0:
			return issued[c.intn(len(issued))]
		default:
			return renewbuffer.Ticket(c.intn(3))
		}
	}
	for step := 0; !c.done(); step++ {
		var desc string
		switch op := c.intn(100); {
		case op < 20:
			k := pickKey()
			nextV++
			desc = fmt.Sprintf("Add(%v, %d)", k, nextV)
			b.Add(k, nextV)
			m.add(k, nextV)
		case op < 40:
			k := pickKey()
			desc = fmt.Sprintf("MarkSent(%v, t0+%v)", k, now.Sub(t0))
			tk, ok := b.MarkSent(k, now)
			require.Equal(t, m.markSent(k, now, tk), ok, desc)
			if ok {
				for _, old := range issued {
					require.NotEqual(t, old, tk, "%s: ticket issued twice", desc)
				}
				require.NotZero(t, tk, desc)
				issued = append(issued, tk)
			} else {
				require.Zero(t, tk, desc)
			}
		case op < 58:
			k := pickKey()
			tk := pickTicket(k)
			d := time.Duration(c.intn(100)-5) * time.Millisecond
			desc = fmt.Sprintf("Complete(%v, %d, %v)", k, tk, d)
			require.Equal(t, m.complete(k, tk, d), b.Complete(k, tk, d), desc)
		case op < 64:
			k := pickKey()
			tk := pickTicket(k)
			desc = fmt.Sprintf("Fail(%v, %d)", k, tk)
			wv, wok := m.fail(k, tk)
			v, ok := b.Fail(k, tk)
			require.Equal(t, []any{wv, wok}, []any{v, ok}, desc)
		case op < 70:
			k := pickKey()
			desc = fmt.Sprintf("Remove(%v)", k)
			wv, wok := m.removeKey(k)
			v, ok := b.Remove(k)
			require.Equal(t, []any{wv, wok}, []any{v, ok}, desc)
		case op < 72:
			topic, p := modelTopics[c.intn(len(modelTopics))], int32(c.intn(4))
			desc = fmt.Sprintf("RemovePartition(%s, %d)", topic, p)
			require.Equal(t, m.removePartition(topic, p), b.RemovePartition(topic, p), desc)
		case op < 88:
			limit := c.intn(4) - 1
			desc = fmt.Sprintf("Take(t0+%v, %d)", now.Sub(t0), limit)
			wout, wexp := m.take(now, limit, []int{-1})
			out, exp := b.Take(now, limit, []int{-1})
			require.Equal(t, wout, out, desc)
			require.Equal(t, wexp, exp, desc)
		default:
			now = now.Add(time.Duration(c.intn(20)) * time.Millisecond)
			desc = fmt.Sprintf("now = t0+%v", now.Sub(t0))
		}

		desc = fmt.Sprintf("after step %d, %s", step, desc)
		require.Equal(t, len(m.entries), b.Len(), desc)
		require.Equal(t, m.count(renewbuffer.Ready), b.Ready(), desc)
		require.Equal(t, m.count(renewbuffer.Queued)+m.count(renewbuffer.Sent), b.Pending(), desc)
		require.Equal(t, m.count(renewbuffer.Queued), b.Queued(), desc)
		wnext, wok := m.nextDeadline()
		next, ok := b.NextDeadline()
		require.Equal(t, []any{wnext, wok}, []any{next, ok}, desc)
		for _, k := range modelKeys {
			wv, ws, wd, wok := m.get(k)
			v, s, d, ok := b.Get(k)
			if wv != v || ws != s || !wd.Equal(d) || wok != ok { // require.Equal is slow enough to matter here
				require.Equal(t, []any{wv, ws, wd, wok}, []any{v, s, d, ok}, "%s: Get(%v)", desc, k)
			}
		}
		for _, topic := range modelTopics {
			for p := range int32(3) {
				require.Equal(t, m.queuedOffsets(topic, p), b.QueuedOffsets(topic, p, nil), "%s: QueuedOffsets(%s, %d)", desc, topic, p)
			}
		}
	}
}

func TestBufferMatchesModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			runModel(t, &randChooser{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), steps: 4000})
		})
	}
}

func FuzzBufferMatchesModel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 25, 0, 45, 0, 0, 1, 80, 4, 95, 10, 80, 5})
	f.Add([]byte{0, 3, 0, 3, 25, 3, 25, 3, 45, 3, 0, 30, 45, 3, 0, 30, 60, 3, 0, 66, 3, 70, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, &byteChooser{data: data})
	})
}

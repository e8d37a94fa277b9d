package renewbuffer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/renewbuffer"
)

var (
	t0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lock = 30 * time.Second
)

func key(topic string, partition int32, offset int64) renewbuffer.Key {
	return renewbuffer.Key{Topic: topic, Partition: partition, Offset: offset}
}

// hold brings k to state s, holding v, with the send at `at` and the lock duration lock.
func hold(t *testing.T, b *renewbuffer.Buffer[string], k renewbuffer.Key, v string, s renewbuffer.State, at time.Time) renewbuffer.Ticket {
	t.Helper()
	b.Add(k, v)
	if s == renewbuffer.Queued {
		return 0
	}
	tk, ok := b.MarkSent(k, at)
	require.True(t, ok)
	if s == renewbuffer.Ready {
		require.True(t, b.Complete(k, tk, lock))
	}
	return tk
}

// counts is what Len, Ready, Pending and Queued report.
type counts struct{ len, ready, pending, queued int }

func countsOf(b *renewbuffer.Buffer[string]) counts {
	return counts{b.Len(), b.Ready(), b.Pending(), b.Queued()}
}

func TestAdd(t *testing.T) {
	k := key("t", 0, 7)
	for _, tc := range []struct {
		name string
		over renewbuffer.State // state of the entry Add replaces; 0: none
	}{
		{"new key", 0},
		{"over Queued", renewbuffer.Queued},
		{"over Sent", renewbuffer.Sent},
		{"over Ready", renewbuffer.Ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b renewbuffer.Buffer[string]
			var old renewbuffer.Ticket
			if tc.over != 0 {
				old = hold(t, &b, k, "old", tc.over, t0)
			}
			b.Add(k, "new")

			v, s, deadline, ok := b.Get(k)
			require.True(t, ok)
			assert.Equal(t, "new", v)
			assert.Equal(t, renewbuffer.Queued, s)
			assert.True(t, deadline.IsZero())
			assert.Equal(t, counts{len: 1, pending: 1, queued: 1}, countsOf(&b))
			assert.Equal(t, []int64{7}, b.QueuedOffsets("t", 0, nil))
			_, has := b.NextDeadline()
			assert.False(t, has)
			out, expired := b.Take(t0, 10, nil)
			assert.Empty(t, out)
			assert.Empty(t, expired)

			if tc.over == renewbuffer.Sent {
				// The answer to the superseded send changes nothing, success or failure.
				assert.False(t, b.Complete(k, old, lock))
				_, failed := b.Fail(k, old)
				assert.False(t, failed)
				_, s, _, _ = b.Get(k)
				assert.Equal(t, renewbuffer.Queued, s)
			}
		})
	}
}

func TestMarkSent(t *testing.T) {
	k := key("t", 1, 3)
	for _, tc := range []struct {
		name  string
		state renewbuffer.State // 0: not held
		ok    bool
	}{
		{"Queued", renewbuffer.Queued, true},
		{"not held", 0, false},
		{"already Sent", renewbuffer.Sent, false},
		{"Ready", renewbuffer.Ready, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b renewbuffer.Buffer[string]
			if tc.state != 0 {
				hold(t, &b, k, "v", tc.state, t0)
			}
			before := countsOf(&b)
			_, s, _, _ := b.Get(k)
			tk, ok := b.MarkSent(k, t0.Add(time.Second))
			assert.Equal(t, tc.ok, ok)
			if !ok {
				assert.Zero(t, tk)
				assert.Equal(t, before, countsOf(&b))
				_, after, _, _ := b.Get(k)
				assert.Equal(t, s, after)
				return
			}
			assert.NotZero(t, tk)
			_, s, _, _ = b.Get(k)
			assert.Equal(t, renewbuffer.Sent, s)
			assert.Equal(t, counts{len: 1, pending: 1}, countsOf(&b))
			assert.Empty(t, b.QueuedOffsets("t", 1, nil))
		})
	}
}

func TestMarkSentTicketsAreUnique(t *testing.T) {
	var b renewbuffer.Buffer[string]
	seen := map[renewbuffer.Ticket]bool{}
	k := key("t", 0, 0)
	for i := range 100 {
		b.Add(k, "v")
		b.Add(key("u", 0, int64(i)), "w")
		for _, k := range []renewbuffer.Key{k, key("u", 0, int64(i))} {
			tk, ok := b.MarkSent(k, t0)
			require.True(t, ok)
			require.NotZero(t, tk)
			require.False(t, seen[tk], "ticket %d issued twice", tk)
			seen[tk] = true
		}
	}
}

func TestComplete(t *testing.T) {
	k := key("t", 0, 5)
	for _, tc := range []struct {
		name string
		// prepare returns the ticket to complete with.
		prepare func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket
		ok      bool
	}{
		{"Sent, its ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			return hold(t, b, k, "v", renewbuffer.Sent, t0)
		}, true},
		{"Sent, another key's ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			hold(t, b, k, "v", renewbuffer.Sent, t0)
			return hold(t, b, key("t", 0, 6), "w", renewbuffer.Sent, t0)
		}, false},
		{"Sent, zero ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			hold(t, b, k, "v", renewbuffer.Sent, t0)
			return 0
		}, false},
		{"renewed again and sent again, the first send's ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			old := hold(t, b, k, "v", renewbuffer.Sent, t0)
			hold(t, b, k, "v", renewbuffer.Sent, t0)
			return old
		}, false},
		{"Queued", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			hold(t, b, k, "v", renewbuffer.Queued, t0)
			return 1
		}, false},
		{"already Ready, same ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			return hold(t, b, k, "v", renewbuffer.Ready, t0)
		}, false},
		{"removed", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			tk := hold(t, b, k, "v", renewbuffer.Sent, t0)
			b.Remove(k)
			return tk
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b renewbuffer.Buffer[string]
			tk := tc.prepare(t, &b)
			_, s, d, held := b.Get(k)
			before := countsOf(&b)

			assert.Equal(t, tc.ok, b.Complete(k, tk, 10*time.Second))
			if !tc.ok {
				_, s2, d2, held2 := b.Get(k)
				assert.Equal(t, []any{s, d, held}, []any{s2, d2, held2}, "a refused Complete changes nothing")
				assert.Equal(t, before, countsOf(&b))
				return
			}
			v, s, deadline, _ := b.Get(k)
			assert.Equal(t, "v", v)
			assert.Equal(t, renewbuffer.Ready, s)
			assert.Equal(t, t0.Add(10*time.Second), deadline, "deadline counts from the send")
			assert.Equal(t, counts{len: 1, ready: 1}, countsOf(&b))
			next, has := b.NextDeadline()
			assert.True(t, has)
			assert.Equal(t, deadline, next)
		})
	}
}

func TestCompleteNonPositiveLockTimeoutExpiresAtNextTake(t *testing.T) {
	for _, timeout := range []time.Duration{0, -time.Second} {
		var b renewbuffer.Buffer[string]
		k := key("t", 0, 1)
		b.Add(k, "v")
		tk, _ := b.MarkSent(k, t0)
		require.True(t, b.Complete(k, tk, timeout))
		out, expired := b.Take(t0, 10, nil)
		assert.Empty(t, out)
		assert.Equal(t, []renewbuffer.Key{k}, expired)
		assert.Zero(t, b.Len())
	}
}

func TestFail(t *testing.T) {
	k := key("t", 2, 9)
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket
		ok      bool
	}{
		{"Sent, its ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			return hold(t, b, k, "v", renewbuffer.Sent, t0)
		}, true},
		{"Sent, wrong ticket", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			return hold(t, b, k, "v", renewbuffer.Sent, t0) + 1
		}, false},
		{"renewed again since", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			tk := hold(t, b, k, "v", renewbuffer.Sent, t0)
			b.Add(k, "v")
			return tk
		}, false},
		{"Queued", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			hold(t, b, k, "v", renewbuffer.Queued, t0)
			return 1
		}, false},
		{"Ready", func(t *testing.T, b *renewbuffer.Buffer[string]) renewbuffer.Ticket {
			return hold(t, b, k, "v", renewbuffer.Ready, t0)
		}, false},
		{"not held", func(*testing.T, *renewbuffer.Buffer[string]) renewbuffer.Ticket { return 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b renewbuffer.Buffer[string]
			tk := tc.prepare(t, &b)
			before := countsOf(&b)
			v, ok := b.Fail(k, tk)
			assert.Equal(t, tc.ok, ok)
			if !ok {
				assert.Zero(t, v)
				assert.Equal(t, before, countsOf(&b))
				return
			}
			assert.Equal(t, "v", v)
			_, _, _, held := b.Get(k)
			assert.False(t, held)
			assert.Equal(t, counts{}, countsOf(&b))
			out, expired := b.Take(t0, 10, nil)
			assert.Empty(t, out, "a failed renew is never handed out")
			assert.Empty(t, expired)
		})
	}
}

func TestRemove(t *testing.T) {
	k := key("t", 0, 1)
	for _, state := range []renewbuffer.State{renewbuffer.Queued, renewbuffer.Sent, renewbuffer.Ready} {
		t.Run(state.String(), func(t *testing.T) {
			var b renewbuffer.Buffer[string]
			tk := hold(t, &b, k, "v", state, t0)
			hold(t, &b, key("t", 0, 2), "other", state, t0)

			v, ok := b.Remove(k)
			require.True(t, ok)
			assert.Equal(t, "v", v)
			_, _, _, held := b.Get(k)
			assert.False(t, held)
			assert.Equal(t, 1, b.Len())
			if state == renewbuffer.Sent {
				assert.False(t, b.Complete(k, tk, lock), "a late answer finds nothing")
			}
			out, _ := b.Take(t0, 10, nil)
			assert.NotContains(t, out, "v")

			v, ok = b.Remove(k)
			assert.False(t, ok, "removing twice")
			assert.Zero(t, v)
		})
	}
}

func TestRemovePartition(t *testing.T) {
	states := []renewbuffer.State{renewbuffer.Ready, renewbuffer.Queued, renewbuffer.Sent}
	fill := func(t *testing.T) *renewbuffer.Buffer[string] {
		var b renewbuffer.Buffer[string]
		// Offsets added out of order and in every state, next to partitions that must stay.
		for i, o := range []int64{30, 10, 50, 20, 40, 60} {
			hold(t, &b, key("t", 1, o), "t1", states[i%3], t0)
			hold(t, &b, key("t", 2, o), "t2", states[i%3], t0)
			hold(t, &b, key("u", 1, o), "u1", states[i%3], t0)
		}
		return &b
	}
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		want      []int64
	}{
		{"held partition", "t", 1, []int64{10, 20, 30, 40, 50, 60}},
		{"unknown partition number", "t", 3, nil},
		{"unknown topic", "v", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fill(t)
			got := b.RemovePartition(tc.topic, tc.partition)
			if tc.want == nil {
				assert.Nil(t, got)
				assert.Equal(t, counts{18, 6, 12, 6}, countsOf(b))
				return
			}
			var want []renewbuffer.Key
			for _, o := range tc.want {
				want = append(want, key(tc.topic, tc.partition, o))
			}
			assert.Equal(t, want, got)
			assert.Equal(t, counts{12, 4, 8, 4}, countsOf(b))
			assert.Empty(t, b.QueuedOffsets(tc.topic, tc.partition, nil))
			assert.Equal(t, []int64{10, 40}, b.QueuedOffsets("t", 2, nil))
			assert.Equal(t, []int64{10, 40}, b.QueuedOffsets("u", 1, nil))
			out, _ := b.Take(t0, 100, nil)
			assert.Equal(t, []string{"t2", "t2", "u1", "u1"}, out)
			assert.Nil(t, b.RemovePartition(tc.topic, tc.partition), "removing twice")
		})
	}
}

func TestTakeOrder(t *testing.T) {
	var b renewbuffer.Buffer[string]
	// One answer, processed in an arbitrary order: handed out by topic, partition, offset.
	for _, k := range []renewbuffer.Key{key("b", 0, 1), key("a", 1, 0), key("a", 0, 9), key("a", 0, 2)} {
		hold(t, &b, k, fmt.Sprintf("%s/%d/%d", k.Topic, k.Partition, k.Offset), renewbuffer.Ready, t0)
	}
	dst := []string{"kept"}
	out, expired := b.Take(t0, 3, dst)
	assert.Equal(t, []string{"kept", "a/0/2", "a/0/9", "a/1/0"}, out, "Take appends to dst")
	assert.Nil(t, expired)

	// Ready since that Take, with a smaller key: goes after the record left behind by max.
	hold(t, &b, key("a", 0, 0), "a/0/0", renewbuffer.Ready, t0)
	out, _ = b.Take(t0, 10, nil)
	assert.Equal(t, []string{"b/0/1", "a/0/0"}, out)
	assert.Zero(t, b.Len())
}

func TestTakeExpiry(t *testing.T) {
	var b renewbuffer.Buffer[string]
	early := t0
	late := t0.Add(10 * time.Second)
	hold(t, &b, key("t", 0, 4), "early-4", renewbuffer.Ready, early)
	hold(t, &b, key("t", 0, 1), "late-1", renewbuffer.Ready, late)
	hold(t, &b, key("t", 0, 3), "early-3", renewbuffer.Ready, early)
	hold(t, &b, key("t", 0, 8), "queued", renewbuffer.Queued, early)
	hold(t, &b, key("t", 0, 9), "sent", renewbuffer.Sent, early)

	next, ok := b.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, early.Add(lock), next)

	// A deadline equal to now has passed; max 0 still drops expired records.
	out, expired := b.Take(early.Add(lock), 0, nil)
	assert.Empty(t, out)
	assert.Equal(t, []renewbuffer.Key{key("t", 0, 3), key("t", 0, 4)}, expired, "in hand-out order")
	assert.Equal(t, counts{len: 3, ready: 1, pending: 2, queued: 1}, countsOf(&b))
	next, _ = b.NextDeadline()
	assert.Equal(t, late.Add(lock), next)

	out, expired = b.Take(late.Add(lock-time.Nanosecond), 10, nil)
	assert.Equal(t, []string{"late-1"}, out)
	assert.Nil(t, expired)
	_, ok = b.NextDeadline()
	assert.False(t, ok)

	// Queued and Sent records never expire in Take.
	out, expired = b.Take(late.Add(time.Hour), 10, nil)
	assert.Empty(t, out)
	assert.Nil(t, expired)
	assert.Equal(t, 2, b.Pending())
}

func TestGet(t *testing.T) {
	var b renewbuffer.Buffer[string]
	hold(t, &b, key("t", 0, 1), "q", renewbuffer.Queued, t0)
	hold(t, &b, key("t", 0, 2), "s", renewbuffer.Sent, t0)
	hold(t, &b, key("t", 0, 3), "r", renewbuffer.Ready, t0)
	for _, tc := range []struct {
		k        renewbuffer.Key
		v        string
		s        renewbuffer.State
		deadline time.Time
		ok       bool
	}{
		{key("t", 0, 1), "q", renewbuffer.Queued, time.Time{}, true},
		{key("t", 0, 2), "s", renewbuffer.Sent, time.Time{}, true},
		{key("t", 0, 3), "r", renewbuffer.Ready, t0.Add(lock), true},
		{key("t", 0, 4), "", 0, time.Time{}, false},
		{key("t", 1, 1), "", 0, time.Time{}, false},
		{key("u", 0, 1), "", 0, time.Time{}, false},
	} {
		v, s, deadline, ok := b.Get(tc.k)
		assert.Equal(t, tc.v, v, "%v", tc.k)
		assert.Equal(t, tc.s, s, "%v", tc.k)
		assert.Equal(t, tc.deadline, deadline, "%v", tc.k)
		assert.Equal(t, tc.ok, ok, "%v", tc.k)
	}
}

func TestQueuedOffsets(t *testing.T) {
	var b renewbuffer.Buffer[string]
	for _, o := range []int64{9, 3, 7, 1} {
		hold(t, &b, key("t", 0, o), "q", renewbuffer.Queued, t0)
	}
	hold(t, &b, key("t", 0, 5), "s", renewbuffer.Sent, t0)
	hold(t, &b, key("t", 0, 2), "r", renewbuffer.Ready, t0)
	hold(t, &b, key("t", 1, 4), "other partition", renewbuffer.Queued, t0)

	assert.Equal(t, []int64{100, 1, 3, 7, 9}, b.QueuedOffsets("t", 0, []int64{100}), "appends to dst, sorts only its own part")
	assert.Equal(t, []int64{4}, b.QueuedOffsets("t", 1, nil))
	assert.Equal(t, []int64{100}, b.QueuedOffsets("t", 2, []int64{100}))
	assert.Nil(t, b.QueuedOffsets("u", 0, nil))
}

func TestZeroBuffer(t *testing.T) {
	var b renewbuffer.Buffer[int]
	assert.Zero(t, b.Len())
	_, _, _, ok := b.Get(key("t", 0, 0))
	assert.False(t, ok)
	_, ok = b.MarkSent(key("t", 0, 0), t0)
	assert.False(t, ok)
	assert.False(t, b.Complete(key("t", 0, 0), 1, lock))
	_, ok = b.Fail(key("t", 0, 0), 1)
	assert.False(t, ok)
	_, ok = b.Remove(key("t", 0, 0))
	assert.False(t, ok)
	assert.Nil(t, b.RemovePartition("t", 0))
	out, expired := b.Take(t0, 10, nil)
	assert.Nil(t, out)
	assert.Nil(t, expired)
	_, ok = b.NextDeadline()
	assert.False(t, ok)
}

func TestStateString(t *testing.T) {
	for s, want := range map[renewbuffer.State]string{
		0:                    "none",
		renewbuffer.Queued:   "queued",
		renewbuffer.Sent:     "sent",
		renewbuffer.Ready:    "ready",
		renewbuffer.State(9): "State(9)",
	} {
		assert.Equal(t, want, s.String())
	}
}

func TestTakeExpiredOrderSpansRounds(t *testing.T) {
	var b renewbuffer.Buffer[string]
	hold(t, &b, key("t", 0, 9), "first round", renewbuffer.Ready, t0)
	out, _ := b.Take(t0, 0, nil) // ends the first round, hands nothing out
	require.Empty(t, out)
	hold(t, &b, key("t", 0, 2), "second round", renewbuffer.Ready, t0)

	out, expired := b.Take(t0.Add(lock), 10, nil)
	assert.Empty(t, out)
	assert.Equal(t, []renewbuffer.Key{key("t", 0, 9), key("t", 0, 2)}, expired, "earlier round first, whatever the keys")
}

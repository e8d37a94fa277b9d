package acktype_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
)

const (
	g = acktype.Gap
	a = acktype.Accept
	r = acktype.Release
	j = acktype.Reject
	n = acktype.Renew
)

// run returns acks for consecutive offsets from first, with the given types in order.
func run(first int64, types ...acktype.Type) []acktype.Ack {
	acks := make([]acktype.Ack, len(types))
	for i, t := range types {
		acks[i] = acktype.Ack{Offset: first + int64(i), Type: t}
	}
	return acks
}

// times returns t repeated count times.
func times(t acktype.Type, count int) []acktype.Type {
	ts := make([]acktype.Type, count)
	for i := range ts {
		ts[i] = t
	}
	return ts
}

func cat(parts ...[]acktype.Type) []acktype.Type {
	var all []acktype.Type
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func one(t acktype.Type) []acktype.Type { return []acktype.Type{t} }

func batch(first, last int64, types ...acktype.Type) acktype.Batch {
	return acktype.Batch{FirstOffset: first, LastOffset: last, Types: types}
}

func TestAppendBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		acks []acktype.Ack
		want []acktype.Batch
	}{
		{name: "empty"},
		{
			name: "single",
			acks: run(5, a),
			want: []acktype.Batch{batch(5, 5, a)},
		},
		{
			name: "consecutive same type collapse to one type",
			acks: run(0, a, a, a, a, a),
			want: []acktype.Batch{batch(0, 4, a)},
		},
		{
			name: "a missing offset starts a new batch",
			acks: append(append(run(0, a, a), run(3, a)...), run(5, r, r)...),
			want: []acktype.Batch{batch(0, 1, a), batch(3, 3, a), batch(5, 6, r)},
		},
		{
			name: "mixed types: one type per offset",
			acks: run(100, a, r, a, j, n),
			want: []acktype.Batch{batch(100, 104, a, r, a, j, n)},
		},
		{
			name: "run of exactly 10 stays in the mixed batch",
			acks: run(0, cat(one(r), times(a, 10), one(r))...),
			want: []acktype.Batch{batch(0, 11, cat(one(r), times(a, 10), one(r))...)},
		},
		{
			name: "run of 11 is split out",
			acks: run(0, cat(one(r), times(a, 11), one(r))...),
			want: []acktype.Batch{batch(0, 0, r), batch(1, 11, a), batch(12, 12, r)},
		},
		{
			name: "run of 25 is split out, the mixed rest keeps one type per offset",
			acks: run(0, cat(one(r), one(j), times(a, 25), one(r), one(a))...),
			want: []acktype.Batch{batch(0, 1, r, j), batch(2, 26, a), batch(27, 28, r, a)},
		},
		{
			name: "run of 25 alone is one batch",
			acks: run(7, times(n, 25)...),
			want: []acktype.Batch{batch(7, 31, n)},
		},
		{
			name: "long run first and last",
			acks: run(0, cat(times(a, 11), one(r), one(j), times(r, 12))...),
			want: []acktype.Batch{batch(0, 10, a), batch(11, 12, r, j), batch(13, 24, r)},
		},
		{
			name: "two long runs back to back",
			acks: run(0, cat(times(a, 11), times(r, 11))...),
			want: []acktype.Batch{batch(0, 10, a), batch(11, 21, r)},
		},
		{
			name: "uniform stretch between long runs collapses",
			acks: run(0, cat(times(a, 11), times(r, 3), times(a, 11))...),
			want: []acktype.Batch{batch(0, 10, a), batch(11, 13, r), batch(14, 24, a)},
		},
		{
			name: "runs of 10 on both sides of another type",
			acks: run(0, cat(times(a, 10), one(r), times(a, 10))...),
			want: []acktype.Batch{batch(0, 20, cat(times(a, 10), one(r), times(a, 10))...)},
		},
		{
			name: "long run across a missing offset is not long",
			acks: append(run(0, cat(one(r), times(a, 6))...), run(8, cat(times(a, 6), one(r))...)...),
			want: []acktype.Batch{batch(0, 6, cat(one(r), times(a, 6))...), batch(8, 14, cat(times(a, 6), one(r))...)},
		},
		{
			name: "gaps are a type like the others",
			acks: run(0, a, g, g, a),
			want: []acktype.Batch{batch(0, 3, a, g, g, a)},
		},
		{
			name: "only gaps",
			acks: run(40, g, g, g),
			want: []acktype.Batch{batch(40, 42, g)},
		},
		{
			name: "long gap run is split out",
			acks: run(0, cat(one(a), times(g, 11))...),
			want: []acktype.Batch{batch(0, 0, a), batch(1, 11, g)},
		},
		{
			name: "unsorted input",
			acks: []acktype.Ack{{9, r}, {3, a}, {1, a}, {2, a}, {10, a}, {0, a}},
			want: []acktype.Batch{batch(0, 3, a), batch(9, 10, r, a)},
		},
		{
			name: "the last ack for an offset wins",
			acks: []acktype.Ack{{2, r}, {1, a}, {2, j}, {3, a}, {2, a}},
			want: []acktype.Batch{batch(1, 3, a)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := acktype.AppendBatches(nil, tc.acks)
			assert.Equal(t, tc.want, got)
			checkBatches(t, tc.acks, got)
		})
	}
}

func TestAppendBatchesAppendsToDst(t *testing.T) {
	t.Parallel()
	dst := []acktype.Batch{batch(0, 0, a)}
	got := acktype.AppendBatches(dst, run(5, r, r))
	assert.Equal(t, []acktype.Batch{batch(0, 0, a), batch(5, 6, r)}, got)
}

func TestBatchWire(t *testing.T) {
	t.Parallel()
	b := batch(0, 4, a, r, j, n, g)
	assert.Equal(t, []int8{1, 2, 3, 4, 0}, b.Wire())
	assert.Empty(t, acktype.Batch{}.Wire())
}

// TestAppendBatchesRandom checks random inputs against the rules, stated as properties of the
// output, rather than against a second implementation.
func TestAppendBatchesRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var acks []acktype.Ack
		offset := rng.Int64N(100)
		for range rng.IntN(200) {
			if rng.IntN(30) == 0 {
				offset += rng.Int64N(3) + 1 // a missing offset
			}
			if rng.IntN(50) == 0 {
				offset -= rng.Int64N(5) // out of order, maybe a repeat
			}
			typ := acktype.Accept // long same-type runs are the interesting case
			if rng.IntN(8) == 0 {
				typ = acktype.Type(rng.IntN(5))
			}
			acks = append(acks, acktype.Ack{Offset: offset, Type: typ})
			offset++
		}
		checkBatches(t, acks, acktype.AppendBatches(nil, acks))
	}
}

// checkBatches asserts that batches carry exactly acks (the last type given for each offset) and
// follow Kafka's batching rules.
func checkBatches(t *testing.T, acks []acktype.Ack, batches []acktype.Batch) {
	t.Helper()
	want := map[int64]acktype.Type{}
	for _, ack := range acks {
		want[ack.Offset] = ack.Type
	}
	got := map[int64]acktype.Type{}
	for i, b := range batches {
		require.LessOrEqual(t, b.FirstOffset, b.LastOffset)
		size := int(b.LastOffset - b.FirstOffset + 1)
		require.True(t, len(b.Types) == 1 || len(b.Types) == size, "batch %d: %d types for %d offsets", i, len(b.Types), size)
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			if len(b.Types) == 1 {
				got[o] = b.Types[0]
			} else {
				got[o] = b.Types[o-b.FirstOffset]
			}
		}
		if len(b.Types) > 1 {
			longest, same := 1, 1
			for k := 1; k < len(b.Types); k++ {
				if b.Types[k] == b.Types[k-1] {
					same++
				} else {
					same = 1
				}
				longest = max(longest, same)
			}
			require.Less(t, longest, len(b.Types), "batch %d has one type but carries it per offset", i)
			require.LessOrEqual(t, longest, acktype.MaxSameTypeInMixedBatch, "batch %d keeps a long run", i)
		}
		if i == 0 {
			continue
		}
		prev := batches[i-1]
		require.Less(t, prev.LastOffset, b.FirstOffset, "batches %d and %d out of order", i-1, i)
		if prev.LastOffset+1 == b.FirstOffset {
			// Consecutive offsets are split only next to a long single-type run.
			long := func(x acktype.Batch) bool {
				return len(x.Types) == 1 && x.LastOffset-x.FirstOffset+1 > acktype.MaxSameTypeInMixedBatch
			}
			require.True(t, long(prev) || long(b), "batches %d and %d split for no reason", i-1, i)
			lastOfPrev, firstOfB := typeAt(prev, prev.LastOffset), typeAt(b, b.FirstOffset)
			require.NotEqual(t, lastOfPrev, firstOfB, "a same-type run split across batches %d and %d", i-1, i)
		}
	}
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	require.Equal(t, want, got)
}

func typeAt(b acktype.Batch, offset int64) acktype.Type {
	if len(b.Types) == 1 {
		return b.Types[0]
	}
	return b.Types[offset-b.FirstOffset]
}

func TestAppendBatchesTypesDoNotOverlap(t *testing.T) {
	t.Parallel()
	got := acktype.AppendBatches(nil, run(0, cat(one(r), one(a), times(j, 11), one(a), one(r))...))
	require.Len(t, got, 3)
	_ = append(got[0].Types, g, g, g)
	_ = append(got[1].Types, g, g, g)
	assert.Equal(t, []acktype.Batch{batch(0, 1, r, a), batch(2, 12, j), batch(13, 14, a, r)}, got)
}

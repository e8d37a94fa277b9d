package acktype_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kshare/kshare/acktype"
)

func TestAccumulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		do   func(*acktype.Accumulator)
		len  int
		want []acktype.Batch
	}{
		{name: "empty", do: func(*acktype.Accumulator) {}},
		{
			name: "ascending offsets",
			do: func(acc *acktype.Accumulator) {
				for o := int64(10); o < 15; o++ {
					acc.Add(o, a)
				}
			},
			len:  5,
			want: []acktype.Batch{batch(10, 14, a)},
		},
		{
			name: "a later Add replaces an earlier one",
			do: func(acc *acktype.Accumulator) {
				acc.Add(1, r)
				acc.Add(2, a)
				acc.Add(1, a)
			},
			len:  2,
			want: []acktype.Batch{batch(1, 2, a)},
		},
		{
			name: "out of order offsets are sorted",
			do: func(acc *acktype.Accumulator) {
				for _, o := range []int64{5, 1, 3, 2, 9, 4, 0} {
					acc.Add(o, acktype.Type(o%2+1))
				}
			},
			len:  7,
			want: []acktype.Batch{batch(0, 5, a, r, a, r, a, r), batch(9, 9, r)},
		},
		{
			name: "AddIfAbsent keeps what is there",
			do: func(acc *acktype.Accumulator) {
				acc.Add(3, r)
				for o := int64(0); o < 6; o++ {
					acc.AddIfAbsent(o, a)
				}
			},
			len:  6,
			want: []acktype.Batch{batch(0, 5, a, a, a, r, a, a)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var acc acktype.Accumulator
			tc.do(&acc)
			assert.Equal(t, tc.len, acc.Len())
			assert.Equal(t, tc.want, acc.Take())
			assert.Zero(t, acc.Len(), "Take empties the accumulator")
			assert.Nil(t, acc.Take())
		})
	}
}

func TestAccumulatorGetAndAddIfAbsent(t *testing.T) {
	t.Parallel()
	var acc acktype.Accumulator
	_, ok := acc.Get(7)
	assert.False(t, ok)

	assert.True(t, acc.AddIfAbsent(7, r))
	assert.False(t, acc.AddIfAbsent(7, a))
	typ, ok := acc.Get(7)
	assert.True(t, ok)
	assert.Equal(t, r, typ)

	acc.Add(7, n)
	typ, _ = acc.Get(7)
	assert.Equal(t, n, typ)
}

func TestAccumulatorReuseAfterTake(t *testing.T) {
	t.Parallel()
	var acc acktype.Accumulator
	acc.Add(0, a)
	acc.Add(1, r)
	first := acc.Take()
	acc.Add(0, j)
	acc.Add(1, j)
	assert.Equal(t, []acktype.Batch{batch(0, 1, a, r)}, first, "batches taken earlier do not change")
	assert.Equal(t, []acktype.Batch{batch(0, 1, j)}, acc.Take())
}

package acktype_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
)

// FuzzAccumulator checks the Accumulator, which keeps runs, against a plain model that keeps
// one type per offset and batches with AppendBatches. Each pair of input bytes is one call: the
// first picks Add or AddIfAbsent and the type, the second the offset, in a small window so that
// calls overlap, split and join runs.
func FuzzAccumulator(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3})
	f.Add([]byte{0, 5, 1, 3, 0, 4, 2, 5, 3, 4, 0, 3})
	f.Add([]byte{4, 10, 0, 0, 0, 1, 0, 2, 5, 1})
	f.Add([]byte{0x40, 3, 0x80, 4, 0xC0, 3, 0x41, 5, 0, 4, 0x80, 3}) // AddIfAbsent and Gap
	long := make([]byte, 0, 80)
	for o := range 30 {
		long = append(long, 0, byte(o))
	}
	long = append(long, 1, 15, 2, 3, 0, 40)
	f.Add(long)
	f.Add([]byte{0x2d, 0, 0x21, 4, 0x22, 2, 0x2f, 10, 0x20, 9}) // AddRange: appended, joined, over earlier offsets

	f.Fuzz(func(t *testing.T, ops []byte) {
		var acc acktype.Accumulator
		model := map[int64]acktype.Type{}
		for i := 0; i+1 < len(ops); i += 2 {
			ty := acktype.Type(ops[i]%4 + 1) // Accept, Release, Reject, Renew
			if ops[i]>>7 == 1 {
				ty = acktype.Gap
			}
			off := int64(ops[i+1] % 64)
			switch {
			case ops[i]&0x40 != 0:
				_, had := model[off]
				require.Equal(t, !had, acc.AddIfAbsent(off, ty), "AddIfAbsent(%d)", off)
				if !had {
					model[off] = ty
				}
			case ops[i]&0x20 != 0:
				last := off + int64(ops[i]>>2&0x3)
				acc.AddRange(off, last, ty)
				for o := off; o <= last; o++ {
					model[o] = ty
				}
			default:
				acc.Add(off, ty)
				model[off] = ty
			}
			require.Equal(t, len(model), acc.Len())
			span := off + int64(ops[i+1]>>6)
			recorded := false
			for o := off; o <= span; o++ {
				_, has := model[o]
				recorded = recorded || has
			}
			require.Equal(t, recorded, acc.Overlaps(off, span), "Overlaps(%d, %d)", off, span)
			got, ok := acc.Get(off)
			require.True(t, ok)
			require.Equal(t, model[off], got)
		}
		want := modelBatches(model)
		require.Equal(t, want, acc.Take())
		require.Zero(t, acc.Len())
		require.Nil(t, acc.Take())
	})
}

// TestAccumulatorRandom runs the FuzzAccumulator check on many random call sequences, so that
// every test run covers more than the seed corpus.
func TestAccumulatorRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(932, 1))
	for range 2000 {
		var acc acktype.Accumulator
		model := map[int64]acktype.Type{}
		window := int64(rng.IntN(200) + 1)
		for range rng.IntN(300) {
			off := rng.Int64N(window)
			ty := acktype.Accept
			if rng.IntN(8) == 0 {
				ty = acktype.Type(rng.IntN(4) + 1)
			}
			if rng.IntN(6) == 0 {
				ty = acktype.Gap
			}
			if rng.IntN(10) == 0 {
				_, had := model[off]
				if !had {
					model[off] = ty
				}
				require.Equal(t, !had, acc.AddIfAbsent(off, ty))
			} else {
				acc.Add(off, ty)
				model[off] = ty
			}
			got, ok := acc.Get(off)
			require.True(t, ok)
			require.Equal(t, model[off], got)
		}
		require.Equal(t, len(model), acc.Len())
		require.Equal(t, modelBatches(model), acc.Take())
	}
}

// modelBatches batches a model's acknowledgements with AppendBatches.
func modelBatches(model map[int64]acktype.Type) []acktype.Batch {
	acks := make([]acktype.Ack, 0, len(model))
	for o, ty := range model {
		acks = append(acks, acktype.Ack{Offset: o, Type: ty})
	}
	return acktype.AppendBatches(nil, acks)
}

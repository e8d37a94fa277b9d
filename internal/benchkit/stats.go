package benchkit

import (
	"cmp"
	"math"
	"slices"
)

// Median returns the median of xs, the lower middle one for an even count, and the zero value
// for none. It leaves xs alone.
func Median[T cmp.Ordered](xs []T) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// MedianBy returns the element of xs with the median key, the lower middle one for an even
// count: for repeated runs of which a report shows the one whole run with the median figure.
// xs must not be empty; it is left alone.
func MedianBy[T any, K cmp.Ordered](xs []T, key func(T) K) T {
	s := slices.Clone(xs)
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[(len(s)-1)/2]
}

// Percentile returns the nearest-rank p-th percentile of xs (p in (0, 100]): the smallest
// element with at least p% of xs at or below it (the maximum for 100), and the zero value for
// none. It leaves xs alone.
func Percentile[T cmp.Ordered](xs []T, p float64) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(0, min(rank, len(s))-1)]
}

// MedianOf returns the median (Median) of field over xs: one column of a table of repeated
// runs, each column's median taken on its own.
func MedianOf[T any, K cmp.Ordered](xs []T, field func(T) K) K {
	ks := make([]K, len(xs))
	for i, x := range xs {
		ks[i] = field(x)
	}
	return Median(ks)
}

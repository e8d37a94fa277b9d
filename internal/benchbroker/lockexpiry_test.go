package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		ds := make([]time.Duration, len(ns))
		for i, n := range ns {
			ds[i] = time.Duration(n) * time.Millisecond
		}
		return ds
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of odd count", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"median of even count is the lower middle", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 20 is the largest", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 99, 20 * time.Millisecond},
		{"p90 of 20 is the 18th", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 18 * time.Millisecond},
		{"max", ms(2, 9, 4), 100, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.ds...)
			assert.Equal(t, tt.want, percentile(tt.ds, tt.p))
			assert.Equal(t, in, tt.ds, "percentile leaves its input alone")
		})
	}
}

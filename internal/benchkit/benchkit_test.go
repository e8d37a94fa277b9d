package benchkit

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInts(t *testing.T) {
	t.Parallel()
	var l Ints
	require.NoError(t, l.Set("1, 3"))
	assert.Equal(t, Ints{1, 3}, l)
	assert.Equal(t, "[1 3]", l.String())
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		assert.Error(t, l.Set(bad), "%q", bad)
	}
}

func TestBrokers(t *testing.T) {
	t.Parallel()
	b := Brokers{"testbroker"}
	require.NoError(t, b.Set("kfake, testbroker,kfake"))
	assert.Equal(t, Brokers{"kfake", "testbroker"}, b, "in the order given, each once")
	assert.Equal(t, "kfake,testbroker", b.String())
	for _, bad := range []string{"", "kafka", "testbroker,"} {
		assert.Error(t, b.Set(bad), "%q", bad)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{0: "0", 999.4: "999", 999.6: "1,000", 1234567: "1,234,567"} {
		assert.Equal(t, want, Thousands(f), "%v", f)
	}
}

func ms(ns ...int) []time.Duration {
	ds := make([]time.Duration, len(ns))
	for i, n := range ns {
		ds[i] = time.Duration(n) * time.Millisecond
	}
	return ds
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	desc20 := ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
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
		{"p99 of 20 is the largest", desc20, 99, 20 * time.Millisecond},
		{"p90 of 20 is the 18th", desc20, 90, 18 * time.Millisecond},
		{"max", ms(2, 9, 4), 100, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.ds...)
			assert.Equal(t, tt.want, Percentile(tt.ds, tt.p))
			assert.Equal(t, in, tt.ds, "Percentile leaves its input alone")
		})
	}
	// p99 of 2000 samples is the 1980th, as benchrenew's former quantile had it.
	var s []int64
	for i := range 2000 {
		s = append(s, int64(2000-i))
	}
	assert.Equal(t, int64(1980), Percentile(s, 99))
}

func TestMedian(t *testing.T) {
	t.Parallel()
	in := ms(9, 1, 5, 3)
	assert.Equal(t, 3*time.Millisecond, Median(in), "the lower middle of an even count")
	assert.Equal(t, ms(9, 1, 5, 3), in, "Median leaves its input alone")
	assert.Equal(t, 5, Median([]int{9, 5, 1}))
	assert.Zero(t, Median[int](nil))

	type run struct {
		name string
		cpu  float64
	}
	runs := []run{{"a", 3}, {"b", 1}, {"c", 2}}
	assert.Equal(t, "c", MedianBy(runs, func(r run) float64 { return r.cpu }).name)
	assert.Equal(t, "a", runs[0].name, "MedianBy leaves its input alone")
}

func TestPrefixWriterPrefixesEveryLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &prefixWriter{prefix: "tb: ", w: &out}
	for _, s := range []string{"one\ntw", "o\n", "\nthree"} {
		n, err := w.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n)
	}
	assert.Equal(t, "tb: one\ntb: two\ntb: \ntb: three", out.String())
}

func TestMeterCountsThisProcess(t *testing.T) {
	var m Meter
	require.NoError(t, m.Start())
	sink := make([][]byte, 0, 1000)
	deadline := time.Now().Add(10 * time.Second)
	for {
		for range 1000 {
			sink = append(sink[:0], make([]byte, 64))
		}
		cpu, err := SelfCPU()
		require.NoError(t, err)
		if cpu-m.cpu0 >= 20*time.Millisecond {
			break
		}
		require.True(t, time.Now().Before(deadline), "no CPU time counted in 10s")
	}
	s, err := m.Stop()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.CPU, 20*time.Millisecond)
	assert.GreaterOrEqual(t, s.Mallocs, uint64(1000))
	assert.Positive(t, s.Wall())
	assert.Equal(t, time.Duration(-1), s.BrokerCPU, "no broker to read")
	_ = sink
}

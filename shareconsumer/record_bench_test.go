package shareconsumer

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkDecodeBatch decodes one uncompressed 5000-record batch of 16-byte values, with 500
// records in the middle acquired (as kfake acquires part of a large batch) and with all of it
// acquired. ns/record and allocs/record are per batch record, acquired or not.
func BenchmarkDecodeBatch(b *testing.B) {
	const n = 5000
	recs := make([]tRec, n)
	for i := range recs {
		recs[i] = tRec{delta: int32(i), value: fmt.Appendf(nil, "value-%010d", i)}
	}
	data := tBatch(1000, n-1, 0, time.Now().UnixMilli(), recs...)
	for _, bc := range []struct {
		name        string
		first, last int64
	}{
		{"acquired=500", 1000 + 2250, 1000 + 2749},
		{"acquired=all", 1000, 1000 + n - 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dec := tDecoder()
			acquired := []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acq(bc.first, bc.last, 1)}
			want := int(bc.last - bc.first + 1)
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d := dec.decodePartition("t", 0, data, acquired, time.Time{})
				if len(d.chunks) != 1 || len(d.chunks[0].recs) != want || len(d.gaps) != 0 {
					b.Fatalf("decoded %d chunks, %d gaps", len(d.chunks), len(d.gaps))
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			total := float64(b.N) * n
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/record")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/record")
		})
	}
}

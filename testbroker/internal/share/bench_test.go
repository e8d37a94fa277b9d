package share

import (
	"fmt"
	"testing"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// BenchmarkAcquireAccept measures the share partition's part of consuming records: one op
// acquires 500 records (one range and its timer on the real clock, the log batches' bytes copied
// out) and accepts them whole, which stops the timer and moves the SPSO; ns/record divides by
// 500. The sub-benchmarks vary the records per log batch. The log is rebuilt, off the clock,
// whenever it runs out.
func BenchmarkAcquireAccept(b *testing.B) {
	for _, perBatch := range []int{500, 50, 1} {
		b.Run(fmt.Sprintf("batch=%d", perBatch), func(b *testing.B) { benchAcquireAccept(b, perBatch, BatchOptimized) })
	}
}

// BenchmarkAcquireAcceptRecordLimit is BenchmarkAcquireAccept in record-limit mode with log
// batches larger than a fetch, which every acquisition of 500 splits further: the case whose
// per-fetch scans of a split batch's records availFrom and maxCount bound.
func BenchmarkAcquireAcceptRecordLimit(b *testing.B) {
	for _, perBatch := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", perBatch), func(b *testing.B) { benchAcquireAccept(b, perBatch, RecordLimit) })
	}
}

func benchAcquireAccept(b *testing.B, perBatch int, mode AcquireMode) {
	const perOp, opsPerLog = 500, 400
	set := defaults()
	settings := func() Settings { return set }
	var p *Partition
	fresh := func() {
		if p != nil {
			p.Close()
		}
		lg := log.NewPartition(log.Config{})
		for range opsPerLog * perOp / perBatch {
			// A fresh batch each time: the log may keep the slice and write its offsets in.
			if _, err := lg.Append(encode(perBatch, 8, t0.UnixMilli()), t0); err != nil {
				b.Fatal(err)
			}
		}
		lg.SetHighWatermark(lg.LogEndOffset())
		p = NewPartition("g", lg, clock.Real{}, settings)
	}
	fresh()
	defer func() { p.Close() }()
	accept := []int8{ackAccept}
	acks := make([]AckBatch, 0, 4)
	var dst [][]byte

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%opsPerLog == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		ranges, records, err := p.Acquire(dst[:0], "member", perOp, perOp, 1<<20, mode)
		if err != nil || len(ranges) != 1 || ranges[0].LastOffset-ranges[0].FirstOffset+1 != perOp {
			b.Fatalf("acquired %v: %v", ranges, err)
		}
		dst = records
		acks = acks[:0]
		for _, r := range ranges {
			acks = append(acks, AckBatch{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, Types: accept})
		}
		if err := p.Acknowledge("member", acks); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perOp), "ns/record")
}

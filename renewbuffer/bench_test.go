package renewbuffer_test

import (
	"testing"
	"time"

	"github.com/kshare/kshare/renewbuffer"
)

const benchHeld = 100_000

// benchKey spreads records over 100 partitions of one topic.
func benchKey(i int) renewbuffer.Key {
	return renewbuffer.Key{Topic: "bench", Partition: int32(i % 100), Offset: int64(i / 100)}
}

// fillBench brings the records [from, to) through the given state, sent at t0.
func fillBench(b *renewbuffer.Buffer[int], from, to int, s renewbuffer.State, key func(int) renewbuffer.Key) {
	for i := from; i < to; i++ {
		k := key(i)
		b.Add(k, i)
		if s == renewbuffer.Queued {
			continue
		}
		tk, _ := b.MarkSent(k, t0)
		if s == renewbuffer.Ready {
			b.Complete(k, tk, lock)
		}
	}
}

// BenchmarkCycle measures one record's whole path (Add, MarkSent, Complete, Take) while the
// Buffer holds 100k other records, either waiting for a Poll (Ready) or for their answer (Sent).
func BenchmarkCycle(b *testing.B) {
	for _, held := range []renewbuffer.State{renewbuffer.Ready, renewbuffer.Sent} {
		b.Run("held="+held.String(), func(b *testing.B) {
			var buf renewbuffer.Buffer[int]
			fillBench(&buf, 0, benchHeld, held, benchKey)
			dst := make([]int, 0, 1)
			i := benchHeld
			b.ReportAllocs()
			for b.Loop() {
				k := benchKey(i)
				buf.Add(k, i)
				tk, _ := buf.MarkSent(k, t0)
				buf.Complete(k, tk, lock)
				dst, _ = buf.Take(t0, 1, dst[:0])
				i++
			}
			if buf.Len() != benchHeld {
				b.Fatalf("held %d records, want %d", buf.Len(), benchHeld)
			}
		})
	}
}

// BenchmarkRemovePartition measures dropping one partition's 10k records, a third in each state,
// out of 100k held in 10 partitions.
func BenchmarkRemovePartition(b *testing.B) {
	key := func(i int) renewbuffer.Key {
		return renewbuffer.Key{Topic: "bench", Partition: int32(i % 10), Offset: int64(i / 10)}
	}
	fill := func(buf *renewbuffer.Buffer[int], partition int) {
		for i := partition; i < benchHeld; i += 10 {
			fillBench(buf, i, i+1, renewbuffer.State(1+i/10%3), key)
		}
	}
	var buf renewbuffer.Buffer[int]
	for p := range 10 {
		fill(&buf, p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := i % 10
		if keys := buf.RemovePartition("bench", int32(p)); len(keys) != benchHeld/10 {
			b.Fatalf("removed %d records, want %d", len(keys), benchHeld/10)
		}
		b.StopTimer()
		fill(&buf, p)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchHeld/10), "ns/record")
}

// BenchmarkTake measures handing out 100k Ready records, 500 per Take (a Poll's worth).
func BenchmarkTake(b *testing.B) {
	var buf renewbuffer.Buffer[int]
	dst := make([]int, 0, 500)
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fillBench(&buf, 0, benchHeld, renewbuffer.Ready, benchKey)
		b.StartTimer()
		for buf.Len() > 0 {
			dst, _ = buf.Take(now, 500, dst[:0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchHeld), "ns/record")
}

package acktype_test

import (
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
)

// BenchmarkBatching500 measures collecting and batching one poll's worth of acknowledgements
// (500 records: all accepted, or 10% released and the rest accepted), and reports what they cost on the wire next to
// franz-go's scheme, which sends one single-type batch per run of equal types.
func BenchmarkBatching500(b *testing.B) {
	for _, bc := range []struct {
		name    string
		release func(offset int64) bool
	}{
		{"allAccepted", func(int64) bool { return false }},
		{"every10thReleased", func(o int64) bool { return o%10 == 9 }},
		{"random10pctReleased", randomReleases(500, 0.1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			acks := make([]acktype.Ack, 500)
			for i := range acks {
				acks[i] = acktype.Ack{Offset: int64(i), Type: acktype.Accept}
				if bc.release(int64(i)) {
					acks[i].Type = acktype.Release
				}
			}
			var acc acktype.Accumulator
			var batches []acktype.Batch
			b.ReportAllocs()
			for b.Loop() {
				for _, ack := range acks {
					acc.Add(ack.Offset, ack.Type)
				}
				batches = acc.Take()
			}
			single := singleTypeBatches(acks)
			b.ReportMetric(float64(len(batches)), "batches")
			b.ReportMetric(float64(wireBytes(batches)), "ackbytes")
			b.ReportMetric(float64(len(single)), "franzgo-batches")
			b.ReportMetric(float64(wireBytes(single)), "franzgo-ackbytes")
			b.ReportMetric(float64(wireBytes(batches))/float64(wireBytes(single)), "bytes-ratio")
		})
	}
}

// BenchmarkAppendBatches500 measures batching alone, into a reused slice.
func BenchmarkAppendBatches500(b *testing.B) {
	acks := make([]acktype.Ack, 500)
	for i := range acks {
		acks[i] = acktype.Ack{Offset: int64(i), Type: acktype.Accept}
		if i%10 == 9 {
			acks[i].Type = acktype.Release
		}
	}
	dst := make([]acktype.Batch, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		dst = acktype.AppendBatches(dst[:0], acks)
	}
}

// randomReleases returns a fixed random choice of about frac of n offsets.
func randomReleases(n int, frac float64) func(int64) bool {
	rng := rand.New(rand.NewPCG(932, 1222))
	released := make([]bool, n)
	for i := range released {
		released[i] = rng.Float64() < frac
	}
	return func(o int64) bool { return released[o] }
}

// singleTypeBatches batches acks (sorted, distinct) as franz-go does: one batch per run of
// consecutive offsets with equal types, each carrying its type once.
func singleTypeBatches(acks []acktype.Ack) []acktype.Batch {
	var out []acktype.Batch
	for i, ack := range acks {
		if i > 0 {
			last := &out[len(out)-1]
			if ack.Offset == last.LastOffset+1 && ack.Type == last.Types[0] {
				last.LastOffset = ack.Offset
				continue
			}
		}
		out = append(out, acktype.Batch{FirstOffset: ack.Offset, LastOffset: ack.Offset, Types: []acktype.Type{ack.Type}})
	}
	return out
}

// wireBytes returns how many bytes batches add to a ShareAcknowledge v2 request for one
// partition (ShareFetch v1+ encodes its batches the same way).
func wireBytes(batches []acktype.Batch) int {
	encode := func(batches []acktype.Batch) int {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 2
		part := kmsg.ShareAcknowledgeRequestTopicPartition{Partition: 0}
		for _, b := range batches {
			part.AcknowledgementBatches = append(part.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
				FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.Wire(),
			})
		}
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{part}}}
		return len(req.AppendTo(nil))
	}
	return encode(batches) - encode(nil)
}

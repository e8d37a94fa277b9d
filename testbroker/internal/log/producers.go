package log

import (
	"cmp"
	"slices"
)

// ProducerInfo is what a partition knows of one producer, as DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence and LastTimestamp are those of the producer's last batch, -1 when it has
	// only written markers.
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of its last marker, -1 before one.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its ongoing transaction, -1 when none is.
	CurrentTxnStartOffset int64
}

// Producers returns the producers the partition keeps state for, by producer id (Kafka's
// ProducerStateManager.activeProducers).
func (p *Partition) Producers() []ProducerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ProducerInfo, 0, len(p.producers))
	for id, s := range p.producers {
		pi := ProducerInfo{ProducerID: id, ProducerEpoch: s.epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: s.coordEpoch, CurrentTxnStartOffset: s.txnFirst}
		if s.n > 0 {
			last := s.batches[(s.next+s.n-1)%retainedBatches]
			pi.LastSequence, pi.LastTimestamp = last.lastSeq, last.maxTimestamp
		}
		out = append(out, pi)
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

package log

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// retainedBatches is how many of a producer's latest batches a partition remembers to detect
// retries, as Kafka does (ProducerStateEntry.NUM_BATCHES_TO_RETAIN). A producer keeps at most 5
// requests in flight per partition, so a retry always matches one of them.
const retainedBatches = 5

// noEpoch is the epoch of a producer the partition has not seen (Kafka's NO_PRODUCER_EPOCH).
const noEpoch = -1

// producerState is what a partition knows of one idempotent producer.
type producerState struct {
	epoch   int16
	batches [retainedBatches]producerBatch // a ring; the newest is at batches[(next+n-1)%len]
	n, next int
	// txnFirst is the first offset of the producer's ongoing transaction, -1 when none is.
	txnFirst int64
	// coordEpoch is the coordinator epoch of the producer's last marker, -1 before one.
	coordEpoch int32
}

// newProducerState returns the state of a producer the partition has not seen.
func newProducerState() *producerState {
	return &producerState{epoch: noEpoch, txnFirst: -1, coordEpoch: -1}
}

// producerBatch is one appended batch of a producer.
type producerBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	maxTimestamp      int64
}

// lastSequence is the sequence of the batch's last record. Sequences wrap from MaxInt32 to 0.
func lastSequence(h *BatchHeader) int32 {
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (math.MaxInt32 + 1))
}

// duplicate returns the retained batch that h repeats: same epoch, same first and last
// sequence. Kafka answers such a retry with the original batch's offsets and appends nothing.
func (s *producerState) duplicate(h *BatchHeader) (producerBatch, bool) {
	if h.ProducerEpoch != s.epoch {
		return producerBatch{}, false
	}
	last := lastSequence(h)
	for i := range s.n {
		b := s.batches[(s.next+i)%retainedBatches]
		if b.firstSeq == h.BaseSequence && b.lastSeq == last {
			return b, true
		}
	}
	return producerBatch{}, false
}

// check applies Kafka's epoch and sequence rules (ProducerAppendInfo.checkProducerEpoch and
// checkSequence) to a batch that is not a duplicate.
func (s *producerState) check(h *BatchHeader) error {
	if h.ProducerEpoch < s.epoch {
		return kafkaerr.Detailed(kerr.InvalidProducerEpoch, "producer %d has epoch %d, older than the partition's epoch %d for it", h.ProducerID, h.ProducerEpoch, s.epoch)
	}
	if s.epoch == noEpoch {
		// Kafka accepts any sequence from a producer it has no state for: its batches may have
		// been removed by retention, and the producer must be able to continue.
		return nil
	}
	if h.ProducerEpoch != s.epoch {
		if h.BaseSequence != 0 {
			return kafkaerr.Detailed(kerr.OutOfOrderSequenceNumber, "producer %d starts epoch %d at sequence %d, not 0", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil
	}
	// A marker in a new epoch leaves the producer with no batch in it: the epoch starts at 0.
	last := int32(-1)
	if s.n > 0 {
		last = s.batches[(s.next+s.n-1)%retainedBatches].lastSeq
	}
	if !inSequence(last, h.BaseSequence) {
		return kafkaerr.Detailed(kerr.OutOfOrderSequenceNumber, "producer %d sent sequence %d after %d in epoch %d", h.ProducerID, h.BaseSequence, last, h.ProducerEpoch)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// add records an appended batch; a new epoch forgets the batches of the old one.
func (s *producerState) add(h *BatchHeader, baseOffset, maxTimestamp int64) {
	if h.ProducerEpoch != s.epoch {
		s.epoch, s.n, s.next = h.ProducerEpoch, 0, 0
	}
	b := producerBatch{firstSeq: h.BaseSequence, lastSeq: lastSequence(h), baseOffset: baseOffset, maxTimestamp: maxTimestamp}
	if s.n < retainedBatches {
		s.batches[(s.next+s.n)%retainedBatches] = b
		s.n++
		return
	}
	s.batches[s.next] = b
	s.next = (s.next + 1) % retainedBatches
}

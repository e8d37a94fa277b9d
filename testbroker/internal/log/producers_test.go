package log

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProducers(t *testing.T) {
	p := NewPartition(Config{})
	appendAll(t, p, encode(spec{n: 2, pid: 2, seq: 0}), txn(1, 3, 0, 3), encode(spec{n: 1, pid: 2, seq: 2}))
	assert.Equal(t, []ProducerInfo{
		{ProducerID: 1, ProducerEpoch: 3, LastSequence: 2, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnStartOffset: 2},
		{ProducerID: 2, ProducerEpoch: 0, LastSequence: 2, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
	}, p.Producers())
	marker(t, p, 1, 3, true)
	assert.Equal(t, ProducerInfo{ProducerID: 1, ProducerEpoch: 3, LastSequence: 2, LastTimestamp: 1000, CoordinatorEpoch: 0, CurrentTxnStartOffset: -1},
		p.Producers()[0], "the marker ends the transaction")
	_, err := p.AppendTxnMarker(5, 0, false, 0)
	assert.NoError(t, err)
	assert.Equal(t, ProducerInfo{ProducerID: 5, ProducerEpoch: 0, LastSequence: -1, LastTimestamp: -1, CoordinatorEpoch: 0, CurrentTxnStartOffset: -1},
		p.Producers()[2], "a producer known by a marker only")
}

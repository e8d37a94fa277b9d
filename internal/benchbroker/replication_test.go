package main

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch returns the wire form of a record batch holding offsets first..first+delta, records
// left out: batchesHold reads only the header.
func batch(first int64, delta int32) []byte {
	rb := kmsg.RecordBatch{FirstOffset: first, LastOffsetDelta: delta, Magic: 2, NumRecords: delta + 1}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	return b
}

func TestBatchesHoldReadsEveryBatchHeader(t *testing.T) {
	two := append(batch(0, 4), batch(5, 0)...)
	tests := []struct {
		name    string
		b       []byte
		offset  int64
		want    bool
		wantErr bool
	}{
		{"no batches", nil, 0, false, false},
		{"first offset of a batch", batch(3, 2), 3, true, false},
		{"last offset of a batch", batch(3, 2), 5, true, false},
		{"past the batch", batch(3, 2), 6, false, false},
		{"before the batch", batch(3, 2), 2, false, false},
		{"in the second batch", two, 5, true, false},
		{"past both batches", two, 6, false, false},
		{"truncated header", batch(0, 0)[:10], 0, false, true},
		{"length past the end", batch(0, 0)[:20], 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := batchesHold(tt.b, tt.offset)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

package log

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appendInEpochs appends, for each epoch in turn, a batch of the given number of records
// written in that epoch.
func appendInEpochs(t testing.TB, p *Partition, epochs []int32, records []int) {
	t.Helper()
	for i, e := range epochs {
		p.SetLeaderEpoch(e)
		_, err := p.Append(encode(spec{n: records[i]}), now)
		require.NoError(t, err)
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	// Epoch 1 starts at 0, epoch 3 at 5, epoch 4 at 9; the log end offset is 12.
	p := NewPartition(Config{})
	appendInEpochs(t, p, []int32{1, 1, 3, 4}, []int{2, 3, 4, 3})
	require.Equal(t, int64(12), p.LogEndOffset())
	assert.Equal(t, int32(4), p.LatestEpoch())

	tests := []struct {
		name      string
		requested int32
		epoch     int32
		end       int64
	}{
		{name: "undefined epoch", requested: -1, epoch: -1, end: -1},
		{name: "the latest epoch ends at the log end offset", requested: 4, epoch: 4, end: 12},
		{name: "above the latest epoch", requested: 5, epoch: -1, end: -1},
		{name: "below the first epoch: the first epoch's start", requested: 0, epoch: 0, end: 0},
		{name: "a known epoch ends where the next starts", requested: 1, epoch: 1, end: 5},
		{name: "an unknown epoch between: the epoch below it, the start of the one above", requested: 2, epoch: 1, end: 5},
		{name: "the epoch before the latest", requested: 3, epoch: 3, end: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			epoch, end := p.EndOffsetForEpoch(tt.requested)
			assert.Equal(t, tt.epoch, epoch, "epoch")
			assert.Equal(t, tt.end, end, "end offset")
		})
	}

	t.Run("empty log", func(t *testing.T) {
		empty := NewPartition(Config{LogStartOffset: 7})
		assert.Equal(t, UndefinedEpoch, empty.LatestEpoch())
		for _, requested := range []int32{-1, 0, 3} {
			epoch, end := empty.EndOffsetForEpoch(requested)
			assert.Equal(t, UndefinedEpoch, epoch, "requested %d", requested)
			assert.Equal(t, UndefinedEpochOffset, end, "requested %d", requested)
		}
	})

	t.Run("start offsets", func(t *testing.T) {
		for epoch, want := range map[int32]int64{1: 0, 3: 5, 4: 9} {
			start, ok := p.EpochStartOffset(epoch)
			assert.True(t, ok, "epoch %d", epoch)
			assert.Equal(t, want, start, "epoch %d", epoch)
		}
		for _, epoch := range []int32{-1, 0, 2, 5} {
			_, ok := p.EpochStartOffset(epoch)
			assert.False(t, ok, "epoch %d", epoch)
		}
	})
}

func TestStartLeaderEpoch(t *testing.T) {
	// A new leader records its epoch at once: a follower that wrote in an epoch the leader never
	// saw (2) learns that it ends where the new leader's epoch starts, not an undefined offset.
	p := NewPartition(Config{})
	appendInEpochs(t, p, []int32{1}, []int{4})
	epoch, end := p.EndOffsetForEpoch(2)
	assert.Equal(t, []any{UndefinedEpoch, UndefinedEpochOffset}, []any{epoch, end}, "without the new epoch recorded")

	p.StartLeaderEpoch(3)
	assert.Equal(t, int32(3), p.LatestEpoch())
	epoch, end = p.EndOffsetForEpoch(2)
	assert.Equal(t, []any{int32(1), int64(4)}, []any{epoch, end})

	res, err := p.Append(encode(spec{}), now)
	require.NoError(t, err)
	p.SetHighWatermark(p.LogEndOffset())
	assert.Equal(t, int32(3), readAll(t, p, res.BaseOffset)[0].Header.PartitionLeaderEpoch)
	start, ok := p.EpochStartOffset(3)
	assert.True(t, ok)
	assert.Equal(t, int64(4), start, "the first batch of the epoch does not move its start")
}

func TestEpochCacheAssign(t *testing.T) {
	tests := []struct {
		name    string
		assigns []epochEntry
		want    []epochEntry
	}{
		{name: "rising", assigns: []epochEntry{{1, 0}, {2, 5}, {4, 9}}, want: []epochEntry{{1, 0}, {2, 5}, {4, 9}}},
		{name: "same epoch later is no entry", assigns: []epochEntry{{1, 0}, {1, 5}}, want: []epochEntry{{1, 0}}},
		{name: "same epoch earlier moves its start", assigns: []epochEntry{{1, 0}, {2, 5}, {2, 3}}, want: []epochEntry{{1, 0}, {2, 3}}},
		{name: "a lower epoch removes the higher ones", assigns: []epochEntry{{1, 0}, {3, 5}, {4, 9}, {2, 10}}, want: []epochEntry{{1, 0}, {2, 10}}},
		{name: "an earlier start removes the later entries", assigns: []epochEntry{{1, 0}, {3, 5}, {4, 9}, {5, 5}}, want: []epochEntry{{1, 0}, {5, 5}}},
		{name: "negative epochs are not recorded", assigns: []epochEntry{{-1, 0}, {1, 2}, {-1, 4}}, want: []epochEntry{{1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c epochCache
			for _, e := range tt.assigns {
				c.assign(e.epoch, e.start)
			}
			assert.Equal(t, tt.want, c.entries)
		})
	}
}

func TestEpochCacheTruncateFromEnd(t *testing.T) {
	entries := []epochEntry{{1, 0}, {2, 5}, {4, 9}}
	tests := []struct {
		end  int64
		want []epochEntry
	}{
		{end: 10, want: entries},
		{end: 9, want: entries[:2]},
		{end: 6, want: entries[:2]},
		{end: 5, want: entries[:1]},
		{end: 0, want: []epochEntry{}},
	}
	for _, tt := range tests {
		c := epochCache{entries: append([]epochEntry(nil), entries...)}
		c.truncateFromEnd(tt.end)
		assert.Equal(t, tt.want, c.entries, "end %d", tt.end)
	}
}

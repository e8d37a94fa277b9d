package testbroker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestShareGroupBelowLogStart deletes records a share group holds, some released (AVAILABLE)
// and some acquired: the next ShareFetch archives the available ones and acquires from the log
// start; the acquired ones stay with their member until their lock expires, as in Kafka's
// SharePartition, and the inspection shows each state.
func TestShareGroupBelowLogStart(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	a, b, c := st.member(t, "a", 1), st.member(t, "b", 1), st.member(t, "c", 1)
	for _, m := range []*shareMember{a, b, c} {
		m.open(t)
	}
	st.produce(t, "v0", "v1")
	require.Equal(t, [][3]int64{{0, 1, 1}}, acquired(a.take(t)))
	st.produce(t, "v2", "v3")
	st.produce(t, "v4", "v5")
	require.Equal(t, [][3]int64{{2, 5, 1}}, acquired(b.take(t)))
	release := kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: 2, LastOffset: 5, AcknowledgeTypes: []int8{ackRelease}}
	resp := b.acknowledge(t, false, release)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)

	got := deleteOne(t, st.rc, deleteRecordsReq(2, "t", 0, 4))
	require.Zero(t, got.ErrorCode)
	assert.Equal(t, int64(4), got.LowWatermark)

	assert.Equal(t, [][3]int64{{4, 5, 2}}, acquired(c.take(t)), "from the log start: 2-3 are gone")
	start, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(4), start, "the SPSO is the log start offset")
	states := func() map[int64]testbroker.ShareRecordState {
		out := map[int64]testbroker.ShareRecordState{}
		for _, r := range st.c.ShareRecords("g", "t", 0) {
			out[r.Offset] = r.State
		}
		return out
	}
	assert.Equal(t, map[int64]testbroker.ShareRecordState{
		0: testbroker.ShareAcquired, 1: testbroker.ShareAcquired, // a's, below the start
		2: testbroker.ShareArchived, 3: testbroker.ShareArchived, // released, then deleted
		4: testbroker.ShareAcquired, 5: testbroker.ShareAcquired,
	}, states())

	assert.Empty(t, acquired(a.take(t, fetchAck(0, 1, ackAccept))), "a's acknowledgement is accepted")
	assert.Equal(t, testbroker.ShareAcquired, states()[0], "but changes nothing below the start")
	assert.Empty(t, acquired(c.take(t, fetchAck(4, 5, ackAccept))))

	st.clk.Advance(30 * time.Second) // a's lock expires
	assert.Empty(t, st.c.ShareRecords("g", "t", 0), "every record is done and forgotten")
	start, _, _ = st.c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, int64(6), start)
}

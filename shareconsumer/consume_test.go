package shareconsumer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

func TestProduceThenConsumeImplicit(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b", "c"})

	cons := tNew(t, c, "g", Topics("t"))
	recs := tPollN(t, cons, 3)
	require.Len(t, recs, 3)
	for i, r := range recs {
		assert.Equal(t, "t", r.Topic)
		assert.EqualValues(t, 0, r.Partition)
		assert.EqualValues(t, i, r.Offset)
		assert.Equal(t, []string{"a", "b", "c"}[i], string(r.Value))
		assert.EqualValues(t, 1, r.DeliveryCount)
		assert.False(t, r.LockDeadline.IsZero())
	}
	ms, ok := cons.AcquisitionLockTimeoutMs()
	assert.True(t, ok)
	assert.EqualValues(t, 30000, ms)

	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Equal(t, map[TopicPartition]error{{"t", 0}: nil}, res)
	for _, rec := range c.ShareRecords("g", "t", 0) {
		assert.Equal(t, testbroker.ShareAcknowledged, rec.State, "offset %d", rec.Offset)
	}
	res, err = cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.Empty(t, res)
}

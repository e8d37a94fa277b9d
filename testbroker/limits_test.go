package testbroker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker"
)

// One request may not create more partitions than Kafka's controller writes in one batch.
func TestExcessivePartitionCountsAreRefused(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 1))
	ctx, _, adm := adminClients(t, c)

	created, err := adm.CreateTopic(ctx, 20000, 1, nil, "huge")
	assert.ErrorIs(t, err, kerr.PolicyViolation)
	assert.Equal(t, "Unable to perform excessively large batch operation.", created.ErrMessage)

	grown, err := adm.CreatePartitions(ctx, 1<<30, "orders")
	require.NoError(t, err)
	assert.ErrorIs(t, grown["orders"].Err, kerr.PolicyViolation)

	p, _ := c.Topic("orders")
	assert.Len(t, p.Partitions, 1)
	_, exists := c.Topic("huge")
	assert.False(t, exists)
}

func TestSetGroupConfig(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	err := c.SetGroupConfig("g", "share.delivery.count.limit", "99")
	assert.ErrorIs(t, err, kerr.InvalidConfig)
	assert.ErrorContains(t, err, "share.delivery.count.limit")
	assert.ErrorIs(t, c.SetGroupConfig("g", "no.such.config", "1"), kerr.InvalidConfig)
}

package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInternalTopicsLeadWhereCoordinatorsAre checks that each internal topic, once created,
// has a partition led by the node each coordinator lookup names for every key: groups over
// __consumer_offsets, transactional ids over __transaction_state, share partitions over
// __share_group_state.
func TestInternalTopicsLeadWhereCoordinatorsAre(t *testing.T) {
	t.Parallel()
	c, err := Start(Config{
		Brokers: 3, ListenAddrs: []string{"127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"},
		BrokerConfigs: map[string]string{
			"offsets.topic.num.partitions": "7", "transaction.state.log.num.partitions": "5",
			"share.coordinator.state.topic.num.partitions": "4", "offsets.topic.replication.factor": "2",
		},
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	for _, tc := range []struct {
		topic      string
		partitions int
		rf         int
		lookup     func(string) int32
	}{
		{consumerOffsetsTopic, 7, 2, c.coordinatorFor},
		{transactionStateTopic, 5, 1, c.txnCoordinatorFor},
		{shareGroupStateTopic, 4, 1, c.shareCoordinatorFor},
	} {
		require.Nil(t, c.meta.Topic(tc.topic), "%s exists only once used", tc.topic)
		c.ensureInternalTopic(tc.topic)
		tp := c.meta.Topic(tc.topic)
		require.NotNil(t, tp)
		c.ensureInternalTopic(tc.topic)
		require.Same(t, tp, c.meta.Topic(tc.topic), "a second use creates nothing")
		parts := c.meta.Partitions(tp)
		require.Len(t, parts, tc.partitions)
		for p, part := range parts {
			st := part.State()
			assert.Equal(t, int32(p%3), st.Leader, "%s/%d", tc.topic, p)
			assert.Len(t, st.Replicas, tc.rf, "%s/%d", tc.topic, p)
		}
		for i := range 50 {
			key := fmt.Sprintf("key-%d", i)
			p := javaAbs(javaHashCode(key)) % int32(tc.partitions)
			assert.Equal(t, parts[p].State().Leader, tc.lookup(key), "%s key %s", tc.topic, key)
		}
	}
}

package metadata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/replica"
)

func newController(t *testing.T, brokers int) *Controller {
	t.Helper()
	configs, err := config.New(nil)
	require.NoError(t, err)
	replicas := replica.NewManager(replica.Config{
		Brokers:  brokers,
		Clock:    clock.NewManual(time.Unix(0, 0)),
		Settings: func() replica.Settings { return configs.Snapshot().Replica },
	})
	t.Cleanup(replicas.Close)
	return New(brokers, configs, replicas)
}

func leaders(c *Controller, t *Topic) []int32 {
	var out []int32
	for _, p := range c.Partitions(t) {
		out = append(out, p.State().Leader)
	}
	return out
}

// TestPlacementRoundRobin checks that each created topic starts its leaders one broker further,
// and that internal topics do not count.
func TestPlacementRoundRobin(t *testing.T) {
	c := newController(t, 3)
	a, err := c.CreateTopic(TopicSpec{Name: "a", Partitions: 2})
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1}, leaders(c, a))
	c.CreateInternalTopic("__consumer_offsets", [][]int32{{0}, {1}, {2}}, nil)
	b, err := c.CreateTopic(TopicSpec{Name: "b", Partitions: 2})
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2}, leaders(c, b))
}

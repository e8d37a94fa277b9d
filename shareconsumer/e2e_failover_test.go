package shareconsumer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/shareconsumer"
)

// TestE2ETestbrokerBrokerFailover stops the broker that leads partition 0 of a topic
// replicated on three brokers while a consumer works through it, and starts it again later:
// the share partition's state moves with the leadership, the consumer follows the new leader
// (and the group's coordinator, if it moved), every record produced before, during and after
// ends accepted, and no record is accepted twice.
func TestE2ETestbrokerBrokerFailover(t *testing.T) {
	onTestbroker(t, e2eSetup{brokers: 3, partitions: 2, replicationFactor: 3}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0, 1}, 20)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())

		accepted := make(map[recKey]int)
		acceptUntil := func(total int) {
			t.Helper()
			ctx := e2eCtx(t, 30*time.Second)
			for len(accepted) < total {
				recs, err := c.Poll(ctx)
				require.NoError(t, err, "after %d of %d records", len(accepted), total)
				for _, r := range recs {
					require.NoError(t, c.Acknowledge(r, acceptAll(r)))
				}
				_, err = c.CommitSync(ctx)
				require.NoError(t, err)
				for _, ac := range cb.get() {
					if ac.Err != nil {
						continue
					}
					for _, off := range ac.Offsets {
						accepted[recKey{ac.Partition, off}]++
					}
				}
				cb.mu.Lock()
				cb.all = nil
				cb.mu.Unlock()
			}
		}
		acceptUntil(20)

		p, ok := env.tb.Partition(e2eTopic, 0)
		require.True(t, ok)
		stopped := p.Leader
		require.NoError(t, env.tb.StopBroker(stopped))
		p, _ = env.tb.Partition(e2eTopic, 0)
		require.NotEqual(t, stopped, p.Leader)
		env.produce(t, []int32{0, 1}, 10)
		acceptUntil(60)

		require.NoError(t, env.tb.StartBroker(stopped))
		env.produce(t, []int32{0, 1}, 5)
		acceptUntil(70)

		for k, n := range accepted {
			assert.Equal(t, 1, n, "partition %d offset %d accepted %d times", k.p, k.off, n)
		}
		for _, part := range []int32{0, 1} {
			for off := range int64(35) {
				assert.Contains(t, accepted, recKey{part, off})
			}
		}
		env.waitSPSO(t, group, []int32{0, 1}, 35)
	})
}

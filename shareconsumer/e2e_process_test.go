package shareconsumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
)

// TestE2EProcessSlowHandlersAcceptEachRecordOnce runs a pool whose handlers take one and a half
// lock durations, on both brokers, in real time: renewal keeps every lock, so every record is
// handed out once and accepted once.
func TestE2EProcessSlowHandlersAcceptEachRecordOnce(t *testing.T) {
	forEachBroker(t, e2eSetup{partitions: 2, lockMs: 2000}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		n := env.produce(t, []int32{0, 1}, 10)
		c := env.newConsumer(t, group)

		var mu sync.Mutex
		accepted := map[shareconsumer.TopicPartition]map[int64]int{}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := 0
		err := c.Process(ctx, func(ctx context.Context, r *shareconsumer.Record) error {
			select {
			case <-time.After(3 * time.Second): // the work
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, shareconsumer.Workers(n), shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			mu.Lock()
			defer mu.Unlock()
			if o.Ack == acktype.Accept {
				tp := shareconsumer.TopicPartition{Topic: o.Record.Topic, Partition: o.Record.Partition}
				if accepted[tp] == nil {
					accepted[tp] = map[int64]int{}
				}
				accepted[tp][o.Record.Offset]++
				done++
			}
			if done == n {
				cancel()
			}
		}))
		require.NoError(t, err)
		total := 0
		for tp, offs := range accepted {
			for off, k := range offs {
				assert.Equal(t, 1, k, "%s offset %d accepted %d times", tp, off, k)
				total++
			}
		}
		assert.Equal(t, n, total)
		s := c.ProcessStats()
		assert.Equal(t, uint64(0), s.Redeliveries, "%s", s)
		assert.Equal(t, uint64(0), s.LocksLost, "%s", s)
		assert.Positive(t, s.Renewed, "%s", s)
		env.waitSPSO(t, group, []int32{0, 1}, 10)
	})
}

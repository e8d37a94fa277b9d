package shareconsumer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// deadLetterEvents records the dead-letter hook's events.
type deadLetterEvents struct {
	mu  sync.Mutex
	evs []DeadLetterEvent
}

func (d *deadLetterEvents) OnDeadLetter(ev DeadLetterEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.evs = append(d.evs, ev)
}

// TestDeadLetterSkippedWhenTheLockRanOut: handlers that return errors.DeadLetter when their
// record's lock runs out (Kafka 4.1: no renewing) make no copy: the broker may have given the
// record to another member, which would copy it too. Each record's lock is lost instead.
func TestDeadLetterSkippedWhenTheLockRanOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		c := sStart(t, n, testbroker.Kafka41(), testbroker.Topic("t.dlq", 1))
		var hooks deadLetterEvents
		cons := sNew(t, c, Hooks(&hooks))
		var mu sync.Mutex
		first := map[int64]bool{}
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			<-ctx.Done()
			return errors.DeadLetter(nil)
		}, func(o RecordOutcome) bool {
			mu.Lock()
			defer mu.Unlock()
			if o.Record.DeliveryCount == 1 {
				first[o.Record.Offset] = true
			}
			return len(first) == n
		}, DeadLetterTopic("t.dlq"), Workers(n))
		require.NoError(t, err)
		s := cons.ProcessStats()
		assert.Zero(t, s.DeadLettered, "%s", s)
		assert.Zero(t, s.DeadLetterFailures, "%s", s)
		hooks.mu.Lock()
		assert.Empty(t, hooks.evs, "no copy tried")
		hooks.mu.Unlock()
		assert.GreaterOrEqual(t, s.LocksLost, uint64(n), "%s", s)
	})
}

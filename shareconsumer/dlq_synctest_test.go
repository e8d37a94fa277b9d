package shareconsumer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
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

// TestDeadLetterRenewsWhileProducing holds the dead-letter produce for two and a half lock
// durations, on the bubble's clock: Process renews the record's lock meanwhile (at 0.8 s,
// 1.6 s and 2.4 s), so it is not lost nor delivered again, and accepts it once the copy is in.
func TestDeadLetterRenewsWhileProducing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 1, testbroker.Topic("t.dlq", 1))
		_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Topic: "t.dlq", Delay: 2500 * time.Millisecond, Times: 1})
		require.NoError(t, err)
		cons := sNew(t, c)
		var out RecordOutcome
		err = runUntil(t, cons, func(context.Context, *Record) error { return errors.DeadLetter(nil) },
			func(o RecordOutcome) bool { out = o; return true }, DeadLetterTopic("t.dlq"))
		require.NoError(t, err)
		require.True(t, out.DeadLettered, "%v", out.DeadLetterErr)
		assert.Equal(t, acktype.Accept, out.Ack)
		assert.Equal(t, 3, out.Renews, "renewed while the produce was held")
		s := cons.ProcessStats()
		assert.Zero(t, s.LocksLost, "%s", s)
		assert.Zero(t, s.Redeliveries, "%s", s)
		assert.EqualValues(t, 1, s.DeadLettered, "%s", s)
		start, _, ok := c.SharePartitionOffsets("g", "t", 0)
		require.True(t, ok)
		assert.EqualValues(t, 1, start, "accepted")
		info, _ := c.Partition("t.dlq", 0)
		assert.EqualValues(t, 1, info.HighWatermark, "one copy")
	})
}

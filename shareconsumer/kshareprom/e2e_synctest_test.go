package kshareprom_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
	"github.com/kshare/kshare/testbroker"
)

// lockMs is the lock duration of the group TestE2EProcessRenewsAndLosesALock uses.
const lockMs = 1000

// TestE2EProcessRenewsAndLosesALock runs Process on a testbroker inside a testing/synctest
// bubble, where every clock is the bubble's: a handler that sleeps for lock durations takes no
// real time, and when a lock is renewed or lost follows from the lock duration alone. Of five
// records, "0" is handled for three lock durations (its lock renewed) and accepted; "1" waits
// for its context, renewed with "0" until "0"'s handler turns renewing off for the group, so
// that the next renew is refused and its lock lost (invalid_record_state; the broker hands it
// out again, and its second delivery is accepted); "2" is released once, then accepted; "3" is
// rejected; "4" accepted. The metrics must say what ProcessStats says, checked with
// client_golang's testutil.
func TestE2EProcessRenewsAndLosesALock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const records = 5
		tb := testbroker.StartT(t,
			testbroker.InMemoryNetwork(),
			testbroker.Topic("orders", 1),
			testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", strconv.Itoa(lockMs)),
			// Sessions that outlast the bubble's time, which runs as fast as nothing happens.
			testbroker.BrokerConfig("group.share.max.session.timeout.ms", "3600000"),
			testbroker.BrokerConfig("group.share.session.timeout.ms", "3600000"),
		)
		require.NoError(t, tb.SetGroupConfig("workers", "share.auto.offset.reset", "earliest"))
		require.NoError(t, tb.SetGroupConfig("workers", "share.record.lock.duration.ms", strconv.Itoa(lockMs)))
		producer, err := kgo.NewClient(kgo.SeedBrokers(tb.Addrs()...), kgo.Dialer(tb.DialContext), kgo.DefaultProduceTopic("orders"))
		require.NoError(t, err)
		for i := range records {
			require.NoError(t, producer.ProduceSync(context.Background(), kgo.StringRecord(strconv.Itoa(i))).FirstErr())
		}
		producer.Close()

		reg := prometheus.NewPedanticRegistry()
		m := kshareprom.New("kshare", kshareprom.Registerer(reg), kshareprom.ConstLabels(prometheus.Labels{"group": "workers"}))
		c, err := shareconsumer.New(
			shareconsumer.ClientOpts(kgo.SeedBrokers(tb.Addrs()...), kgo.Dialer(tb.DialContext)),
			shareconsumer.Group("workers"),
			shareconsumer.Topics("orders"),
			shareconsumer.FetchMaxWait(0), // no renew queues behind a fetch waiting at the broker
			shareconsumer.Hooks(m),
		)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })

		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var mu sync.Mutex
		var lost error // the cause "1"'s first handler's context ended with
		var final atomic.Int32
		err = c.Process(ctx, func(ctx context.Context, r *shareconsumer.Record) error {
			switch string(r.Value) {
			case "0":
				time.Sleep(3 * lockMs * time.Millisecond)
				// Renewed at 0.8s, 1.6s and 2.4s with "1"; "1"'s next renew is refused.
				if err := tb.SetGroupConfig("workers", "share.renew.acknowledge.enable", "false"); err != nil {
					return errors.Reject(err) // fails the test below: "0" must be accepted
				}
			case "1":
				if r.DeliveryCount == 1 {
					<-ctx.Done()
					mu.Lock()
					lost = context.Cause(ctx)
					mu.Unlock()
					return ctx.Err()
				}
			case "2":
				if r.DeliveryCount == 1 {
					return stderrors.New("not now")
				}
			case "3":
				return errors.Reject(stderrors.New("never"))
			}
			return nil
		}, shareconsumer.Workers(records), shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			if (o.Ack == acktype.Accept || o.Ack == acktype.Reject) && final.Add(1) == records {
				stop()
			}
		}))
		require.NoError(t, err)
		// The hooks of the last answers (OnAcknowledge, OnRenew, OnLockLost) run once the
		// answer is applied and the locks let go, possibly after Process returned: wait for
		// every goroutine of the bubble to be idle, so that they ran.
		synctest.Wait()

		s := c.ProcessStats()
		t.Logf("ProcessStats: %v", s)
		mu.Lock()
		var lle *errors.LockLostError
		require.ErrorAs(t, lost, &lle, "record 1's lock was lost")
		mu.Unlock()
		require.Equal(t, errors.LockInvalidRecordState, lle.Reason)
		// What the handlers did.
		require.EqualValues(t, 4, s.Accepted, "0, 1 at its second delivery, 2 at its second, 4")
		require.EqualValues(t, 1, s.Released)
		require.EqualValues(t, 1, s.Rejected)
		require.EqualValues(t, 1, s.LocksLost)
		require.EqualValues(t, 1, s.LocksLostBy[errors.LockInvalidRecordState])
		require.GreaterOrEqual(t, s.Renewed, uint64(3), "0's lock renewed at least three times")

		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		assert.Empty(t, problems)

		// The figures ProcessStats has, as Prometheus's text format says them.
		var want strings.Builder
		fmt.Fprintf(&want, `# HELP kshare_processed_records_total Records Process acquired, by what became of them: outcome accept, release or reject (what was acknowledged), dead_letter (copied to the dead-letter topic, then accepted), or lost (the lock was lost first).
# TYPE kshare_processed_records_total counter
kshare_processed_records_total{group="workers",outcome="accept",topic="orders"} %d
kshare_processed_records_total{group="workers",outcome="lost",topic="orders"} %d
kshare_processed_records_total{group="workers",outcome="reject",topic="orders"} %d
kshare_processed_records_total{group="workers",outcome="release",topic="orders"} %d
`, s.Accepted, s.LocksLost, s.Rejected, s.Released)
		// renewed_records_total is at most ProcessStats.Renewed, equal when no record finished
		// between a renew's send and its answer. Here none does: the renews carry "0" and "1"
		// only (at 0.8s, 1.6s, 2.4s; the one at 3.2s refused), the bubble's clock stands still
		// while one is in flight (the in-memory network takes no time), "0"'s handler ends at
		// 3s, between two renews, and "1"'s only once its lock is lost; the other records'
		// handlers return at once, long before a lock of theirs would be renewed.
		fmt.Fprintf(&want, `# HELP kshare_renewed_records_total Records whose acquisition lock a leader renewed, by topic.
# TYPE kshare_renewed_records_total counter
kshare_renewed_records_total{group="workers",topic="orders"} %d
`, s.Renewed)
		fmt.Fprintf(&want, `# HELP kshare_locks_lost_total Records whose acquisition lock Process lost, by reason.
# TYPE kshare_locks_lost_total counter
`)
		for _, r := range errors.LockLostReasons {
			if n := s.LocksLostBy[r]; n > 0 {
				fmt.Fprintf(&want, "kshare_locks_lost_total{group=\"workers\",reason=%q,topic=\"orders\"} %d\n", r.String(), n)
			}
		}
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want.String()),
			"kshare_processed_records_total", "kshare_renewed_records_total", "kshare_locks_lost_total"))

		processed := series(t, reg, "kshare_processed_records_total")
		assert.Equal(t, float64(s.Delivered), sum(processed))
		assert.Equal(t, map[string]float64{"topic=orders": float64(s.HandlerTime.Count)}, series(t, reg, "kshare_process_duration_seconds"))
		acked := series(t, reg, "kshare_acknowledged_records_total")
		assert.Equal(t, float64(s.Accepted), acked["outcome=ok,topic=orders,type=accept"])
		assert.Equal(t, float64(s.Rejected), acked["outcome=ok,topic=orders,type=reject"])
		assert.Equal(t, float64(s.Released), acked["outcome=ok,topic=orders,type=release"])
		assert.Equal(t, float64(s.Renewed), acked["outcome=ok,topic=orders,type=renew"], "a renewed record is a renew acknowledged")
		assert.Equal(t, float64(s.RenewFailures), acked["outcome=error,topic=orders,type=renew"], "the refused renew: %v", acked)
		if ms, ok := c.AcquisitionLockTimeoutMs(); assert.True(t, ok) {
			assert.Equal(t, map[string]float64{"": float64(ms) / 1000}, series(t, reg, "kshare_acquisition_lock_timeout_seconds"))
		}
		assert.Equal(t, map[string]float64{"": float64(c.Status().Held)}, series(t, reg, "kshare_held_records"))
	})
}

package shareconsumer_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// End-to-end tests of RENEW (KIP-1222): the record stays the consumer's and later Polls return
// it again until a final acknowledgement.

// TestE2ERenewReturnsRecordUntilFinal sends a renew with an accept and a release of the same
// partition in one request (per-offset types), gets the renewed record back from the next Poll
// (the same *Record, the same delivery count) and again after a second renew, and ends it with
// an accept; the released record comes back afterwards.
func TestE2ERenewReturnsRecordUntilFinal(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 3)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		recs := pollN(t, c, 3, 10*time.Second)
		require.Len(t, recs, 3)
		renewed := recs[1]
		require.NoError(t, c.Acknowledge(recs[0], acktype.Accept))
		require.NoError(t, c.Acknowledge(renewed, acktype.Renew))
		require.NoError(t, c.Acknowledge(recs[2], acktype.Release))

		for round := 1; round <= 2; round++ {
			got, err := c.Poll(e2eCtx(t, 10*time.Second))
			require.NoError(t, err, "round %d", round)
			require.Len(t, got, 1, "round %d: only the renewed record: %v", round, recOffsets(got))
			assert.Same(t, renewed, got[0], "round %d: the same record", round)
			assert.EqualValues(t, 1, got[0].DeliveryCount, "round %d: a renew is no new delivery", round)
			if round == 1 {
				require.NoError(t, c.Acknowledge(got[0], acktype.Renew))
			}
		}
		acs := cb.get()
		require.Len(t, acs, 2, "one outcome per request: %+v", acs)
		assert.Equal(t, []int64{0, 1, 2}, acs[0].Offsets, "accept, renew and release travelled together")
		assert.NoError(t, acs[0].Err)
		assert.Equal(t, []int64{1}, acs[1].Offsets)
		assert.NoError(t, acs[1].Err)

		require.NoError(t, c.Acknowledge(renewed, acktype.Accept))
		again := pollN(t, c, 1, 10*time.Second)
		require.Len(t, again, 1)
		assert.EqualValues(t, 2, again[0].Offset, "the released record")
		assert.EqualValues(t, 2, again[0].DeliveryCount)
		require.NoError(t, c.Acknowledge(again[0], acktype.Accept))
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 3)
		assert.ErrorIs(t, c.Acknowledge(renewed, acktype.Renew), errors.ErrCannotAcknowledge,
			"a record whose final acknowledgement was sent cannot be renewed")
	})
}

// TestE2ERenewThroughCommitSync renews through CommitSync (a ShareAcknowledge with IsRenewAck):
// the commit reports success for the partition and the next Poll returns the record at once.
func TestE2ERenewThroughCommitSync(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 2)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		recs := pollN(t, c, 2, 10*time.Second)
		require.NoError(t, c.Acknowledge(recs[0], acktype.Renew))
		require.NoError(t, c.Acknowledge(recs[1], acktype.Accept))
		res := commitSyncOK(t, c, "consumer")
		assert.Len(t, res, 1)

		got, err := c.Poll(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Same(t, recs[0], got[0])
		require.NoError(t, c.Acknowledge(got[0], acktype.Accept))
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 2)
	})
}

// TestE2ETestbrokerRenewKeepsRecordPastDeadline renews a record before its lock runs out, on
// the manual clock: past the original deadline the record is still acquired by its consumer,
// another member gets nothing, and the record's LockDeadline moved on.
func TestE2ETestbrokerRenewKeepsRecordPastDeadline(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "2000")
		env.produce(t, []int32{0}, 1)
		// FetchMaxWait(0): a fetch parked on the manual clock would hold Close up.
		members := env.newMembers(t, group, 2, shareconsumer.ExplicitAcknowledgement(), shareconsumer.FetchMaxWait(0))
		a, b := members[0], members[1]
		recs := pollN(t, a, 1, 10*time.Second)
		first := recs[0].LockDeadline
		clock := env.tb.ManualClock()

		for i := range 3 {
			clock.Advance(1500 * time.Millisecond)
			require.NoError(t, a.Acknowledge(recs[0], acktype.Renew))
			got, err := a.Poll(e2eCtx(t, 10*time.Second))
			require.NoError(t, err, "renew %d: the Poll returns as soon as the renew is answered", i)
			require.Len(t, got, 1)
			assert.Same(t, recs[0], got[0])
		}
		// 4.5s in, more than twice the lock duration.
		clock.Advance(1500 * time.Millisecond)
		sr, ok := env.tb.ShareRecord(group, e2eTopic, 0, 0)
		require.True(t, ok)
		assert.Equal(t, testbroker.ShareAcquired, sr.State)
		assert.EqualValues(t, 1, sr.DeliveryCount)
		assert.True(t, recs[0].LockDeadline.After(first), "the lock deadline moved on")
		pollNothing(t, b, 200*time.Millisecond)

		require.NoError(t, a.Acknowledge(recs[0], acktype.Accept))
		commitSyncOK(t, a, "a")
		env.waitSPSO(t, group, []int32{0}, 1)
	})
}

// TestE2ETestbrokerRenewAfterExpiryFails renews a record whose lock already ran out: the renew
// fails with INVALID_RECORD_STATE, reported with its offset to the callback and to CommitSync,
// and the consumer does not return that delivery again; the broker delivers the record anew.
func TestE2ETestbrokerRenewAfterExpiryFails(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "2000")
		env.produce(t, []int32{0}, 2)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		recs := pollN(t, c, 2, 10*time.Second)
		env.tb.ManualClock().Advance(2 * time.Second)

		require.NoError(t, c.Acknowledge(recs[0], acktype.Renew))
		require.NoError(t, c.Acknowledge(recs[1], acktype.Renew))
		tp := shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 0}
		res, err := c.CommitSync(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.ErrorIs(t, res[tp], kerr.InvalidRecordState)
		var ae *errors.AckError
		require.ErrorAs(t, res[tp], &ae)
		assert.Equal(t, []int64{0, 1}, ae.Offsets)
		acs := cb.get()
		require.Len(t, acs, 1)
		assert.ErrorIs(t, acs[0].Err, kerr.InvalidRecordState)

		got := pollN(t, c, 2, 10*time.Second)
		for _, r := range got {
			assert.EqualValues(t, 2, r.DeliveryCount, "offset %d: a new delivery, not the renewed one", r.Offset)
			assert.NotSame(t, recs[r.Offset], r)
		}
	})
}

// TestE2ETestbrokerRenewDisabledForGroup sets share.renew.acknowledge.enable=false on the group:
// the renew fails with Kafka's INVALID_RECORD_STATE message, and the record is not returned.
func TestE2ETestbrokerRenewDisabledForGroup(t *testing.T) {
	onTestbroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.setGroupConfig(t, group, "share.renew.acknowledge.enable", "false")
		env.produce(t, []int32{0}, 1)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		recs := pollN(t, c, 1, 10*time.Second)
		require.NoError(t, c.Acknowledge(recs[0], acktype.Renew))
		pollNothing(t, c, 300*time.Millisecond)
		acs := cb.get()
		require.Len(t, acs, 1)
		require.ErrorIs(t, acs[0].Err, kerr.InvalidRecordState)
		var ae *errors.AckError
		require.ErrorAs(t, acs[0].Err, &ae)
		assert.Equal(t, "Renewing acquisition locks is not enabled for the group.", ae.Message)
		assert.Equal(t, []int64{0}, ae.Offsets)
		sr, ok := env.tb.ShareRecord(group, e2eTopic, 0, 0)
		require.True(t, ok)
		assert.Equal(t, testbroker.ShareAcquired, sr.State, "the failed renew leaves the lock as it was")
	})
}

// TestE2ETestbrokerAcquisitionLockTimeoutFollowsConfig changes share.record.lock.duration.ms
// while a record is held: the renew's answer carries the new duration, which
// AcquisitionLockTimeoutMs shows from the next Poll on (not right after CommitSync), as Kafka's
// client does.
func TestE2ETestbrokerAcquisitionLockTimeoutFollowsConfig(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "15000")
		env.produce(t, []int32{0}, 1)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		_, known := c.AcquisitionLockTimeoutMs()
		assert.False(t, known, "not known before the first records")
		recs := pollN(t, c, 1, 10*time.Second)
		ms, known := c.AcquisitionLockTimeoutMs()
		require.True(t, known)
		assert.EqualValues(t, 15000, ms)

		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "25000")
		require.NoError(t, c.Acknowledge(recs[0], acktype.Renew))
		sent := time.Now()
		commitSyncOK(t, c, "consumer")
		ms, _ = c.AcquisitionLockTimeoutMs()
		assert.EqualValues(t, 15000, ms, "unchanged until the next Poll")
		got := pollN(t, c, 1, 10*time.Second)
		ms, _ = c.AcquisitionLockTimeoutMs()
		assert.EqualValues(t, 25000, ms)
		assert.WithinDuration(t, sent.Add(25*time.Second), got[0].LockDeadline, 5*time.Second,
			"the deadline counts the new duration from the renew's send")
		assert.False(t, got[0].LockDeadline.After(time.Now().Add(25*time.Second)), "never later than the broker's")
	})
}

// TestE2ERenewRefusedUpFrontByOldLeader runs against brokers that speak ShareFetch and
// ShareAcknowledge v1 only (Kafka 4.1): Acknowledge refuses RENEW at once with
// ErrUnsupportedAcknowledgeType and records nothing, while accept, release and reject work.
func TestE2ERenewRefusedUpFrontByOldLeader(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{shareV1: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 3)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		recs := pollN(t, c, 3, 10*time.Second)
		for _, r := range recs {
			require.ErrorIs(t, c.Acknowledge(r, acktype.Renew), errors.ErrUnsupportedAcknowledgeType, "offset %d", r.Offset)
		}
		_, err := c.Poll(e2eCtx(t, 10*time.Second))
		require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords, "nothing was recorded")
		require.NoError(t, c.Acknowledge(recs[0], acktype.Accept))
		require.NoError(t, c.Acknowledge(recs[1], acktype.Reject))
		require.NoError(t, c.Acknowledge(recs[2], acktype.Release))
		commitSyncOK(t, c, "consumer")
		again := pollAck(t, c, 1, 10*time.Second, acceptAll)
		assert.EqualValues(t, 2, again[0].Offset)
		assert.EqualValues(t, 2, again[0].DeliveryCount)
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 3)
		assert.Empty(t, func() []error {
			var errs []error
			for _, ac := range cb.get() {
				if ac.Err != nil {
					errs = append(errs, ac.Err)
				}
			}
			return errs
		}(), "no acknowledgement failed")
	})
}

// TestE2ETestbrokerRenewFailsOnSessionReset answers the ShareFetch carrying a renew with
// SHARE_SESSION_NOT_FOUND: the renew fails (NETWORK_EXCEPTION, as Kafka's client reports
// acknowledgements lost with a session), the record is not returned as renewed, and the Poll
// goes on with a new session.
func TestE2ETestbrokerRenewFailsOnSessionReset(t *testing.T) {
	onTestbroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 1)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		first := pollN(t, c, 1, 10*time.Second)
		_, err := env.tb.InjectFault(testbroker.Fault{
			APIs: []kmsg.Key{kmsg.ShareFetch}, Group: group, Err: kerr.ShareSessionNotFound, Times: 1,
		})
		require.NoError(t, err)
		require.NoError(t, c.Acknowledge(first[0], acktype.Renew))
		env.produce(t, []int32{0}, 1)
		got := pollN(t, c, 1, 10*time.Second)
		for _, r := range got {
			assert.NotSame(t, first[0], r, "the renew failed: the record is not returned as renewed")
		}
		acs := cb.get()
		require.Len(t, acs, 1)
		assert.Equal(t, []int64{0}, acs[0].Offsets)
		assert.ErrorIs(t, acs[0].Err, kerr.NetworkException)
		assert.Zero(t, env.tb.ActiveFaults(), "the fault was used")
	})
}

// TestE2ERenewMixedWorkload has three consumers of one group work through 3000 records of three
// partitions, each record renewed zero to two times (a random choice per delivery) before its
// acceptance: every record is accepted exactly once, by the consumer it was first delivered to,
// at its first delivery, and every renew succeeds.
func TestE2ERenewMixedWorkload(t *testing.T) {
	t.Parallel()
	testRenewMixedWorkload(t)
}

// TestE2ERenewMixedWorkloadFetchAhead is the same with FetchAhead, whose fetches must not get
// in the way of the renews.
func TestE2ERenewMixedWorkloadFetchAhead(t *testing.T) {
	t.Parallel()
	testRenewMixedWorkload(t, shareconsumer.FetchAhead())
}

func testRenewMixedWorkload(t *testing.T, extra ...shareconsumer.Opt) {
	forEachBroker(t, e2eSetup{brokers: 2, partitions: 3}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		const perPartition = 1000
		env.prepareGroup(t, group)
		var cb commits
		cs := env.newMembers(t, group, 3, append([]shareconsumer.Opt{shareconsumer.ExplicitAcknowledgement(), cb.opt()}, extra...)...)
		total := env.produce(t, []int32{0, 1, 2}, perPartition)

		var mu sync.Mutex
		owner := map[recKey]int{} // the consumer that first got the record
		rngs := make([]*rand.Rand, len(cs))
		renewsLeft := make([]map[*shareconsumer.Record]int, len(cs)) // each consumer's own
		for i := range cs {
			rngs[i] = rand.New(rand.NewPCG(uint64(i), 7))
			renewsLeft[i] = map[*shareconsumer.Record]int{}
		}
		workGroup(t, cs, total, func(i int, r *shareconsumer.Record) (bool, error) {
			k := recKey{r.Partition, r.Offset}
			n, seen := renewsLeft[i][r]
			if !seen {
				n = rngs[i].IntN(3)
				mu.Lock()
				o, ok := owner[k]
				owner[k] = i
				mu.Unlock()
				if ok && o != i {
					return false, fmt.Errorf("delivered to consumer %d before", o)
				}
			}
			if n > 0 {
				renewsLeft[i][r] = n - 1
				return false, cs[i].Acknowledge(r, acktype.Renew)
			}
			delete(renewsLeft[i], r)
			if r.DeliveryCount != 1 {
				return false, fmt.Errorf("accepted at delivery %d", r.DeliveryCount)
			}
			return true, cs[i].Acknowledge(r, acktype.Accept)
		})
		for _, c := range cs {
			commitSyncOK(t, c, "consumer")
		}
		for _, ac := range cb.get() {
			require.NoError(t, ac.Err, "%v %v", ac.TopicPartition, ac.Offsets)
		}
		env.waitSPSO(t, group, []int32{0, 1, 2}, perPartition)
	})
}

package shareconsumer_test

import (
	"context"
	"slices"
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

// End-to-end tests that need testbroker's manual clock, record inspection or fault injection,
// which kfake does not offer: they run on testbroker only, and their names say so.

// TestE2ETestbrokerLockExpiryRedeliversToAnother lets the acquisition lock of one member's
// records run out on the manual clock: the records become available with their delivery count
// kept, another member gets them at their second delivery, and the first member's late
// acknowledgements fail with INVALID_RECORD_STATE while the other member holds them.
func TestE2ETestbrokerLockExpiryRedeliversToAnother(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		const lock = 2 * time.Second
		env.prepareGroup(t, group)
		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "2000")
		env.produce(t, []int32{0}, 5)
		var cbA commits
		a := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cbA.opt())
		b := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		env.waitMembers(t, group, 2)

		recsA := pollN(t, a, 5, 10*time.Second)
		require.Len(t, recsA, 5)
		srs := env.tb.ShareRecords(group, e2eTopic, 0)
		require.Len(t, srs, 5)
		for _, sr := range srs {
			require.Equal(t, testbroker.ShareAcquired, sr.State, "offset %d", sr.Offset)
		}
		env.tb.ManualClock().Advance(lock)
		for _, sr := range env.tb.ShareRecords(group, e2eTopic, 0) {
			assert.Equal(t, testbroker.ShareAvailable, sr.State, "offset %d after the lock ran out", sr.Offset)
			assert.EqualValues(t, 1, sr.DeliveryCount, "offset %d", sr.Offset)
		}

		recsB := pollAck(t, b, 5, 10*time.Second, acceptAll)
		require.Len(t, recsB, 5)
		for i, r := range recsB {
			assert.EqualValues(t, i, r.Offset)
			assert.EqualValues(t, 2, r.DeliveryCount, "offset %d", r.Offset)
		}

		// a's acknowledgements come too late: the records are b's now. (Had b's acceptance
		// reached the broker first, the start offset would have moved past them, and Kafka
		// skips acknowledgements below it without an error.)
		for _, r := range recsA {
			require.NoError(t, a.Acknowledge(r, acktype.Accept))
		}
		tp := shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 0}
		res, err := a.CommitSync(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.Contains(t, res, tp)
		assert.ErrorIs(t, res[tp], kerr.InvalidRecordState)
		var ae *errors.AckError
		if assert.ErrorAs(t, res[tp], &ae) {
			assert.Equal(t, []int64{0, 1, 2, 3, 4}, ae.Offsets)
		}
		acs := cbA.get()
		require.Len(t, acs, 1)
		assert.Equal(t, []int64{0, 1, 2, 3, 4}, acs[0].Offsets)
		assert.ErrorIs(t, acs[0].Err, kerr.InvalidRecordState)

		res, err = b.CommitSync(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.Contains(t, res, tp)
		require.NoError(t, res[tp])
		env.waitSPSO(t, group, []int32{0}, 5)
	})
}

// TestE2ETestbrokerSessionResetAfterShareSessionNotFound answers the ShareFetch carrying a
// Poll's acknowledgements with SHARE_SESSION_NOT_FOUND once: the consumer opens a new session
// and goes on consuming, the callback reports the acknowledgements of that ShareFetch as
// failed, and the records whose acceptance was lost are delivered again, none lost.
func TestE2ETestbrokerSessionResetAfterShareSessionNotFound(t *testing.T) {
	onTestbroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		// The shortest lock Kafka allows, in case the lost session's locks outlive it.
		env.setGroupConfig(t, group, "share.record.lock.duration.ms", "1000")
		env.produce(t, []int32{0}, 10)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		first := pollAck(t, c, 10, 10*time.Second, acceptAll)
		require.Len(t, first, 10)
		require.Empty(t, cb.get())

		_, err := env.tb.InjectFault(testbroker.Fault{
			APIs: []kmsg.Key{kmsg.ShareFetch}, Group: group, Err: kerr.ShareSessionNotFound, Times: 1,
		})
		require.NoError(t, err)
		env.produce(t, []int32{0}, 10) // offsets 10-19

		// Everything arrives: 10-19 for the first time, and 0-9 again once their lock is gone.
		ctx := e2eCtx(t, 20*time.Second)
		again := map[int64]int16{}
		for len(again) < 20 {
			recs, err := c.Poll(ctx)
			require.NoError(t, err, "after %d records: %v", len(again), again)
			for _, r := range recs {
				require.NoError(t, c.Acknowledge(r, acktype.Accept))
				_, dup := again[r.Offset]
				require.False(t, dup, "offset %d delivered twice after the reset", r.Offset)
				again[r.Offset] = r.DeliveryCount
			}
		}
		assert.Zero(t, env.tb.ActiveFaults(), "the fault was used")
		for off, dc := range again {
			want := int16(1)
			if off < 10 {
				want = 2
			}
			assert.Equal(t, want, dc, "delivery count of offset %d", off)
		}
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 20)

		var failed []int64
		for _, ac := range cb.get() {
			if ac.Err != nil {
				assert.ErrorIs(t, ac.Err, kerr.NetworkException, "the lost acknowledgements are reported as Kafka's client does")
				failed = append(failed, ac.Offsets...)
			}
		}
		slices.Sort(failed)
		assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, failed, "acknowledgements reported failed")
	})
}

// TestE2ETestbrokerFatalHeartbeatError answers every ShareGroupHeartbeat with
// GROUP_AUTHORIZATION_FAILED: Poll returns a FatalError carrying the code.
func TestE2ETestbrokerFatalHeartbeatError(t *testing.T) {
	onTestbroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		_, err := env.tb.InjectFault(testbroker.Fault{
			APIs: []kmsg.Key{kmsg.ShareGroupHeartbeat}, Group: group, Err: kerr.GroupAuthorizationFailed,
		})
		require.NoError(t, err)
		c := env.newConsumer(t, group)
		ctx := e2eCtx(t, 10*time.Second)
		var pollErr error
		for pollErr == nil {
			recs, err := c.Poll(ctx)
			require.Empty(t, recs)
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				continue
			}
			pollErr = err
		}
		var fe *errors.FatalError
		require.ErrorAs(t, pollErr, &fe)
		assert.Equal(t, group, fe.Group)
		assert.ErrorIs(t, pollErr, kerr.GroupAuthorizationFailed)
		_, err = c.Poll(e2eCtx(t, time.Second))
		assert.ErrorAs(t, err, &fe, "the consumer cannot go on")
	})
}

// TestE2ETestbrokerLeaderMove moves the leader of the partition while the consumer holds
// records acquired at the old leader: their acknowledgements fail (the old leader no longer
// hosts the share partition, or the consumer already knows the leader moved), the consumer
// follows the new leader, the records come again from there, and every record, including
// those produced after the move, ends accepted.
func TestE2ETestbrokerLeaderMove(t *testing.T) {
	onTestbroker(t, e2eSetup{brokers: 2}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 10)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		first := pollN(t, c, 10, 10*time.Second)
		require.Len(t, first, 10)

		p, ok := env.tb.Partition(e2eTopic, 0)
		require.True(t, ok)
		to := 1 - p.Leader
		require.NoError(t, env.tb.MoveLeader(e2eTopic, 0, to))
		for _, r := range first {
			require.NoError(t, c.Acknowledge(r, acktype.Accept))
		}
		tp := shareconsumer.TopicPartition{Topic: e2eTopic, Partition: 0}
		res, err := c.CommitSync(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.Error(t, res[tp])
		assert.True(t, errors.Is(res[tp], kerr.UnknownTopicOrPartition) || errors.Is(res[tp], kerr.NotLeaderForPartition),
			"the locks stayed with the old leader: %v", res[tp])

		env.produce(t, []int32{0}, 5)
		again := pollAck(t, c, 15, 10*time.Second, acceptAll)
		offsets := make([]int64, 0, len(again))
		for _, r := range again {
			offsets = append(offsets, r.Offset)
		}
		slices.Sort(offsets)
		assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, offsets)
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 15)
		sessions := env.tb.ShareSessions(to)
		assert.NotEmpty(t, sessions, "the consumer opened a session with the new leader")
	})
}

// TestE2ETestbrokerRenewFailsAfterLeaderMove renews records whose leader then moves: the renew
// fails with the partition's error, the records are never returned as renewed, and they come
// again from the new leader.
func TestE2ETestbrokerRenewFailsAfterLeaderMove(t *testing.T) {
	onTestbroker(t, e2eSetup{brokers: 2}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 3)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		first := pollN(t, c, 3, 10*time.Second)
		p, _ := env.tb.Partition(e2eTopic, 0)
		require.NoError(t, env.tb.MoveLeader(e2eTopic, 0, 1-p.Leader))
		for _, r := range first {
			require.NoError(t, c.Acknowledge(r, acktype.Renew))
		}
		again := pollAck(t, c, 3, 10*time.Second, acceptAll)
		for _, r := range again {
			assert.False(t, slices.Contains(first, r), "offset %d: a new delivery, not the renewed record", r.Offset)
		}
		acs := cb.get()
		require.NotEmpty(t, acs)
		assert.Equal(t, []int64{0, 1, 2}, acs[0].Offsets)
		assert.True(t, errors.Is(acs[0].Err, kerr.UnknownTopicOrPartition) || errors.Is(acs[0].Err, kerr.NotLeaderForPartition),
			"the renew failed: %v", acs[0].Err)
		commitSyncOK(t, c, "consumer")
		env.waitSPSO(t, group, []int32{0}, 3)
	})
}

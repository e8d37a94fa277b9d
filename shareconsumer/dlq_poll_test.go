package shareconsumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// TestE2EDeadLetterPollExplicit: in explicit mode DeadLetter produces the copy and acknowledges
// the record ACCEPT; it refuses records the consumer does not hold.
func TestE2EDeadLetterPollExplicit(t *testing.T) {
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 1)
		start := time.Now()
		off := env.produceWithHeaders(t, 0, "k", "v")
		hooks := newDLQOutcomes()
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), shareconsumer.DeadLetterTopic(dlqTopic), shareconsumer.Hooks(hooks))
		ctx := e2eCtx(t, 10*time.Second)
		recs := pollN(t, c, 1, 10*time.Second)
		require.ErrorIs(t, c.DeadLetter(ctx, nil, nil), errors.ErrCannotAcknowledge)
		other := *recs[0]
		other.Offset++
		require.ErrorIs(t, c.DeadLetter(ctx, &other, nil), errors.ErrCannotAcknowledge)

		require.NoError(t, c.DeadLetter(ctx, recs[0], fmt.Errorf("unparseable")))
		commitSyncOK(t, c, "commit")
		env.waitSPSO(t, group, []int32{0}, off+1)
		require.ErrorIs(t, c.DeadLetter(ctx, recs[0], nil), errors.ErrCannotAcknowledge, "its acknowledgement was sent")
		evs := hooks.hookEvents()
		require.Len(t, evs, 1)
		assert.NoError(t, evs[0].Err)
		assert.EqualError(t, evs[0].Cause, "unparseable")
		dl := env.readDLQ(t, 1)
		requireDeadLetterHeaders(t, dl[0], group, 0, off, 1, "unparseable", start)
		assert.Equal(t, "v", string(dl[0].Value))
	})
}

// TestE2EDeadLetterPollFailure dead-letters to a topic that does not exist: in explicit mode
// the record is left to the caller, who releases it; in implicit mode DeadLetter releases it.
// Either way it comes back; once the topic exists, DeadLetter succeeds, and in implicit mode
// the next Poll accepts the record.
func TestE2EDeadLetterPollFailure(t *testing.T) {
	t.Parallel()
	for _, explicit := range []bool{true, false} {
		t.Run(fmt.Sprintf("explicit=%v", explicit), func(t *testing.T) {
			t.Parallel()
			env := startTestbroker(t, e2eSetup{noAutoCreate: true})
			const group = "g"
			env.prepareGroup(t, group)
			off := env.produceWithHeaders(t, 0, "k", "v")
			opts := []shareconsumer.Opt{shareconsumer.DeadLetterTopic(dlqTopic)}
			if explicit {
				opts = append(opts, shareconsumer.ExplicitAcknowledgement())
			}
			cons := env.newConsumer(t, group, opts...)
			ctx := e2eCtx(t, 20*time.Second)
			recs := pollN(t, cons, 1, 10*time.Second)
			err := cons.DeadLetter(ctx, recs[0], nil)
			var de *errors.DeadLetterError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
			if explicit {
				_, err := cons.Poll(ctx)
				require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords, "left to the caller")
				require.NoError(t, cons.Acknowledge(recs[0], acktype.Release))
			}
			recs = pollN(t, cons, 1, 10*time.Second)
			require.Equal(t, off, recs[0].Offset)
			assert.EqualValues(t, 2, recs[0].DeliveryCount, "released and delivered again")

			require.NoError(t, env.tb.CreateTopic(dlqTopic, 1, nil))
			require.NoError(t, cons.DeadLetter(ctx, recs[0], nil))
			if explicit {
				commitSyncOK(t, cons, "commit")
			} else {
				pollNothing(t, cons, 300*time.Millisecond) // accepts the record
			}
			env.waitSPSO(t, group, []int32{0}, off+1)
			sr, ok := env.tb.ShareRecord(group, e2eTopic, 0, off)
			if ok {
				assert.Equal(t, testbroker.ShareAcknowledged, sr.State)
			}
			dl := env.readDLQ(t, 1)
			delivery, _ := header(dl[0], shareconsumer.HeaderDeadLetterDeliveryCount)
			assert.Equal(t, "2", delivery)
		})
	}
}

// TestDeadLetterWithoutTopic: DeadLetter on a consumer without DeadLetterTopic does nothing.
func TestDeadLetterWithoutTopic(t *testing.T) {
	t.Parallel()
	// No broker is reached: DeadLetter refuses before any request.
	c, err := shareconsumer.New(shareconsumer.ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), shareconsumer.Group("g"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close(e2eCtx(t, 10*time.Second))) }()
	require.ErrorIs(t, c.DeadLetter(e2eCtx(t, time.Second), &shareconsumer.Record{Topic: e2eTopic}, nil), errors.ErrNoDeadLetterTopic)
}

// TestE2EDeadLetterPollImplicitCommitDuringProduce: in implicit mode a commit while DeadLetter's
// produce is on its way must not accept the record, which has no copy yet: DeadLetter releases
// it first. The produce (held on the manual clock) then fails, and the record is delivered again.
// A second DeadLetter whose produce succeeds after such a commit reports the copy made and the
// record not accepted.
func TestE2EDeadLetterPollImplicitCommitDuringProduce(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 1)
		off := env.produceWithHeaders(t, 0, "k", "v")
		produced := make(chan struct{}, 10)
		hook := produceWritten(func() { produced <- struct{}{} })
		cons := env.newConsumer(t, group, shareconsumer.DeadLetterTopic(dlqTopic), shareconsumer.ClientOpts(kgo.WithHooks(hook)))
		ctx := e2eCtx(t, 20*time.Second)

		for round, fail := range []bool{true, false} {
			recs := pollN(t, cons, 1, 10*time.Second)
			require.Equal(t, off, recs[0].Offset)
			require.EqualValues(t, round+1, recs[0].DeliveryCount)
			f := testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Topic: dlqTopic, Delay: time.Minute, Times: 1}
			if fail {
				f.Err = kerr.TopicAuthorizationFailed
			}
			_, err := env.tb.InjectFault(f)
			require.NoError(t, err)
			done := deadLetterSent(t, ctx, cons, recs[0], produced)
			commitSyncOK(t, cons, "commit during the produce")
			err = releaseDelayed(t, env, done)
			var de *errors.DeadLetterError
			require.ErrorAs(t, err, &de)
			if fail {
				assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
				assert.False(t, de.Copied)
			} else {
				assert.True(t, de.Copied, "the copy is in")
				assert.ErrorIs(t, err, errors.ErrCannotAcknowledge)
			}
			assert.Equal(t, off, env.spso(t, group, 0), "not accepted")
		}
		env.readDLQ(t, 1)
	})
}

// releaseDelayed moves the manual clock past a request held by a Delay fault and returns what
// done then delivers. A Delay fault counts in ActiveFaults until its request is parked on the
// clock, so once it is gone the clock may move.
func releaseDelayed(t *testing.T, env *e2eEnv, done <-chan error) error {
	t.Helper()
	require.Eventually(t, func() bool { return env.tb.ActiveFaults() == 0 }, 10*time.Second, time.Millisecond, "the broker parked the held request")
	env.tb.ManualClock().Advance(time.Minute)
	return <-done
}

// produceWritten is a kgo hook calling fn when a Produce request is written to a broker.
type produceWritten func()

func (f produceWritten) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Produce.Int16() && err == nil {
		f()
	}
}

// deadLetterSent calls cons.DeadLetter(ctx, r, nil) and returns once its produce is written, as
// produced (fed by a produceWritten hook) says; the channel gets DeadLetter's result.
func deadLetterSent(t *testing.T, ctx context.Context, cons *shareconsumer.Consumer, r *shareconsumer.Record, produced <-chan struct{}) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cons.DeadLetter(ctx, r, nil) }()
	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatal("the dead-letter produce was never sent")
	}
	return done
}

// TestE2EDeadLetterPollClosed: a Close while DeadLetter's produce is on its way (held on the
// manual clock) fails it with an error matching ErrClosed.
func TestE2EDeadLetterPollClosed(t *testing.T) {
	onTestbroker(t, e2eSetup{manualClock: true}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 1)
		env.produceWithHeaders(t, 0, "k", "v")
		produced := make(chan struct{}, 10)
		hook := produceWritten(func() { produced <- struct{}{} })
		cons := env.newConsumer(t, group, shareconsumer.DeadLetterTopic(dlqTopic), shareconsumer.ClientOpts(kgo.WithHooks(hook)))
		ctx := e2eCtx(t, 20*time.Second)
		recs := pollN(t, cons, 1, 10*time.Second)
		_, err := env.tb.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Topic: dlqTopic, Delay: time.Minute, Times: 1})
		require.NoError(t, err)
		done := deadLetterSent(t, ctx, cons, recs[0], produced)
		require.NoError(t, cons.Close(ctx))
		err = <-done
		var de *errors.DeadLetterError
		require.ErrorAs(t, err, &de)
		assert.ErrorIs(t, err, errors.ErrClosed)
		assert.False(t, de.Copied)
	})
}

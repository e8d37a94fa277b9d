package shareconsumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// TestDeadLetterDeliveryCountLimitFollowsTheGroupConfig reads the limit from the group config, keeps it
// for its max age, reads it again at once when a delivery count is above it (it was raised),
// and after the max age when it was lowered; Process then dead-letters on the new limit.
func TestDeadLetterDeliveryCountLimitFollowsTheGroupConfig(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.Topic("t.dlq", 1))
	const group = "g"
	tEarliest(t, c, group)
	tGroupConfig(t, c, group, "share.delivery.count.limit", "3")
	cons := tNew(t, c, group, Topics("t"))
	ctx := tCtx(t)

	limit, err := cons.DeliveryCountLimit(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, limit)
	cons.dlq.mu.Lock()
	cons.dlq.limit.maxAge = time.Hour
	cons.dlq.mu.Unlock()
	tGroupConfig(t, c, group, "share.delivery.count.limit", "4")
	limit, err = cons.DeliveryCountLimit(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, limit, "read less than its max age ago")
	limit, err = cons.deliveryCountLimit(ctx, 4)
	require.NoError(t, err)
	assert.Equal(t, 4, limit, "a record delivered a 4th time: the limit was raised")

	tGroupConfig(t, c, group, "share.delivery.count.limit", "2")
	cons.dlq.mu.Lock()
	cons.dlq.limit.maxAge = time.Nanosecond
	cons.dlq.mu.Unlock()
	limit, err = cons.DeliveryCountLimit(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, limit, "read again past its max age")

	// Raised again behind the consumer's back: Process, reading it at each failure, releases
	// the record on its 2nd delivery and dead-letters it on its 3rd.
	tGroupConfig(t, c, group, "share.delivery.count.limit", "3")
	tProduce(t, c, "t", 0, []string{"v"})
	tProcessUntilDeadLettered(t, cons, 3)
	assert.EqualValues(t, 1, cons.ProcessStats().DeadLettered)
}

// TestDeadLetterDeliveryCountLimitReadFails: a DescribeConfigs answered REQUEST_TIMED_OUT is a
// failed read, not a reason to read the broker config: the limit read before is kept with the
// error, readAt does not move, and the next read waits for the retry backoff.
func TestDeadLetterDeliveryCountLimitReadFails(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	const group = "g"
	tGroupConfig(t, c, group, "share.delivery.count.limit", "3")
	cons := tNew(t, c, group, Topics("t"))
	ctx := tCtx(t)
	limit, err := cons.DeliveryCountLimit(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, limit)

	cons.dlq.mu.Lock()
	cons.dlq.limit.maxAge, cons.dlq.limit.retryAfter = time.Nanosecond, time.Hour
	readAt := cons.dlq.limit.readAt
	cons.dlq.mu.Unlock()
	_, err = c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeConfigs}, Err: kerr.RequestTimedOut, Times: 1})
	require.NoError(t, err)
	limit, err = cons.DeliveryCountLimit(ctx)
	assert.ErrorIs(t, err, kerr.RequestTimedOut)
	assert.Equal(t, 3, limit, "the last limit read")
	require.Zero(t, c.ActiveFaults(), "the fault answered the read")

	limit, err = cons.DeliveryCountLimit(ctx)
	assert.ErrorIs(t, err, kerr.RequestTimedOut, "within the backoff: not read again")
	assert.Equal(t, 3, limit)
	cons.dlq.mu.Lock()
	assert.Equal(t, readAt, cons.dlq.limit.readAt, "a failed read does not move readAt")
	cons.dlq.limit.retryAfter = time.Nanosecond
	cons.dlq.mu.Unlock()
	limit, err = cons.DeliveryCountLimit(ctx)
	require.NoError(t, err, "read again after the backoff")
	assert.Equal(t, 3, limit)
}

// TestDeadLetterUnknownLimitCountsFromTheMinimum: while the group's limit cannot be read (here
// every DescribeConfigs times out; the broker config, 5, is not read instead), a failing record
// counts as on its last delivery from Kafka's least limit, 2: released on its first delivery,
// dead-lettered on its second.
func TestDeadLetterUnknownLimitCountsFromTheMinimum(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.Topic("t.dlq", 1))
	const group = "g"
	tEarliest(t, c, group)
	tGroupConfig(t, c, group, "share.delivery.count.limit", "3")
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.DescribeConfigs}, Err: kerr.RequestTimedOut})
	require.NoError(t, err)
	cons := tNew(t, c, group, Topics("t"))
	limit, err := cons.DeliveryCountLimit(tCtx(t))
	assert.ErrorIs(t, err, kerr.RequestTimedOut)
	assert.Zero(t, limit, "never read")

	tProduce(t, c, "t", 0, []string{"v"})
	tProcessUntilDeadLettered(t, cons, 2)
}

// TestDeadLetterTopicValidation: a bad topic name fails New and Process with Kafka's words, and
// so does a topic the consumer reads.
func TestDeadLetterTopicValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ topic, want string }{
		{"", `shareconsumer: DeadLetterTopic(""): Topic name is illegal, it can't be empty`},
		{"..", `shareconsumer: DeadLetterTopic(".."): Topic name cannot be "." or ".."`},
		{"a b", `shareconsumer: DeadLetterTopic("a b"): Topic name "a b" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`},
	} {
		_, err := New(Group("g"), ClientOpts(), DeadLetterTopic(tc.topic))
		assert.EqualError(t, err, tc.want)
		pc := defaultProcessCfg()
		DeadLetterTopic(tc.topic).applyProcess(&pc)
		assert.EqualError(t, pc.validate(), tc.want)
	}
	_, err := New(Group("g"), ClientOpts(), Topics("a", "t"), DeadLetterTopic("t"))
	assert.EqualError(t, err, `shareconsumer: DeadLetterTopic("t") is a topic the consumer reads: its copies would be delivered again; use another topic`)
	long := string(make([]byte, 250))
	assert.ErrorContains(t, validateDeadLetterTopic(true, long), "can't be longer than 249 characters")
	assert.NoError(t, validateDeadLetterTopic(true, "orders.dlq_1-a"))
	assert.NoError(t, validateDeadLetterTopic(false, ""))
}

// TestDeadLetterTopicReadByProcessRefused: Process refuses a dead-letter topic the consumer is
// subscribed to, doing nothing.
func TestDeadLetterTopicReadByProcessRefused(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	cons := tNew(t, c, "g", Topics("t"))
	err := cons.Process(tCtx(t), func(context.Context, *Record) error { return nil }, DeadLetterTopic("t"))
	assert.EqualError(t, err, `shareconsumer: DeadLetterTopic("t") is a topic the consumer reads: its copies would be delivered again; use another topic`)

	withDLQ := tNew(t, c, "g2", Topics("t"), DeadLetterTopic("t.dlq"))
	err = withDLQ.Subscribe("t", "t.dlq")
	assert.EqualError(t, err, `shareconsumer: DeadLetterTopic("t.dlq") is a topic the consumer reads: its copies would be delivered again; use another topic`)
	assert.Equal(t, []string{"t"}, withDLQ.Subscription(), "the subscription is left as it was")
}

// tProcessUntilDeadLettered runs Process with a handler that always fails, dead-lettering to
// t.dlq, until the record produced last has had last deliveries: each before the last is released,
// the last is dead-lettered.
func tProcessUntilDeadLettered(t *testing.T, cons *Consumer, last int16) {
	t.Helper()
	outs := make(chan RecordOutcome, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cons.Process(ctx, func(context.Context, *Record) error { return errors.New("boom") },
			DeadLetterTopic("t.dlq"), OnRecordDone(func(o RecordOutcome) { outs <- o }))
	}()
	for dc := int16(1); dc <= last; dc++ {
		select {
		case o := <-outs:
			require.Equal(t, dc, o.Record.DeliveryCount)
			assert.Equal(t, dc == last, o.DeadLettered, "delivery %d", dc)
		case <-time.After(10 * time.Second):
			t.Fatalf("no outcome for delivery %d", dc)
		}
	}
	cancel()
	require.NoError(t, <-done)
}

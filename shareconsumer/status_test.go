package shareconsumer

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// pollReason polls with a short timeout until Poll's error gives want as the reason, failing
// the test after 10 seconds, and returns that error.
func pollReason(t *testing.T, cons *Consumer, want errors.PollReason) *errors.PollTimeoutError {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		recs, err := cons.Poll(ctx)
		cancel()
		require.Empty(t, recs)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var pte *errors.PollTimeoutError
		require.ErrorAs(t, err, &pte)
		if pte.Reason == want {
			return pte
		}
		last = err
	}
	t.Fatalf("Poll never said %q; last: %v", want, last)
	return nil
}

// refusedAddr returns an address on which nothing listens.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestPollSaysNoBrokerIsReachable(t *testing.T) {
	t.Parallel()
	addr := refusedAddr(t)
	cons, err := New(ClientOpts(kgo.SeedBrokers(addr)), Group("g"), Topics("t"))
	require.NoError(t, err)
	defer cons.Close(context.Background())
	pte := pollReason(t, cons, errors.ReasonNoBroker)
	assert.Contains(t, pte.Detail, addr)
	assert.Contains(t, pte.Error(), "no broker reachable")
	assert.Contains(t, pte.Error(), "connection refused")
	assert.Contains(t, pte.Error(), context.DeadlineExceeded.Error())

	s := cons.Status()
	assert.Equal(t, StateJoining, s.State)
	assert.Equal(t, errors.ReasonNoBroker, s.Reason)
	assert.Contains(t, s.Detail, addr)
	assert.Error(t, s.LastErr)
	assert.False(t, s.Since.IsZero())
	assert.Empty(t, s.Assigned)
}

func TestPollCanceledKeepsTheCause(t *testing.T) {
	t.Parallel()
	cons, err := New(ClientOpts(kgo.SeedBrokers(refusedAddr(t))), Group("g"), Topics("t"))
	require.NoError(t, err)
	defer cons.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = cons.Poll(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	var pte *errors.PollTimeoutError
	assert.ErrorAs(t, err, &pte)
}

// TestPollWorksOnceTheClusterIsReachable refuses every dial at first, then lets them through:
// the Poll after that returns records as ever.
func TestPollWorksOnceTheClusterIsReachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 3)
		var reachable atomic.Bool
		dial := func(ctx context.Context, network, host string) (net.Conn, error) {
			if !reachable.Load() {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errRefused}
			}
			return c.DialContext(ctx, network, host)
		}
		cons, err := New(ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(dial)), Group("g"), Topics("t"), FetchMaxWait(0))
		require.NoError(t, err)
		defer cons.Close(context.Background())

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cons.Poll(ctx)
		cancel()
		var pte *errors.PollTimeoutError
		require.ErrorAs(t, err, &pte)
		assert.Equal(t, errors.ReasonNoBroker, pte.Reason)
		assert.Contains(t, pte.Detail, c.Addrs()[0])

		reachable.Store(true)
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		recs, err := cons.Poll(ctx)
		require.NoError(t, err)
		assert.Len(t, recs, 3)
		s := cons.Status()
		assert.Contains(t, []errors.PollReason{errors.ReasonNone, errors.ReasonFetching, errors.ReasonNothingAvailable}, s.Reason)
		assert.Equal(t, StateStable, s.State)
	})
}

var errRefused = &net.AddrError{Err: "connection refused (test dialer)"}

func TestPollSaysTheTopicIsUnknown(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	cons := tNew(t, c, "g", Topics("missing"))
	pte := pollReason(t, cons, errors.ReasonUnknownTopic)
	assert.Contains(t, pte.Detail, "missing")
	assert.Contains(t, pte.Error(), "UNKNOWN_TOPIC_OR_PARTITION")
	s := cons.Status()
	assert.Equal(t, StateStable, s.State)
	assert.Equal(t, errors.ReasonUnknownTopic, s.Reason)
	assert.Positive(t, s.MemberEpoch)
}

// Kafka's share assignor gives a member that subscribes to an existing topic a partition even
// when there are more members than partitions (they share it), so a member is assigned nothing
// only for a moment after joining; the reason is checked on the consumer's state directly.
func TestStatusSaysNoPartitionsAreAssigned(t *testing.T) {
	t.Parallel()
	cons, err := New(ClientOpts(kgo.SeedBrokers(refusedAddr(t))), Group("g"))
	require.NoError(t, err)
	defer cons.Close(context.Background())
	cons.mu.Lock()
	cons.member.subscription = []string{"t"}
	id := [16]byte{1}
	cons.member.topics[id] = &topicMeta{name: "t", id: id, leaders: map[int32]leaderInfo{0: {node: 0}, 1: {node: 0}}}
	cons.member.byName["t"] = id
	cons.member.epoch = 3
	cons.health.members = 5
	cons.mu.Unlock()
	s := cons.Status()
	assert.Equal(t, StateStable, s.State)
	assert.Equal(t, errors.ReasonNoPartitions, s.Reason)
	assert.Equal(t, "5 members share 2 partitions", s.Detail)
}

func TestMoreMembersThanPartitionsShareThePartition(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	first := tNew(t, c, "g", Topics("t"))
	pollReason(t, first, errors.ReasonNothingAvailable)
	second := tNew(t, c, "g", Topics("t"))
	pollReason(t, second, errors.ReasonNothingAvailable)
	assert.Equal(t, []TopicPartition{{"t", 0}}, first.Status().Assigned)
	assert.Equal(t, []TopicPartition{{"t", 0}}, second.Status().Assigned)
}

func TestPollSaysNothingIsAvailable(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 2))
	cons := tNew(t, c, "g", Topics("t"))
	pte := pollReason(t, cons, errors.ReasonNothingAvailable)
	assert.Equal(t, "2 assigned partitions fetched from 1 brokers", pte.Detail)
	s := cons.Status()
	assert.Equal(t, errors.ReasonNothingAvailable, s.Reason)
	assert.Equal(t, []TopicPartition{{"t", 0}, {"t", 1}}, s.Assigned)

	tEarliest(t, c, "g")
	tProduce(t, c, "t", 1, []string{"a"})
	recs := tPollN(t, cons, 1)
	assert.Equal(t, "a", string(recs[0].Value))
}

func TestStatusBeforeSubscribingAndAfterClose(t *testing.T) {
	t.Parallel()
	cons, err := New(ClientOpts(kgo.SeedBrokers(refusedAddr(t))), Group("g"))
	require.NoError(t, err)
	s := cons.Status()
	assert.Equal(t, StateUnsubscribed, s.State)
	assert.Equal(t, errors.ReasonNone, s.Reason)
	require.NoError(t, cons.Close(context.Background()))
	assert.Equal(t, StateClosed, cons.Status().State)
}

func TestMaxPollIntervalValidation(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond + 1, time.Duration(1<<31) * time.Millisecond} {
		_, err := New(Group("g"), MaxPollInterval(d))
		assert.ErrorContains(t, err, "MaxPollInterval(", "%v", d)
	}
}

// memberCount returns how many members group "g" has.
func memberCount(t *testing.T, c *testbroker.Cluster) int {
	t.Helper()
	g, ok := c.ShareGroup("g")
	require.True(t, ok)
	return len(g.Members)
}

func TestMaxPollIntervalLeavesAndTheNextPollRejoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 4)
		cons := sNew(t, c, MaxPollRecords(2), ExplicitAcknowledgement(), MaxPollInterval(600*time.Millisecond))
		ctx := context.Background()
		recs, err := cons.Poll(ctx)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))
		synctest.Wait()
		require.Equal(t, 1, memberCount(t, c))

		// The leave comes within a heartbeat interval (100ms) after max.poll.interval.ms, before
		// the locks (1s) run out: the records are released by the sessions' close.
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, memberCount(t, c), "still within max.poll.interval.ms")
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, memberCount(t, c), "left the group")
		assert.Empty(t, c.ShareSessions(0), "its share session closed")
		for _, r := range c.ShareRecords("g", "t", 0) {
			assert.NotEqual(t, testbroker.ShareAcquired, r.State, "offset %d released", r.Offset)
		}
		st, ok := c.ShareRecord("g", "t", 0, recs[0].Offset)
		require.True(t, ok)
		assert.Equal(t, testbroker.ShareAcknowledged, st.State, "the acknowledgement went with the session's close")
		s := cons.Status()
		assert.Equal(t, StateLeft, s.State)
		assert.Equal(t, errors.ReasonLeftGroup, s.Reason)

		require.NoError(t, cons.Acknowledge(recs[1], acktype.Accept))
		var again []*Record
		for len(again) < 3 { // 1 again, 2 and 3
			recs, err := cons.Poll(ctx)
			require.NoError(t, err)
			for _, r := range recs {
				require.NoError(t, cons.Acknowledge(r, acktype.Accept))
			}
			again = append(again, recs...)
		}
		require.Len(t, again, 3)
		assert.Equal(t, int64(1), again[0].Offset, "the released record comes again")
		assert.Equal(t, int16(2), again[0].DeliveryCount)
		res, err := cons.CommitSync(ctx)
		require.NoError(t, err)
		for tp, err := range res {
			assert.NoError(t, err, "%v", tp)
		}
		start, _, _ := c.SharePartitionOffsets("g", "t", 0)
		assert.Equal(t, int64(4), start, "every record accepted once")
		assert.Equal(t, 1, memberCount(t, c), "rejoined")
		assert.Equal(t, StateStable, cons.Status().State)
	})
}

func TestMaxPollIntervalDoesNotCountABusyProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 2)
		cons := sNew(t, c, MaxPollInterval(time.Second))
		var members []int
		var done atomic.Int32
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			time.Sleep(3 * time.Second)
			members = append(members, memberCount(t, c))
			return nil
		}, func(RecordOutcome) bool { return done.Add(1) == 2 }, Workers(1), QueueSize(1))
		require.NoError(t, err)
		assert.Equal(t, []int{1, 1}, members, "the member stayed while its only worker was busy")
		s := cons.ProcessStats()
		assert.Equal(t, uint64(2), s.Accepted)
		assert.Equal(t, uint64(0), s.Redeliveries)
	})
}

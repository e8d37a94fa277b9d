package shareconsumer

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// TestThreeBrokersEveryCodec consumes partitions led by three brokers, each produced with
// another compression codec, and checks every record arrives once with its value.
func TestThreeBrokersEveryCodec(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.NumBrokers(3), testbroker.Topic("t", 4))
	tEarliest(t, c, "g")
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	want := map[string]bool{}
	for p := range int32(4) {
		for i, codec := range codecs {
			var vs []string
			for j := range 20 {
				v := fmt.Sprintf("p%d-c%d-%d", p, i, j)
				vs = append(vs, v)
				want[v] = true
			}
			tProduce(t, c, "t", p, vs, kgo.ProducerBatchCompression(codec))
		}
	}
	cons := tNew(t, c, "g", Topics("t"), MaxPollRecords(37))
	got := map[string]bool{}
	for _, r := range tPollN(t, cons, len(want)) {
		v := string(r.Value)
		require.False(t, got[v], "%s delivered twice", v)
		got[v] = true
		assert.EqualValues(t, 1, r.DeliveryCount)
	}
	assert.Equal(t, want, got)
	// Earlier Polls accepted what came before; the commit accepts the last Poll's records.
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.NotEmpty(t, res)
	for tp, err := range res {
		assert.NoError(t, err, "%s", tp)
	}
	for p := range int32(4) {
		start, _, ok := c.SharePartitionOffsets("g", "t", p)
		require.True(t, ok)
		assert.EqualValues(t, 100, start, "partition %d: everything acknowledged", p)
	}
}

// TestTwoConsumersShare checks that two members of a group split the records.
func TestTwoConsumersShare(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.NumBrokers(2), testbroker.Topic("t", 2))
	tEarliest(t, c, "g")
	a := tNew(t, c, "g", Topics("t"))
	b := tNew(t, c, "g", Topics("t"))
	require.Eventually(t, func() bool {
		g, ok := c.ShareGroup("g")
		return ok && len(g.Members) == 2
	}, 10*time.Second, time.Millisecond)
	var vs []string
	for i := range 50 {
		vs = append(vs, fmt.Sprint(i))
	}
	tProduce(t, c, "t", 0, vs)
	tProduce(t, c, "t", 1, vs)

	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for _, cons := range []*Consumer{a, b} {
		wg.Go(func() {
			ctx := tCtx(t)
			for ctx.Err() == nil {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n == 100 {
					return
				}
				recs, err := cons.Poll(ctxWithTimeout(ctx, 200*time.Millisecond))
				if err != nil {
					continue
				}
				mu.Lock()
				for _, r := range recs {
					seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 100)
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s delivered %d times", k, n)
	}
}

// TestConnectionDrop checks that a consumer whose connections drop (the broker releases its
// records and forgets its share session) opens a new session and goes on, and that the
// acknowledgements that were lost are reported.
func TestConnectionDrop(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})
	var mu sync.Mutex
	var commits []AcknowledgementCommit
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement(), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, ac)
	}))
	recs := tPollN(t, cons, 2)
	c.DropConnections(-1)
	require.Eventually(t, func() bool {
		if len(c.ShareSessions(0)) > 0 {
			return false
		}
		for _, r := range c.ShareRecords("g", "t", 0) {
			if r.State != testbroker.ShareAvailable {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the session is gone and its records are released")
	for _, r := range recs {
		require.NoError(t, cons.Acknowledge(r, acktype.Accept))
	}
	// The acknowledgements travel on the next ShareFetch, which finds no session: they fail,
	// and the consumer opens a new session, which delivers the records again.
	got := tPollN(t, cons, 2)
	assert.Equal(t, []int64{0, 1}, offsetsOf(got[:2]))
	assert.EqualValues(t, 2, got[0].DeliveryCount)
	mu.Lock()
	require.NotEmpty(t, commits)
	assert.ErrorIs(t, commits[0].Err, kerr.NetworkException)
	var ae *errors.AckError
	require.ErrorAs(t, commits[0].Err, &ae)
	assert.Equal(t, []int64{0, 1}, ae.Offsets)
	mu.Unlock()
	for _, r := range got {
		require.NoError(t, cons.Acknowledge(r, acktype.Accept))
	}
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.NoError(t, res[TopicPartition{"t", 0}])
}

// TestSessionErrorReopens checks SHARE_SESSION_NOT_FOUND on a ShareFetch: the piggybacked
// acknowledgements fail with NETWORK_EXCEPTION and the session is opened again at epoch 0.
func TestSessionErrorReopens(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	var mu sync.Mutex
	var commits []AcknowledgementCommit
	cons := tNew(t, c, "g", Topics("t"), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, ac)
	}))
	tPollN(t, cons, 1)
	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareFetch}, Err: kerr.ShareSessionNotFound, Times: 1})
	require.NoError(t, err)
	tProduce(t, c, "t", 0, []string{"b"})
	recs := tPollN(t, cons, 1)
	assert.EqualValues(t, 1, recs[0].Offset)
	mu.Lock()
	require.Len(t, commits, 1)
	assert.ErrorIs(t, commits[0].Err, kerr.NetworkException)
	assert.Contains(t, commits[0].Err.Error(), "SHARE_SESSION_NOT_FOUND")
	mu.Unlock()
	// The member still holds offset 0 (a new session does not release it), so it can still be
	// acknowledged.
	r, ok := c.ShareRecord("g", "t", 0, 0)
	require.True(t, ok)
	assert.Equal(t, testbroker.ShareAcquired, r.State)
	sessions := c.ShareSessions(0)
	require.Len(t, sessions, 1)
	assert.Equal(t, cons.member.memberID, sessions[0].Member)
}

// TestRecordLimit fetches in record-limit mode: never more than MaxPollRecords acquired.
func TestRecordLimit(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"0", "1", "2", "3", "4"})
	cons := tNew(t, c, "g", Topics("t"), MaxPollRecords(2), RecordLimitAcquire(), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 1)
	assert.Equal(t, []int64{0, 1}, offsetsOf(recs))
	acquired := 0
	for _, r := range c.ShareRecords("g", "t", 0) {
		if r.State == testbroker.ShareAcquired {
			acquired++
		}
	}
	assert.Equal(t, 2, acquired, "record-limit acquires no more than MaxPollRecords")
}

func TestRecordLimitUnsupported(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.Kafka41())
	cons := tNew(t, c, "g", Topics("t"), RecordLimitAcquire())
	_, err := cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrRecordLimitUnsupported)
	assert.Contains(t, err.Error(), "broker 0 supports ShareFetch up to v1")
	_, err = cons.Poll(tCtx(t))
	require.ErrorIs(t, err, errors.ErrRecordLimitUnsupported, "every Poll")
	assert.Empty(t, c.ShareSessions(0), "nothing was fetched")
}

// TestKafka41 consumes from a cluster that speaks ShareFetch and ShareAcknowledge v1.
func TestKafka41(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1), testbroker.Kafka41())
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 2)
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))
	require.NoError(t, cons.Acknowledge(recs[1], acktype.Reject))
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.NoError(t, res[TopicPartition{"t", 0}])
	ms, ok := cons.AcquisitionLockTimeoutMs()
	assert.True(t, ok, "ShareFetch v1 carries it")
	assert.EqualValues(t, 30000, ms)
}

// TestLeaderMovedAcksFail checks acknowledgements for records of a leader that no longer leads
// the partition: they fail with NOT_LEADER_OR_FOLLOWER without being sent.
func TestLeaderMovedAcksFail(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 2))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	tProduce(t, c, "t", 1, []string{"b"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs, err := cons.Poll(tCtx(t))
	require.NoError(t, err)
	require.Len(t, recs, 2, "one ShareFetch brings both partitions")
	for _, r := range recs {
		require.NoError(t, cons.Acknowledge(r, acktype.Accept))
	}
	// Partition 0 moves to broker 7 (as a metadata refresh would say).
	p0, _ := c.Partition("t", 0)
	cons.mu.Lock()
	tm := cons.member.topics[cons.member.byName["t"]]
	tm.leaders[0] = leaderInfo{node: 7, epoch: p0.LeaderEpoch + 1}
	cons.mu.Unlock()
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.ErrorIs(t, res[TopicPartition{"t", 0}], kerr.NotLeaderForPartition)
	assert.NoError(t, res[TopicPartition{"t", 1}])
	r, ok := c.ShareRecord("g", "t", 0, 0)
	require.True(t, ok)
	assert.Equal(t, testbroker.ShareAcquired, r.State, "nothing was sent")
}

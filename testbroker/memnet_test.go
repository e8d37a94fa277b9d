package testbroker_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// These tests run a cluster on its in-memory network inside a testing/synctest bubble, with its
// clients: every clock is the bubble's, so waits of seconds take no real time, and the bubble
// fails the test if a goroutine of the cluster or of a client outlives it.

// dialRawOn is dialRaw through c.DialContext, for a cluster on an in-memory network.
func dialRawOn(t *testing.T, c *testbroker.Cluster, addr string) *rawConn {
	t.Helper()
	nc, err := c.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, r: bufio.NewReader(nc)}
}

// dialerClient is a kgo client of c that dials through c.DialContext, closed when the test ends.
func dialerClient(t *testing.T, c *testbroker.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// requireRefused checks that err is a dial error as TCP reports a refused connection.
func requireRefused(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "dial", oe.Op)
}

func TestInMemoryNetworkProduceConsume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.NumBrokers(3))
		assert.Equal(t, []string{
			"broker-0.testbroker.invalid:9092",
			"broker-1.testbroker.invalid:9092",
			"broker-2.testbroker.invalid:9092",
		}, c.Addrs())
		require.NoError(t, c.CreateTopic("t", 3, nil))

		cl := dialerClient(t, c,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for p := range int32(3) {
			r := &kgo.Record{Topic: "t", Partition: p, Value: []byte{'a' + byte(p)}}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
		}
		got := map[int32]string{}
		for len(got) < 3 {
			fs := cl.PollFetches(ctx)
			require.NoError(t, fs.Err())
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = string(r.Value) })
		}
		assert.Equal(t, map[int32]string{0: "a", 1: "b", 2: "c"}, got)
	})
}

func TestInMemoryNetworkDialErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork())
		_, err := c.DialContext(t.Context(), "tcp", "broker-1.testbroker.invalid:9092")
		requireRefused(t, err)
		_, err = c.DialContext(t.Context(), "tcp", "127.0.0.1:9092")
		requireRefused(t, err)

		nc, err := c.DialContext(t.Context(), "tcp", c.Addrs()[0])
		require.NoError(t, err)
		defer nc.Close()
		c.Close()
		_, err = nc.Read(make([]byte, 1))
		assert.Equal(t, io.EOF, err, "Close closed the connection")
		_, err = c.DialContext(t.Context(), "tcp", c.Addrs()[0])
		requireRefused(t, err)
	})
}

func TestInMemoryNetworkWithListenAddrFails(t *testing.T) {
	_, err := testbroker.Start(testbroker.InMemoryNetwork(), testbroker.ListenAddr("127.0.0.1:9092"))
	assert.ErrorContains(t, err, "ListenAddr")
	assert.ErrorContains(t, err, "InMemoryNetwork")
}

// TestDialContextOnTCP checks that DialContext works on a TCP cluster too, so that a test can
// pass kgo.Dialer(c.DialContext) whichever network the cluster runs on.
func TestDialContextOnTCP(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	cl := dialerClient(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr())
	p, ok := c.Partition("t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(1), p.HighWatermark)
}

// TestInMemoryLockExpiresOnTheBubbleClock acquires a record with a raw ShareFetch and lets its
// lock expire in fake time: a second member's long poll is answered exactly when the lock of
// group.share.record.lock.duration.ms (30 s by default) expires, with the record's second
// delivery.
func TestInMemoryLockExpiresOnTheBubbleClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("t", 1))
		addr, tid := c.Addrs()[0], topicIDOf(t, c, "t")
		a := &shareMember{rc: dialRawOn(t, c, addr), group: "g", id: "a", version: 2, tid: tid}
		b := &shareMember{rc: dialRawOn(t, c, addr), group: "g", id: "b", version: 2, tid: tid}
		a.open(t)
		b.open(t)
		require.Zero(t, produceOne(t, a.rc, "t", 0, plainBatch("x")).ErrorCode)

		require.Equal(t, [][3]int64{{0, 0, 1}}, acquired(a.take(t)))
		acquiredAt := time.Now()
		r, ok := c.ShareRecord("g", "t", 0, 0)
		require.True(t, ok)
		assert.Equal(t, testbroker.ShareAcquired, r.State)
		assert.Equal(t, acquiredAt.Add(30*time.Second), r.LockDeadline)

		time.Sleep(30*time.Second - time.Millisecond)
		r, _ = c.ShareRecord("g", "t", 0, 0)
		assert.Equal(t, testbroker.ShareAcquired, r.State, "a millisecond before the deadline")

		req := b.fetchReq()
		req.MaxWaitMillis, req.MinBytes = 60000, 1
		got := startShareFetch(t, b.rc, req)
		res := <-got // durably blocked until the lock's timer fires
		require.NoError(t, res.err)
		assert.Equal(t, 30*time.Second, time.Since(acquiredAt), "answered when the lock expired")
		assert.Equal(t, [][3]int64{{0, 0, 2}}, acquired(onlySharePartition(t, res.resp)))
		r, _ = c.ShareRecord("g", "t", 0, 0)
		assert.Equal(t, "b", r.Member)
		assert.Equal(t, int16(2), r.DeliveryCount)
	})
}

func TestInMemoryNetworkDropConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.NumBrokers(2), testbroker.Topic("t", 1))
		rc0, rc1 := dialRawOn(t, c, c.Addrs()[0]), dialRawOn(t, c, c.Addrs()[1])
		cl := dialerClient(t, c)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("before")}).FirstErr())

		c.DropConnections(0)
		_, err := rc0.r.ReadByte()
		assert.Equal(t, io.EOF, err, "broker 0's connection is closed")
		request[*kmsg.MetadataResponse](t, rc1, metadataRequest("t")) // broker 1's is not

		// The client sees its connection go and dials again.
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("after")}).FirstErr())
		p, _ := c.Partition("t", 0)
		assert.Equal(t, int64(2), p.HighWatermark)
	})
}

// TestInMemoryNetworkCloseEndsEverything closes the cluster while a fetch is parked on the
// clock and a client is connected: the fetch's connection closes at once, Close returns, and
// synctest.Test finds no goroutine of the cluster left.
func TestInMemoryNetworkCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("t", 1))
		cl := dialerClient(t, c)
		require.NoError(t, cl.Ping(t.Context()))
		rc := dialRawOn(t, c, c.Addrs()[0])
		req := fetchRequest("t", 0, 0)
		req.MaxWaitMillis, req.MinBytes = 60000, 1
		got := startFetch(t, rc, req)
		synctest.Wait()
		require.Empty(t, got, "the fetch is parked")

		start := time.Now()
		c.Close()
		assert.Error(t, (<-got).err)
		assert.Equal(t, time.Duration(0), time.Since(start), "nothing waited for the fetch's MaxWait")
	})
}

// TestInMemoryNetworkShareConsumer runs a kshare share consumer on the in-memory network: its
// kgo options pass the dialer through.
func TestInMemoryNetworkShareConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("t", 1))
		require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, dialerClient(t, c).ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr())

		cons, err := shareconsumer.New(
			shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext)),
			shareconsumer.Group("g"), shareconsumer.Topics("t"),
			shareconsumer.ExplicitAcknowledgement(),
		)
		require.NoError(t, err)
		defer func() { assert.NoError(t, cons.Close(ctx)) }()
		var rs []*shareconsumer.Record
		for len(rs) == 0 {
			rs, err = cons.Poll(ctx)
			require.NoError(t, err)
		}
		require.Len(t, rs, 1)
		assert.Equal(t, "x", string(rs[0].Value))
		assert.Equal(t, int16(1), rs[0].DeliveryCount)
		require.NoError(t, cons.Acknowledge(rs[0], acktype.Accept))
		errs, err := cons.CommitSync(ctx)
		require.NoError(t, err)
		for tp, err := range errs {
			require.NoError(t, err, "%v", tp)
		}
		start, _, ok := c.SharePartitionOffsets("g", "t", 0)
		require.True(t, ok)
		assert.Equal(t, int64(1), start, "accepted")
	})
}

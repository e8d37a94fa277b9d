package testbroker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/testbroker"
)

// These tests drive the cluster's share groups with franz-go's own share consumer (kgo with
// ShareGroup), a client written independently of testbroker, and check what it sees against
// the broker's inspection API.

// e2eStart starts a cluster with topic "t" of the given partitions for a share test. Heartbeats
// come every second, the shortest interval franz-go keeps to, so that members learn a new
// assignment quickly; sessions last an hour, so that members stay however far a test moves the
// manual clock: franz-go heartbeats on the real clock while the broker times sessions on the
// cluster clock.
func e2eStart(t *testing.T, partitions int32, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.Topic("t", partitions),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "1000"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "1000"),
		testbroker.BrokerConfig("group.share.max.session.timeout.ms", "3600000"),
		testbroker.BrokerConfig("group.share.session.timeout.ms", "3600000"),
	}, opts...)...)
}

// e2eSetGroupConfigs sets share group configs through the wire (IncrementalAlterConfigs on a
// GROUP resource), as kafka-configs.sh --entity-type groups does, before the group exists.
func e2eSetGroupConfigs(t *testing.T, c *testbroker.Cluster, group string, kv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, groupconfig.SetOn(ctx, c.Addrs(), group, kv...))
}

// e2eProduce produces one record per value to partition p of topic, in one batch, and returns
// their offsets.
func e2eProduce(t *testing.T, c *testbroker.Cluster, topic string, p int32, values ...string) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
	offsets := make([]int64, len(rs))
	for i, r := range rs {
		offsets[i] = r.Offset
	}
	return offsets
}

// e2eMember is a franz-go share consumer that remembers every failed acknowledgement.
type e2eMember struct {
	cl *kgo.Client

	mu      sync.Mutex
	ackErrs []error
}

// e2eJoin creates a share consumer of group subscribed to topic, with client id clientID, closed
// when the test ends.
func e2eJoin(t *testing.T, c *testbroker.Cluster, group, topic, clientID string, opts ...kgo.Opt) *e2eMember {
	t.Helper()
	m := &e2eMember{}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.ClientID(clientID),
		kgo.ConsumeTopics(topic),
		kgo.ShareGroup(group),
		// FlushAcks and Close wait for a ShareFetch in flight; keep those parked on the real
		// clock short.
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, r := range rs {
				if r.Err != nil {
					m.ackErrs = append(m.ackErrs, fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, r.Err))
				}
			}
		}),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	m.cl = cl
	return m
}

// flush sends every pending acknowledgement and fails the test if any failed so far.
func (m *e2eMember) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.cl.FlushAcks(ctx))
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NoError(t, errors.Join(m.ackErrs...))
}

// poll polls once, waiting at most wait, and returns the records; it fails the test on a fetch
// error. Acknowledgements are the caller's.
func (m *e2eMember) poll(t *testing.T, wait time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	fs := m.cl.PollFetches(ctx)
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Fatalf("share fetch %s/%d: %v", topic, p, err)
		}
	})
	return fs.Records()
}

// pollSome polls until at least one record arrives, failing the test after 10 s.
func (m *e2eMember) pollSome(t *testing.T) []*kgo.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if rs := m.poll(t, time.Until(deadline)); len(rs) > 0 {
			return rs
		}
	}
	t.Fatal("no record within 10s")
	return nil
}

// pollUntilValue polls until a record with value v arrives, acknowledging every record with
// ack, and returns every record received, in order.
func (m *e2eMember) pollUntilValue(t *testing.T, v string, ack kgo.AckStatus) []*kgo.Record {
	t.Helper()
	var all []*kgo.Record
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range m.poll(t, time.Until(deadline)) {
			r.Ack(ack)
			all = append(all, r)
			if string(r.Value) == v {
				return all
			}
		}
	}
	t.Fatalf("no record %q within 10s", v)
	return nil
}

// pollOne polls one record at a time until one arrives, failing the test after 10 s. The rest
// of the fetch that brought it stays buffered in franz-go.
func (m *e2eMember) pollOne(t *testing.T) *kgo.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fs := m.cl.PollRecords(ctx, 1)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("share fetch %s/%d: %v", topic, p, err)
			}
		})
		if rs := fs.Records(); len(rs) > 0 {
			return rs[0]
		}
	}
	t.Fatal("no record within 10s")
	return nil
}

// flushAdvancing is flush for a member whose last poll drained its buffer, so that franz-go may
// have sent a ShareFetch that is now parked on the manual clock: FlushAcks waits for it, so the
// clock moves on by the fetch wait (100 ms) every few milliseconds of real time until the flush
// is done.
func (m *e2eMember) flushAdvancing(t *testing.T, clk *testbroker.ManualClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.cl.FlushAcks(ctx) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			m.mu.Lock()
			defer m.mu.Unlock()
			require.NoError(t, errors.Join(m.ackErrs...))
			return
		case <-tick.C:
			clk.Advance(100 * time.Millisecond)
		}
	}
}

// e2eStartOffset returns the share-partition start offset of group on topic's partition p.
func e2eStartOffset(t *testing.T, c *testbroker.Cluster, group, topic string, p int32) int64 {
	t.Helper()
	start, _, ok := c.SharePartitionOffsets(group, topic, p)
	require.True(t, ok, "group %s has no share partition %s/%d", group, topic, p)
	return start
}

// e2eRecord returns the state of one record of group's share partition of topic's partition p.
func e2eRecord(t *testing.T, c *testbroker.Cluster, group, topic string, p int32, offset int64) testbroker.ShareRecordInfo {
	t.Helper()
	r, ok := c.ShareRecord(group, topic, p, offset)
	require.True(t, ok, "group %s does not track %s/%d offset %d", group, topic, p, offset)
	return r
}

// e2eMemberID returns the member id of the group member with client id clientID.
func e2eMemberID(t *testing.T, c *testbroker.Cluster, group, clientID string) string {
	t.Helper()
	g, ok := c.ShareGroup(group)
	require.True(t, ok, "no share group %s", group)
	for _, m := range g.Members {
		if m.ClientID == clientID {
			return m.MemberID
		}
	}
	t.Fatalf("no member with client id %s in %+v", clientID, g.Members)
	return ""
}

// e2eWaitStable waits until the group has n members, each running at the group epoch with a
// non-empty assignment: every franz-go member has then received its current assignment.
func e2eWaitStable(t *testing.T, c *testbroker.Cluster, group string, n int) testbroker.ShareGroupInfo {
	t.Helper()
	var g testbroker.ShareGroupInfo
	require.Eventually(t, func() bool {
		var ok bool
		if g, ok = c.ShareGroup(group); !ok || len(g.Members) != n {
			return false
		}
		for _, m := range g.Members {
			if m.MemberEpoch != g.GroupEpoch || len(m.Assignment) == 0 {
				return false
			}
		}
		return true
	}, 15*time.Second, 5*time.Millisecond, "group %s never had %d stable members", group, n)
	return g
}

// TestShareE2EMembersSplitRecords has three franz-go share consumers take 10,000 records of a
// three-partition topic: each record is accepted exactly once, by one member, and the broker
// ends with every record acknowledged.
func TestShareE2EMembersSplitRecords(t *testing.T) {
	t.Parallel()
	const (
		total      = 10_000
		partitions = 3
	)
	c := e2eStart(t, partitions)
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")

	members := make([]*e2eMember, 3)
	for i := range members {
		members[i] = e2eJoin(t, c, "g", "t", fmt.Sprintf("member-%d", i))
	}
	// Records produced only once every member has its partition: no record is consumed while the
	// assignment still moves.
	g := e2eWaitStable(t, c, "g", len(members))
	for _, m := range g.Members {
		require.Len(t, m.Assignment, 1)
		assert.Len(t, m.Assignment[0].Partitions, 1, "with as many members as partitions, one partition each")
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Partition: int32(i % partitions), Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	require.NoError(t, prod.Flush(ctx))

	type key struct {
		partition int32
		offset    int64
	}
	var (
		mu       sync.Mutex
		received = map[key]int{} // receipts per record
		byMember = make([]int, len(members))
		unique   atomic.Int64
		wg       sync.WaitGroup
	)
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for unique.Load() < total && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				fs := m.cl.PollFetches(pctx)
				pcancel()
				fs.EachError(func(topic string, p int32, err error) {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Errorf("member %d: share fetch %s/%d: %v", i, topic, p, err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					mu.Lock()
					defer mu.Unlock()
					k := key{r.Partition, r.Offset}
					if received[k] == 0 {
						unique.Add(1)
					}
					received[k]++
					byMember[i]++
				})
			}
		}()
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "records received: %d of %d", unique.Load(), total)
	for _, m := range members {
		m.flush(t)
	}

	mu.Lock()
	defer mu.Unlock()
	var dups []key
	for k, n := range received {
		if n != 1 {
			dups = append(dups, k)
		}
	}
	require.Empty(t, dups, "records received more than once")
	var missing []key
	for i := range total {
		if k := (key{int32(i % partitions), int64(i / partitions)}); received[k] == 0 {
			missing = append(missing, k)
		}
	}
	require.Empty(t, missing, "records never received")
	require.Len(t, received, total)
	for i, n := range byMember {
		assert.Positive(t, n, "member %d received nothing", i)
	}

	// Every record ends ACKNOWLEDGED: the share-partition start offset is at the end of each
	// partition and nothing stays in flight.
	for p := range int32(partitions) {
		end := int64(total / partitions)
		if p < total%partitions {
			end++
		}
		assert.Equal(t, end, e2eStartOffset(t, c, "g", "t", p), "partition %d", p)
		for _, r := range c.ShareRecords("g", "t", p) {
			assert.Equal(t, testbroker.ShareAcknowledged, r.State, "partition %d offset %d", p, r.Offset)
		}
	}
}

// TestShareE2EReleaseRedelivers releases a record: the broker delivers it again, with the
// delivery count one higher.
func TestShareE2EReleaseRedelivers(t *testing.T) {
	t.Parallel()
	c := e2eStart(t, 1)
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")
	e2eProduce(t, c, "t", 0, "r0")
	m := e2eJoin(t, c, "g", "t", "member")

	first := m.pollSome(t)
	require.Len(t, first, 1)
	assert.Equal(t, int64(0), first[0].Offset)
	assert.Equal(t, int32(1), first[0].DeliveryCount())
	assert.WithinDuration(t, time.Now().Add(30*time.Second), first[0].AcquisitionDeadline(), 5*time.Second,
		"the lock lasts group.share.record.lock.duration.ms, 30 s by default")
	first[0].Ack(kgo.AckRelease)
	m.flush(t)

	again := m.pollSome(t)
	require.Len(t, again, 1)
	assert.Equal(t, int64(0), again[0].Offset)
	assert.Equal(t, "r0", string(again[0].Value))
	assert.Equal(t, int32(2), again[0].DeliveryCount())
	again[0].Ack(kgo.AckAccept)
	m.flush(t)
	assert.Equal(t, int64(1), e2eStartOffset(t, c, "g", "t", 0))
}

// TestShareE2ERejectArchives rejects one record of three and releases another: the rejected
// record is archived and never delivered again, the released one comes back.
func TestShareE2ERejectArchives(t *testing.T) {
	t.Parallel()
	c := e2eStart(t, 1)
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")
	e2eProduce(t, c, "t", 0, "r0", "r1", "r2")
	m := e2eJoin(t, c, "g", "t", "member")

	var got []*kgo.Record
	for len(got) < 3 {
		got = append(got, m.pollSome(t)...)
	}
	require.Len(t, got, 3)
	for i, r := range got {
		require.Equal(t, int64(i), r.Offset)
		require.Equal(t, int32(1), r.DeliveryCount())
	}
	got[0].Ack(kgo.AckReject)
	got[1].Ack(kgo.AckAccept)
	got[2].Ack(kgo.AckRelease)
	m.flush(t)

	// The rejected record is archived at once: it is the front of the share partition, so the
	// start offset moves past it and past the accepted one.
	assert.Equal(t, int64(2), e2eStartOffset(t, c, "g", "t", 0))

	e2eProduce(t, c, "t", 0, "sentinel")
	rest := m.pollUntilValue(t, "sentinel", kgo.AckAccept)
	m.flush(t)
	var offsets []int64
	for _, r := range rest {
		offsets = append(offsets, r.Offset)
		if r.Offset == 2 {
			assert.Equal(t, int32(2), r.DeliveryCount(), "the released record")
		}
	}
	assert.Equal(t, []int64{2, 3}, offsets, "the rejected record 0 is never delivered again")
	assert.Equal(t, int64(4), e2eStartOffset(t, c, "g", "t", 0))
}

// TestShareE2EDeliveryLimitArchives sets share.delivery.count.limit to 2: a record released
// twice is archived instead of being delivered a third time.
func TestShareE2EDeliveryLimitArchives(t *testing.T) {
	t.Parallel()
	c := e2eStart(t, 1)
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2")
	e2eProduce(t, c, "t", 0, "poison")
	m := e2eJoin(t, c, "g", "t", "member")

	for delivery := int32(1); delivery <= 2; delivery++ {
		rs := m.pollSome(t)
		require.Len(t, rs, 1)
		require.Equal(t, int64(0), rs[0].Offset)
		require.Equal(t, delivery, rs[0].DeliveryCount())
		rs[0].Ack(kgo.AckRelease)
		m.flush(t)
	}
	// The second release reached the limit: the record is ARCHIVED, and being the front of the
	// share partition it is dropped at once.
	assert.Equal(t, int64(1), e2eStartOffset(t, c, "g", "t", 0))

	e2eProduce(t, c, "t", 0, "sentinel")
	rest := m.pollUntilValue(t, "sentinel", kgo.AckAccept)
	m.flush(t)
	require.Len(t, rest, 1, "record 0 is not delivered a third time")
	assert.Equal(t, int64(1), rest[0].Offset)
	assert.Equal(t, int32(1), rest[0].DeliveryCount())
}

// On the manual clock the tests must keep franz-go from fetching behind their back: its share
// consumer prefetches, and a prefetch parked on the manual clock when a lock expires would take
// the record, or hold up FlushAcks and Close until franz-go gives up on it after 5 s of real
// time (and then finds its share session epoch stale). So members there fetch only while they
// poll (MaxConcurrentFetches(0)), take one record per poll (pollOne), and are fed batches of two
// records: with a record still buffered, franz-go sends no ShareFetch at all.

// TestShareE2EExpiredLockRedeliveredToAnotherMember lets a lock expire on the manual clock:
// the records go to another member, with delivery count 2.
func TestShareE2EExpiredLockRedeliveredToAnotherMember(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := e2eStart(t, 1, testbroker.WithManualClock(start))
	clk := c.ManualClock()
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")
	e2eProduce(t, c, "t", 0, "r0", "r1")

	a := e2eJoin(t, c, "g", "t", "member-a", kgo.MaxConcurrentFetches(0))
	r := a.pollOne(t)
	require.Equal(t, int64(0), r.Offset)
	require.Equal(t, int32(1), r.DeliveryCount())
	aID := e2eMemberID(t, c, "g", "member-a")
	for off := range int64(2) {
		rec := e2eRecord(t, c, "g", "t", 0, off)
		assert.Equal(t, testbroker.ShareAcquired, rec.State, "offset %d", off)
		assert.Equal(t, aID, rec.Member, "offset %d", off)
		assert.Equal(t, start.Add(30*time.Second), rec.LockDeadline, "group.share.record.lock.duration.ms defaults to 30 s")
	}

	b := e2eJoin(t, c, "g", "t", "member-b", kgo.MaxConcurrentFetches(0))
	e2eWaitStable(t, c, "g", 2)
	assert.Empty(t, b.poll(t, 200*time.Millisecond), "the records are A's until their lock expires")

	clk.Advance(30*time.Second - time.Millisecond)
	assert.Equal(t, testbroker.ShareAcquired, e2eRecord(t, c, "g", "t", 0, 0).State, "a millisecond before the deadline")
	clk.Advance(time.Millisecond)

	again := b.pollOne(t)
	assert.Equal(t, int64(0), again.Offset)
	assert.Equal(t, "r0", string(again.Value))
	assert.Equal(t, int32(2), again.DeliveryCount())
	bID := e2eMemberID(t, c, "g", "member-b")
	for off := range int64(2) {
		rec := e2eRecord(t, c, "g", "t", 0, off)
		assert.Equal(t, testbroker.ShareAcquired, rec.State, "offset %d", off)
		assert.Equal(t, bID, rec.Member, "offset %d", off)
		assert.Equal(t, int16(2), rec.DeliveryCount, "offset %d", off)
	}
	again.Ack(kgo.AckAccept)
	b.flush(t)
	assert.Equal(t, int64(1), e2eStartOffset(t, c, "g", "t", 0))
}

// TestShareE2ERenewHoldsLockPastOriginalDeadline renews the lock of one record of two acquired
// together, with AckRenew: the renewed record stays with its owner past the first deadline and
// goes to another member only once the renewed lock expires, while the other record expires at
// the first deadline.
func TestShareE2ERenewHoldsLockPastOriginalDeadline(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := e2eStart(t, 1, testbroker.WithManualClock(start))
	clk := c.ManualClock()
	e2eSetGroupConfigs(t, c, "g", "share.auto.offset.reset", "earliest")
	e2eProduce(t, c, "t", 0, "slow", "other")

	// A must not poll again: franz-go accepts renewed records at the next poll.
	a := e2eJoin(t, c, "g", "t", "member-a", kgo.MaxConcurrentFetches(0))
	slow := a.pollOne(t)
	require.Equal(t, int64(0), slow.Offset)
	aID := e2eMemberID(t, c, "g", "member-a")
	b := e2eJoin(t, c, "g", "t", "member-b", kgo.MaxConcurrentFetches(0))
	e2eWaitStable(t, c, "g", 2)

	clk.Advance(20 * time.Second)
	slow.Ack(kgo.AckRenew)
	a.flush(t)
	rec := e2eRecord(t, c, "g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcquired, rec.State)
	assert.Equal(t, aID, rec.Member)
	assert.Equal(t, int16(1), rec.DeliveryCount, "a renewal does not count as a delivery")
	assert.Equal(t, start.Add(50*time.Second), rec.LockDeadline, "renewed for a full lock duration from the renewal")
	assert.Equal(t, start.Add(30*time.Second), e2eRecord(t, c, "g", "t", 0, 1).LockDeadline, "offset 1 was not renewed")

	clk.Advance(20 * time.Second) // 10 s past the first deadline
	rec = e2eRecord(t, c, "g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcquired, rec.State)
	assert.Equal(t, aID, rec.Member)
	other := b.pollOne(t)
	assert.Equal(t, int64(1), other.Offset, "only the record that was not renewed comes back")
	assert.Equal(t, int32(2), other.DeliveryCount())
	other.Ack(kgo.AckAccept)
	assert.Equal(t, aID, e2eRecord(t, c, "g", "t", 0, 0).Member, "the renewed record is still A's")

	clk.Advance(10 * time.Second) // the renewed deadline
	again := b.pollOne(t)
	assert.Equal(t, int64(0), again.Offset)
	assert.Equal(t, "slow", string(again.Value))
	assert.Equal(t, int32(2), again.DeliveryCount())
	again.Ack(kgo.AckAccept)
	b.flushAdvancing(t, clk)
	assert.Equal(t, int64(2), e2eStartOffset(t, c, "g", "t", 0))
}

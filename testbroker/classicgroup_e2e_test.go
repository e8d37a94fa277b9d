package testbroker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// These tests drive the cluster's classic groups with franz-go's own consumer group (kgo with
// ConsumerGroup), on the real clock with short timeouts: no initial rebalance delay (testbroker's
// default), sessions of a second.

const classicPartitions = 6

func classicStart(t *testing.T) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t,
		testbroker.Topic("orders", classicPartitions),
		testbroker.BrokerConfig("group.min.session.timeout.ms", "500"),
	)
}

// tally counts the records each member consumed, by value.
type tally struct {
	mu    sync.Mutex
	seen  map[string]int
	total int
}

func (tl *tally) count() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.total
}

// classicMember runs one franz-go group member until ctx ends or it is stopped. It commits
// what each poll returned before it lets a rebalance go on (BlockRebalanceOnPoll), so that no
// record is consumed twice across a rebalance.
type classicMember struct {
	cl   *kgo.Client
	done chan struct{}
}

func startClassicMember(t *testing.T, c *testbroker.Cluster, balancer kgo.GroupBalancer, tl *tally) *classicMember {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Addrs()...),
		kgo.ConsumerGroup("g"),
		kgo.ConsumeTopics("orders"),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(time.Second),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	require.NoError(t, err)
	m := &classicMember{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		ctx := context.Background()
		for {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			tl.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				tl.seen[string(r.Value)]++
				tl.total++
			})
			tl.mu.Unlock()
			_ = cl.CommitUncommittedOffsets(ctx)
			cl.AllowRebalance()
		}
	}()
	return m
}

// leave closes the member's client, which leaves the group.
func (m *classicMember) leave() {
	m.cl.Close()
	<-m.done
}

func produceOrders(t *testing.T, c *testbroker.Cluster, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: "orders", Partition: int32(i % classicPartitions), Value: fmt.Appendf(nil, "order-%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
}

// waitStable waits until the group is Stable with n members, each assigned.
func waitStable(t *testing.T, c *testbroker.Cluster, n int) testbroker.ClassicGroupInfo {
	t.Helper()
	var info testbroker.ClassicGroupInfo
	require.Eventually(t, func() bool {
		var ok bool
		info, ok = c.ClassicGroup("g")
		if !ok || info.State != "Stable" || len(info.Members) != n {
			return false
		}
		for _, m := range info.Members {
			if len(m.Assignment) == 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 5*time.Millisecond)
	return info
}

// TestClassicGroupE2E consumes a topic exactly once with each of franz-go's balancers through
// a member joining and one leaving, and reads the committed offsets back with kadm.
func TestClassicGroupE2E(t *testing.T) {
	t.Parallel()
	for _, b := range []kgo.GroupBalancer{kgo.RangeBalancer(), kgo.StickyBalancer(), kgo.CooperativeStickyBalancer()} {
		t.Run(b.ProtocolName(), func(t *testing.T) {
			t.Parallel()
			c := classicStart(t)
			tl := &tally{seen: map[string]int{}}
			waitCount := func(n int) {
				t.Helper()
				require.Eventually(t, func() bool { return tl.count() >= n }, 20*time.Second, 5*time.Millisecond)
			}

			a := startClassicMember(t, c, b, tl)
			defer a.leave()
			info := waitStable(t, c, 1)
			assert.Equal(t, "consumer", info.ProtocolType)
			assert.Equal(t, b.ProtocolName(), info.ProtocolName)
			produceOrders(t, c, 0, 60)
			waitCount(60)

			joiner := startClassicMember(t, c, b, tl)
			waitStable(t, c, 2)
			produceOrders(t, c, 60, 60)
			waitCount(120)

			joiner.leave()
			waitStable(t, c, 1)
			produceOrders(t, c, 120, 60)
			waitCount(180)

			tl.mu.Lock()
			assert.Len(t, tl.seen, 180)
			for v, n := range tl.seen {
				assert.Equal(t, 1, n, "%s consumed %d times", v, n)
			}
			assert.Equal(t, 180, tl.total)
			tl.mu.Unlock()

			adm := kadm.NewClient(a.cl)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.Eventually(t, func() bool {
				offsets, err := adm.FetchOffsets(ctx, "g")
				if err != nil || offsets.Error() != nil {
					return false
				}
				for p := range int32(classicPartitions) {
					o, ok := offsets.Lookup("orders", p)
					if !ok || o.At != 30 {
						return false
					}
				}
				return true
			}, 10*time.Second, 5*time.Millisecond, "every partition committed up to its end")
			committed := c.CommittedOffsets("g")
			for p := range int32(classicPartitions) {
				assert.Equal(t, int64(30), committed["orders"][p].Offset)
			}
		})
	}
}

// TestClassicOffsetsSurviveMembers: after the last member leaves, the group is Empty and its
// offsets stay; kadm lists the group by type and state.
func TestClassicOffsetsSurviveMembers(t *testing.T) {
	t.Parallel()
	c := classicStart(t)
	tl := &tally{seen: map[string]int{}}
	produceOrders(t, c, 0, 12)
	m := startClassicMember(t, c, kgo.RangeBalancer(), tl)
	require.Eventually(t, func() bool { return tl.count() == 12 }, 20*time.Second, 5*time.Millisecond)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	listed, err := adm.ListGroupsByType(ctx, []string{"Classic"}, "Stable")
	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, listed.Groups())
	m.leave()
	require.Eventually(t, func() bool {
		info, ok := c.ClassicGroup("g")
		return ok && info.State == "Empty"
	}, 10*time.Second, 5*time.Millisecond)

	listed, err = adm.ListGroupsByType(ctx, []string{"classic"}, "Stable")
	require.NoError(t, err)
	assert.Empty(t, listed.Groups())
	listed, err = adm.ListGroupsByType(ctx, []string{"CLASSIC"}, "Empty")
	require.NoError(t, err)
	require.Equal(t, []string{"g"}, listed.Groups())
	assert.Equal(t, "consumer", listed["g"].ProtocolType)
	listed, err = adm.ListGroupsByType(ctx, []string{"share"})
	require.NoError(t, err)
	assert.Empty(t, listed.Groups())

	offsets, err := adm.FetchOffsets(ctx, "g")
	require.NoError(t, err)
	total := int64(0)
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	assert.Equal(t, int64(12), total, "the offsets outlive the members")

	deleted, err := adm.DeleteGroups(ctx, "g")
	require.NoError(t, err)
	require.NoError(t, deleted.Error())
	assert.Nil(t, c.CommittedOffsets("g"))
	assert.Empty(t, c.Groups())
}

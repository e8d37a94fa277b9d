package testbroker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// These tests drive the cluster's consumer groups (KIP-848) with franz-go's next-gen group
// consumer (kgo.ServerSideBalancer) and check what the broker's inspection API shows.

// cg848Start starts a cluster with topic "t" of the given partitions for a KIP-848 group:
// heartbeats every second, so that members reconcile quickly.
func cg848Start(t *testing.T, partitions int32) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t,
		testbroker.Topic("t", partitions),
		testbroker.BrokerConfig("group.consumer.min.heartbeat.interval.ms", "1000"),
		testbroker.BrokerConfig("group.consumer.heartbeat.interval.ms", "1000"),
	)
}

// cg848Member is one franz-go KIP-848 group member, polling on its own goroutine until the
// test ends or it is closed.
type cg848Member struct {
	cl   *kgo.Client
	done chan struct{}
}

func cg848Join(t *testing.T, c *testbroker.Cluster, group string, opts ...kgo.Opt) *cg848Member {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics("t"),
		kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, opts...)...)
	require.NoError(t, err)
	m := &cg848Member{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close leaves the group (a heartbeat with epoch -1) and waits for the poll loop to end.
func (m *cg848Member) close() {
	m.cl.Close()
	<-m.done
}

// requireConverged waits until the group has n members, is Stable, and its members own every
// partition of "t" exactly once at the group's assignment epoch.
func requireConverged(t *testing.T, c *testbroker.Cluster, group string, n int, partitions int32) testbroker.ConsumerGroupInfo {
	t.Helper()
	var last testbroker.ConsumerGroupInfo
	require.Eventually(t, func() bool {
		info, ok := c.ConsumerGroup(group)
		if !ok || len(info.Members) != n || info.State != "Stable" {
			last = info
			return false
		}
		last = info
		var owned []int32
		for _, m := range info.Members {
			if m.MemberEpoch != info.AssignmentEpoch {
				return false
			}
			for _, tp := range m.Assignment {
				owned = append(owned, tp.Partitions...)
			}
		}
		slices.Sort(owned)
		want := make([]int32, partitions)
		for i := range want {
			want[i] = int32(i)
		}
		return slices.Equal(owned, want)
	}, 30*time.Second, 20*time.Millisecond, "group never converged: %+v", &last)
	return last
}

// noPartitionOwnedTwice checks, in every snapshot taken while the group rebalances, that no
// partition is in two members' assignments or pending revocations.
func noPartitionOwnedTwice(t *testing.T, info testbroker.ConsumerGroupInfo) {
	t.Helper()
	seen := map[string]string{}
	for _, m := range info.Members {
		for _, set := range [][]testbroker.TopicPartitions{m.Assignment, m.PendingRevocation} {
			for _, tp := range set {
				for _, p := range tp.Partitions {
					key := fmt.Sprintf("%s-%d", tp.Topic, p)
					assert.Empty(t, seen[key], "partition %s owned by %s and %s", key, seen[key], m.MemberID)
					seen[key] = m.MemberID
				}
			}
		}
	}
}

// watchOwnership samples the group until stop is closed, checking noPartitionOwnedTwice.
func watchOwnership(t *testing.T, c *testbroker.Cluster, group string) (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if info, ok := c.ConsumerGroup(group); ok {
				noPartitionOwnedTwice(t, info)
			}
		}
	}()
	return func() { close(quit); <-done }
}

// TestConsumerGroup848JoinAndLeave runs franz-go KIP-848 members: two join, a third joins
// and one leaves; each time the assignment converges with every partition owned once and the
// epochs move forward.
func TestConsumerGroup848JoinAndLeave(t *testing.T) {
	t.Parallel()
	c := cg848Start(t, 6)
	stop := watchOwnership(t, c, "g")
	defer stop()

	a := cg848Join(t, c, "g")
	cg848Join(t, c, "g")
	two := requireConverged(t, c, "g", 2, 6)
	assert.Equal(t, "uniform", two.AssignorName, "franz-go's sticky balancers ask for uniform")
	for _, m := range two.Members {
		assert.Equal(t, 3, len(m.Assignment[0].Partitions), "uniform balances the partitions")
	}

	cg848Join(t, c, "g")
	three := requireConverged(t, c, "g", 3, 6)
	assert.Greater(t, three.GroupEpoch, two.GroupEpoch)
	for _, m := range three.Members {
		assert.Equal(t, 2, len(m.Assignment[0].Partitions))
	}

	a.close()
	left := requireConverged(t, c, "g", 2, 6)
	assert.Greater(t, left.GroupEpoch, three.GroupEpoch)
	assert.Greater(t, left.AssignmentEpoch, three.AssignmentEpoch)
}

// TestConsumerGroup848Range checks that franz-go's range balancer asks the broker for its
// range assignor.
func TestConsumerGroup848Range(t *testing.T) {
	t.Parallel()
	c := cg848Start(t, 4)
	cg848Join(t, c, "g", kgo.Balancers(kgo.RangeBalancer()))
	cg848Join(t, c, "g", kgo.Balancers(kgo.RangeBalancer()))
	info := requireConverged(t, c, "g", 2, 4)
	assert.Equal(t, "range", info.AssignorName)
	for _, m := range info.Members {
		assert.Equal(t, "range", m.ServerAssignor)
		require.Len(t, m.Assignment, 1)
		ps := m.Assignment[0].Partitions
		assert.Equal(t, []int32{ps[0], ps[0] + 1}, ps, "range gives consecutive partitions")
	}
}

// TestConsumerGroup848CommitsExactlyOnce consumes 600 records through a KIP-848 group whose
// members commit what they processed before they let a rebalance happen (BlockRebalanceOnPoll):
// a member joins and one leaves midway, and every record is processed exactly once; the
// committed offsets, read back with kadm, are the partitions' ends. It needs OffsetFetch and
// OffsetCommit with member epochs (KIP-848), which come with the classic group work.
func TestConsumerGroup848CommitsExactlyOnce(t *testing.T) {
	t.Parallel()
	const partitions, perPartition = 6, 100
	c := cg848Start(t, partitions)
	for p := range int32(partitions) {
		values := make([]string, perPartition)
		for i := range values {
			values[i] = fmt.Sprintf("p%d-%d", p, i)
		}
		e2eProduce(t, c, "t", p, values...)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	join := func() *cg848Member {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(c.Addrs()...),
			kgo.ConsumerGroup("g"),
			kgo.ConsumeTopics("t"),
			kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.DisableAutoCommit(),
			kgo.BlockRebalanceOnPoll(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond),
		)
		require.NoError(t, err)
		m := &cg848Member{cl: cl, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				fs := cl.PollRecords(ctx, 20)
				cancel()
				if fs.IsClientClosed() {
					return
				}
				rs := fs.Records()
				mu.Lock()
				for _, r := range rs {
					seen[string(r.Value)]++
				}
				mu.Unlock()
				if len(rs) > 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					assert.NoError(t, cl.CommitRecords(ctx, rs...))
					cancel()
				}
				cl.AllowRebalance()
			}
		}()
		t.Cleanup(m.close)
		return m
	}

	a := join()
	join()
	require.Eventually(t, func() bool { return total() >= 200 }, 30*time.Second, 10*time.Millisecond)
	join()
	require.Eventually(t, func() bool { return total() >= 400 }, 30*time.Second, 10*time.Millisecond)
	a.close()
	require.Eventually(t, func() bool { return total() == partitions*perPartition }, 30*time.Second, 10*time.Millisecond)
	requireConverged(t, c, "g", 2, partitions)

	mu.Lock()
	for v, n := range seen {
		assert.Equal(t, 1, n, "record %s processed %d times", v, n)
	}
	mu.Unlock()

	ctx, _, adm := adminClients(t, c)
	offsets, err := adm.FetchOffsets(ctx, "g")
	require.NoError(t, err)
	for p := range int32(partitions) {
		o, ok := offsets.Lookup("t", p)
		require.True(t, ok, "partition %d", p)
		assert.Equal(t, int64(perPartition), o.At, "partition %d", p)
	}
}

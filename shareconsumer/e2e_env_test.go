package shareconsumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// The end-to-end suite runs the consumer against two fake clusters: our testbroker and franz-go's
// kfake. A test that holds for any Kafka runs on both (forEachBroker); a test that needs the
// manual clock, record inspection or fault injection runs on testbroker only (onTestbroker), and
// its name says so.

// e2eTopic is the topic every end-to-end test uses.
const e2eTopic = "t"

// e2eSetup describes the cluster a test wants.
type e2eSetup struct {
	brokers    int   // default 1
	partitions int32 // default 1
	// deliveryLimit sets the share delivery count limit when non-zero: the group config
	// share.delivery.count.limit on testbroker, the broker default on kfake (which ignores the
	// group config).
	deliveryLimit int
	manualClock   bool // testbroker only
	// lockMs sets the lock duration when non-zero: the group config
	// share.record.lock.duration.ms on testbroker (by prepareGroup), the broker default on kfake.
	lockMs int
	// shareV1 caps the brokers at ShareFetch and ShareAcknowledge v1, as Kafka 4.1 has them
	// (testbroker.Kafka41, kfake.MaxVersions).
	shareV1 bool
	// replicationFactor replicates the topic on that many brokers (testbroker only; default 1).
	replicationFactor int16
	// noAutoCreate turns off auto.create.topics.enable (testbroker only), for a produce to a
	// topic that does not exist to fail.
	noAutoCreate bool
}

// e2eEnv is one running cluster.
type e2eEnv struct {
	name  string
	setup e2eSetup
	seeds []string
	// tb is the cluster when it is a testbroker, for inspection, the clock and faults; nil on
	// kfake.
	tb *testbroker.Cluster

	adminOnce sync.Once
	admin     *kadm.Client
}

type e2eBroker struct {
	name  string
	start func(t *testing.T, s e2eSetup) *e2eEnv
}

var e2eBrokers = []e2eBroker{
	{"testbroker", startTestbroker},
	{"kfake", startKfake},
}

// forEachBroker runs fn as a parallel subtest against each broker, each with a cluster of its own.
func forEachBroker(t *testing.T, s e2eSetup, fn func(t *testing.T, env *e2eEnv)) {
	t.Helper()
	for _, b := range e2eBrokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.start(t, s))
		})
	}
}

// onTestbroker runs fn against a testbroker only: for tests that need its manual clock, its
// inspection of share records or its faults (kfake has no manual clock and no view of share
// records' states; its own fault injection, Cluster.Fault, is not what these tests use).
func onTestbroker(t *testing.T, s e2eSetup, fn func(t *testing.T, env *e2eEnv)) {
	t.Helper()
	t.Parallel()
	fn(t, startTestbroker(t, s))
}

func (s e2eSetup) withDefaults() e2eSetup {
	if s.brokers == 0 {
		s.brokers = 1
	}
	if s.partitions == 0 {
		s.partitions = 1
	}
	return s
}

// e2eStart is when manual clocks start.
var e2eStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func startTestbroker(t *testing.T, s e2eSetup) *e2eEnv {
	t.Helper()
	s = s.withDefaults()
	opts := []testbroker.Opt{
		testbroker.NumBrokers(s.brokers),
		testbroker.ReplicatedTopic(e2eTopic, s.partitions, max(s.replicationFactor, 1)),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.BrokerConfig("group.share.max.session.timeout.ms", "3600000"),
		testbroker.BrokerConfig("group.share.session.timeout.ms", "3600000"),
		testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"),
	}
	if s.manualClock {
		opts = append(opts, testbroker.WithManualClock(e2eStart))
	}
	if s.shareV1 {
		opts = append(opts, testbroker.Kafka41())
	}
	if s.noAutoCreate {
		opts = append(opts, testbroker.BrokerConfig("auto.create.topics.enable", "false"))
	}
	c := testbroker.StartT(t, opts...)
	return &e2eEnv{name: "testbroker", setup: s, seeds: c.Addrs(), tb: c}
}

func startKfake(t *testing.T, s e2eSetup) *e2eEnv {
	t.Helper()
	s = s.withDefaults()
	require.False(t, s.manualClock, "kfake has no manual clock: use onTestbroker")
	configs := map[string]string{
		"group.share.heartbeat.interval.ms": "100",
		"group.share.session.timeout.ms":    "3600000",
	}
	if s.deliveryLimit != 0 {
		configs["group.share.delivery.count.limit"] = fmt.Sprint(s.deliveryLimit)
	}
	if s.lockMs != 0 {
		configs["group.share.record.lock.duration.ms"] = fmt.Sprint(s.lockMs)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(s.brokers),
		kfake.SeedTopics(s.partitions, e2eTopic),
		kfake.BrokerConfigs(configs),
	}
	if s.shareV1 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(kmsg.ShareFetch.Int16(), 1)
		v.SetMaxKeyVersion(kmsg.ShareAcknowledge.Int16(), 1)
		opts = append(opts, kfake.MaxVersions(v))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &e2eEnv{name: "kfake", setup: s, seeds: c.ListenAddrs()}
}

// e2eCtx returns a context that ends after d or with the test.
func e2eCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (e *e2eEnv) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.seeds...)}, opts...)...)
	require.NoError(t, err)
	return cl
}

func (e *e2eEnv) adm(t *testing.T) *kadm.Client {
	e.adminOnce.Do(func() {
		cl := e.client(t)
		t.Cleanup(cl.Close)
		e.admin = kadm.NewClient(cl)
	})
	return e.admin
}

// setGroupConfig sets a group config as IncrementalAlterConfigs on the GROUP resource would.
func (e *e2eEnv) setGroupConfig(t *testing.T, group, key, value string) {
	t.Helper()
	if e.tb != nil {
		require.NoError(t, e.tb.SetGroupConfig(group, key, value))
		return
	}
	cl := e.client(t)
	defer cl.Close()
	require.NoError(t, groupconfig.Set(e2eCtx(t, 10*time.Second), cl, group, key, value))
}

// prepareGroup makes group start at the log start, so that records produced before it first
// fetches are delivered, and on testbroker sets the group's share.delivery.count.limit when the
// setup has a delivery limit (kfake got it as its broker default).
func (e *e2eEnv) prepareGroup(t *testing.T, group string) {
	t.Helper()
	e.setGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	if e.tb != nil && e.setup.deliveryLimit != 0 {
		e.setGroupConfig(t, group, "share.delivery.count.limit", fmt.Sprint(e.setup.deliveryLimit))
	}
	if e.tb != nil && e.setup.lockMs != 0 {
		e.setGroupConfig(t, group, "share.record.lock.duration.ms", fmt.Sprint(e.setup.lockMs))
	}
}

// produce produces n records of value "p<partition>-<i>" to each partition in parts, and
// returns how many it produced.
func (e *e2eEnv) produce(t *testing.T, parts []int32, n int) int {
	t.Helper()
	cl := e.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	defer cl.Close()
	ctx := e2eCtx(t, 30*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, p := range parts {
		for i := range n {
			wg.Add(1)
			r := &kgo.Record{Topic: e2eTopic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.NoError(t, firstErr)
	return len(parts) * n
}

// newConsumer creates a consumer of group subscribed to the test topic, closed when the test ends.
func (e *e2eEnv) newConsumer(t *testing.T, group string, opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	t.Helper()
	c, err := shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(kgo.SeedBrokers(e.seeds...)),
		shareconsumer.Group(group),
		shareconsumer.Topics(e2eTopic),
		shareconsumer.FetchMaxWait(100 * time.Millisecond),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// newMembers creates n consumers of group with opts, and waits until all n are its members.
func (e *e2eEnv) newMembers(t *testing.T, group string, n int, opts ...shareconsumer.Opt) []*shareconsumer.Consumer {
	t.Helper()
	cs := make([]*shareconsumer.Consumer, n)
	for i := range cs {
		cs[i] = e.newConsumer(t, group, opts...)
	}
	e.waitMembers(t, group, n)
	return cs
}

// pollN polls until at least n records came, failing the test when d passes first.
func pollN(t *testing.T, c *shareconsumer.Consumer, n int, d time.Duration) []*shareconsumer.Record {
	t.Helper()
	ctx := e2eCtx(t, d)
	var out []*shareconsumer.Record
	for len(out) < n {
		recs, err := c.Poll(ctx)
		require.NoError(t, err, "after %d of %d records", len(out), n)
		out = append(out, recs...)
	}
	return out
}

// pollNothing polls for d and fails the test if any record arrives; the Poll must end with the
// context.
func pollNothing(t *testing.T, c *shareconsumer.Consumer, d time.Duration) {
	t.Helper()
	recs, err := c.Poll(e2eCtx(t, d))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, recs, "records arrived: %v", recOffsets(recs))
}

// spso returns the share-partition start offset of group on partition p, as
// DescribeShareGroupOffsets reports it; -1 when the group has none yet.
func (e *e2eEnv) spso(t *testing.T, group string, p int32) int64 {
	t.Helper()
	ds, err := e.adm(t).DescribeShareGroupOffsets(e2eCtx(t, 10*time.Second), group)
	require.NoError(t, err)
	d, ok := ds[group]
	require.True(t, ok)
	require.NoError(t, d.Err)
	o, ok := d.Offsets.Lookup(e2eTopic, p)
	if !ok || o.Err != nil {
		return -1
	}
	return o.StartOffset
}

// waitSPSO waits until the share-partition start offset of every partition in parts is want.
func (e *e2eEnv) waitSPSO(t *testing.T, group string, parts []int32, want int64) {
	t.Helper()
	for _, p := range parts {
		require.Eventually(t, func() bool { return e.spso(t, group, p) == want },
			10*time.Second, 5*time.Millisecond, "%s: share-partition start offset of partition %d never reached %d (now %d)",
			e.name, p, want, e.spso(t, group, p))
	}
}

// waitMembers waits until group has n members.
func (e *e2eEnv) waitMembers(t *testing.T, group string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ds, err := e.adm(t).DescribeShareGroups(e2eCtx(t, 10*time.Second), group)
		if err != nil {
			return false
		}
		d, ok := ds[group]
		return ok && d.Err == nil && len(d.Members) == n
	}, 10*time.Second, 5*time.Millisecond, "%s: group %s never had %d members", e.name, group, n)
}

func recOffsets(recs []*shareconsumer.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%d/%d(dc%d)", r.Partition, r.Offset, r.DeliveryCount)
	}
	return out
}

// commits collects what the OnAcknowledgementCommit callback receives.
type commits struct {
	mu  sync.Mutex
	all []shareconsumer.AcknowledgementCommit
}

func (c *commits) opt() shareconsumer.Opt {
	return shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
		c.mu.Lock()
		defer c.mu.Unlock()
		ac.Offsets = append([]int64(nil), ac.Offsets...)
		c.all = append(c.all, ac)
	})
}

func (c *commits) get() []shareconsumer.AcknowledgementCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]shareconsumer.AcknowledgementCommit(nil), c.all...)
}

func seedOpt(e *e2eEnv) kgo.Opt { return kgo.SeedBrokers(e.seeds...) }

// commitSyncOK commits c's acknowledgements and requires every partition to have succeeded; it
// returns the per-partition results.
func commitSyncOK(t *testing.T, c *shareconsumer.Consumer, who string) map[shareconsumer.TopicPartition]error {
	t.Helper()
	res, err := c.CommitSync(e2eCtx(t, 10*time.Second))
	require.NoError(t, err, who)
	for tp, err := range res {
		require.NoError(t, err, "%s, %s", who, tp)
	}
	return res
}

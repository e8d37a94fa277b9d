package shareconsumer_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// This file is the harness the chaos tests (TestChaos, TestChaosDeadLetter) share: the cluster,
// the producer, the fault injector, the inspection of the share partitions and the drain. What
// each test consumes with, and what it checks, stays in its own file.

// chaosRun is one chaos test's cluster: three brokers, the chaos topic replicated on each, and
// the chaos group configured; with the seed of its faults and answers and the flags' sizes.
type chaosRun struct {
	t          *testing.T
	seed       uint64
	parts      int32
	total      int
	c          *testbroker.Cluster
	clientOpts []kgo.Opt
}

// startChaos starts the cluster with the topics the test adds, sets the group's delivery
// count limit to dcLimit, and logs the seed when the test fails.
func startChaos(t *testing.T, dcLimit int, topics ...testbroker.Opt) *chaosRun {
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rerun with -chaos.seed=%d)", seed, seed)
		}
	})
	parts := int32(*chaosPartitions)
	opts := append([]testbroker.Opt{
		testbroker.NumBrokers(3),
		testbroker.ReplicatedTopic(chaosTopic, parts, 3),
	}, topics...)
	c := testbroker.StartT(t, append(opts,
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"),
		// A stopped follower leaves the ISR, and acks=all stops waiting for it, within a second.
		testbroker.BrokerConfig("replica.lag.time.max.ms", "1000"),
		testbroker.BrokerConfig("replica.fetch.backoff.ms", "100"),
	)...)
	for kv := range strings.SplitSeq(fmt.Sprintf("share.auto.offset.reset=earliest,share.record.lock.duration.ms=%d,share.delivery.count.limit=%d", chaosLockMs, dcLimit), ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := c.SetGroupConfig(chaosGroup, k, v); err != nil {
			t.Fatal(err)
		}
	}
	return &chaosRun{
		t:          t,
		seed:       seed,
		parts:      parts,
		total:      *chaosRecords,
		c:          c,
		clientOpts: []kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.MetadataMinAge(50 * time.Millisecond)},
	}
}

// newConsumer returns a consumer of the chaos topic in the chaos group, with explicit
// acknowledgement, small polls and a short MaxPollInterval, and opts.
func (r *chaosRun) newConsumer(opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	cons, err := shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(r.clientOpts...),
		shareconsumer.Group(chaosGroup),
		shareconsumer.Topics(chaosTopic),
		shareconsumer.ExplicitAcknowledgement(),
		shareconsumer.FetchMaxWait(100 * time.Millisecond),
		shareconsumer.MaxPollRecords(50),
		shareconsumer.MaxPollInterval(chaosPollIvl),
	}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	return cons
}

// closeConsumer closes cons, named name in the error, on a bounded context.
func (r *chaosRun) closeConsumer(name string, cons *shareconsumer.Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cons.Close(ctx); err != nil {
		r.t.Errorf("%s: Close: %v", name, err)
	}
}

// produce starts producing the records with acks=all, spread over the fault window (as fast
// as it can when that is too short), until done or ctx ends; the channel gets its result.
func (r *chaosRun) produce(ctx context.Context) <-chan error {
	producer, err := kgo.NewClient(append(r.clientOpts, kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(producer.Close)
	produced := make(chan error, 1)
	go func() { produced <- chaosProduce(ctx, producer, r.total, r.parts, *chaosDuration) }()
	return produced
}

// inspect starts sampling the share partitions (see inspection) until stop, which takes a
// last sample once the sampling has ended.
func (r *chaosRun) inspect(ctx context.Context) (seen *inspection, stop func()) {
	seen = &inspection{final: map[chaosKey]testbroker.ShareRecordInfo{}, maxDC: map[chaosKey]int16{}}
	sampled := make(chan struct{})
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		seen.run(sctx, r.c, r.parts)
	}()
	return seen, func() {
		cancel()
		<-sampled
		seen.sample(r.c, r.parts)
	}
}

// injectFaults injects faults, seeded by the run's seed, until the fault window has passed and
// produced has the producer's result (see injectFaults), and returns what it injected.
func (r *chaosRun) injectFaults(stalls []chan time.Duration, produced <-chan error) *faultLog {
	faults := &faultLog{n: map[string]int{}}
	injectFaults(r.t, r.c, rand.New(rand.NewPCG(r.seed, r.seed^0x9e3779b97f4a7c15)), r.parts, stalls, faults, produced, *chaosDuration)
	return faults
}

// awaitDrained waits until every offset of every partition is ACKNOWLEDGED or ARCHIVED; the
// test fails at once on an error in fatal, or when that takes longer than a minute and a
// second a thousand records.
func (r *chaosRun) awaitDrained(ctx context.Context, fatal *atomic.Value) {
	drain := 60*time.Second + time.Duration(r.total/1000)*time.Second
	deadline := time.Now().Add(drain)
	for !chaosDrained(r.c, r.parts) {
		r.failOnFatal(fatal)
		if time.Now().After(deadline) {
			r.t.Fatalf("not drained after %v: %s", drain, chaosProgress(r.c, r.parts))
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// failOnFatal ends the test with the error a consumer stored in fatal, if any.
func (r *chaosRun) failOnFatal(fatal *atomic.Value) {
	if err, _ := fatal.Load().(error); err != nil {
		r.t.Fatal(err)
	}
}

// notDone lists the partitions whose share-partition start offset is not their high watermark.
func (r *chaosRun) notDone() []string {
	var out []string
	for p := range r.parts {
		info, _ := r.c.Partition(chaosTopic, p)
		start, end, ok := r.c.SharePartitionOffsets(chaosGroup, chaosTopic, p)
		if !ok || start != info.HighWatermark {
			out = append(out, fmt.Sprintf("p%d: start offset %d, end %d, high watermark %d", p, start, end, info.HighWatermark))
		}
	}
	return out
}

// chaosInvariants checks a chaos test's invariants: one that does not hold fails the test,
// the names of those that held are logged.
type chaosInvariants struct {
	t    *testing.T
	held []string
}

func (iv *chaosInvariants) check(name string, ok bool, format string, args ...any) {
	iv.t.Helper()
	if !ok {
		iv.t.Errorf("%s: "+format, append([]any{name}, args...)...)
		return
	}
	iv.held = append(iv.held, name)
}

func (iv *chaosInvariants) log() {
	iv.t.Helper()
	iv.t.Logf("invariants held: %s", strings.Join(iv.held, "; "))
}

// chaosStall, when the fault injector has sent a stall, stops the caller for that long (or
// until ctx ends) without returning to Poll.
func chaosStall(ctx context.Context, stall <-chan time.Duration) {
	select {
	case d := <-stall:
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	default:
	}
}

// The chaos test runs small in CI; the same test is the soak with bigger flags, e.g.
//
//	go test ./shareconsumer -run TestChaos -chaos.records=1000000 -chaos.duration=8m -timeout=30m -v
var (
	chaosSeed       = flag.Uint64("chaos.seed", 0, "seed of the chaos test's faults and answers (0: from the clock)")
	chaosRecords    = flag.Int("chaos.records", 1500, "records the chaos test produces")
	chaosDuration   = flag.Duration("chaos.duration", 3*time.Second, "how long the chaos test injects faults (at least while it produces)")
	chaosPartitions = flag.Int("chaos.partitions", 4, "partitions of the chaos test's topic")
)

const (
	chaosTopic    = "chaos"
	chaosGroup    = "chaos"
	chaosLockMs   = 1000
	chaosDCLimit  = 5
	chaosPollIvl  = 2 * time.Second
	chaosMaxDelay = 200 * time.Millisecond
)

// chaosKey names one record.
type chaosKey struct {
	p   int32
	off int64
}

// faultLog counts the faults by kind.
type faultLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *faultLog) add(kind string) {
	f.mu.Lock()
	f.n[kind]++
	f.mu.Unlock()
}

func (f *faultLog) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	kinds := make([]string, 0, len(f.n))
	for k := range f.n {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%s=%d ", k, f.n[k])
	}
	return strings.TrimSpace(b.String())
}

func first(s []string) []string { return s[:min(len(s), 5)] }

// chaosProduce produces total records round-robin over the partitions with acks=all, in
// slices spread over window; a record whose produce failed is produced again.
func chaosProduce(ctx context.Context, cl *kgo.Client, total int, parts int32, window time.Duration) error {
	const tick = 50 * time.Millisecond
	per := max(1, total/max(1, int(window/tick)))
	next := time.Now()
	for sent := 0; sent < total; {
		n := min(per, total-sent)
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: chaosTopic, Partition: int32(sent+i) % parts, Value: fmt.Appendf(nil, "%d", sent+i)}
		}
		for len(recs) > 0 {
			var retry []*kgo.Record
			for _, pr := range cl.ProduceSync(ctx, recs...) {
				if pr.Err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					retry = append(retry, pr.Record)
				}
			}
			recs = retry
		}
		sent += n
		next = next.Add(tick)
		if d := time.Until(next); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// injectFaults injects a fault every 20-120 ms until window has passed and the producer is
// done, then removes every fault and restarts a stopped broker.
func injectFaults(t *testing.T, c *testbroker.Cluster, rng *rand.Rand, parts int32, stalls []chan time.Duration, log *faultLog, produced <-chan error, window time.Duration) {
	end := time.Now().Add(window)
	producing := true
	stopped := int32(-1)
	var stoppedAt time.Time
	shareAPIs := []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.ShareGroupHeartbeat}
	codes := map[kmsg.Key][]*kerr.Error{
		kmsg.ShareFetch:          {kerr.NotLeaderForPartition, kerr.ShareSessionNotFound, kerr.InvalidShareSessionEpoch, kerr.UnknownServerError},
		kmsg.ShareAcknowledge:    {kerr.NotLeaderForPartition, kerr.ShareSessionNotFound, kerr.InvalidShareSessionEpoch, kerr.RequestTimedOut},
		kmsg.ShareGroupHeartbeat: {kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.FencedMemberEpoch, kerr.UnknownMemberID},
	}
	for producing || time.Now().Before(end) {
		select {
		case err := <-produced:
			if err != nil {
				t.Errorf("producer: %v", err)
			}
			producing = false
		case <-time.After(time.Duration(20+rng.IntN(100)) * time.Millisecond):
		}
		if stopped >= 0 && time.Since(stoppedAt) > 500*time.Millisecond {
			if err := c.StartBroker(stopped); err != nil {
				t.Errorf("StartBroker(%d): %v", stopped, err)
			}
			stopped = -1
		}
		switch kind := rng.IntN(16); {
		case kind < 2:
			b := int32(rng.IntN(4)) - 1
			c.DropConnections(b)
			log.add("drop_connections")
		case kind < 8:
			api := shareAPIs[rng.IntN(len(shareAPIs))]
			f := testbroker.Fault{APIs: []kmsg.Key{api}, Times: 1 + rng.IntN(3)}
			name := strings.TrimPrefix(kmsg.NameForKey(int16(api)), "Share")
			if rng.IntN(3) == 0 {
				f.Delay = time.Duration(10+rng.IntN(int(chaosMaxDelay/time.Millisecond)-10)) * time.Millisecond
				name = "delay_" + name
			} else {
				cs := codes[api]
				f.Err = cs[rng.IntN(len(cs))]
				name = "error_" + name
			}
			if _, err := c.InjectFault(f); err != nil {
				t.Errorf("InjectFault: %v", err)
			}
			log.add(name)
		case kind < 11:
			p := int32(rng.IntN(int(parts)))
			info, _ := c.Partition(chaosTopic, p)
			if len(info.ISR) > 1 {
				to := info.ISR[rng.IntN(len(info.ISR))]
				if to != info.Leader && c.MoveLeader(chaosTopic, p, to) == nil {
					log.add("move_leader")
				}
			}
		case kind < 13:
			if stopped < 0 {
				stopped = int32(rng.IntN(3))
				if err := c.StopBroker(stopped); err != nil {
					t.Errorf("StopBroker(%d): %v", stopped, err)
					stopped = -1
					break
				}
				stoppedAt = time.Now()
				log.add("stop_broker")
			}
		case kind < 14:
			select {
			case stalls[rng.IntN(len(stalls))] <- chaosPollIvl + time.Duration(200+rng.IntN(800))*time.Millisecond:
				log.add("stall_past_max_poll_interval")
			default:
			}
		}
	}
	c.ClearFaults()
	if stopped >= 0 {
		if err := c.StartBroker(stopped); err != nil {
			t.Errorf("StartBroker(%d): %v", stopped, err)
		}
	}
}

// inspection samples the share partitions through the inspection API while the test runs: the
// brokers forget records once the share-partition start offset passes them, so each record's
// terminal state is caught while it is still listed.
type inspection struct {
	final map[chaosKey]testbroker.ShareRecordInfo
	maxDC map[chaosKey]int16
}

func (in *inspection) run(ctx context.Context, c *testbroker.Cluster, parts int32) {
	for {
		in.sample(c, parts)
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (in *inspection) sample(c *testbroker.Cluster, parts int32) {
	for p := range parts {
		for _, sr := range c.ShareRecords(chaosGroup, chaosTopic, p) {
			k := chaosKey{p, sr.Offset}
			in.maxDC[k] = max(in.maxDC[k], sr.DeliveryCount)
			if sr.State == testbroker.ShareAcknowledged || sr.State == testbroker.ShareArchived {
				if prev, ok := in.final[k]; ok && prev.State != sr.State {
					in.final[k] = testbroker.ShareRecordInfo{Offset: sr.Offset, State: -1}
					continue
				}
				in.final[k] = sr
			}
		}
	}
}

// chaosDrained reports whether every partition's share-partition start offset reached its high
// watermark.
func chaosDrained(c *testbroker.Cluster, parts int32) bool {
	for p := range parts {
		info, ok := c.Partition(chaosTopic, p)
		if !ok {
			return false
		}
		start, _, ok := c.SharePartitionOffsets(chaosGroup, chaosTopic, p)
		if !ok || start < info.HighWatermark {
			return false
		}
	}
	return true
}

func chaosProgress(c *testbroker.Cluster, parts int32) string {
	var b strings.Builder
	for p := range parts {
		info, _ := c.Partition(chaosTopic, p)
		start, end, _ := c.SharePartitionOffsets(chaosGroup, chaosTopic, p)
		states := map[testbroker.ShareRecordState]int{}
		for _, sr := range c.ShareRecords(chaosGroup, chaosTopic, p) {
			states[sr.State]++
		}
		fmt.Fprintf(&b, "p%d: start %d end %d hw %d leader %d isr %v %v; ", p, start, end, info.HighWatermark, info.Leader, info.ISR, states)
	}
	return b.String()
}

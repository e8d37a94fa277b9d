package shareconsumer_test

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
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

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

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

// answer is what every consumer does with a record, decided by the record alone so that the
// outcome of each offset is known whoever gets it: about 1% are rejected, 1% released at each
// delivery (archived at the delivery limit), the rest accepted.
func (k chaosKey) answer(seed uint64) acktype.Type {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", seed, k.p, k.off)
	switch h.Sum64() % 100 {
	case 0:
		return acktype.Reject
	case 1:
		return acktype.Release
	}
	return acktype.Accept
}

// tally is what one kshare consumer's own records say: the acknowledgements its application
// (or handlers) made and the outcomes its OnAcknowledgementCommit callback reported.
type tally struct {
	name string
	mu   sync.Mutex
	// pending counts a poll loop's acknowledgements waiting for their outcome. Each is recorded
	// before Acknowledge, so the callback always finds it; an outcome with none pending is the
	// consumer's own (a release of records fetched and not returned).
	// Each entry is the record's lock deadline as the consumer saw it at delivery.
	pending map[chaosKey][]time.Time
	// done counts a pool's handled records that were acknowledged (OnRecordDone), results the
	// callback's outcomes in order; the pool's own releases (at shutdown) come after its
	// handlers' acknowledgements, so the first done[k] results are the handlers'.
	done    map[chaosKey][]time.Time
	results map[chaosKey][]ackResult
	// accepted counts successful accepts whose outcome came before the record's lock deadline:
	// a broker skips, without an error, acknowledgements of records below the share-partition
	// start offset (as Kafka does), so a late accept may succeed after another member's accept.
	accepted map[chaosKey]int
	late     int              // successful accepts whose outcome came after the lock deadline
	attempts map[chaosKey]int // accepts made
	lost     int              // pool records whose lock loss was reported
	failed   int              // outcomes with an error
	maxDC    int16
	badLoss  []string
	log      *acceptLog
}

func newTally(name string, log *acceptLog) *tally {
	return &tally{name: name, pending: map[chaosKey][]time.Time{}, done: map[chaosKey][]time.Time{}, results: map[chaosKey][]ackResult{},
		accepted: map[chaosKey]int{}, attempts: map[chaosKey]int{}, log: log}
}

func (t *tally) delivered(r *shareconsumer.Record) {
	t.log.delivered(t.name, chaosKey{r.Partition, r.Offset}, r.LockDeadline.Add(-chaosLockMs*time.Millisecond))
	t.mu.Lock()
	t.maxDC = max(t.maxDC, r.DeliveryCount)
	t.mu.Unlock()
}

// acceptLog is when an accept of each offset first succeeded, as a poll loop's callback said,
// and the deliveries that were acquired after it: a broker never acquires an acknowledged
// record again. A delivery's acquisition came after its ShareFetch was sent, which is its lock
// deadline less the lock duration. (Its receipt by the application may come long after an
// accept by another member and be no fault: a broker releases a member's records when its
// connection drops, before the member can know.) franz-go's records carry no send time, so its
// deliveries are not checked here.
type acceptLog struct {
	mu    sync.Mutex
	at    map[chaosKey]time.Time
	after []string
}

func (l *acceptLog) accepted(k chaosKey, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.at[k]; !ok {
		l.at[k] = at
	}
}

func (l *acceptLog) delivered(who string, k chaosKey, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.at[k]; ok && sent.After(at) {
		l.after = append(l.after, fmt.Sprintf("%d/%d delivered to %s by a fetch sent %v after an accept of it succeeded", k.p, k.off, who, sent.Sub(at)))
	}
}

func (t *tally) commitOpt(seed uint64, pool bool) shareconsumer.Opt {
	return shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if ac.Err != nil {
			t.failed += len(ac.Offsets)
		}
		now := time.Now()
		for _, off := range ac.Offsets {
			k := chaosKey{ac.Partition, off}
			if pool {
				t.results[k] = append(t.results[k], ackResult{ac.Err == nil, now})
				continue
			}
			if len(t.pending[k]) == 0 {
				continue
			}
			deadline := t.pending[k][0]
			t.pending[k] = t.pending[k][1:]
			if ac.Err == nil && k.answer(seed) == acktype.Accept {
				t.countAccept(k, deadline, now)
				t.log.accepted(k, now)
			}
		}
	})
}

// ackResult is one outcome the callback reported for a pool's record.
type ackResult struct {
	ok bool
	at time.Time
}

func (t *tally) countAccept(k chaosKey, deadline, at time.Time) {
	if at.Before(deadline) {
		t.accepted[k]++
	} else {
		t.late++
	}
}

// settle turns a pool's records into accepts and reports what was never answered.
func (t *tally) settle(seed uint64) (unanswered int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ds := range t.pending {
		unanswered += len(ds)
	}
	for k, ds := range t.done {
		n := len(ds)
		rs := t.results[k]
		if len(rs) < n {
			unanswered += n - len(rs)
			rs = rs[:len(rs):len(rs)]
		} else {
			rs = rs[:n]
		}
		if k.answer(seed) != acktype.Accept {
			continue
		}
		for i, r := range rs {
			if r.ok {
				t.countAccept(k, ds[i], r.at)
			}
		}
	}
	return unanswered
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

// TestChaos works a stream of records, produced with acks=all to a topic replicated on three
// brokers, through three explicit poll loops, a Process pool and franz-go's share consumer
// while faults are injected at random, then checks what the brokers and the consumers say.
func TestChaos(t *testing.T) {
	t.Parallel()
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
	total := *chaosRecords
	c := testbroker.StartT(t,
		testbroker.NumBrokers(3),
		testbroker.ReplicatedTopic(chaosTopic, parts, 3),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"),
		// A stopped follower leaves the ISR, and acks=all stops waiting for it, within a second.
		testbroker.BrokerConfig("replica.lag.time.max.ms", "1000"),
		testbroker.BrokerConfig("replica.fetch.backoff.ms", "100"),
	)
	for kv := range strings.SplitSeq(fmt.Sprintf("share.auto.offset.reset=earliest,share.record.lock.duration.ms=%d,share.delivery.count.limit=%d", chaosLockMs, chaosDCLimit), ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := c.SetGroupConfig(chaosGroup, k, v); err != nil {
			t.Fatal(err)
		}
	}
	clientOpts := []kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.MetadataMinAge(50 * time.Millisecond)}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var pollErrs atomic.Int64
	var fatal atomic.Value

	// Three poll loops, each with a channel on which the fault injector tells it to stall.
	var tallies []*tally
	accepts := &acceptLog{at: map[chaosKey]time.Time{}}
	var stalls []chan time.Duration
	var consumers []*shareconsumer.Consumer
	newConsumer := func(tl *tally, pool bool) *shareconsumer.Consumer {
		cons, err := shareconsumer.New(
			shareconsumer.ClientOpts(clientOpts...),
			shareconsumer.Group(chaosGroup),
			shareconsumer.Topics(chaosTopic),
			shareconsumer.ExplicitAcknowledgement(),
			shareconsumer.FetchMaxWait(100*time.Millisecond),
			shareconsumer.MaxPollRecords(50),
			shareconsumer.MaxPollInterval(chaosPollIvl),
			tl.commitOpt(seed, pool),
		)
		if err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, cons)
		tallies = append(tallies, tl)
		return cons
	}
	for i := range 3 {
		tl := newTally(fmt.Sprintf("poll-%d", i), accepts)
		cons := newConsumer(tl, false)
		stall := make(chan time.Duration, 1)
		stalls = append(stalls, stall)
		wg.Go(func() { chaosPollLoop(ctx, cons, tl, seed, stall, &pollErrs, &fatal) })
	}

	// The Process pool; about one handler in two hundred works past the lock duration, so
	// that its lock is renewed.
	ptl := newTally("pool", accepts)
	pcons := newConsumer(ptl, true)
	wg.Go(func() {
		err := pcons.Process(ctx, func(hctx context.Context, r *shareconsumer.Record) error {
			ptl.delivered(r)
			k := chaosKey{r.Partition, r.Offset}
			h := fnv.New32a()
			fmt.Fprintf(h, "slow/%d/%d", k.p, k.off)
			if h.Sum32()%200 == 0 {
				select {
				case <-hctx.Done():
				case <-time.After(chaosLockMs * 3 / 2 * time.Millisecond):
				}
			}
			switch k.answer(seed) {
			case acktype.Reject:
				return errors.ErrReject
			case acktype.Release:
				return fmt.Errorf("chaos release")
			}
			return nil
		}, shareconsumer.Workers(4), shareconsumer.QueueSize(8), shareconsumer.ShutdownGrace(2*time.Second),
			shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
				k := chaosKey{o.Record.Partition, o.Record.Offset}
				ptl.mu.Lock()
				defer ptl.mu.Unlock()
				if o.Ack != 0 {
					ptl.done[k] = append(ptl.done[k], o.Record.LockDeadline)
					if o.Ack == acktype.Accept {
						ptl.attempts[k]++
					}
					return
				}
				var lle *errors.LockLostError
				if errors.As(o.Err, &lle) {
					ptl.lost++
				} else {
					ptl.badLoss = append(ptl.badLoss, fmt.Sprintf("%d/%d: nothing acknowledged and no loss reported: %v", k.p, k.off, o.Err))
				}
			}))
		if err != nil {
			fatal.CompareAndSwap(nil, fmt.Errorf("pool: Process: %w", err))
		}
	})

	// franz-go's share consumer, whose acknowledgements count as attempts only: its callback
	// does not name offsets. What it receives counts towards the brokers' states and the
	// delivery counts.
	var outsiderMu sync.Mutex
	outsiderAcks := map[chaosKey]int{}
	var outsiderDC int32
	var outsiderFailed int
	outsider, err := kgo.NewClient(append(clientOpts, kgo.ConsumeTopics(chaosTopic), kgo.ShareGroup(chaosGroup),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			outsiderMu.Lock()
			defer outsiderMu.Unlock()
			for _, r := range rs {
				if r.Err != nil {
					outsiderFailed++
				}
			}
		}))...)
	if err != nil {
		t.Fatal(err)
	}
	outsiderDone := make(chan struct{})
	go func() {
		defer close(outsiderDone)
		for ctx.Err() == nil {
			fs := outsider.PollRecords(ctx, 50)
			fs.EachRecord(func(r *kgo.Record) {
				k := chaosKey{r.Partition, r.Offset}
				outsiderMu.Lock()
				outsiderDC = max(outsiderDC, r.DeliveryCount())
				outsiderMu.Unlock()
				switch k.answer(seed) {
				case acktype.Reject:
					r.Ack(kgo.AckReject)
				case acktype.Release:
					r.Ack(kgo.AckRelease)
				default:
					outsiderMu.Lock()
					outsiderAcks[k]++
					outsiderMu.Unlock()
					r.Ack(kgo.AckAccept)
				}
			})
		}
	}()

	// The producer spreads the records over the fault window, as fast as it can when that is
	// too short.
	produced := make(chan error, 1)
	producer, err := kgo.NewClient(append(clientOpts, kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	go func() { produced <- chaosProduce(ctx, producer, total, parts, *chaosDuration) }()

	seen := &inspection{final: map[chaosKey]testbroker.ShareRecordInfo{}, maxDC: map[chaosKey]int16{}}
	sampled := make(chan struct{})
	sctx, stopSampling := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		seen.run(sctx, c, parts)
	}()

	faults := &faultLog{n: map[string]int{}}
	start := time.Now()
	injectFaults(t, c, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), parts, stalls, faults, produced, *chaosDuration)
	faultTime := time.Since(start)

	// Drain: every offset of every partition must end ACKNOWLEDGED or ARCHIVED.
	drain := 60*time.Second + time.Duration(total/1000)*time.Second
	deadline := time.Now().Add(drain)
	for !chaosDrained(c, parts) {
		if err, _ := fatal.Load().(error); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after %v: %s", drain, chaosProgress(c, parts))
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	drainTime := time.Since(start) - faultTime
	stopSampling()
	<-sampled
	seen.sample(c, parts)

	cancel()
	wg.Wait()
	<-outsiderDone
	for i, cons := range consumers {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := cons.Close(cctx); err != nil {
			t.Errorf("%s: Close: %v", tallies[i].name, err)
		}
		ccancel()
	}
	outsider.Close()
	if err, _ := fatal.Load().(error); err != nil {
		t.Fatal(err)
	}

	// The invariants.
	var invariants []string
	check := func(name string, ok bool, format string, args ...any) {
		if !ok {
			t.Errorf("%s: "+format, append([]any{name}, args...)...)
			return
		}
		invariants = append(invariants, name)
	}
	accepted := map[chaosKey][]string{}
	attempts := map[chaosKey]bool{}
	var unanswered, lost, failed, late int
	var maxDC int16
	var badLoss []string
	for _, tl := range tallies {
		unanswered += tl.settle(seed)
		for k, n := range tl.accepted {
			for range n {
				accepted[k] = append(accepted[k], tl.name)
			}
		}
		for k := range tl.attempts {
			attempts[k] = true
		}
		lost += tl.lost
		late += tl.late
		failed += tl.failed
		maxDC = max(maxDC, tl.maxDC)
		badLoss = append(badLoss, tl.badLoss...)
	}
	for k := range outsiderAcks {
		attempts[k] = true
	}
	var twice, notDone, badState, overLimit []string
	for p := range parts {
		info, _ := c.Partition(chaosTopic, p)
		start, end, ok := c.SharePartitionOffsets(chaosGroup, chaosTopic, p)
		if !ok || start != info.HighWatermark {
			notDone = append(notDone, fmt.Sprintf("p%d: start offset %d, end %d, high watermark %d", p, start, end, info.HighWatermark))
		}
	}
	states := map[testbroker.ShareRecordState]int{}
	for k, sr := range seen.final {
		states[sr.State]++
		switch {
		case sr.State < 0:
			badState = append(badState, fmt.Sprintf("%d/%d went from one terminal state to the other", k.p, k.off))
		case sr.State == testbroker.ShareAcknowledged && k.answer(seed) != acktype.Accept:
			badState = append(badState, fmt.Sprintf("%d/%d ACKNOWLEDGED though nobody accepts it", k.p, k.off))
		case sr.State == testbroker.ShareArchived && len(accepted[k]) > 0:
			badState = append(badState, fmt.Sprintf("%d/%d ARCHIVED though %v accepted it", k.p, k.off, accepted[k]))
		case sr.State == testbroker.ShareAcknowledged && !attempts[k]:
			badState = append(badState, fmt.Sprintf("%d/%d ACKNOWLEDGED though no consumer accepted it", k.p, k.off))
		}
	}
	for k, dc := range seen.maxDC {
		if dc > chaosDCLimit {
			overLimit = append(overLimit, fmt.Sprintf("%d/%d: %d deliveries", k.p, k.off, dc))
		}
	}
	for k, who := range accepted {
		if len(who) > 1 {
			twice = append(twice, fmt.Sprintf("%d/%d by %v", k.p, k.off, who))
		}
	}
	var acceptedN int
	for _, who := range accepted {
		acceptedN += len(who)
	}
	check("every offset ACKNOWLEDGED or ARCHIVED", len(notDone) == 0, "%d not: %v", len(notDone), first(notDone))
	check("no offset accepted twice", len(twice) == 0, "%d offsets: %v", len(twice), first(twice))
	check("final states match the answers", len(badState) == 0, "%d offsets: %v", len(badState), first(badState))
	check("delivery counts within the limit", len(overLimit) == 0 && maxDC <= chaosDCLimit && outsiderDC <= chaosDCLimit,
		"broker: %v; most deliveries a kshare consumer saw: %d, franz-go: %d", first(overLimit), maxDC, outsiderDC)
	check("no record acquired again after its accept succeeded", len(accepts.after) == 0, "%d deliveries: %v", len(accepts.after), first(accepts.after))
	check("every acknowledgement's outcome reported", unanswered == 0, "%d acknowledgements without an outcome", unanswered)
	check("every handled record acknowledged or its loss reported", len(badLoss) == 0, "%v", first(badLoss))

	t.Logf("seed %d: %d records on %d partitions; faults for %v (%s); drained in %v",
		seed, total, parts, faultTime.Round(time.Millisecond), faults, drainTime.Round(time.Millisecond))
	t.Logf("final states of the %d offsets the inspection saw terminal: %v; kshare accepts that succeeded in time %d (late, maybe skipped below the start offset: %d), outcomes with an error %d, pool locks lost %d, Poll errors %d; franz-go: %d accepts made, %d partition outcomes with an error; %s",
		len(seen.final), states, acceptedN, late, failed, lost, pollErrs.Load(), len(outsiderAcks), outsiderFailed, pcons.ProcessStats())
	t.Logf("invariants held: %s", strings.Join(invariants, "; "))
}

func first(s []string) []string { return s[:min(len(s), 5)] }

// chaosPollLoop polls and acknowledges each record by its answer until ctx ends. Told to
// stall, it stops halfway through a batch, without Close, for longer than MaxPollInterval.
func chaosPollLoop(ctx context.Context, cons *shareconsumer.Consumer, tl *tally, seed uint64, stall <-chan time.Duration, pollErrs *atomic.Int64, fatal *atomic.Value) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := cons.Poll(pctx)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			var fe *errors.FatalError
			if errors.As(err, &fe) || errors.Is(err, errors.ErrClosed) {
				fatal.CompareAndSwap(nil, fmt.Errorf("%s: Poll: %w", tl.name, err))
				return
			}
			pollErrs.Add(1)
		}
		// Received now: a stall below comes after the receipt of every record Poll returned.
		for _, r := range recs {
			tl.delivered(r)
		}
		for i, r := range recs {
			if i == len(recs)/2 {
				select {
				case d := <-stall:
					select {
					case <-time.After(d):
					case <-ctx.Done():
					}
				default:
				}
			}
			k := chaosKey{r.Partition, r.Offset}
			ty := k.answer(seed)
			tl.mu.Lock()
			tl.pending[k] = append(tl.pending[k], r.LockDeadline)
			if ty == acktype.Accept {
				tl.attempts[k]++
			}
			tl.mu.Unlock()
			if err := cons.Acknowledge(r, ty); err != nil {
				tl.mu.Lock()
				tl.pending[k] = tl.pending[k][:len(tl.pending[k])-1]
				tl.mu.Unlock()
				fatal.CompareAndSwap(nil, fmt.Errorf("%s: Acknowledge %d/%d: %w", tl.name, k.p, k.off, err))
				return
			}
		}
	}
}

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

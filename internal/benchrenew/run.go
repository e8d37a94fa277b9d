package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/internal/wiretap"
	"github.com/kshare/kshare/shareconsumer"
)

const (
	// Each phase has a topic of its own, so that each finds only its own records.
	roundTripTopic = "renew-round-trip"
	bulkTopic      = "renew-bulk"
	valueSize      = 16

	// parkWait is the FetchMaxWait of the consumer that gathers the records to renew: long
	// enough that none of its fetches, parked at the brokers before the records exist, runs out
	// before they are produced.
	parkWait = 5 * time.Second

	// phaseTimeout bounds every wait of one phase on a broker, so that a renew that never
	// comes back fails the run instead of hanging it.
	phaseTimeout = 60 * time.Second

	// mergeWait bounds how long merge renews and polls again to get every record into one Poll.
	mergeWait = 10 * time.Second
)

// result is what one broker program, cluster size and partition count gave.
type result struct {
	broker     string
	brokers    int
	partitions int
	viaPoll    roundTrips
	viaCommit  roundTrips
	bulk       []bulkResult
}

// roundTrips are the measured renew round trips of one route.
type roundTrips struct {
	via     string
	samples []time.Duration
}

// bulkResult is what renewing many records at once wrote.
type bulkResult struct {
	via      string
	renews   int
	leaders  []int32         // the partitions' leaders, sorted, each once
	requests int64           // ShareFetch and ShareAcknowledge requests written (hook)
	byNode   map[int32]int64 // the same, by broker
	bytes    int64           // their bytes
	kinds    requestKinds    // the same requests, decoded
	elapsed  time.Duration   // from the first Acknowledge until every renew was answered
}

// onePerLeader reports whether every partition leader got exactly one share request, a renew
// request, and no other broker got any.
func (b bulkResult) onePerLeader() bool {
	if len(b.byNode) != len(b.leaders) || b.kinds.renewFetch+b.kinds.renewAck != b.requests {
		return false
	}
	for _, l := range b.leaders {
		if b.byNode[l] != 1 {
			return false
		}
	}
	return true
}

func (b bulkResult) byNodeString() string {
	nodes := make([]int32, 0, len(b.byNode))
	for n := range b.byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%d: %d", n, b.byNode[n])
	}
	return strings.Join(parts, ", ")
}

// runAll builds every broker program and runs every cluster size and partition count against
// it, returning what it measured until the first failure.
func runAll(ctx context.Context, c config) ([]result, error) {
	progs, err := benchkit.NewPrograms(ctx, "benchrenew")
	if err != nil {
		return nil, err
	}
	defer progs.Close()
	var results []result
	for _, prog := range c.programs {
		bin, err := progs.Build(ctx, prog)
		if err != nil {
			return results, err
		}
		for _, parts := range c.partitions {
			for _, n := range c.brokers {
				if n > parts {
					continue
				}
				fmt.Fprintf(os.Stderr, "%s: %d broker(s), %d partition(s)\n", prog, n, parts)
				r, err := runOne(ctx, c, prog, bin, n, parts)
				if err != nil {
					return results, fmt.Errorf("%s, %d broker(s), %d partition(s): %w", prog, n, parts, err)
				}
				results = append(results, r)
			}
		}
	}
	return results, nil
}

// runOne starts one cluster, with the bulk topic, and measures it.
func runOne(ctx context.Context, c config, prog, bin string, brokers, parts int) (r result, err error) {
	r = result{broker: prog, brokers: brokers, partitions: parts}
	o := brokerproc.Options{Name: prog, Bin: bin, Brokers: brokers, Topic: bulkTopic, Partitions: parts}
	bp, err := benchkit.StartBroker(ctx, o, c.verbose)
	if err != nil {
		return r, err
	}
	defer benchkit.StopBroker(bp, &err)
	err = measure(ctx, c, &r, bp.Seeds)
	return r, err
}

// measure measures the round trips, then the requests per renew, on the cluster at seeds, whose
// bulk topic has r.partitions partitions.
func measure(ctx context.Context, c config, r *result, seeds []string) error {
	parts := r.partitions
	adm, err := newAdmin(seeds)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := benchkit.CreateTopic(ctx, adm.cl, roundTripTopic, parts); err != nil {
		return err
	}

	// Round trips: the topic holds exactly one record.
	if err := adm.produce(ctx, roundTripTopic, []int32{0}); err != nil {
		return err
	}
	r.viaPoll, r.viaCommit, err = measureRoundTrips(ctx, c, adm, seeds)
	if err != nil {
		return err
	}
	s := summarize(r.viaPoll.samples)
	fmt.Fprintf(os.Stderr, "  round trip via Poll: p50 %v, p99 %v\n", s.p50, s.p99)
	s = summarize(r.viaCommit.samples)
	fmt.Fprintf(os.Stderr, "  round trip via CommitSync: p50 %v, p99 %v\n", s.p50, s.p99)

	leaders, err := adm.leaders(ctx, bulkTopic)
	if err != nil {
		return err
	}
	r.bulk, err = measureBulk(ctx, c, adm, seeds, parts, leaders)
	for i := range r.bulk {
		b := &r.bulk[i]
		b.leaders = leaders
		fmt.Fprintf(os.Stderr, "  %d renews via %s: %d share requests (%s), %+v, %d B, %v\n", b.renews, b.via,
			b.requests, b.byNodeString(), b.kinds, b.bytes, b.elapsed.Round(time.Microsecond))
	}
	return err
}

// admin is a plain client for producing, metadata and group configs.
type admin struct {
	cl *kgo.Client
}

func newAdmin(seeds []string) (*admin, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// One record batch per partition for what one produce call writes, so that a fetch
		// waiting for records gets all of its partition's (see holdAll).
		kgo.ProducerLinger(20*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	return &admin{cl: cl}, nil
}

func (a *admin) Close() { a.cl.Close() }

// leaders returns the distinct leaders of the topic's partitions, sorted (-1 first, for a
// partition without one).
func (a *admin) leaders(ctx context.Context, topic string) ([]int32, error) {
	md, err := kadm.NewClient(a.cl).Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	var out []int32
	for _, p := range td.Partitions {
		if !slices.Contains(out, p.Leader) {
			out = append(out, p.Leader)
		}
	}
	slices.Sort(out)
	return out, nil
}

// produce writes one record of valueSize bytes to each partition listed, waiting for all.
func (a *admin) produce(ctx context.Context, topic string, partitions []int32) error {
	value := bytes.Repeat([]byte("v"), valueSize)
	rs := make([]*kgo.Record, len(partitions))
	for i, p := range partitions {
		rs[i] = &kgo.Record{Topic: topic, Partition: p, Value: value}
	}
	if err := a.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("producing to %s: %w", topic, err)
	}
	return nil
}

// shareCounter is a kgo.HookBrokerWrite counting the ShareFetch and ShareAcknowledge requests
// written, and their bytes, by broker; as a kgo.HookBrokerRead it also knows how many of them
// have not been answered yet.
type shareCounter struct {
	mu      sync.Mutex
	m       map[writeKey]writeCount
	pending map[int32]int // written, not answered, by broker
}

type writeKey struct {
	node int32
	key  int16
}

type writeCount struct{ reqs, bytes int64 }

func isShare(key int16) bool {
	return kmsg.Key(key) == kmsg.ShareFetch || kmsg.Key(key) == kmsg.ShareAcknowledge
}

func (w *shareCounter) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err != nil || !isShare(key) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m, w.pending = make(map[writeKey]writeCount), make(map[int32]int)
	}
	k := writeKey{meta.NodeID, key}
	c := w.m[k]
	c.reqs++
	c.bytes += int64(n)
	w.m[k] = c
	w.pending[meta.NodeID]++
}

func (w *shareCounter) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if !isShare(key) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[meta.NodeID] > 0 {
		w.pending[meta.NodeID]--
	}
}

// pendingAt reports whether every one of nodes has a share request not answered yet.
func (w *shareCounter) pendingAt(nodes []int32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range nodes {
		if w.pending[n] == 0 {
			return false
		}
	}
	return true
}

func (w *shareCounter) snapshot() map[writeKey]writeCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[writeKey]writeCount, len(w.m))
	for k, v := range w.m {
		out[k] = v
	}
	return out
}

// waitIdle waits until every share request written has been answered: a ShareFetch an earlier
// Poll left waiting at a broker (up to FetchMaxWait, for records that will not come) would
// otherwise be counted, or delay, with the renews. Answered means read off the connection by
// kgo (HookBrokerRead): the consumer may not have taken the answer in yet.
func (w *shareCounter) waitIdle(ctx context.Context) error {
	for {
		w.mu.Lock()
		p := 0
		for _, n := range w.pending {
			p += n
		}
		w.mu.Unlock()
		if p == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d share requests to be answered: %w", p, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ackErrors collects the failures OnAcknowledgementCommit reports.
type ackErrors struct {
	mu   sync.Mutex
	errs []error
}

func (a *ackErrors) opt() shareconsumer.Opt {
	return shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
		if ac.Err != nil {
			a.mu.Lock()
			a.errs = append(a.errs, fmt.Errorf("%s/%d offsets %v: %w", ac.Topic, ac.Partition, ac.Offsets, ac.Err))
			a.mu.Unlock()
		}
	})
}

func (a *ackErrors) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.errs...)
}

// newConsumer creates an explicit-mode consumer of group on topic.
func newConsumer(seeds []string, topic, group string, hook *shareCounter, errs *ackErrors, opts ...shareconsumer.Opt) (*shareconsumer.Consumer, error) {
	return shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(kgo.SeedBrokers(seeds...), kgo.WithHooks(hook)),
		shareconsumer.Group(group),
		shareconsumer.Topics(topic),
		shareconsumer.ExplicitAcknowledgement(),
		errs.opt(),
	}, opts...)...)
}

// finish accepts recs, commits, checks that no acknowledgement failed, and closes c.
func finish(c *shareconsumer.Consumer, errs *ackErrors, recs []*shareconsumer.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ackAll(c, recs, acktype.Accept)
	if err == nil {
		err = commit(ctx, c)
	}
	return errors.Join(err, errs.err(), c.Close(ctx))
}

// commit runs CommitSync and returns its failures.
func commit(ctx context.Context, c *shareconsumer.Consumer) error {
	res, err := c.CommitSync(ctx)
	if err != nil {
		return fmt.Errorf("CommitSync: %w", err)
	}
	var errs []error
	for tp, e := range res {
		if e != nil {
			errs = append(errs, fmt.Errorf("CommitSync %s/%d: %w", tp.Topic, tp.Partition, e))
		}
	}
	return errors.Join(errs...)
}

// measureRoundTrips holds the topic's one record in a consumer and renews it again and again,
// through Poll and then through CommitSync.
func measureRoundTrips(ctx context.Context, c config, a *admin, seeds []string) (viaPoll, viaCommit roundTrips, err error) {
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	const group = "renew-round-trip"
	if err := groupconfig.Set(ctx, a.cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		return viaPoll, viaCommit, err
	}
	var hook shareCounter
	var errs ackErrors
	cons, err := newConsumer(seeds, roundTripTopic, group, &hook, &errs)
	if err != nil {
		return viaPoll, viaCommit, err
	}
	recs, err := cons.Poll(ctx)
	if err == nil && len(recs) != 1 {
		err = fmt.Errorf("first Poll returned %d records, want the topic's only one", len(recs))
	}
	if err != nil {
		return viaPoll, viaCommit, errors.Join(err, finish(cons, &errs, recs))
	}
	r := recs[0]
	warmup := min(100, c.iterations/10)
	viaPoll = roundTrips{via: "Poll"}
	viaCommit = roundTrips{via: "CommitSync"}
	for _, rt := range []*roundTrips{&viaPoll, &viaCommit} {
		rt.samples = make([]time.Duration, 0, c.iterations)
		for i := range warmup + c.iterations {
			d, err := renewOnce(ctx, cons, r, rt.via == "CommitSync")
			if err == nil {
				err = errs.err()
			}
			if err != nil {
				return viaPoll, viaCommit, errors.Join(fmt.Errorf("renew via %s, iteration %d: %w", rt.via, i, err), finish(cons, &errs, []*shareconsumer.Record{r}))
			}
			if i >= warmup {
				rt.samples = append(rt.samples, d)
			}
		}
	}
	return viaPoll, viaCommit, finish(cons, &errs, []*shareconsumer.Record{r})
}

// renewOnce renews r, through CommitSync when viaCommit, and returns how long until Poll
// returned it.
func renewOnce(ctx context.Context, cons *shareconsumer.Consumer, r *shareconsumer.Record, viaCommit bool) (time.Duration, error) {
	t0 := time.Now()
	if err := cons.Acknowledge(r, acktype.Renew); err != nil {
		return 0, err
	}
	if viaCommit {
		if err := commit(ctx, cons); err != nil {
			return 0, err
		}
	}
	recs, err := cons.Poll(ctx)
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if len(recs) != 1 || recs[0] != r {
		return 0, fmt.Errorf("Poll returned %d records, want only the renewed one", len(recs))
	}
	return d, nil
}

// recKey names a record.
type recKey struct {
	partition int32
	offset    int64
}

// Routes of the renews counted in measureBulk.
const (
	viaPoll   = "Poll"
	viaCommit = "CommitSync"
)

// measureBulk gets c.renews records into one Poll, renews them all at once, first through Poll
// and then through CommitSync, and counts the requests each took.
func measureBulk(ctx context.Context, c config, a *admin, seeds []string, parts int, leaders []int32) ([]bulkResult, error) {
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	const group = "renew-bulk"
	if err := groupconfig.Set(ctx, a.cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		return nil, err
	}
	var hook shareCounter
	var dec requestDecoder
	var errs ackErrors
	cons, err := newConsumer(seeds, bulkTopic, group, &hook, &errs,
		shareconsumer.ClientOpts(kgo.Dialer(wiretap.Dialer(dec.onRequest))), shareconsumer.MaxPollRecords(c.renews),
		shareconsumer.FetchMaxWait(parkWait))
	if err != nil {
		return nil, err
	}
	recs, err := holdAll(ctx, c, a, cons, &hook, parts, leaders)
	if err == nil {
		err = errs.err()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("getting %d records into one Poll: %w", c.renews, err), finish(cons, &errs, recs))
	}
	var out []bulkResult
	for _, via := range []string{viaPoll, viaCommit} {
		if recs, err = merge(ctx, c, cons, &hook, recs); err == nil {
			err = errs.err()
		}
		if err != nil {
			return out, errors.Join(fmt.Errorf("getting %d renewed records into one Poll: %w", c.renews, err), finish(cons, &errs, recs))
		}
		var b bulkResult
		b, recs, err = renewAll(ctx, cons, &hook, &dec, recs, via)
		if err == nil {
			err = errs.err()
		}
		if err != nil {
			return out, errors.Join(fmt.Errorf("renewing %d records via %s: %w", c.renews, via, err), finish(cons, &errs, recs))
		}
		out = append(out, b)
	}
	return out, finish(cons, &errs, recs) // the CommitSync route's Poll returned every record
}

// holdAll produces c.renews records spread evenly over the bulk topic's partitions and returns
// them, every one, from one Poll of cons.
//
// The records come in as many fetches as there are partition leaders, and a Poll returns as
// soon as one of them is in; the others are held for the next Poll, but only if they were sent
// before the Poll returned (a consumer fetches only while a Poll waits). So the records are
// produced only once a Poll has a fetch waiting at every leader of the empty topic; every fetch
// then brings its leader's records, and merge gathers them into one Poll.
func holdAll(ctx context.Context, c config, a *admin, cons *shareconsumer.Consumer, hook *shareCounter, parts int, leaders []int32) ([]*shareconsumer.Record, error) {
	type polled struct {
		recs []*shareconsumer.Record
		err  error
	}
	done := make(chan polled, 1)
	go func() {
		recs, err := cons.Poll(ctx)
		done <- polled{recs, err}
	}()
	for !hook.pendingAt(leaders) {
		select {
		case p := <-done:
			return p.recs, fmt.Errorf("Poll returned %d records before any was produced: %v", len(p.recs), p.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	spread := make([]int32, c.renews)
	for i := range spread {
		spread[i] = int32(i % parts)
	}
	err := a.produce(ctx, bulkTopic, spread)
	p := <-done // the Poll ends with ctx at the latest
	if err = errors.Join(err, p.err); err != nil {
		return p.recs, err
	}
	return merge(ctx, c, cons, hook, p.recs)
}

// merge returns all c.renews records from one Poll, given recs, what the last Poll returned.
// The other leaders' fetches, sent before that Poll returned, bring their records after it
// returned, and the consumer holds them for the next Poll (shareconsumer's Poll says so), so
// merge renews recs through CommitSync and polls again: that Poll returns the renewed records
// with every record the consumer holds by then, without fetching.
//
// A fetch's answer reaches the consumer's buffer some time after kgo has read it off the
// connection, which is when waitIdle counts it answered: kgo decodes it, then the consumer
// decodes the records and takes its lock. On two cores kept busy, under -race, the Poll right
// after renewing missed a leader's records in 2 to 3 runs in 100, and five rounds back to back
// (3 ms) in 1 run in 200; every time they were there a second later, with no ShareFetch sent
// in between. So merge goes round again, a little later each time, until mergeWait has passed.
func merge(ctx context.Context, c config, cons *shareconsumer.Consumer, hook *shareCounter, recs []*shareconsumer.Record) ([]*shareconsumer.Record, error) {
	deadline := time.Now().Add(mergeWait)
	pause := time.Millisecond
	for round := 1; distinct(recs) != c.renews; round++ {
		if round > 1 {
			if time.Now().After(deadline) {
				return recs, fmt.Errorf("after renewing for %v (%d rounds), the Poll returned %d of %d records", mergeWait, round-1, distinct(recs), c.renews)
			}
			select {
			case <-ctx.Done():
				return recs, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, 100*time.Millisecond)
		}
		if c.verbose {
			fmt.Fprintf(os.Stderr, "  a Poll returned %d of %d records; renewing them to get all in the next one\n", len(recs), c.renews)
		}
		if err := hook.waitIdle(ctx); err != nil {
			return recs, err
		}
		if err := ackAll(cons, recs, acktype.Renew); err != nil {
			return recs, err
		}
		if err := commit(ctx, cons); err != nil {
			return nil, err
		}
		var err error
		if recs, err = cons.Poll(ctx); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// ackAll acknowledges every record of recs with t.
func ackAll(cons *shareconsumer.Consumer, recs []*shareconsumer.Record, t acktype.Type) error {
	for _, r := range recs {
		if err := cons.Acknowledge(r, t); err != nil {
			return fmt.Errorf("Acknowledge(%s/%d@%d, %v): %w", r.Topic, r.Partition, r.Offset, t, err)
		}
	}
	return nil
}

// renewAll acknowledges every record of recs, which the last Poll returned, with Renew, and
// counts the share requests written until every renew was answered: via Poll, the first Poll
// sends the renews and returns once one leader answered, and a CommitSync (with nothing new to
// send) waits for the other answers; via CommitSync, CommitSync sends them and the next Poll
// returns every record. It returns what it counted and the records the last Poll returned.
func renewAll(ctx context.Context, cons *shareconsumer.Consumer, hook *shareCounter, dec *requestDecoder, recs []*shareconsumer.Record, via string) (bulkResult, []*shareconsumer.Record, error) {
	b := bulkResult{via: via, renews: len(recs)}
	if err := hook.waitIdle(ctx); err != nil {
		return b, recs, err
	}
	before, kinds := hook.snapshot(), dec.snapshot()
	t0 := time.Now()
	if err := ackAll(cons, recs, acktype.Renew); err != nil {
		return b, recs, err
	}
	var got []*shareconsumer.Record
	var err error
	switch via {
	case viaPoll:
		if got, err = cons.Poll(ctx); err != nil {
			return b, nil, err
		}
		if len(got) < len(recs) {
			if err := commit(ctx, cons); err != nil {
				return b, got, err
			}
		}
	default:
		if err := commit(ctx, cons); err != nil {
			return b, nil, err
		}
		if got, err = cons.Poll(ctx); err != nil {
			return b, nil, err
		}
		if distinct(got) != len(recs) {
			return b, got, fmt.Errorf("the Poll after CommitSync returned %d of the %d renewed records", len(got), len(recs))
		}
	}
	b.elapsed = time.Since(t0)
	after := hook.snapshot()
	b.kinds = dec.snapshot().minus(kinds)
	b.byNode = make(map[int32]int64)
	for k, v := range after {
		d := v.reqs - before[k].reqs
		if d == 0 {
			continue
		}
		b.byNode[k.node] += d
		b.bytes += v.bytes - before[k].bytes
		b.requests += d
	}
	return b, got, nil
}

// distinct returns how many different records recs holds.
func distinct(recs []*shareconsumer.Record) int {
	seen := make(map[recKey]bool, len(recs))
	for _, r := range recs {
		seen[recKey{r.Partition, r.Offset}] = true
	}
	return len(seen)
}

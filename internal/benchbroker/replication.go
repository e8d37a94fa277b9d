package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replication workload measures testbroker's replicated partitions (issue 11), as two
// parts.
//
// Watermark propagation: a cluster of -repl-brokers brokers with a topic of one partition per
// broker (so every broker leads one) and -repl-factor replicas each, started once with
// testbroker.kip1166.enable=true and once with false. Every partition is a lane of its own and
// the lanes run at once: one (follower, leader) replica fetcher serves only the partitions that
// leader leads, so lanes on different leaders do not wake each other's fetchers. Per sample a
// lane sends a raw Fetch (v11+, a consumer's: replica id -1, no session, MaxWait -repl-fetch-wait)
// to the partition's first follower for the next offset, then produces one record with acks=all
// to the leader. The follower parks the fetch until its own high watermark covers the record.
// propagation is the fetch's answer minus the produce's answer; produce-to-consume is the
// fetch's answer minus the produce's start. A fetch that arrives at the follower late (after its
// watermark moved) is answered at once, so it can only make a sample longer.
//
// Broker CPU per replicated record: the plain workload's produce and consume phases on a
// cluster of -repl-brokers brokers, a topic of one partition per broker, with
// default.replication.factor set to -repl-factor, next to the same cluster with factor 1.
// kfake runs only the factor-1 row: it keeps one copy of a partition whatever the factor.

const replTopic = "repl"

// replConfig is what the replication workload's flags set.
type replConfig struct {
	brokers    int
	factor     int
	samples    int // watermark samples with KIP-1166 on
	samplesOff int // and with it off
	fetchWait  time.Duration
	records16  int
	records1k  int
}

func (r *replConfig) register(flag *flag.FlagSet) {
	flag.IntVar(&r.brokers, "repl-brokers", 3, "replication workload: brokers in the cluster; the topic has a partition led by each, and that many watermark samples run at once")
	flag.IntVar(&r.factor, "repl-factor", 3, "replication workload: replication factor (at most -repl-brokers)")
	flag.IntVar(&r.samples, "repl-samples", 1000, "replication workload: watermark samples with KIP-1166 on")
	flag.IntVar(&r.samplesOff, "repl-samples-off", 1000, "replication workload: watermark samples with KIP-1166 off (each takes about replica.fetch.wait.max.ms, 500 ms)")
	flag.DurationVar(&r.fetchWait, "repl-fetch-wait", 5*time.Second, "replication workload: MaxWait of the consumer's Fetch to the follower")
	flag.IntVar(&r.records16, "repl-records16", 500_000, "replication workload: records of 16 B for broker CPU per replicated record (0 skips them)")
	flag.IntVar(&r.records1k, "repl-records1k", 100_000, "replication workload: records of 1 KiB for broker CPU per replicated record (0 skips them)")
}

func (r *replConfig) validate() error {
	switch {
	case r.brokers < 1 || r.factor < 1:
		return errors.New("-repl-brokers and -repl-factor must be positive")
	case r.factor > r.brokers:
		return fmt.Errorf("-repl-factor %d is above -repl-brokers %d", r.factor, r.brokers)
	case r.samples < 0 || r.samplesOff < 0 || r.records16 < 0 || r.records1k < 0:
		return errors.New("-repl-samples, -repl-samples-off, -repl-records16 and -repl-records1k must not be negative")
	case r.fetchWait < time.Millisecond:
		return errors.New("-repl-fetch-wait must be at least 1ms")
	}
	return nil
}

// watermarkResult is what one KIP-1166 mode gave.
type watermarkResult struct {
	kip1166     bool
	lanes       int
	produce     []time.Duration // produce request to its acks=all answer
	propagation []time.Duration // produce answer to the follower's fetch answer
	endToEnd    []time.Duration // produce request to the follower's fetch answer
}

// replCPURow is a row of the broker CPU table: a factor and the median measurement.
type replCPURow struct {
	factor int
	row[measurement]
}

// replResults is everything the replication workload measured.
type replResults struct {
	watermarks []watermarkResult
	cpu        []replCPURow
}

func (r replResults) empty() bool { return len(r.watermarks) == 0 && len(r.cpu) == 0 }

// runReplication runs both parts: the watermark samples against testbroker, then broker CPU
// per record against every program.
func runReplication(ctx context.Context, c *config, programs []*brokerProgram) (replResults, []string, error) {
	var (
		res      replResults
		failures []string
	)
	for _, p := range programs {
		if p.name != "testbroker" {
			continue
		}
		for _, mode := range []struct {
			on      bool
			samples int
		}{{true, c.repl.samples}, {false, c.repl.samplesOff}} {
			if mode.samples == 0 {
				continue
			}
			if ctx.Err() != nil {
				return res, nil, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "%s: watermark propagation, KIP-1166 %s, %d samples, %d brokers, RF %d\n",
				p.name, onOff(mode.on), mode.samples, c.repl.brokers, c.repl.factor)
			start := time.Now()
			r, err := measureWatermark(ctx, c, p, mode.on, mode.samples)
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchbroker: %s: watermark propagation, KIP-1166 %s: %v\n", p.name, onOff(mode.on), err)
				failures = append(failures, fmt.Sprintf("%s, watermark propagation with KIP-1166 %s: %s", p.name, onOff(mode.on), benchkit.FirstLine(err)))
				continue
			}
			fmt.Fprintf(os.Stderr, "  %v: propagation p50 %v, p99 %v; produce-to-consume p50 %v, p99 %v\n",
				time.Since(start).Round(time.Millisecond),
				benchkit.Percentile(r.propagation, 50), benchkit.Percentile(r.propagation, 99), benchkit.Percentile(r.endToEnd, 50), benchkit.Percentile(r.endToEnd, 99))
			res.watermarks = append(res.watermarks, r)
		}
	}

	var ws []workload
	for _, s := range []struct{ size, records int }{{16, c.repl.records16}, {1024, c.repl.records1k}} {
		if s.records > 0 {
			ws = append(ws, workload{size: s.size, records: s.records, partitions: c.repl.brokers})
		}
	}
	if len(ws) == 0 {
		return res, failures, nil
	}
	factors := []int{1}
	if c.repl.factor > 1 {
		factors = append(factors, c.repl.factor)
	}
	for _, rf := range factors {
		cc := *c
		cc.clusterBrokers = c.repl.brokers
		cc.brokerConfigs = append(replConfigs(rf), c.brokerConfigs...)
		progs := programs
		if rf > 1 {
			progs = nil
			for _, p := range programs {
				if p.name == "testbroker" { // kfake keeps one copy whatever the factor
					progs = append(progs, p)
				}
			}
		}
		rows, fs, err := runWorkloads(ctx, &cc, progs, ws, fmt.Sprintf("RF %d on %d brokers, ", rf, c.repl.brokers), measure, median)
		if err != nil {
			return res, nil, err
		}
		failures = append(failures, fs...)
		for _, r := range rows {
			res.cpu = append(res.cpu, replCPURow{factor: rf, row: r})
		}
	}
	return res, failures, nil
}

// replConfigs returns the broker configs that give new topics rf replicas. Factor 1 is every
// broker's default and is not passed, so that kfake gets no config it does not act on.
func replConfigs(rf int) []string {
	if rf == 1 {
		return nil
	}
	return []string{fmt.Sprintf("default.replication.factor=%d", rf)}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// measureWatermark takes samples watermark samples on a fresh cluster with KIP-1166 on or off.
func measureWatermark(ctx context.Context, c *config, p *brokerProgram, kip1166 bool, samples int) (r watermarkResult, err error) {
	r.kip1166 = kip1166
	configs := append(replConfigs(c.repl.factor), fmt.Sprintf("testbroker.kip1166.enable=%t", kip1166))
	configs = append(configs, c.brokerConfigs...)
	bp, err := startBroker(ctx, p, c.repl.brokers, replTopic, c.repl.brokers, configs, c.verbose)
	if err != nil {
		return r, err
	}
	defer benchkit.StopBroker(bp, &err)

	lanes, err := newLanes(ctx, bp.Seeds, c.repl.factor)
	if err != nil {
		return r, err
	}
	defer func() {
		for _, l := range lanes {
			l.close()
		}
	}()
	r.lanes = len(lanes)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i, l := range lanes {
		n := samples / len(lanes)
		if i < samples%len(lanes) {
			n++
		}
		wg.Go(func() {
			// The first sample of a lane opens its connections and lets the follower hear from
			// the leader in the current epoch; it is not counted.
			for j := -1; j < n; j++ {
				s, err := l.sample(ctx, c.repl.fetchWait, c.client.stall)
				if err != nil {
					cancel(fmt.Errorf("partition %d (leader %d, follower %d): sample %d: %w", l.partition, l.leader, l.follower, j+1, err))
					return
				}
				if j < 0 {
					continue
				}
				mu.Lock()
				r.produce = append(r.produce, s.acked.Sub(s.start))
				r.propagation = append(r.propagation, s.served.Sub(s.acked))
				r.endToEnd = append(r.endToEnd, s.served.Sub(s.start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return r, err
	}
	return r, nil
}

// lane is one partition of the watermark part: a producer to its leader and a client that
// sends raw Fetch requests to one follower.
type lane struct {
	partition        int32
	leader, follower int32
	topicID          [16]byte
	prod, cons       *kgo.Client
	next             int64 // the offset of the next record produced
}

// newLanes returns a lane per partition of replTopic once every partition has its full ISR.
func newLanes(ctx context.Context, seeds []string, factor int) ([]*lane, error) {
	meta, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer meta.Close()
	var lanes []*lane
	closeAll := func() {
		for _, l := range lanes {
			l.close()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for lanes == nil {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(replTopic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, meta)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		if len(resp.Topics) != 1 {
			return nil, fmt.Errorf("metadata: %d topics answered, want 1", len(resp.Topics))
		}
		t := resp.Topics[0]
		ready := t.ErrorCode == 0 && len(t.Partitions) > 0
		for _, mp := range t.Partitions {
			ready = ready && mp.ErrorCode == 0 && len(mp.Replicas) == factor && len(mp.ISR) == factor
		}
		if !ready {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("topic %s: no full ISR on every partition: %w", replTopic, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		lanes = []*lane{}
		for _, mp := range t.Partitions {
			l := &lane{partition: mp.Partition, leader: mp.Leader, follower: mp.Leader, topicID: t.TopicID}
			for _, id := range mp.Replicas {
				if id != mp.Leader {
					l.follower = id
					break
				}
			}
			if l.prod, err = kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(replTopic),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)); err != nil {
				closeAll()
				return nil, err
			}
			if l.cons, err = kgo.NewClient(kgo.SeedBrokers(seeds...)); err != nil {
				l.prod.Close()
				closeAll()
				return nil, err
			}
			lanes = append(lanes, l)
		}
	}
	for _, l := range lanes {
		// The consumer client learns the follower's address from a metadata answer.
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, l.cons); err != nil {
			closeAll()
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	return lanes, nil
}

func (l *lane) close() {
	l.prod.Close()
	l.cons.Close()
}

// sampleTimes are the moments of one sample.
type sampleTimes struct {
	start, acked, served time.Time
}

// sample fetches the next offset from the follower while producing it to the leader, and
// returns when the produce was sent and answered and when the follower served the record.
// A sample fails if the record is not served within limit.
func (l *lane) sample(ctx context.Context, fetchWait, limit time.Duration) (s sampleTimes, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	offset := l.next
	type fetched struct {
		at  time.Time
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		at, err := l.fetchFromFollower(ctx, offset, fetchWait)
		done <- fetched{at, err}
	}()
	s.start = time.Now()
	rec := &kgo.Record{Partition: l.partition, Value: []byte(fmt.Sprintf("repl-%d", offset))}
	perr := l.prod.ProduceSync(ctx, rec).FirstErr()
	s.acked = time.Now()
	if perr == nil && rec.Offset != offset {
		perr = fmt.Errorf("produced at offset %d, want %d", rec.Offset, offset)
	}
	if perr != nil {
		cancel()
		<-done
		return s, fmt.Errorf("produce: %w", perr)
	}
	f := <-done
	if f.err != nil {
		return s, fmt.Errorf("fetch from follower %d: %w", l.follower, f.err)
	}
	s.served = f.at
	l.next++
	return s, nil
}

// fetchFromFollower long-polls the follower with consumer Fetch requests until one answers
// with the record at offset, and returns when that answer arrived.
func (l *lane) fetchFromFollower(ctx context.Context, offset int64, wait time.Duration) (time.Time, error) {
	for {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait.Milliseconds()), 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = replTopic, l.topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = l.partition, offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, l.cons.Broker(int(l.follower)))
		at := time.Now()
		if err != nil {
			return at, err
		}
		if req.Version < 11 {
			return at, fmt.Errorf("fetch v%d: a follower serves consumers from v11", req.Version)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return at, err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return at, fmt.Errorf("partition %d: %w", p.Partition, err)
				}
				has, err := batchesHold(p.RecordBatches, offset)
				if err != nil {
					return at, fmt.Errorf("partition %d: %w", p.Partition, err)
				}
				if has {
					if p.HighWatermark <= offset {
						return at, fmt.Errorf("partition %d: served offset %d with high watermark %d", p.Partition, offset, p.HighWatermark)
					}
					return at, nil
				}
				if len(p.RecordBatches) > 0 {
					return at, fmt.Errorf("partition %d: answered records without offset %d", p.Partition, offset)
				}
			}
		}
		if ctx.Err() != nil {
			return at, context.Cause(ctx)
		}
	}
}

// batchesHold reports whether the record batches in b hold offset, reading only the batch
// headers.
func batchesHold(b []byte, offset int64) (bool, error) {
	for len(b) > 0 {
		if len(b) < 12 {
			return false, errors.New("truncated record batch header")
		}
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n < 12 || n > len(b) {
			return false, fmt.Errorf("record batch of %d bytes in %d", n, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			return false, fmt.Errorf("record batch: %w", err)
		}
		if rb.FirstOffset <= offset && offset <= rb.FirstOffset+int64(rb.LastOffsetDelta) {
			return true, nil
		}
		b = b[n:]
	}
	return false, nil
}

// printReplicationReport writes the replication tables.
func printReplicationReport(out io.Writer, c *config, res replResults) {
	if res.empty() {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1e3) }
	if len(res.watermarks) > 0 {
		p("\n### Replication: watermark propagation to a follower, KIP-1166 on and off\n\n")
		p("testbroker, %d brokers, RF %d, one partition led by each broker, its samples running at once (one lane per leader); "+
			"per sample a raw consumer Fetch (v11+, MaxWait %v) waits at the partition's first follower, then one record is produced "+
			"with acks=all (linger 0). Propagation: the follower's Fetch answer minus the produce answer; produce-to-consume: the "+
			"follower's Fetch answer minus the produce request. replica.fetch.wait.max.ms at its default (500 ms) unless -config says otherwise.\n\n",
			c.repl.brokers, c.repl.factor, c.repl.fetchWait)
		p("| KIP-1166 | samples | lanes | produce acks=all p50 | propagation p50 | propagation p99 | propagation max | produce-to-consume p50 | produce-to-consume p99 | produce-to-consume max |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.watermarks {
			p("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", onOff(r.kip1166), len(r.propagation), r.lanes,
				ms(benchkit.Percentile(r.produce, 50)),
				ms(benchkit.Percentile(r.propagation, 50)), ms(benchkit.Percentile(r.propagation, 99)), ms(benchkit.Percentile(r.propagation, 100)),
				ms(benchkit.Percentile(r.endToEnd, 50)), ms(benchkit.Percentile(r.endToEnd, 99)), ms(benchkit.Percentile(r.endToEnd, 100)))
		}
		for _, r := range res.watermarks {
			if r.kip1166 {
				p("\nGoal: with KIP-1166 on, propagation p99 under 5 ms: %s.\n", benchkit.YesNo(benchkit.Percentile(r.propagation, 99) < 5*time.Millisecond))
			}
		}
	}
	if len(res.cpu) > 0 {
		p("\n### Replication: broker CPU per replicated record\n\n")
		p("The plain workload (idempotent producer, acks=all, linger %v; then a consumer without a group, reading from the leaders) on a cluster "+
			"of %d brokers, a topic of %d partitions (one led by each broker), with replication factor 1 and %d; broker CPU is the "+
			"whole cluster process's. kfake runs only the RF 1 rows: it has no replication (a partition has one copy whatever the factor).\n\n",
			c.client.linger, c.repl.brokers, c.repl.brokers, c.repl.factor)
		p("| broker | RF | record | records | produce rec/s | produce broker CPU µs/rec | consume broker CPU µs/rec | both µs/rec |\n")
		p("|---|---:|---|---:|---:|---:|---:|---:|\n")
		for _, r := range res.cpu {
			m := r.m
			p("| %s | %d | %s | %d | %s | %.3f | %.3f | %.3f |\n", r.broker, r.factor, sizeName(r.w.size), r.w.records,
				benchkit.Thousands(m.produceRate()), m.perRecord(m.brokerProduce), m.perRecord(m.brokerConsume), m.perRecord(m.brokerBoth))
		}
		var ratios []string
		for _, hi := range res.cpu {
			if hi.broker != "testbroker" || hi.factor == 1 {
				continue
			}
			for _, lo := range res.cpu {
				if lo.broker == "testbroker" && lo.factor == 1 && lo.w == hi.w {
					ratios = append(ratios, fmt.Sprintf("%s: %.2fx", sizeName(hi.w.size),
						hi.m.perRecord(hi.m.brokerProduce)/lo.m.perRecord(lo.m.brokerProduce)))
				}
			}
		}
		if len(ratios) > 0 {
			p("\ntestbroker produce broker CPU per record, RF %d against RF 1: %s.\n", c.repl.factor, strings.Join(ratios, ", "))
		}
	}
}

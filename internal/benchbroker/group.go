package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/benchkit"
)

// The group workload: franz-go's classic consumer group (range balancer) against each broker.
// Records are produced as in the plain workload; then one group member consumes them all and
// commits, which is the measured consume phase (broker CPU per record). Then, while a producer
// keeps writing a record to every partition each few milliseconds, a second member joins, and the
// time from creating its client to its first record is the rebalance figure: it covers the join,
// the first member's rejoin after its heartbeat learns of the rebalance, the sync, and the
// fetch of the new assignment. Both members heartbeat every -group-heartbeat, the same for both
// brokers, so that the broker's handling, not the client's default 3 s interval, is what differs.
//
// The first member learns of the rebalance only from its next Heartbeat, so where in its
// heartbeat interval the second member arrives adds anything from nothing to a whole interval.
// Left to chance, that phase follows from how long the consume phase took, which differs between
// brokers and so skews the comparison by tens of milliseconds. The second member is therefore
// created half an interval after one of the first member's heartbeats is answered, the mean of a
// join at a random moment, on every broker; grouptimeline.go cuts the figure into phases, the
// heartbeat wait among them.

// classicGroupID is the group of the group workload; every run uses a fresh broker.
const classicGroupID = "bench-classic"

// groupMeasurement is what one run of the group workload against one broker gave.
type groupMeasurement struct {
	records       int
	consume       time.Duration // wall time from creating the member to the final commit
	brokerConsume time.Duration // broker CPU time in that phase
	rebalance     time.Duration // from creating the second member's client to its first record
	phases        [numPhases]time.Duration
}

// brokerDriven is the rebalance figure less the wait for the first member's heartbeat timer.
func (m groupMeasurement) brokerDriven() time.Duration {
	return m.rebalance - m.phases[phaseHeartbeatWait]
}

func (m groupMeasurement) rate() float64 { return float64(m.records) / m.consume.Seconds() }

func (m groupMeasurement) brokerPerRecord() float64 {
	return float64(m.brokerConsume.Nanoseconds()) / 1e3 / float64(m.records)
}

func (m groupMeasurement) String() string {
	phases := make([]string, numPhases)
	for i, d := range m.phases {
		phases[i] = d.Round(10 * time.Microsecond).String()
	}
	return fmt.Sprintf("group consume %v (%.0f rec/s), broker CPU %v = %.3f µs/rec, second member consuming after %v (phases %s)",
		m.consume.Round(time.Millisecond), m.rate(), m.brokerConsume.Round(time.Millisecond), m.brokerPerRecord(),
		m.rebalance.Round(100*time.Microsecond), strings.Join(phases, " + "))
}

func medianGroup(ms []groupMeasurement) groupMeasurement {
	pick := func(f func(groupMeasurement) time.Duration) time.Duration { return benchkit.MedianOf(ms, f) }
	out := groupMeasurement{
		records:       ms[0].records,
		consume:       pick(func(m groupMeasurement) time.Duration { return m.consume }),
		brokerConsume: pick(func(m groupMeasurement) time.Duration { return m.brokerConsume }),
		rebalance:     pick(func(m groupMeasurement) time.Duration { return m.rebalance }),
	}
	for i := range out.phases {
		out.phases[i] = pick(func(m groupMeasurement) time.Duration { return m.phases[i] })
	}
	return out
}

type groupResult = row[groupMeasurement]

// runGroup runs the group workload for every partition count (at least 2, so that the second
// member gets a partition) against every program.
func runGroup(ctx context.Context, c *config, programs []*brokerProgram) ([]groupResult, []string, error) {
	var ws []workload
	for _, parts := range c.partitions {
		ws = append(ws, workload{size: 16, records: c.recordsGroup, partitions: max(parts, 2)})
	}
	slices.SortFunc(ws, func(a, b workload) int { return a.partitions - b.partitions })
	ws = slices.Compact(ws)
	return runWorkloads(ctx, c, programs, ws, "classic group ", measureGroup, medianGroup)
}

// measureGroup runs the group workload w against a fresh broker started from p.
func measureGroup(ctx context.Context, c *config, p *brokerProgram, w workload) (m groupMeasurement, err error) {
	const topic = "bench"
	bp, err := startBroker(ctx, p, c.clusterBrokers, topic, w.partitions, c.brokerConfigs, c.verbose)
	if err != nil {
		return m, err
	}
	defer benchkit.StopBroker(bp, &err)
	if _, err := produce(ctx, bp.Seeds, topic, w, c.client); err != nil {
		return m, err
	}
	b0, _, err := benchkit.ProcessCPU(bp.Pid())
	if err != nil {
		return m, err
	}
	firstLog := newRequestLog()
	first, elapsed, err := groupConsume(ctx, bp.Seeds, topic, w, c, firstLog)
	if err != nil {
		return m, err
	}
	defer first.Close()
	b1, _, err := benchkit.ProcessCPU(bp.Pid())
	if err != nil {
		return m, err
	}
	m.records, m.consume, m.brokerConsume = w.records, elapsed, b1-b0
	if m.rebalance, m.phases, err = groupJoin(ctx, bp.Seeds, topic, w, c, first, firstLog); err != nil {
		return m, err
	}
	return m, nil
}

// groupMember returns a member of classicGroupID consuming topic from its start, committing
// only when told to.
func groupMember(seeds []string, topic string, c *config, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(classicGroupID),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.HeartbeatInterval(c.groupHeartbeat),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	}, opts...)...)
}

// groupConsume makes the first member, which polls until it has every one of w.records records,
// checking each partition's offsets run 0, 1, 2, ..., and commits them; log records its group
// requests. It returns the member, still in the group, and the time from creating it to the
// commit's answer.
func groupConsume(ctx context.Context, seeds []string, topic string, w workload, c *config, log *requestLog) (*kgo.Client, time.Duration, error) {
	var progress atomic.Int64
	ctx, cancel := phaseContext(ctx, c.client, "classic group consume", &progress, w.records)
	defer cancel()
	start := time.Now()
	cl, err := groupMember(seeds, topic, c, kgo.WithHooks(log))
	if err != nil {
		return nil, 0, err
	}
	next := make(map[int32]int64)
	var got int
	for got < w.records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			cl.Close()
			return nil, 0, context.Cause(ctx)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			if want := next[r.Partition]; r.Offset != want {
				ferr = fmt.Errorf("partition %d: got offset %d, want %d", r.Partition, r.Offset, want)
			}
			next[r.Partition] = r.Offset + 1
			got++
		})
		if ferr != nil {
			cl.Close()
			return nil, 0, ferr
		}
		progress.Store(int64(got))
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		cl.Close()
		return nil, 0, fmt.Errorf("commit: %w", err)
	}
	return cl, time.Since(start), nil
}

// groupJoin keeps first polling and a producer writing to every partition, starts a second
// member half a heartbeat interval after one of first's heartbeats (firstLog is first's request
// log), and returns the time from creating it to its first record, and that time's phases.
func groupJoin(ctx context.Context, seeds []string, topic string, w workload, c *config, first *kgo.Client,
	firstLog *requestLog) (time.Duration, [numPhases]time.Duration, error) {
	var phases [numPhases]time.Duration
	ctx, cancel := context.WithTimeoutCause(ctx, c.client.stall, fmt.Errorf("second member: no record after %v", c.client.stall))
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return 0, phases, err
	}
	defer prod.Close()
	wg.Add(2)
	go func() { // a record to every partition every 5 ms, so that a member with partitions soon has one
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for p := range int32(w.partitions) {
					prod.Produce(ctx, &kgo.Record{Partition: p, Value: []byte("tick")}, nil)
				}
			}
		}
	}()
	go func() { // the first member keeps polling, which is what lets it rejoin
		defer wg.Done()
		for ctx.Err() == nil {
			first.PollFetches(ctx)
		}
	}()

	if err := firstLog.awaitHeartbeat(ctx); err != nil {
		return 0, phases, err
	}
	select {
	case <-time.After(c.groupHeartbeat / 2):
	case <-ctx.Done():
		return 0, phases, context.Cause(ctx)
	}

	var owned atomic.Int64 // partitions the second member was given
	secondLog := newRequestLog()
	start := time.Now()
	second, err := groupMember(seeds, topic, c, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.WithHooks(secondLog),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			owned.Add(int64(len(ps[topic])))
		}))
	if err != nil {
		return 0, phases, err
	}
	defer second.Close()
	for {
		fs := second.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, phases, context.Cause(ctx)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		record := time.Now()
		// A range balance of two members gives the newcomer half; all of them would mean the
		// first member was dropped instead of rebalanced.
		if n := owned.Load(); n == 0 || n >= int64(w.partitions) {
			return 0, phases, fmt.Errorf("second member owns %d of %d partitions after the rebalance", n, w.partitions)
		}
		phases, err := rebalancePhases(start, record, secondLog.since(start), firstLog.since(start))
		return record.Sub(start), phases, err
	}
}

// printGroupReport writes the group table, the rebalance's phases and the testbroker/kfake
// comparison.
func printGroupReport(out io.Writer, c *config, results []groupResult) {
	if len(results) == 0 {
		return
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1e3) }
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n### Classic consumer group\n\n")
	p("Records produced first (as above), then one franz-go classic group member (range balancer, heartbeat every %v) "+
		"consumes them all from the start and commits; broker CPU is read just before it is created and after the commit. "+
		"Then, with a producer writing a record to every partition every 5 ms and the first member polling, a second member "+
		"joins, half a heartbeat interval after one of the first member's heartbeats was answered: *rebalance* is the time "+
		"from creating its client to its first record, *heartbeat wait* the part of it spent waiting for the first member's "+
		"next heartbeat (its client timer), *broker-driven* the rest.\n\n", c.groupHeartbeat)
	p("| broker | partitions | records | group consume rec/s | broker CPU µs/rec | rebalance (join to consuming) | heartbeat wait | broker-driven |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		m := r.m
		p("| %s | %d | %d | %s | %.3f | %s | %s | %s |\n", r.broker, r.w.partitions, r.w.records,
			benchkit.Thousands(m.rate()), m.brokerPerRecord(), ms(m.rebalance), ms(m.phases[phaseHeartbeatWait]), ms(m.brokerDriven()))
	}
	p("\nThe rebalance's phases (medians of each phase, so they need not add up to the median total):\n\n")
	p("| phase |")
	for _, r := range results {
		p(" %s, %d partitions |", r.broker, r.w.partitions)
	}
	p("\n|---|%s\n", strings.Repeat("---:|", len(results)))
	for ph := range numPhases {
		p("| %s |", phaseNames[ph])
		for _, r := range results {
			p(" %s |", ms(r.m.phases[ph]))
		}
		p("\n")
	}
	var cmp []string
	versusKfake(results, "testbroker", func(tb, kf groupResult) {
		cpu := tb.m.brokerPerRecord() / kf.m.brokerPerRecord()
		reb := tb.m.rebalance.Seconds() / kf.m.rebalance.Seconds()
		drv := tb.m.brokerDriven().Seconds() / kf.m.brokerDriven().Seconds()
		cmp = append(cmp, fmt.Sprintf("| %d | %.2f | %s | %.2f | %s | %.2f | %s |", tb.w.partitions, cpu, benchkit.YesNo(cpu <= 0.5),
			reb, benchkit.YesNo(reb < 1), drv, benchkit.YesNo(drv < 1)))
	})
	if len(cmp) > 0 {
		p("\nGoals: broker CPU per record at most half of kfake's; rebalance, and its broker-driven part, below kfake's.\n\n")
		p("| partitions | broker CPU testbroker/kfake | goal met | rebalance testbroker/kfake | goal met | broker-driven testbroker/kfake | goal met |\n")
		p("|---:|---:|---|---:|---|---:|---|\n")
		p("%s\n", strings.Join(cmp, "\n"))
	}
}

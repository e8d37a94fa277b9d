package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
)

const (
	valueSize  = 16
	batchBytes = 16 << 10

	// lagEvery is how often the slow scenario asks the broker whether every record is done.
	lagEvery = 50 * time.Millisecond
)

// brokerConfigs are the configs a broker program starts with, so that the slow scenario's
// group may have a lock of lock. testbroker keeps Kafka's lower bound
// (group.share.min.record.lock.duration.ms), which comes down to lock, and takes the group's
// share.record.lock.duration.ms. kfake reads only its broker-wide
// group.share.record.lock.duration.ms, which is set to lock for every scenario, and finds
// expired locks only every share.record.lock.sweep.interval.ms (5 s by default), which comes
// down to a tenth of the lock so that an expired record is offered again about when Kafka
// would.
func brokerConfigs(program string, lock time.Duration) []string {
	ms := lock.Milliseconds()
	if program == "kfake" {
		return []string{
			"group.share.record.lock.duration.ms=" + strconv.FormatInt(ms, 10),
			"share.record.lock.sweep.interval.ms=" + strconv.FormatInt(max(1, ms/10), 10),
		}
	}
	return []string{"group.share.min.record.lock.duration.ms=" + strconv.FormatInt(min(ms, 15000), 10)}
}

// target is a running cluster the scenarios run against.
type target struct {
	broker string // the broker program's name
	seeds  []string
	pid    int // the broker process, whose CPU time is read; 0 when it runs in this process
}

// runAll builds and starts every broker program in turn and runs the scenarios against it,
// returning what it measured until the first failure.
func runAll(ctx context.Context, c config) ([]result, error) {
	progs, err := benchkit.NewPrograms(ctx, "benchpool")
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
		rs, err := runProgram(ctx, c, prog, bin)
		results = append(results, rs...)
		if err != nil {
			return results, fmt.Errorf("%s: %w", prog, err)
		}
	}
	return results, nil
}

// runProgram starts one broker process and runs every scenario against it.
func runProgram(ctx context.Context, c config, prog, bin string) (results []result, err error) {
	o := brokerproc.Options{
		Name: prog, Bin: bin, Brokers: c.brokers,
		Topic: topicOf(c.scenarios[0]), Partitions: c.partitions,
		Configs: brokerConfigs(prog, c.lock),
	}
	bp, err := benchkit.StartBroker(ctx, o, c.verbose)
	if err != nil {
		return nil, err
	}
	defer benchkit.StopBroker(bp, &err)
	return runScenarios(ctx, c, target{broker: prog, seeds: bp.Seeds, pid: bp.Pid()})
}

func topicOf(scenario string) string { return "pool-" + scenario }

// runScenarios runs every scenario of c against t: every client of c at each of the
// scenario's pool sizes, and, for the sleep scenario, the pool without Kafka.
func runScenarios(ctx context.Context, c config, t target) ([]result, error) {
	adm, err := newAdmin(t.seeds)
	if err != nil {
		return nil, err
	}
	defer adm.close()
	var results []result
	for _, name := range c.scenarios {
		topic, records := topicOf(name), c.scenario(name, 1).records
		if err := benchkit.CreateTopic(ctx, adm.cl, topic, c.partitions); err != nil {
			return results, err
		}
		fmt.Fprintf(os.Stderr, "%s: %s: producing %d records of %d B to %d partitions\n", t.broker, name, records, valueSize, c.partitions)
		if err := adm.produce(ctx, topic, c.partitions, records); err != nil {
			return results, err
		}
		for _, workers := range c.workersOf(name) {
			rs, err := runPoolSize(ctx, c, t, adm, c.scenario(name, workers))
			results = append(results, rs...)
			if err != nil {
				return results, err
			}
		}
	}
	return results, nil
}

// runPoolSize runs every client of c in sc, c.count times, each run with a share group of its
// own, and, for the sleep scenario, the pool without Kafka as often. Each result is the run
// with the median client CPU per record (the pool without Kafka: the median records/s, the
// bound the sleep scenario's goal is measured against), holding every run.
func runPoolSize(ctx context.Context, c config, t target, adm *admin, sc scenario) ([]result, error) {
	var results []result
	for _, rn := range c.runners() {
		r, err := repeat(c.count, result.cpuPerRecord, func(i int) (result, error) {
			return runClient(ctx, c, t, adm, sc, rn, i)
		})
		if err != nil {
			return results, fmt.Errorf("%s, %d workers, %s: %w", sc.name, sc.workers, rn.label(), err)
		}
		results = append(results, r)
	}
	if sc.name == scenarioSleep {
		r, err := repeat(c.count, result.rate, func(i int) (result, error) {
			r, err := runBaseline(sc, c.partitions)
			r.broker = t.broker
			if err == nil {
				fmt.Fprintf(os.Stderr, "%s: %s: %s, %d workers, run %d/%d\n  %s\n", t.broker, sc.name, r.client, sc.workers, i+1, c.count, r.summary())
			}
			return r, err
		})
		if err != nil {
			return results, fmt.Errorf("%s, %s: %w", sc.name, clientBaseline, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// repeat calls run n times, for runs 0 to n-1, and returns the run with the median key (the
// lower middle one for an even n) with every run in its runs.
func repeat(n int, key func(result) float64, run func(i int) (result, error)) (result, error) {
	runs := make([]result, 0, n)
	for i := range n {
		r, err := run(i)
		if err != nil {
			return r, err
		}
		runs = append(runs, r)
	}
	r := benchkit.MedianBy(runs, key)
	r.runs = runs
	return r, nil
}

// runClient runs client rn in sc once, as run i of c.count, with a share group of its own.
func runClient(ctx context.Context, c config, t target, adm *admin, sc scenario, rn runner, i int) (result, error) {
	group := fmt.Sprintf("%s-%s-w%d", rn.client, sc.name, sc.workers)
	if rn.acquire != "" {
		group += "-" + rn.acquire
	}
	group += fmt.Sprintf("-%d", i+1)
	kv := []string{"share.auto.offset.reset", "earliest"}
	if sc.lock > 0 {
		kv = append(kv, "share.record.lock.duration.ms", strconv.FormatInt(sc.lock.Milliseconds(), 10))
	}
	if err := groupconfig.Set(ctx, adm.cl, group, kv...); err != nil {
		return result{}, err
	}
	cr := clientRun{sc: sc, runner: rn, group: group, seeds: t.seeds, partitions: c.partitions, franzPoll: c.franzPoll, queue: c.queue, countRequests: c.countReqs, adm: adm, brokerPid: t.pid}
	if c.profileDir != "" {
		cr.profile = filepath.Join(c.profileDir, fmt.Sprintf("%s-%s.pprof", t.broker, group))
	}
	fmt.Fprintf(os.Stderr, "%s: %s: %s, %d workers, run %d/%d\n", t.broker, sc.name, rn.label(), sc.workers, i+1, c.count)
	r, err := cr.run(ctx)
	r.broker = t.broker
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "  %s\n", r.summary())
	return r, nil
}

// admin is a plain client for topics, producing, group configs and the groups' lag.
type admin struct {
	cl *kgo.Client
}

func newAdmin(seeds []string) (*admin, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(batchBytes),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return nil, err
	}
	return &admin{cl: cl}, nil
}

func (a *admin) close() { a.cl.Close() }

// produce writes n records of valueSize bytes to topic, record i to partition i%parts.
func (a *admin) produce(ctx context.Context, topic string, parts, n int) error {
	if err := benchkit.ProduceRoundRobin(ctx, a.cl, topic, parts, n, valueSize); err != nil {
		return fmt.Errorf("producing to %s: %w", topic, err)
	}
	return nil
}

// lag returns how many records of topic's parts partitions group has not done with yet
// (acknowledged or archived), from DescribeShareGroupOffsets v1, asked of the group's
// coordinator. A partition the group has no share state for counts as all its records.
func (a *admin) lag(ctx context.Context, group, topic string, parts int, records int) (int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic = topic
	for p := range parts {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return 0, err
	}
	var lag int64
	seen := 0
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return 0, fmt.Errorf("describing the offsets of %s: %w", group, err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return 0, fmt.Errorf("describing the offsets of %s, %s/%d: %w", group, topic, p.Partition, err)
				}
				seen++
				if p.StartOffset < 0 || p.Lag < 0 {
					lag += int64(recordsOf(records, parts, p.Partition))
					continue
				}
				lag += p.Lag
			}
		}
	}
	if seen != parts {
		return 0, fmt.Errorf("describing the offsets of %s: %d partitions answered, want %d", group, seen, parts)
	}
	return lag, nil
}

// recordsOf is how many of n records spread as produce spreads them partition p holds.
func recordsOf(n, parts int, p int32) int {
	k := n / parts
	if int(p) < n%parts {
		k++
	}
	return k
}

// Command benchbroker measures how much CPU a Kafka broker spends per record: our testbroker and
// franz-go's kfake, side by side, in one run.
//
// A franz-go client on a small machine is slower than either broker, so the records per second a
// client sees say little about the broker. benchbroker therefore runs each broker as a process of
// its own (kfake through the small kfakebroker program, which takes testbroker's flags), drives it
// with one franz-go workload from this process, and reads the broker process's CPU time (user plus
// system, all threads) just before producing, between producing and consuming, and just after
// consuming. Startup and shutdown are left out. The CPU time comes from the broker's process
// CPU-time clock, which counts nanoseconds; /proc/<pid>/stat, in 10 ms ticks, is the fallback.
//
// For every broker and every workload (16 B records and 1 KiB records, on a topic of 1 and of 3
// partitions) it builds the broker program once, starts it on free loopback ports with the topic
// given by -topic, produces every record with an idempotent kgo producer (default batching, records
// handed to Produce as fast as its buffer takes them, then Flush), consumes them all back with a
// kgo consumer without a group from the start of each partition, checking offsets and sizes, and
// stops the broker with SIGTERM. Brokers run one after the other, never at the same time.
//
// It prints a Markdown table for docs/benchmarks.md on stdout and its progress on stderr:
//
//	go run ./internal/benchbroker                                                  # full run
//	go run ./internal/benchbroker -brokers-to-run kfake -records16 200000 -records1k 50000
//
// -workloads picks what runs: plain (the above), txn, share, lockexpiry and group (see group.go:
// franz-go's classic consumer group, broker CPU per record and the time a joining member takes to
// consume). share produces -records-share records of 16 B the same way, sets the group's share.auto.offset.reset to
// earliest, and measures only the consume phase: one franz-go share consumer accepting every
// record with Record.Ack(AckAccept) until all are accepted and the acks flushed. lockexpiry
// measures how late after its deadline an expired acquisition lock's record is offered again on
// the real clock (see lockexpiry.go):
//
//	go run ./internal/benchbroker -workloads share,lockexpiry                      # the share issue's figures
//	go run ./internal/benchbroker -workloads share,lockexpiry -records-share 100000 -partitions 1 -lock-samples 10 -lock-samples-kfake 2
//	go run ./internal/benchbroker -workloads group                                 # the group issue's figures
//
// txn (see txn.go) is plain's 16 B workload with the records produced in committed
// transactions of -txn-size records by a transactional producer and consumed with
// read_committed; with plain in the same run, the report sets each broker's figure against its
// plain one. A broker that refuses transactions (a testbroker older than issue 21, given with
// -broker-bin) fails the workload with its FindCoordinator answer:
//
//	go run ./internal/benchbroker -workloads plain,txn -records1k 0 -runs 3          # issue 21's figures
//
// replication (see replication.go) measures testbroker's replicated partitions on a cluster of
// -repl-brokers: how long after an acks=all produce a follower serves the record to a consumer,
// with KIP-1166 on and off, and broker CPU per record at replication factor -repl-factor next to
// factor 1:
//
//	go run ./internal/benchbroker -workloads replication -runs 3                   # the replication issue's figures
//
// -broker-bin name=path adds a broker program built elsewhere, e.g. testbroker at an older
// commit, so that a regression shows side by side with today's testbroker and kfake in one run:
//
//	git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/testbroker-old ./testbroker/cmd/testbroker)
//	go run ./internal/benchbroker -records1k 0 -runs 3 -broker-bin old=/tmp/testbroker-old
//
// A broker that does not build or fails a workload is reported on stderr and under the table; the
// other broker still runs. Linux only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
)

func main() {
	c, err := parseFlags(os.Args[1:])
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, c, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchbroker:", err)
		os.Exit(1)
	}
}

// config is everything the flags set.
type config struct {
	brokers        []string // which of programs to run, in order
	programs       map[string]*brokerProgram
	records16      int
	records1k      int
	partitions     benchkit.Ints
	clusterBrokers int
	runs           int
	brokerConfigs  []string // key=value, each passed to every broker as -config
	client         clientOpts
	verbose        bool

	plain, share, lockExpiry, group bool // which workloads -workloads selects
	replication, txn                bool
	recordsTxn                      int // txn workload: records of 16 B per partition count
	txnSize                         int // and records per transaction
	repl                            replConfig
	recordsGroup                    int
	groupHeartbeat                  time.Duration
	recordsShare                    int
	shareMaxRecords                 int  // kgo.ShareMaxRecords; 0 keeps kgo's default
	shareStrict                     bool // kgo.ShareMaxRecordsStrict: record-limit acquisition
	lockSamples                     int  // lock-expiry samples for testbroker
	lockSamplesKfake                int  // and for kfake, whose sweep makes each take seconds
	lockDuration                    time.Duration
	lockWait                        time.Duration // a lock-expiry sample fails when not offered again this long after its deadline
}

// parseFlags parses the command line args (without the program's name).
func parseFlags(args []string) (*config, error) {
	c := config{partitions: benchkit.Ints{1, 3}}
	brokers := benchkit.Brokers{"testbroker", "kfake"}
	flag := flag.NewFlagSet("benchbroker", flag.ContinueOnError)
	flag.Var(&brokers, "brokers-to-run", "comma-separated brokers to measure: testbroker, kfake")
	flag.Var(&c.partitions, "partitions", "comma-separated partition counts of the topic")
	var (
		testbroker  = flag.String("testbroker", brokerproc.TestbrokerPkg, "package of the testbroker program, relative to the module root")
		kfake       = flag.String("kfake", brokerproc.KfakePkg, "package of the kfake program, relative to the module root")
		compression = flag.String("compression", "none", "producer compression: none, snappy, lz4, zstd or gzip (values are random bytes)")
		workloads   = flag.String("workloads", "plain", "comma-separated workloads: plain (produce, then consume without a group), txn (the same with 16 B records produced in committed transactions and consumed read_committed; see txn.go), share (franz-go share consumer), lockexpiry (lateness of an expired lock's redelivery), group (franz-go classic consumer group: consume, then a member joining), replication (watermark propagation with KIP-1166 on and off, broker CPU per replicated record; see replication.go)")
	)
	flag.IntVar(&c.records16, "records16", 1_000_000, "records of 16 B per workload (0 skips them)")
	flag.IntVar(&c.records1k, "records1k", 200_000, "records of 1 KiB per workload (0 skips them)")
	flag.IntVar(&c.clusterBrokers, "cluster-brokers", 1, "brokers in each cluster (the -brokers flag of the broker program)")
	flag.IntVar(&c.runs, "runs", 1, "runs of every workload per broker; the table shows the median of each column")
	flag.DurationVar(&c.client.linger, "linger", 10*time.Millisecond, "producer linger (kgo's default is 10ms)")
	flag.DurationVar(&c.client.timeout, "timeout", 10*time.Minute, "limit on each produce or consume phase")
	flag.DurationVar(&c.client.stall, "stall", 30*time.Second, "fail a phase that acknowledges or reads no record for this long")
	flag.Func("config", "broker config key=value, passed to every broker as -config (repeatable)", func(s string) error {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return fmt.Errorf("want key=value, got %q", s)
		}
		c.brokerConfigs = append(c.brokerConfigs, s)
		return nil
	})
	flag.BoolVar(&c.verbose, "v", false, "copy the brokers' output to stderr")
	flag.IntVar(&c.recordsTxn, "records-txn", 1_000_000, "txn workload: records of 16 B per partition count")
	flag.IntVar(&c.txnSize, "txn-size", 1000, "txn workload: records per transaction")
	flag.IntVar(&c.recordsShare, "records-share", 1_000_000, "share workload: records of 16 B per partition count")
	flag.IntVar(&c.shareMaxRecords, "share-max-records", 0, "share workload: kgo.ShareMaxRecords (0: kgo's default, 500)")
	flag.BoolVar(&c.shareStrict, "share-strict", false, "share workload: kgo.ShareMaxRecordsStrict (the broker acquires at most ShareMaxRecords per fetch, splitting batches)")
	flag.IntVar(&c.recordsGroup, "records-group", 1_000_000, "group workload: records of 16 B per partition count")
	flag.DurationVar(&c.groupHeartbeat, "group-heartbeat", 100*time.Millisecond, "group workload: kgo.HeartbeatInterval of both members")
	flag.IntVar(&c.lockSamples, "lock-samples", 20, "lockexpiry workload: samples against testbroker")
	flag.IntVar(&c.lockSamplesKfake, "lock-samples-kfake", 3, "lockexpiry workload: samples against kfake (each waits for its lock sweep, 5 s by default)")
	flag.DurationVar(&c.lockDuration, "lock-duration", time.Second, "lockexpiry workload: record lock duration (at least 1s, testbroker's lowest bound)")
	flag.DurationVar(&c.lockWait, "lock-wait", 10*time.Second, "lockexpiry workload: fail a sample whose record is not offered again this long after its deadline")
	var prebuilt []*brokerProgram
	flag.Func("broker-bin", "name=path: also measure the prebuilt broker program at path (testbroker's command line, e.g. testbroker built from an older commit) under name, after the brokers of -brokers-to-run and compared with kfake as testbroker is (repeatable)", func(s string) error {
		name, path, ok := strings.Cut(s, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("want name=path, got %q", s)
		}
		if _, taken := benchkit.BrokerPackages[name]; taken || slices.ContainsFunc(prebuilt, func(p *brokerProgram) bool { return p.name == name }) {
			return fmt.Errorf("broker name %q is taken", name)
		}
		prebuilt = append(prebuilt, &brokerProgram{name: name, bin: path})
		return nil
	})
	c.repl.register(flag)
	if err := flag.Parse(args); err != nil {
		return nil, err
	}
	if flag.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	c.brokers = brokers
	c.programs = map[string]*brokerProgram{
		"testbroker": {name: "testbroker", pkg: *testbroker},
		"kfake":      {name: "kfake", pkg: *kfake},
	}
	for _, p := range prebuilt {
		c.brokers = append(c.brokers, p.name)
		c.programs[p.name] = p
	}
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(),
		"zstd": kgo.ZstdCompression(), "gzip": kgo.GzipCompression(),
	}
	var ok bool
	c.client.codecName = *compression
	if c.client.compression, ok = codecs[*compression]; !ok {
		return nil, fmt.Errorf("-compression: unknown codec %q", *compression)
	}
	for _, wl := range strings.Split(*workloads, ",") {
		switch strings.TrimSpace(wl) {
		case "plain":
			c.plain = true
		case "share":
			c.share = true
		case "lockexpiry":
			c.lockExpiry = true
		case "group":
			c.group = true
		case "replication":
			c.replication = true
		case "txn":
			c.txn = true
		default:
			return nil, fmt.Errorf("-workloads: unknown workload %q: use plain, txn, share, lockexpiry, group and/or replication", wl)
		}
	}
	switch {
	case c.records16 < 0 || c.records1k < 0:
		return nil, errors.New("-records16 and -records1k must not be negative")
	case c.plain && c.records16 == 0 && c.records1k == 0:
		return nil, errors.New("nothing to do: -records16 and -records1k are both 0")
	case c.group && (c.recordsGroup < 1 || c.groupHeartbeat <= 0):
		return nil, errors.New("-records-group and -group-heartbeat must be positive")
	case c.txn && (c.recordsTxn < 1 || c.txnSize < 1):
		return nil, errors.New("-records-txn and -txn-size must be positive")
	case c.share && c.recordsShare < 1:
		return nil, errors.New("-records-share must be positive")
	case c.shareMaxRecords < 0:
		return nil, errors.New("-share-max-records must not be negative")
	case c.lockSamples < 0 || c.lockSamplesKfake < 0:
		return nil, errors.New("-lock-samples and -lock-samples-kfake must not be negative")
	case c.lockExpiry && c.lockDuration < time.Second:
		return nil, errors.New("-lock-duration must be at least 1s (testbroker's group.share.min.record.lock.duration.ms bound)")
	case c.lockWait <= 0:
		return nil, errors.New("-lock-wait must be positive")
	case c.clusterBrokers < 1:
		return nil, errors.New("-cluster-brokers must be at least 1")
	case c.runs < 1:
		return nil, errors.New("-runs must be at least 1")
	case c.client.timeout <= 0 || c.client.stall <= 0:
		return nil, errors.New("-timeout and -stall must be positive")
	}
	if c.replication {
		if err := c.repl.validate(); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func (c *config) workloads() []workload {
	var ws []workload
	if !c.plain {
		return nil
	}
	for _, s := range []struct{ size, records int }{{16, c.records16}, {1024, c.records1k}} {
		if s.records == 0 {
			continue
		}
		for _, p := range c.partitions {
			ws = append(ws, workload{size: s.size, records: s.records, partitions: p})
		}
	}
	return ws
}

// run builds the brokers c names, runs the workloads it selects and writes the report to out.
func run(ctx context.Context, c *config, out io.Writer) error {
	rep, err := measureAll(ctx, c)
	if err != nil {
		return err
	}
	rep.print(out, c)
	if rep.empty() {
		return errors.New("no broker was measured")
	}
	return nil
}

// report is what one run of benchbroker measured, workload by workload.
type report struct {
	method      string // how the broker CPU was read
	plain       []result
	txn         []result
	share       []shareResult
	lockExpiry  []lockResult
	group       []groupResult
	replication replResults
	failures    []string // what was not measured, and why
}

func (r report) empty() bool {
	return len(r.plain) == 0 && len(r.txn) == 0 && len(r.share) == 0 && len(r.lockExpiry) == 0 && len(r.group) == 0 && r.replication.empty()
}

func (r report) print(out io.Writer, c *config) {
	printReport(out, c, r.method, r.plain)
	printTxnReport(out, c, r.txn, r.plain)
	printShareReport(out, c, r.share)
	printLockReport(out, c, r.lockExpiry)
	printGroupReport(out, c, r.group)
	printReplicationReport(out, c, r.replication)
	printFailures(out, r.failures)
}

// measureAll builds the brokers c names and runs the workloads it selects against each. A
// broker that does not build or fails a workload is named in the report's failures; the error
// is for what ends the whole run (the context).
func measureAll(ctx context.Context, c *config) (report, error) {
	var rep report
	_, method, err := benchkit.ProcessCPU(os.Getpid())
	if err != nil {
		return rep, fmt.Errorf("cannot measure CPU time: %w", err)
	}
	rep.method = method
	progs, err := benchkit.NewPrograms(ctx, "benchbroker")
	if err != nil {
		return rep, err
	}
	defer progs.Close()

	var programs []*brokerProgram
	for _, name := range c.brokers {
		p := c.programs[name]
		if err := p.build(ctx, progs); err != nil {
			fmt.Fprintf(os.Stderr, "benchbroker: %s: skipped, it does not build: %v\n", name, err)
			rep.failures = append(rep.failures, fmt.Sprintf("%s: skipped, `go build %s` failed", name, p.pkg))
			continue
		}
		programs = append(programs, p)
	}

	// Each workload adds its rows and its failures, in this order.
	workloads := []struct {
		on  bool
		run func() ([]string, error)
	}{
		{c.plain, func() (fs []string, err error) {
			rep.plain, fs, err = runWorkloads(ctx, c, programs, c.workloads(), "", measure, median)
			return fs, err
		}},
		{c.txn, func() (fs []string, err error) {
			rep.txn, fs, err = runWorkloads(ctx, c, programs, c.txnWorkloads(), "txn ", measureTxn, median)
			return fs, err
		}},
		{c.share, func() (fs []string, err error) {
			rep.share, fs, err = runShare(ctx, c, programs)
			return fs, err
		}},
		{c.lockExpiry, func() (fs []string, err error) {
			rep.lockExpiry, fs, err = runLockExpiry(ctx, c, programs)
			return fs, err
		}},
		{c.group, func() (fs []string, err error) {
			rep.group, fs, err = runGroup(ctx, c, programs)
			return fs, err
		}},
		{c.replication, func() (fs []string, err error) {
			rep.replication, fs, err = runReplication(ctx, c, programs)
			return fs, err
		}},
	}
	for _, w := range workloads {
		if !w.on {
			continue
		}
		fs, err := w.run()
		if err != nil {
			return rep, err
		}
		rep.failures = append(rep.failures, fs...)
	}
	return rep, nil
}

// measure runs workload w against a fresh broker started from p.
func measure(ctx context.Context, c *config, p *brokerProgram, w workload) (measurement, error) {
	return measurePhases(ctx, c, p, w, produce, consume)
}

// phase is a workload's produce or consume phase: it returns the wall time the client saw.
type phase func(ctx context.Context, seeds []string, topic string, w workload, o clientOpts) (time.Duration, error)

// measurePhases runs produce then consume against a fresh broker started from p, sampling the
// broker's CPU time before, between and after them.
func measurePhases(ctx context.Context, c *config, p *brokerProgram, w workload, produce, consume phase) (m measurement, err error) {
	const topic = "bench"
	bp, err := startBroker(ctx, p, c.clusterBrokers, topic, w.partitions, c.brokerConfigs, c.verbose)
	if err != nil {
		return m, err
	}
	defer func() {
		user, sys, stopErr := bp.Stop(10 * time.Second)
		m.brokerUser, m.brokerSys = user, sys
		if err == nil && stopErr != nil {
			err = fmt.Errorf("stopping: %w", stopErr)
		}
	}()
	pid := bp.Pid()
	self := os.Getpid()
	sample := func() (broker, client time.Duration, err error) {
		if broker, _, err = benchkit.ProcessCPU(pid); err != nil {
			return 0, 0, err
		}
		client, _, err = benchkit.ProcessCPU(self)
		return broker, client, err
	}

	b0, c0, err := sample()
	if err != nil {
		return m, err
	}
	if m.produce, err = produce(ctx, bp.Seeds, topic, w, c.client); err != nil {
		return m, err
	}
	b1, _, err := sample()
	if err != nil {
		return m, err
	}
	if m.consume, err = consume(ctx, bp.Seeds, topic, w, c.client); err != nil {
		return m, err
	}
	b2, c2, err := sample()
	if err != nil {
		return m, err
	}
	m.records = w.records
	m.brokerProduce, m.brokerConsume, m.brokerBoth = b1-b0, b2-b1, b2-b0
	m.client = c2 - c0
	return m, nil
}

// runWorkloads runs every workload against every program, c.runs times each, and returns the
// median measurement of each; a program that fails a workload is left out of that workload's
// rows, and the failure is named. what prefixes the workload in progress and failure lines.
func runWorkloads[M any](ctx context.Context, c *config, programs []*brokerProgram, workloads []workload, what string,
	measure func(context.Context, *config, *brokerProgram, workload) (M, error), median func([]M) M) ([]row[M], []string, error) {
	var (
		rows     []row[M]
		failures []string
	)
	for _, w := range workloads {
		runs := make(map[string][]M)
		errs := make(map[string]error)
		for i := range c.runs {
			for _, p := range programs {
				if errs[p.name] != nil {
					continue
				}
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				fmt.Fprintf(os.Stderr, "%s: %s%v, run %d of %d\n", p.name, what, w, i+1, c.runs)
				m, err := measure(ctx, c, p, w)
				if err != nil {
					fmt.Fprintf(os.Stderr, "benchbroker: %s: %s%v: %v\n", p.name, what, w, err)
					errs[p.name] = err
					failures = append(failures, fmt.Sprintf("%s, %s%v: %s", p.name, what, w, benchkit.FirstLine(err)))
					continue
				}
				fmt.Fprintf(os.Stderr, "  %v\n", m)
				runs[p.name] = append(runs[p.name], m)
			}
		}
		for _, p := range programs {
			if errs[p.name] == nil {
				rows = append(rows, row[M]{broker: p.name, w: w, m: median(runs[p.name])})
			}
		}
	}
	return rows, failures, nil
}

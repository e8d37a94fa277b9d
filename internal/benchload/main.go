// Command benchload measures one share group of many kshare consumers on one testbroker: the
// time to a stable assignment, the records per second they consume together, the memory of
// an idle consumer and of a held record, and the broker's memory per share partition. It
// prints a Markdown table.
//
// # What it does
//
//  1. Broker memory per share partition: a testbroker in this process, with an empty topic of
//     -partitions partitions; one raw member joins a share group and sends one ShareFetch over
//     every partition, and the heap growth (live heap and stacks after GC) is divided by the
//     partitions. In process, because only the broker's own heap separates that figure from
//     everything else; the broker of the steps below runs as its own process.
//  2. testbroker is built and started as its own process (testbroker/cmd/testbroker) with an
//     empty topic of -partitions partitions, so that this process's heap holds the consumers
//     only. The group's share.auto.offset.reset is set to earliest.
//  3. Time to a stable assignment: -consumers kshare consumers (shareconsumer.New, explicit
//     acknowledgement) are created at once and each polls in a goroutine of its own; the time
//     is from the first New to the first Status() snapshot of all of them in which every
//     member is stable at the same member epoch, has partitions, and every partition is
//     assigned. When each member first got an epoch is shown too (all joined).
//  4. Memory per idle consumer: the consumers poll the empty topic for -settle; then the
//     growth of this process's live heap and stacks since before the first New, divided by the
//     consumers.
//  5. -records records of 16 B are produced, record i to partition i mod -partitions (the
//     consumers are not polling meanwhile).
//  6. Memory per held record: every consumer polls until it receives records and keeps them
//     unacknowledged, or until the others hold every record of its partitions (a ShareFetch
//     that another member sent just before its own assignment changed may have acquired them,
//     and they stay that member's until it acknowledges them or their lock expires); the growth
//     of the live heap (goroutine stacks left out) since before producing (the producer is
//     closed by then) divided by the records held.
//  7. Records/s: the consumers accept the held records and every record they poll until every
//     record was accepted once, then CommitSync; records divided by the time from the first
//     acceptance to the last commit.
//
// # How to run it
//
// From the module root:
//
//	go run ./internal/benchload                                  # 100 consumers, 1000 partitions, 1M records
//	go run ./internal/benchload -heartbeat-interval 500ms        # the same with a shorter share heartbeat
//	go run ./internal/benchload -consumers 10 -partitions 100 -records 100000   # quick
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
)

const (
	loadTopic = "load"
	loadGroup = "load"
	valueSize = 16
)

type config struct {
	consumers         int
	partitions        int
	records           int
	heartbeatInterval time.Duration // 0: the broker's default (Kafka's, 5 s)
	settle            time.Duration
	fetchAhead        bool
	verbose           bool
	memProfile        string
}

// figures is what one run measured.
type figures struct {
	brokerPerSharePartition float64
	created                 time.Duration // every New returned
	allJoined               time.Duration
	stable                  time.Duration
	idleTotal               int64
	held                    int
	heldTotal               int64
	consumeTime             time.Duration
	produceTime             time.Duration
}

func main() {
	var c config
	fs := flag.NewFlagSet("benchload", flag.ExitOnError)
	fs.IntVar(&c.consumers, "consumers", 100, "share consumers in the group")
	fs.IntVar(&c.partitions, "partitions", 1000, "partitions of the topic")
	fs.IntVar(&c.records, "records", 1_000_000, "records to produce and consume (a multiple of -partitions)")
	fs.DurationVar(&c.heartbeatInterval, "heartbeat-interval", 0, "the broker's group.share.heartbeat.interval.ms (0: its default, 5s)")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "how long the stable group polls the empty topic before the idle memory is read")
	fs.BoolVar(&c.fetchAhead, "fetch-ahead", false, "run the consumers with shareconsumer.FetchAhead")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile of the idle group to this file")
	fs.BoolVar(&c.verbose, "v", false, "show the broker's output and every member's epochs until the assignment is stable on stderr")
	_ = fs.Parse(os.Args[1:])
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "benchload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchload:", err)
		os.Exit(1)
	}
	printReport(os.Stdout, c, f)
}

func (c config) validate() error {
	switch {
	case c.consumers < 1:
		return fmt.Errorf("-consumers must be at least 1")
	case c.partitions < 1:
		return fmt.Errorf("-partitions must be at least 1")
	case c.records < c.partitions || c.records%c.partitions != 0:
		return fmt.Errorf("-records must be a positive multiple of -partitions (%d)", c.partitions)
	case c.heartbeatInterval != 0 && c.heartbeatInterval < time.Millisecond:
		return fmt.Errorf("-heartbeat-interval must be 0 or at least 1ms")
	}
	return nil
}

func run(ctx context.Context, c config) (f figures, err error) {
	logf("broker memory: %d share partitions in an in-process testbroker", c.partitions)
	if f.brokerPerSharePartition, err = brokerBytesPerSharePartition(ctx, c.partitions); err != nil {
		return f, fmt.Errorf("broker memory per share partition: %w", err)
	}

	progs, err := benchkit.NewPrograms(ctx, "benchload")
	if err != nil {
		return f, err
	}
	defer progs.Close()
	bin, err := progs.Build(ctx, "testbroker")
	if err != nil {
		return f, err
	}
	o := brokerproc.Options{Name: "testbroker", Bin: bin, Brokers: 1, Topic: loadTopic, Partitions: c.partitions, Configs: heartbeatConfigs(c)}
	bp, err := benchkit.StartBroker(ctx, o, c.verbose)
	if err != nil {
		return f, err
	}
	defer benchkit.StopBroker(bp, &err)
	err = measureGroup(ctx, c, bp.Seeds[0], &f)
	return f, err
}

// heartbeatConfigs are the broker configs that set the share heartbeat to -heartbeat-interval.
func heartbeatConfigs(c config) []string {
	if c.heartbeatInterval == 0 {
		return nil
	}
	ms := c.heartbeatInterval.Milliseconds()
	return []string{
		fmt.Sprintf("group.share.min.heartbeat.interval.ms=%d", ms),
		fmt.Sprintf("group.share.heartbeat.interval.ms=%d", ms),
	}
}

// measureGroup runs steps 3 to 7 against the broker at seed, whose topic loadTopic has
// c.partitions partitions and is empty, and puts the figures in f.
func measureGroup(ctx context.Context, c config, seed string, f *figures) error {
	if err := groupconfig.SetOn(ctx, []string{seed}, loadGroup, "share.auto.offset.reset", "earliest"); err != nil {
		return err
	}
	seen := newOffsetSet(c.partitions, c.records/c.partitions)
	held := newOffsetSet(c.partitions, c.records/c.partitions)

	base := heapInUse()
	logf("starting %d consumers", c.consumers)
	start := time.Now()
	fl, err := newFleet(c.consumers, seed, loadTopic, loadGroup, c.fetchAhead)
	if err != nil {
		return err
	}
	defer fl.close()
	f.created = time.Since(start)
	idleCtx, stopIdle := context.WithCancel(ctx)
	defer stopIdle()
	var idleErr error
	idleDone := make(chan struct{})
	go func() { idleErr = fl.idle(idleCtx); close(idleDone) }()
	endIdle := func() error {
		stopIdle()
		<-idleDone
		if idleErr != nil {
			return fmt.Errorf("idle polling: %w", idleErr)
		}
		return nil
	}
	f.allJoined, f.stable, err = awaitStable(ctx, fl, c.partitions, start, idleDone, c.verbose)
	if err != nil {
		return errors.Join(err, endIdle())
	}
	logf("  all joined after %v, stable after %v", f.allJoined.Round(time.Millisecond), f.stable.Round(time.Millisecond))
	select {
	case <-time.After(c.settle):
	case <-idleDone:
		return endIdle()
	}
	f.idleTotal = heapInUse() - base
	if c.memProfile != "" {
		if err := writeHeapProfile(c.memProfile); err != nil {
			return errors.Join(err, endIdle())
		}
	}
	if err := endIdle(); err != nil {
		return err
	}

	// Read before producing: a ShareFetch still in flight from the idle polls may acquire
	// records as they are produced, and those are held too. The live heap only: the goroutine
	// stacks of the ShareFetches waiting now are gone once the consumers hold records and stop
	// fetching, which took 32-160 KB of stacks off the 400 records' 140 KB of heap in the smoke
	// test (its broker is in this process), and the figure below zero in 2 runs of 20.
	beforeHold := liveHeap()
	logf("producing %d records of %d B", c.records, valueSize)
	t := time.Now()
	if err := produce(ctx, seed, c.partitions, c.records); err != nil {
		return err
	}
	f.produceTime = time.Since(t)

	if f.held, err = fl.hold(ctx, held); err != nil {
		return fmt.Errorf("holding records: %w", err)
	}
	f.heldTotal = liveHeap() - beforeHold
	logf("  %d records held, consuming", f.held)

	t = time.Now()
	if err := fl.consume(ctx, seen, c.records); err != nil {
		return fmt.Errorf("consuming: %w", err)
	}
	f.consumeTime = time.Since(t)
	return nil
}

// awaitStable reads every consumer's Status until the assignment is stable and returns when
// every member had first joined and when the assignment became stable, both since start.
func awaitStable(ctx context.Context, fl *fleet, partitions int, start time.Time, idleDone <-chan struct{}, trace bool) (allJoined, stable time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	views := make([]assignmentView, len(fl.cons))
	history := make([][]epochAt, len(fl.cons))
	assigned := 0
	for {
		joined := true
		now := time.Since(start)
		for i, c := range fl.cons {
			views[i] = viewOf(c.Status())
			joined = joined && views[i].memberEpoch > 0
			if h := history[i]; len(h) == 0 || h[len(h)-1].epoch != views[i].memberEpoch || h[len(h)-1].partitions != len(views[i].assigned) {
				history[i] = append(h, epochAt{now, views[i].memberEpoch, len(views[i].assigned)})
			}
		}
		if joined && allJoined == 0 {
			allJoined = now
		}
		var ok bool
		if ok, assigned = assignmentStable(views, partitions); ok {
			if trace {
				for i, h := range history {
					logf("  member %d: %v", i, h)
				}
			}
			return allJoined, now, nil
		}
		select {
		case <-ctx.Done():
			return allJoined, 0, fmt.Errorf("no stable assignment (%d of %d partitions assigned): %w", assigned, partitions, ctx.Err())
		case <-idleDone:
			return allJoined, 0, errors.New("the consumers stopped polling")
		case <-tick.C:
		}
	}
}

// epochAt is a member epoch and the number of partitions assigned with it, and since when a
// consumer's Status showed them.
type epochAt struct {
	at         time.Duration
	epoch      int32
	partitions int
}

func (e epochAt) String() string {
	return fmt.Sprintf("%v: epoch %d, %d partitions", e.at.Round(time.Millisecond), e.epoch, e.partitions)
}

// produce writes n records of valueSize bytes, record i to partition i%parts.
func produce(ctx context.Context, seed string, parts, n int) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seed),
		kgo.DefaultProduceTopic(loadTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := benchkit.ProduceRoundRobin(ctx, cl, "", parts, n, valueSize); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	return nil
}

func writeHeapProfile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func printReport(out io.Writer, c config, f figures) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	hb := "5s (default)"
	if c.heartbeatInterval > 0 {
		hb = c.heartbeatInterval.String()
	}
	p("\n## Load: %d consumers on %d partitions (one testbroker, share heartbeat %s, FetchAhead %v)\n\n", c.consumers, c.partitions, hb, c.fetchAhead)
	p("Machine: %d logical CPUs (%s), %s/%s, %s, GOMAXPROCS %d\n\n", runtime.NumCPU(), benchkit.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), runtime.GOMAXPROCS(0))
	p("| figure | value |\n|---|---:|\n")
	p("| every consumer created (shareconsumer.New returned) | %v |\n", f.created.Round(time.Millisecond))
	p("| every member joined (first member epoch) | %v |\n", f.allJoined.Round(time.Millisecond))
	p("| stable assignment (every partition assigned, every member at the final epoch with partitions) | %v |\n", f.stable.Round(time.Millisecond))
	p("| records/s, %s records of %d B, explicit accept, first acceptance to last CommitSync | %s |\n", benchkit.Thousands(float64(c.records)), valueSize,
		benchkit.Thousands(float64(c.records)/f.consumeTime.Seconds()))
	p("| consume time | %v |\n", f.consumeTime.Round(time.Millisecond))
	p("| memory per idle consumer (live heap + stacks) | %s B |\n", benchkit.Thousands(float64(f.idleTotal)/float64(c.consumers)))
	p("| memory per held record (%s records held) | %s B |\n", benchkit.Thousands(float64(f.held)), benchkit.Thousands(float64(f.heldTotal)/float64(max(f.held, 1))))
	p("| broker memory per share partition (in-process testbroker) | %s B |\n", benchkit.Thousands(f.brokerPerSharePartition))
	p("| produce time (not part of the figures) | %v |\n", f.produceTime.Round(time.Millisecond))
}

// Command benchpool compares kshare's worker pool, shareconsumer's Process, with a worker pool
// written by hand over franz-go's own share consumer (kgo.ShareGroup), in one run, against the
// same broker process, and prints Markdown tables with both side by side, and a goal table per
// scenario that says "yes" or "no" for each of issue 20's goals, per broker.
//
// # What it measures
//
// For every broker program (-brokers-to-run: testbroker, then franz-go's kfake run as a
// program), it builds and starts the broker as its own process (-brokers brokers), then runs
// three scenarios, each on a topic of its own (-partitions partitions, default 3) holding
// records of 16 B spread evenly over the partitions in record batches of up to 16 KiB (about
// 600 records), produced before the clients run. The clients run in this process, one after
// the other, each run with a share group of its own that starts at the earliest offset, and
// accept every record once its handler returned. kshare runs once per acquire mode (-acquire),
// in rows "kshare (record)" and "kshare (batch)"; every client run is repeated -count times
// (default 1), and the tables show the run with the median client CPU per record, with the
// min-max of records/s and CPU per record over the runs in extra columns.
//
//   - empty (a): the handler does nothing; -records-empty records (default 200,000), at each
//     pool size of -workers-empty (default 10,1000). Records/s from the first record handed to
//     a handler until every acceptance was answered by the broker (Process, or the franz-go
//     pool's FlushAcks, returned), and "to the last handler": until the last acceptance was
//     recorded (its handler returned), without the shutdown's wait for the answers, which for
//     Process may wait for a ShareFetch parked at the broker (up to 100 ms) and weighs on short
//     runs. Client CPU per record from getrusage (this process, every thread) and allocations
//     per record from runtime.MemStats, over the span from creating the client to that end,
//     which only the client uses; broker CPU per record from the broker process's CPU clock over
//     the same span. Goals: kshare at least 1.5x the records/s of the franz-go pool with as many
//     workers (until every acceptance was answered), at no more client CPU per record; and
//     kshare's CPU per record at the largest pool size (1000) within 1.3x of that at the
//     smallest (10).
//   - sleep (b): the handler is time.Sleep(-sleep), default 1 ms, with -workers-sleep workers
//     (default 100), for -records-sleep records (default 100,000): records/s, both ways, against
//     the ideal, workers divided by the handler time (100,000/s), and against what the handler
//     time allows: the records/s of the same handler in as many goroutines fed by a channel,
//     without Kafka ("Go pool, no Kafka"), run in the same run (-count times, the run with the
//     median records/s kept): the most any pool gets on the machine. Goal: kshare at least 95%
//     of what the handler time allows, on records/s until every acceptance was answered.
//   - slow (c): the group's lock is -lock (default 1 s), and the handler waits -slow-factor
//     times the lock (default 3 s), or until its context ends, for each of -records-slow
//     records (default 1000) with -workers-slow workers (default 1000). A client runs until the
//     broker has every record acknowledged or archived (the lag DescribeShareGroupOffsets v1
//     reports is 0, asked every 50 ms) or -slow-timeout (default 20 s) passes. Reported: handler
//     runs, deliveries with a delivery count above 1, records accepted more than once (a
//     handler finished and its acceptance was sent twice), acknowledgements reported failed,
//     locks lost (kshare), records left unacknowledged and, for renewals, the requests with
//     IsRenewAck every connection wrote (decoded off the wire with internal/wiretap), per
//     broker per second, and the median and shortest time between two of them at one broker,
//     against the renew interval Process aims at: the lock minus a margin of a fifth to a half
//     of it. Goals, met when every run met them: no redelivery, no record accepted twice, and at
//     most one renew request per partition leader per renew interval: no two renew requests to
//     one broker less than half the lock apart.
//
// testbroker starts with group.share.min.record.lock.duration.ms lowered to -lock and takes the
// lock as the group's share.record.lock.duration.ms; kfake only has a broker-wide lock
// (group.share.record.lock.duration.ms), which is then -lock in every scenario, and its sweep for
// expired locks (share.record.lock.sweep.interval.ms) runs every tenth of the lock instead of
// every 5 s.
//
// kshare runs shareconsumer.Process with Workers(n) and the default queue (QueueSize 1000: the
// queue holds about a second of the handlers' work, at least as many records as workers, at
// most 1000; -queue sets QueueSize), in the default (implicit) acknowledgement mode. -acquire
// record (the default) leaves the client's versions alone: every leader has ShareFetch v2
// (Kafka 4.2), and Process asks for exactly the records that fit (record-limit acquisition).
// -acquire batch gives the client kgo.MaxVersions with ShareFetch capped at v1
// (shareconsumer.ClientOpts), so every leader looks like Kafka 4.1: Process then acquires whole
// record batches (batch-optimized), may hold more than Workers+QueueSize, the surplus waiting,
// locked, for a worker, and renews no lock (RENEW needs ShareFetch v2), so that (c) loses every
// lock. -acquire record,batch runs kshare once in each mode.
//
// The franz-go pool is what an application writes with kgo: one poll loop goroutine hands the
// records of each PollFetches (everything buffered; -franz-poll n: PollRecords with at most n)
// to n worker goroutines over a channel; a worker calls the handler, then
// Record.Ack(kgo.AckAccept). The poll loop polls again only once every record of the last poll
// was acknowledged: franz-go's next poll accepts every record the last one returned that is
// still unacknowledged, so polling earlier would accept records before their handlers ran.
// franz-go acquires as it does by default (batch-optimized, up to 500 records per ShareFetch)
// and has no automatic lock renewal (Record.Ack(kgo.AckRenew) is left to the application); the
// pool does not renew.
//
// # How to run it
//
// From the module root (about 65 s on 2 cores with the defaults):
//
//	go run ./internal/benchpool
//	go run ./internal/benchpool -brokers-to-run testbroker -records-empty 50000 -records-sleep 20000   # quick
//	go run ./internal/benchpool -brokers-to-run testbroker -scenarios empty -acquire record,batch -count 3
//	go run ./internal/benchpool -scenarios empty -workers-empty 10,100,1000 -count-requests -queue 100
//	go run ./internal/benchpool -scenarios slow -brokers 3
//	go run ./internal/benchpool -scenarios empty -cpuprofile-dir /tmp/prof
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchpool:", err)
		os.Exit(1)
	}
}

// Scenario and client names, as the flags and the tables spell them.
const (
	scenarioEmpty = "empty"
	scenarioSleep = "sleep"
	scenarioSlow  = "slow"

	clientKshare = "kshare"
	clientFranz  = "franz-go"

	// How kshare's client acquires records (-acquire).
	acquireRecord = "record" // record-limit acquisition, on ShareFetch v2 (Kafka 4.2)
	acquireBatch  = "batch"  // batch-optimized, ShareFetch capped at v1 (as on Kafka 4.1)
)

var (
	allScenarios = []string{scenarioEmpty, scenarioSleep, scenarioSlow}
	allClients   = []string{clientKshare, clientFranz}
	allAcquire   = []string{acquireRecord, acquireBatch}
)

// config is the command line.
type config struct {
	programs   benchkit.Brokers // broker programs (-brokers-to-run)
	brokers    int              // brokers per cluster
	partitions int
	scenarios  []string
	clients    []string
	acquire    []string // kshare runs once per mode

	recordsEmpty               int
	workersEmpty               benchkit.Ints // the empty scenario runs at each of these pool sizes
	recordsSleep, workersSleep int
	sleep                      time.Duration
	recordsSlow, workersSlow   int
	lock                       time.Duration
	slowFactor                 float64
	slowTimeout                time.Duration

	count      int // runs of every client run; the tables show the median one
	queue      int // kshare's QueueSize; below 0 leaves Process's default (as many as the workers)
	franzPoll  int // the franz-go pool's PollRecords limit; 0 polls everything buffered
	countReqs  bool
	profileDir string
	verbose    bool
}

// defaultConfig is the configuration without flags.
func defaultConfig() config {
	return config{
		programs: benchkit.Brokers{"testbroker", "kfake"}, brokers: 1, partitions: 3,
		scenarios: allScenarios, clients: allClients, acquire: []string{acquireRecord},
		recordsEmpty: 200_000, workersEmpty: benchkit.Ints{10, 1000},
		recordsSleep: 100_000, workersSleep: 100, sleep: time.Millisecond,
		recordsSlow: 1000, workersSlow: 1000, lock: time.Second, slowFactor: 3, slowTimeout: 20 * time.Second,
		count: 1, queue: -1,
	}
}

func run() error {
	c := defaultConfig()
	fs := flag.NewFlagSet("benchpool", flag.ExitOnError)
	fs.Var(&c.programs, "brokers-to-run", "broker programs to run, separated by commas (testbroker, kfake)")
	scenarios := fs.String("scenarios", strings.Join(c.scenarios, ","), "scenarios to run, separated by commas (empty, sleep, slow)")
	clients := fs.String("clients", strings.Join(c.clients, ","), "clients to run, separated by commas (kshare, franz-go)")
	acquire := fs.String("acquire", strings.Join(c.acquire, ","), "how kshare acquires records, separated by commas to run it once per mode: record (ShareFetch v2, record-limit), batch (ShareFetch capped at v1, as on Kafka 4.1: whole record batches)")
	fs.IntVar(&c.brokers, "brokers", c.brokers, "brokers per cluster")
	fs.IntVar(&c.partitions, "partitions", c.partitions, "partitions of every topic")
	fs.IntVar(&c.recordsEmpty, "records-empty", c.recordsEmpty, "records of the empty-handler scenario")
	fs.Var(&c.workersEmpty, "workers-empty", "workers of the empty-handler scenario, separated by commas: it runs at each of these pool sizes")
	fs.IntVar(&c.recordsSleep, "records-sleep", c.recordsSleep, "records of the sleeping-handler scenario")
	fs.IntVar(&c.workersSleep, "workers-sleep", c.workersSleep, "workers of the sleeping-handler scenario")
	fs.DurationVar(&c.sleep, "sleep", c.sleep, "what the handler of the sleeping-handler scenario sleeps")
	fs.IntVar(&c.recordsSlow, "records-slow", c.recordsSlow, "records of the slow-handler scenario")
	fs.IntVar(&c.workersSlow, "workers-slow", c.workersSlow, "workers of the slow-handler scenario")
	fs.DurationVar(&c.lock, "lock", c.lock, "the slow-handler scenario's group lock duration (share.record.lock.duration.ms; at least 1s on testbroker)")
	fs.Float64Var(&c.slowFactor, "slow-factor", c.slowFactor, "the slow handler takes this many lock durations")
	fs.DurationVar(&c.slowTimeout, "slow-timeout", c.slowTimeout, "give a client of the slow-handler scenario this long to get every record acknowledged")
	fs.IntVar(&c.count, "count", c.count, "run every client run this many times; the tables show the run with the median client CPU per record, and the min-max of records/s and CPU per record over the runs")
	fs.IntVar(&c.queue, "queue", c.queue, "kshare's QueueSize in every scenario (below 0: Process's default, 1000 at most: about a second of the handlers' work, at least as many records as workers)")
	fs.IntVar(&c.franzPoll, "franz-poll", c.franzPoll, "records per PollRecords of the franz-go pool (0: PollFetches, everything buffered)")
	fs.BoolVar(&c.countReqs, "count-requests", false, "decode the share requests of every scenario, not only of the slow one, to count them (costs client CPU)")
	fs.StringVar(&c.profileDir, "cpuprofile-dir", "", "write a CPU profile of every client run into this directory")
	fs.BoolVar(&c.verbose, "v", false, "show the brokers' output on stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.scenarios = strings.Split(*scenarios, ",")
	c.clients = strings.Split(*clients, ",")
	c.acquire = strings.Split(*acquire, ",")
	if err := c.validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := runAll(ctx, c)
	printReport(os.Stdout, c, results)
	return err
}

// validate checks the configuration, every rule in one place.
func (c *config) validate() error {
	for _, s := range c.scenarios {
		if !slices.Contains(allScenarios, s) {
			return fmt.Errorf("-scenarios: unknown scenario %q (empty, sleep, slow)", s)
		}
	}
	for _, cl := range c.clients {
		if !slices.Contains(allClients, cl) {
			return fmt.Errorf("-clients: unknown client %q (kshare, franz-go)", cl)
		}
	}
	for i, a := range c.acquire {
		if !slices.Contains(allAcquire, a) {
			return fmt.Errorf("-acquire: unknown mode %q (record, batch)", a)
		}
		if slices.Contains(c.acquire[:i], a) {
			return fmt.Errorf("-acquire: %q twice", a)
		}
	}
	switch {
	case c.brokers < 1:
		return fmt.Errorf("-brokers must be at least 1")
	case c.partitions < 1:
		return fmt.Errorf("-partitions must be at least 1")
	case c.recordsEmpty < 1 || c.recordsSleep < 1 || c.recordsSlow < 1:
		return fmt.Errorf("-records-empty, -records-sleep and -records-slow must be at least 1")
	case len(c.workersEmpty) == 0 || c.workersSleep < 1 || c.workersSlow < 1:
		return fmt.Errorf("-workers-empty, -workers-sleep and -workers-slow must be at least 1")
	case len(slices.Compact(slices.Sorted(slices.Values(c.workersEmpty)))) != len(c.workersEmpty):
		return fmt.Errorf("-workers-empty: each pool size once, please")
	case c.sleep <= 0:
		return fmt.Errorf("-sleep must be above 0")
	case c.lock < time.Millisecond || c.lock%time.Millisecond != 0:
		return fmt.Errorf("-lock must be whole milliseconds, at least 1ms")
	case c.lock < time.Second && slices.Contains(c.programs, "testbroker"):
		return fmt.Errorf("-lock must be at least 1s on testbroker (its group.share.min.record.lock.duration.ms bound)")
	case c.slowFactor <= 0:
		return fmt.Errorf("-slow-factor must be above 0")
	case c.slowTimeout <= 0:
		return fmt.Errorf("-slow-timeout must be above 0")
	case c.count < 1:
		return fmt.Errorf("-count must be at least 1")
	case c.franzPoll < 0:
		return fmt.Errorf("-franz-poll must be at least 0")
	}
	return nil
}

// runner is a client as it runs: kshare once per acquire mode.
type runner struct {
	client  string
	acquire string // kshare's acquire mode; "" for the others
}

// label names the runner in the tables: "kshare (record)", "franz-go".
func (r runner) label() string {
	if r.acquire == "" {
		return r.client
	}
	return r.client + " (" + r.acquire + ")"
}

// runners returns the clients of c as they run, kshare once per acquire mode.
func (c *config) runners() []runner {
	var rs []runner
	for _, cl := range c.clients {
		if cl != clientKshare {
			rs = append(rs, runner{client: cl})
			continue
		}
		for _, a := range c.acquire {
			rs = append(rs, runner{client: cl, acquire: a})
		}
	}
	return rs
}

// slowHandler is what the slow scenario's handler takes.
func (c *config) slowHandler() time.Duration {
	return time.Duration(float64(c.lock) * c.slowFactor)
}

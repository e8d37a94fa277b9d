// Command benchconsumer runs three consumers side by side in one run, each as a process of its
// own, against the same broker process, and prints Markdown tables comparing them: kshare's
// share consumer, franz-go's share consumer, and the floor, franz-go's direct-partition
// consumer (kgo.ConsumePartitions, no group, no share semantics), which shows what reading the
// same bytes costs without a share group.
//
// # The throughput workload
//
// For every broker program (-brokers-to-run: testbroker, and franz-go's kfake run as a
// program), partition count (-partitions, default 1), record value size (-value-bytes,
// default 16 and 1024) and producer compression (-compression, default none, lz4 and zstd),
// the parent process:
//
//  1. builds the broker once and starts it as its own process, with one topic, anew for every
//     cell of the matrix;
//  2. produces the cell's records (-records; by default 1,000,000 of 16 B and 200,000 of
//     1 KiB, in general min(1M, 200 MiB / value size)), spread evenly over the partitions,
//     in record batches of up to -batch-bytes (default 16 KiB) compressed with the cell's
//     codec (kgo.ProducerBatchCompression). The values are random words from a vocabulary of
//     512 (see values.go), which lz4 and zstd compress to about 60% and 40% at 1 KiB; the
//     report shows the batch bytes per record the producer wrote;
//  3. runs each client, one after the other, as a child process of its own (this program
//     again, with -client=floor, kshare or franz):
//     - the floor reads every partition from its start until it has every record;
//     - each share consumer runs two scenarios, each with a share group of its own that
//     starts at the earliest offset. accept: every record is accepted explicitly, one
//     Acknowledge (kshare, with FetchAhead, so that it fetches while the application works,
//     as franz-go does) or Record.Ack (franz-go) call per record; release: every 10th record
//     (offset divisible by -release-every) is released at its first delivery and accepted
//     when it comes again; every other record is accepted.
//
// A child consumes until it has every record (accepted once), flushes its acknowledgements
// (CommitSync for kshare, FlushAcks for franz-go), and prints one JSON object on stdout:
//
//   - records/s: records divided by the wall time from the first record received to the
//     flushed acknowledgements, and, for reference, from creating the client (joining the
//     group included). The floor's first fetch brings up to 1 MiB of records at once, so its
//     first figure overstates its pace on small runs; its CPU is the figure to compare;
//   - CPU per record: the child's own user+system CPU time (getrusage RUSAGE_SELF) from
//     creating the client to the flushed acknowledgements, divided by the records; and, in a
//     second goal table, from the first record received to the flushed acknowledgements
//     (without the client's creation, the group join and the first fetch's decoding, which
//     weigh on short runs of small records), divided by the same records;
//   - allocations per record: runtime.MemStats.Mallocs over that span, divided by the records;
//   - request bytes per 1000 records: the bytes of every ShareFetch and ShareAcknowledge (the
//     floor: Fetch) request the client wrote (kgo's HookBrokerWrite: whole frames, size prefix
//     and header included), per 1000 records;
//   - ack bytes per 1000 records: the exact wire size of the acknowledgement batches inside
//     those requests (per batch: FirstOffset 8 bytes, LastOffset 8 bytes, the compact array of
//     types with its varint length, and the empty tag buffer, 1 byte), found by decoding every
//     ShareFetch and ShareAcknowledge request the client writes, per 1000 records.
//
// The rate, CPU and allocations come from the accept scenario. The request and ack bytes come
// from the release scenario, the only one in which the connection wrapper that decodes the
// requests runs, so that its cost stays out of the accept figures.
//
// Each share consumer runs once per -share-max-records value (default 500, Kafka's
// max.poll.records): what every ShareFetch asks for (kshare: MaxPollRecords; franz-go:
// ShareMaxRecords). Above 2000, the broker's default share.partition.max.record.locks, the
// parent raises that group config to match (and the broker's
// group.share.max.partition.max.record.locks to 10000), since a broker acquires no more of a
// partition at once.
//
// The second table puts each cell's CPU per record side by side, with the ratios kshare/floor
// and kshare/franz-go and issue 13's goal: kshare within 1.3x of the floor and at most half of
// franz-go's share consumer.
//
// # The latency workload
//
// For every broker and partition count, one broker process with a topic of its own; for every
// client, one child process (-client=... -latency) runs the consumer waiting in Poll (kshare:
// Poll with the default FetchMaxWait, explicit accept; franz-go: PollRecords and Record.Ack;
// the floor: PollRecords) and, in the same process, a producer (linger 0, acks=all,
// uncompressed) that first produces warm-up records until the consumer gets one, then
// -samples records (default 1000) one at a time, every -interval-min to -interval-max (default
// 5 to 10 ms, at random). Each value holds the time its produce call started on the process's
// monotonic clock; the consumer's goroutine takes the time the Poll that returned it returned.
// The report gives p50, p99 and max of that latency, and p50 and p99 of produce call to ack.
//
// # How to run it
//
// From the module root:
//
//	go run ./internal/benchconsumer                     # the matrix and latency, about 75 s on 2 cores
//	go run ./internal/benchconsumer -records 100000     # quick
//	go run ./internal/benchconsumer -workloads throughput -value-bytes 16 -compression none
//	go run ./internal/benchconsumer -brokers-to-run testbroker,kfake -partitions 1,3
//	go run ./internal/benchconsumer -count 3            # every run three times, the median shown
//	go run ./internal/benchconsumer -share-max-records 500,10000   # also with 10,000 records per ShareFetch
//	go run ./internal/benchconsumer -cpuprofile-dir /tmp/prof  # one CPU profile per client run
//
// The profiles are named broker-partitions-valuebytes-codec-group.pprof (group: client and
// scenario), and broker-partitions-latency-client.pprof; with -count, the second and later
// runs' names end in -2, -3 and so on.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

func main() {
	var err error
	if isClientMode(os.Args[1:]) {
		err = runClient(os.Args[1:])
	} else {
		err = runParent()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchconsumer:", err)
		os.Exit(1)
	}
}

// isClientMode reports whether the arguments ask for client mode (-client=...).
func isClientMode(args []string) bool {
	for _, a := range args {
		if a == "-client" || a == "--client" || strings.HasPrefix(a, "-client=") || strings.HasPrefix(a, "--client=") {
			return true
		}
	}
	return false
}

// parentConfig is the parent's command line.
type parentConfig struct {
	records      int // 0: per value size, see cellRecords
	partitions   []int
	brokers      benchkit.Brokers
	clients      []string
	valueBytes   []int
	compressions []string
	workloads    map[string]bool
	releaseEvery int
	verbose      bool
	profileDir   string
	batchBytes   int
	count        int
	// shareMaxRecords are the MaxRecords values the share consumers run with, each a run
	// of its own.
	shareMaxRecords []int

	samples                  int
	intervalMin, intervalMax time.Duration
}

const (
	workloadThroughput = "throughput"
	workloadLatency    = "latency"
)

func runParent() error {
	c, err := parseParent(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runAll(ctx, c)
	printReport(os.Stdout, c, rep)
	return err
}

// parseParent parses the parent's command line args (without the program's name).
func parseParent(args []string) (parentConfig, error) {
	c := parentConfig{partitions: []int{1}, valueBytes: []int{16, 1024}, shareMaxRecords: []int{defaultShareMaxRecords}, brokers: benchkit.Brokers{"testbroker"}}
	fs := flag.NewFlagSet("benchconsumer", flag.ExitOnError)
	fs.IntVar(&c.records, "records", 0, "records to produce and consume per cell (default: 1,000,000 of 16 B, 200,000 of 1 KiB; min(1M, 200 MiB / value size))")
	fs.Var((*benchkit.Ints)(&c.partitions), "partitions", "partition counts to run, separated by commas")
	fs.Var((*benchkit.Ints)(&c.valueBytes), "value-bytes", "record value sizes to run, in bytes, separated by commas")
	compressions := fs.String("compression", "none,lz4,zstd", "producer batch compressions to run, separated by commas (none, gzip, snappy, lz4, zstd)")
	fs.Var(&c.brokers, "brokers-to-run", "broker programs to run, separated by commas (testbroker, kfake)")
	clients := fs.String("clients", "floor,kshare,kshare-wait,franz", "clients to run, separated by commas (floor: franz-go's direct consumer; kshare, with FetchAhead; kshare-wait, without it, Poll's default; franz: franz-go's share consumer)")
	workloads := fs.String("workloads", "throughput,latency", "workloads to run, separated by commas (throughput, latency)")
	fs.IntVar(&c.batchBytes, "batch-bytes", 16384, "largest record batch the producer writes, in bytes (kgo.ProducerBatchMaxBytes)")
	fs.Var((*benchkit.Ints)(&c.shareMaxRecords), "share-max-records", "records every ShareFetch asks for (MaxRecords), separated by commas, each a run of the share consumers (kshare: MaxPollRecords; franz-go: ShareMaxRecords); above 2000, the group's share.partition.max.record.locks is raised to match, at most 10000")
	fs.IntVar(&c.releaseEvery, "release-every", 10, "in the release scenario, release every Nth record at its first delivery")
	fs.IntVar(&c.samples, "samples", 1000, "latency workload: records produced and timed per client")
	fs.DurationVar(&c.intervalMin, "interval-min", 5*time.Millisecond, "latency workload: least time between two records")
	fs.DurationVar(&c.intervalMax, "interval-max", 10*time.Millisecond, "latency workload: most time between two records")
	fs.IntVar(&c.count, "count", 1, "run every client run this many times and report the one with the median CPU per record (latency: the median p50)")
	fs.BoolVar(&c.verbose, "v", false, "show the brokers' and clients' output on stderr")
	fs.StringVar(&c.profileDir, "cpuprofile-dir", "", "write a CPU profile of every client run into this directory, one file per broker, partitions, value size, codec, client and scenario")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.records < 0 {
		return c, fmt.Errorf("-records must be at least 1")
	}
	if c.batchBytes < 1024 {
		return c, fmt.Errorf("-batch-bytes must be at least 1024")
	}
	if c.releaseEvery < 2 {
		return c, fmt.Errorf("-release-every must be at least 2")
	}
	for _, n := range c.shareMaxRecords {
		if n < 1 || n > maxRecordLocksCap {
			return c, fmt.Errorf("-share-max-records: %d is not between 1 and %d", n, maxRecordLocksCap)
		}
	}
	if c.count < 1 {
		return c, fmt.Errorf("-count must be at least 1")
	}
	if c.samples < 1 || c.intervalMin <= 0 || c.intervalMax < c.intervalMin {
		return c, fmt.Errorf("-samples must be at least 1, and 0 < -interval-min <= -interval-max")
	}
	c.clients = strings.Split(*clients, ",")
	c.compressions = strings.Split(*compressions, ",")
	c.workloads = map[string]bool{}
	for _, w := range strings.Split(*workloads, ",") {
		if w != workloadThroughput && w != workloadLatency {
			return c, fmt.Errorf("-workloads: unknown workload %q (throughput, latency)", w)
		}
		c.workloads[w] = true
	}
	for _, cl := range c.clients {
		if _, ok := clientNames[cl]; !ok {
			return c, fmt.Errorf("-clients: unknown client %q (floor, kshare, franz)", cl)
		}
	}
	for _, codec := range c.compressions {
		if _, ok := codecs[codec]; !ok {
			return c, fmt.Errorf("-compression: unknown codec %q (none, gzip, snappy, lz4, zstd)", codec)
		}
	}
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			return c, err
		}
	}

	return c, nil
}

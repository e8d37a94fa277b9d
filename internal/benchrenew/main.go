// Command benchrenew measures RENEW (KIP-1222) in kshare's share consumer: how long a renew takes
// to come back, and how many requests a Poll needs to renew many records.
//
// # What it measures
//
// For every broker program (testbroker, and franz-go's kfake run as a program), every partition
// count (-partitions, default 1 and 3) and every cluster size (-brokers, default 1 and 3; a
// cluster is never larger than the partition count; testbroker spreads the leaders over the
// brokers, kfake places them at random), it starts the broker as its own process with two
// topics of that many partitions, and:
//
//  1. Round trip. It produces one record to partition 0 of the first topic, and a consumer in
//     explicit mode (shareconsumer.ExplicitAcknowledgement, default options otherwise) of a
//     group of its own, starting at the earliest offset, polls it and holds it. Then,
//     -iterations times (after a tenth as many, at most 100, unmeasured to warm up): t0;
//     Acknowledge(r, acktype.Renew); Poll; t1 when Poll returned r again (the renew travels on
//     a ShareFetch with IsRenewAck, and Poll returns as soon as it is answered). The second row
//     does the same through CommitSync: Acknowledge(r, Renew); CommitSync (a ShareAcknowledge
//     with IsRenewAck); Poll, which returns r at once. It reports the p50, p99, max and mean of
//     t1-t0.
//  2. Requests per renew. A consumer with MaxPollRecords(-renews) (default 1000) of another
//     group gets -renews records of the second topic, spread evenly over its partitions, into
//     one Poll (see holdAll). Then it acknowledges every one with Renew at once and counts the
//     ShareFetch and ShareAcknowledge requests it writes until every renew was answered, per
//     broker, with their bytes (kgo's HookBrokerWrite: whole frames, size prefix and header
//     included), in two ways: through Poll (the Poll sends the renews and returns once a
//     leader answered; a CommitSync with nothing new to send then waits for the other
//     answers), and through CommitSync (then the Poll returns every record). Every request is
//     also decoded off the connection to tell renew requests (IsRenewAck) from others and to
//     count the offsets renewed. The goal is one request per partition leader, not one per
//     record.
//
// Every renew must succeed: a renew failure reported to OnAcknowledgementCommit or CommitSync,
// or a Poll returning anything but the renewed records, ends the run with an error.
//
// # How to run it
//
// From the module root:
//
//	go run ./internal/benchrenew                      # both brokers, 1 and 3 partitions
//	go run ./internal/benchrenew -iterations 200      # quick
//	go run ./internal/benchrenew -brokers-to-run testbroker -partitions 3 -brokers 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchrenew:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	iterations int
	renews     int
	partitions []int
	brokers    []int // cluster sizes
	programs   benchkit.Brokers
	verbose    bool
}

func run() error {
	c := config{partitions: []int{1, 3}, brokers: []int{1, 3}, programs: benchkit.Brokers{"testbroker", "kfake"}}
	fs := flag.NewFlagSet("benchrenew", flag.ExitOnError)
	fs.IntVar(&c.iterations, "iterations", 2000, "measured renew round trips per row")
	fs.IntVar(&c.renews, "renews", 1000, "records renewed together when counting requests")
	fs.Var((*benchkit.Ints)(&c.partitions), "partitions", "partition counts to run, separated by commas")
	fs.Var((*benchkit.Ints)(&c.brokers), "brokers", "cluster sizes to run, separated by commas; sizes above the partition count are skipped")
	fs.Var(&c.programs, "brokers-to-run", "broker programs to run, separated by commas")
	fs.BoolVar(&c.verbose, "v", false, "show the brokers' output and progress details on stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.iterations < 1 {
		return fmt.Errorf("-iterations must be at least 1")
	}
	if c.renews < slices.Max(c.partitions) {
		return fmt.Errorf("-renews must be at least the largest partition count, so that every partition has records")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := runAll(ctx, c)
	printReport(os.Stdout, c, results)
	return err
}

// printReport writes the command, the machine, and the two tables.
func printReport(out io.Writer, c config, results []result) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n## Renew (KIP-1222): round trip and requests per renew\n\n")
	benchkit.WriteCommand(out, "./internal/benchrenew")
	benchkit.WriteMachine(out)
	p("- Each broker its own process on loopback; the consumer (kshare shareconsumer, explicit mode) in this process, default options (requests per renew: MaxPollRecords(%d), FetchMaxWait(%v))\n", c.renews, parkWait)
	if len(results) == 0 {
		return
	}

	p("\nRound trip: Acknowledge(r, Renew) until Poll returned r again (via Poll: the renew rides a ShareFetch; via CommitSync: a ShareAcknowledge, then Poll), %d iterations per row, µs.\n\n", c.iterations)
	p("| broker | brokers | partitions | via | p50 µs | p99 µs | max µs | mean µs |\n")
	p("|---|---:|---:|---|---:|---:|---:|---:|\n")
	for _, r := range results {
		for _, rt := range []roundTrips{r.viaPoll, r.viaCommit} {
			s := summarize(rt.samples)
			p("| %s | %d | %d | %s | %.0f | %.0f | %.0f | %.0f |\n", r.broker, r.brokers, r.partitions, rt.via,
				micros(s.p50), micros(s.p99), micros(s.max), micros(s.mean))
		}
	}

	p("\nRequests per renew: %d records held from one Poll (consecutive offsets, spread evenly over the partitions) acknowledged with Renew at once; the ShareFetch and ShareAcknowledge requests the consumer wrote until every renew was answered (via Poll: the Poll, then a CommitSync with nothing new to send that waits for the answers still out; via CommitSync: CommitSync, then the Poll that returns every record). Bytes are whole request frames.\n\n", c.renews)
	p("| broker | brokers | partitions | partition leaders | via | share requests (ShareFetch + ShareAcknowledge) | of which renew requests (IsRenewAck) | requests per 1000 renews | by broker (node: count) | one per leader | renewed offsets sent | bytes | bytes per renew | time ms |\n")
	p("|---|---:|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|---:|\n")
	for _, r := range results {
		for _, b := range r.bulk {
			p("| %s | %d | %d | %d | %s | %d (%d + %d) | %d | %.1f | %s | %s | %d | %d | %.2f | %.2f |\n", r.broker, r.brokers, r.partitions,
				len(b.leaders), b.via, b.requests, b.kinds.renewFetch+b.kinds.plainFetch, b.kinds.renewAck+b.kinds.plainAck, b.kinds.renewFetch+b.kinds.renewAck, float64(b.requests)*1000/float64(b.renews),
				b.byNodeString(), benchkit.YesNo(b.onePerLeader()), b.kinds.renewOffsets, b.bytes, float64(b.bytes)/float64(b.renews),
				float64(b.elapsed.Microseconds())/1e3)
		}
	}
}

// stats summarizes a sample of durations.
type stats struct{ p50, p99, max, mean time.Duration }

func summarize(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return stats{p50: benchkit.Percentile(ds, 50), p99: benchkit.Percentile(ds, 99), max: benchkit.Percentile(ds, 100),
		mean: sum / time.Duration(len(ds))}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

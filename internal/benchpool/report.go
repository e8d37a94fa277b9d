package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

// printReport writes the command, the machine and a table per scenario.
func printReport(out io.Writer, c config, results []result) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n## Worker pool (Process) vs a franz-go worker pool\n\n")
	benchkit.WriteCommand(out, "./internal/benchpool")
	benchkit.WriteMachine(out)
	p("- Each broker its own process on loopback, %d broker(s), %d partitions per topic, %d B records in batches of up to %d KiB; both clients in this process, one after the other\n", c.brokers, c.partitions, valueSize, batchBytes>>10)
	franzPoll := "PollFetches (everything buffered)"
	if c.franzPoll > 0 {
		franzPoll = fmt.Sprintf("PollRecords(ctx, %d)", c.franzPoll)
	}
	queue := "default queue (QueueSize 1000: about a second of the handlers' work, at least n records, at most 1000)"
	if c.queue >= 0 {
		queue = fmt.Sprintf("`QueueSize(%d)` (-queue)", c.queue)
	}
	p("- kshare: `Process(ctx, h, Workers(n))`, %s; franz-go: one poll loop (%s) feeding n worker goroutines over a channel, `Record.Ack(kgo.AckAccept)` after the handler, next poll once the last poll's records are all acknowledged; franz-go acquires as it does by default (batch-optimized, up to 500 records per ShareFetch)\n", queue, franzPoll)
	modes := make([]string, len(c.acquire))
	for i, a := range c.acquire {
		modes[i] = acquireText[a]
	}
	p("- kshare's acquisition (-acquire %s): %s\n", strings.Join(c.acquire, ","), strings.Join(modes, "; "))
	if c.count == 1 {
		p("- Every client run once (-count 1)\n")
	} else {
		p("- Every client run %d times (-count %d): the tables show the run with the median client CPU per record (the Go pool's: the median records/s), and the min-max of records/s and CPU per record over the %d runs in the last columns\n", c.count, c.count, c.count)
	}

	byScenario := func(name string) []result {
		var rs []result
		for _, r := range results {
			if r.scenario.name == name {
				rs = append(rs, r)
			}
		}
		return rs
	}
	if rs := byScenario(scenarioEmpty); len(rs) > 0 {
		printEmpty(p, rs)
	}
	if rs := byScenario(scenarioSleep); len(rs) > 0 {
		printSleep(p, rs)
	}
	if rs := byScenario(scenarioSlow); len(rs) > 0 {
		printSlow(p, rs)
	}
}

// acquireText describes each acquire mode for the header.
var acquireText = map[string]string{
	acquireRecord: "record, \"kshare (record)\": record-limit acquisition, ShareFetch v2 (Kafka 4.2): every leader acquires at most the records that fit in Workers+QueueSize",
	acquireBatch:  "batch, \"kshare (batch)\": `ClientOpts(kgo.MaxVersions(v))` with ShareFetch capped at v1, so every leader looks like Kafka 4.1: batch-optimized acquisition of whole record batches, the surplus over Workers+QueueSize waiting, locked, for a worker; and no lock renewal (RENEW needs ShareFetch v2)",
}

type printer func(format string, args ...any)

func printEmpty(p printer, rs []result) {
	p("\n### (a) Empty handler\n\n")
	p("Records/s from the first record handed to a handler until every acceptance was answered (Process and FlushAcks return), and to the last handler: until the last acceptance was recorded (its handler returned), without the shutdown's wait for the answers, which for Process may wait for a ShareFetch parked at the broker (up to 100 ms) and weighs on short runs. Client CPU (getrusage of this process, all threads), allocations and broker CPU (the broker process's CPU clock) from creating the client to that end, per record. ShareFetch requests are counted only with -count-requests, which decodes every request the client writes and so costs client CPU.\n\n")
	p("| broker | client | workers | records | records/s | records/s to the last handler | CPU µs/rec | allocs/rec | broker CPU µs/rec | ShareFetch requests | records per ShareFetch | ack errors | left unacked |%s\n", spreadHead(rs))
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", spreadAlign(rs))
	for _, r := range rs {
		fetches, perFetch := r.fetchCounts()
		p("| %s | %s | %d | %d | %s | %s | %.2f | %.1f | %s | %s | %s | %d | %d |%s\n", r.broker, r.label(), r.scenario.workers, r.accepted,
			benchkit.Thousands(r.rate()), benchkit.Thousands(r.rateToLast()), r.cpuPerRecord(), float64(r.mallocs)/float64(max(1, r.accepted)), r.brokerCPUPerRecord(), fetches, perFetch, r.ackErrors, r.lagLeft, r.spreadCells())
	}
	printEmptyGoals(p, rs)
}

// spreadHead and spreadAlign are the extra header cells of a table whose results come from
// more than one run each (-count): the min-max of records/s and CPU per record over the runs;
// spreadCells is a result's.
func spreadHead(rs []result) string {
	if len(rs) == 0 || len(rs[0].runs) < 2 {
		return ""
	}
	return fmt.Sprintf(" records/s, min-max of %d runs | CPU µs/rec, min-max of %d runs |", len(rs[0].runs), len(rs[0].runs))
}

func spreadAlign(rs []result) string {
	if len(rs) == 0 || len(rs[0].runs) < 2 {
		return ""
	}
	return "---:|---:|"
}

func (r result) spreadCells() string {
	if len(r.runs) < 2 {
		return ""
	}
	rate, cpu := minMax(r.runs, result.rate), minMax(r.runs, result.cpuPerRecord)
	return fmt.Sprintf(" %s-%s | %.2f-%.2f |", benchkit.Thousands(rate[0]), benchkit.Thousands(rate[1]), cpu[0], cpu[1])
}

// minMax returns the least and the greatest of f over rs.
func minMax(rs []result, f func(result) float64) [2]float64 {
	m := [2]float64{f(rs[0]), f(rs[0])}
	for _, r := range rs[1:] {
		m[0], m[1] = min(m[0], f(r)), max(m[1], f(r))
	}
	return m
}

// fetchCounts returns, as table cells, the ShareFetch requests the run wrote and the records
// accepted per request; "-" when the requests were not counted.
func (r result) fetchCounts() (fetches, perFetch string) {
	if r.taps == nil {
		return "-", "-"
	}
	n, _ := r.taps.requests()
	if n == 0 {
		return "0", "-"
	}
	return fmt.Sprint(n), fmt.Sprintf("%.1f", float64(r.accepted)/float64(n))
}

func printSleep(p printer, rs []result) {
	p("\n### (b) Handler of time.Sleep(%v)\n\n", rs[0].scenario.work)
	p("Ideal: workers / handler time. \"What the handler time allows\": the records/s of the %q row of the same broker, which runs the same handler in as many goroutines fed by a channel, without Kafka, in the same run (time.Sleep oversleeps: see the mean handler time). Records/s as in (a): until every acceptance was answered, and to the last handler, until the last acceptance was recorded, without the shutdown's wait for the answers. CPU as in (a): this process, from creating the client to the end.\n\n", clientBaseline)
	p("| broker | client | workers | records | records/s | records/s to the last handler | ideal records/s | %% of ideal | mean handler time | %% of what the handler time allows | to the last handler, %% of what the handler time allows | CPU µs/rec | broker CPU µs/rec | ShareFetch requests | records per ShareFetch |%s\n", spreadHead(rs))
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", spreadAlign(rs))
	for _, r := range rs {
		ideal := float64(r.scenario.workers) / r.scenario.work.Seconds()
		pct, pctLast := "-", "-"
		if allowed := allowedRate(rs, r); allowed > 0 && r.client != clientBaseline {
			pct, pctLast = fmt.Sprintf("%.1f%%", 100*r.rate()/allowed), fmt.Sprintf("%.1f%%", 100*r.rateToLast()/allowed)
		}
		fetches, perFetch := r.fetchCounts()
		p("| %s | %s | %d | %d | %s | %s | %s | %.1f%% | %v | %s | %s | %.2f | %s | %s | %s |%s\n", r.broker, r.label(), r.scenario.workers, r.accepted,
			benchkit.Thousands(r.rate()), benchkit.Thousands(r.rateToLast()), benchkit.Thousands(ideal), 100*r.rate()/ideal, r.meanHandler().Round(time.Microsecond),
			pct, pctLast, r.cpuPerRecord(), r.brokerCPUPerRecord(), fetches, perFetch, r.spreadCells())
	}
	printSleepGoals(p, rs)
}

// allowedRate is what the handler time allows r: the records/s of the pool without Kafka with
// as many workers on r's broker; 0 when it did not run.
func allowedRate(rs []result, r result) float64 {
	for _, b := range rs {
		if b.client == clientBaseline && b.broker == r.broker && b.scenario.workers == r.scenario.workers {
			return b.rate()
		}
	}
	return 0
}

func printSlow(p printer, rs []result) {
	sc := rs[0].scenario
	lo, hi := sc.lock-sc.lock/2, sc.lock-sc.lock/5
	p("\n### (c) Handlers of %v, %.1fx the lock duration (%v)\n\n", sc.work, float64(sc.work)/float64(sc.lock), sc.lock)
	p("A run ends once the broker has every record acknowledged or archived (DescribeShareGroupOffsets lag 0). Redelivered: handler calls for deliveries with a delivery count above 1. Accepted twice: records whose handler finished and whose acceptance was sent more than once. Ack errors: acknowledgement results reported failed (franz-go: per partition and request). Renew requests: ShareFetch/ShareAcknowledge requests with IsRenewAck, decoded off the client's connections; Process aims at one per partition leader per renew interval, the lock minus a margin of a fifth to a half of it (%v-%v here); the rate is per broker that got renews, over the run's time; the gaps are between two renew requests to one broker.\n\n", lo, hi)
	p("| broker | client | workers | records | done | time s | handler runs | redelivered | accepted twice | ack errors | locks lost | left unacked | renew requests | brokers renewed at | renewed offsets | renew requests per broker per s | p50 between renews at a broker | shortest gap between renews at a broker |%s\n", spreadHead(rs))
	p("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", spreadAlign(rs))
	for _, r := range rs {
		lost := "-"
		if r.stats != nil {
			lost = fmt.Sprint(r.stats.LocksLost)
		}
		rs := r.renewStats()
		perBroker := 0.0
		if r.elapsed > 0 {
			perBroker = float64(rs.requests) / r.elapsed.Seconds() / float64(max(1, rs.brokers))
		}
		interval, shortest := "-", "-"
		if len(rs.interval) > 0 {
			interval = median(rs.interval).Round(time.Millisecond).String()
			shortest = rs.interval[0].Round(time.Millisecond).String()
		}
		p("| %s | %s | %d | %d | %s | %.2f | %d | %d | %d | %d | %s | %d | %d | %d | %d | %.2f | %s | %s |%s\n", r.broker, r.label(), r.scenario.workers, r.scenario.records,
			benchkit.YesNo(r.finished), r.elapsed.Seconds(), r.handlerRuns, r.redelivered, r.acceptedTwice, r.ackErrors, lost, r.lagLeft,
			rs.requests, rs.brokers, rs.renewed, perBroker, interval, shortest, r.spreadCells())
	}
	printSlowGoals(p, rs)
}

// renewStats are the renew requests r's run wrote; none when they were not counted.
func (r result) renewStats() renewStats {
	if r.taps == nil {
		return renewStats{}
	}
	return r.taps.stats()
}

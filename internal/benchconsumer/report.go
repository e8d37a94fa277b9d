package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/kshare/kshare/internal/benchkit"
)

// report is everything one run measured.
type report struct {
	throughput []runResult
	latency    []latencyRow
}

// The goals of issue 13 the report checks.
const (
	goalFloorRatio = 1.3 // kshare's CPU per record at most this times the floor's
	goalFranzRatio = 0.8 // and at most this times franz-go's share consumer's (issue 20)
)

// printReport writes the Markdown tables.
func printReport(out io.Writer, c parentConfig, rep report) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\nMachine: %s, %d CPUs.\n", benchkit.CPUModel(), runtime.NumCPU())
	if len(rep.throughput) > 0 {
		printThroughput(p, c, rep.throughput)
	}
	if len(rep.latency) > 0 {
		printLatency(p, c, rep.latency)
	}
}

func printThroughput(p func(string, ...any), c parentConfig, results []runResult) {
	p("\n## Consumers: the floor (franz-go's direct consumer), kshare and franz-go's share consumer (each client its own process)\n\n")
	p("Accept scenario (share consumers: every record accepted explicitly, one call per record; floor: every partition read from the start): rec/s from the first record received to the acknowledgements flushed, and from the client's creation (group join included); client CPU and allocations from the client's creation to the acknowledgements flushed. Request bytes: ShareFetch+ShareAcknowledge (floor: Fetch) requests written, per 1000 records.\n")
	p("Release scenario (share consumers only; every %dth record released at first delivery, accepted on redelivery): request bytes, and the exact wire size of the acknowledgement batches, all and those of first deliveries, per 1000 records.\n\n", c.releaseEvery)
	p("MaxRecords: what every ShareFetch asks for (kshare: MaxPollRecords; franz-go: ShareMaxRecords; %d is Kafka's max.poll.records default); above %d, the group's share.partition.max.record.locks is raised to match.\n\n", defaultShareMaxRecords, defaultMaxRecordLocks)
	p("| broker | partitions | value B | codec | batch B/rec | records | client | MaxRecords | rec/s | rec/s incl. join | CPU µs/rec | allocs/rec | req bytes/1000 (accept) | req bytes/1000 (release) | ack bytes/1000 (release) | first-delivery ack bytes/1000 |\n")
	p("|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		a, rl := r.accept, r.release
		release := "– | – | –"
		if r.client != clientFloor {
			release = fmt.Sprintf("%s | %s | %s", benchkit.Thousands(per1000(rl.ShareFetchBytes+rl.ShareAckBytes, rl.Records)),
				benchkit.Thousands(per1000(rl.AckBatchBytes, rl.Records)), benchkit.Thousands(per1000(rl.AckBatchBytes-rl.RedeliveryAckBytes, rl.Records)))
		}
		p("| %s | %d | %d | %s | %.1f | %s | %s | %s | %s | %s | %.3f | %.3f | %s | %s |\n", r.broker, r.partitions, r.valueBytes, r.compression,
			float64(r.compressed)/float64(r.batchRecords), benchkit.Thousands(float64(r.records)), clientNames[r.client], maxRecordsCell(r),
			benchkit.Thousands(rate(a)), benchkit.Thousands(rateWithJoin(a)), perRecordMicros(a.CPUNs, a.Records), allocsPerRecord(a),
			benchkit.Thousands(per1000(a.ShareFetchBytes+a.ShareAckBytes, a.Records)), release)
	}

	var rows, steadyRows []string
	for _, k := range results {
		if !isKshare(k.client) {
			continue
		}
		floor, hasFloor := findResult(results, k.cell, clientFloor, 0)
		franz, hasFranz := findResult(results, k.cell, clientFranz, k.maxRecords)
		kcpu := perRecordMicros(k.accept.CPUNs, k.accept.Records)
		row := []string{k.broker, fmt.Sprint(k.partitions), fmt.Sprint(k.valueBytes), k.compression, clientNames[k.client], fmt.Sprint(k.maxRecords), "–", fmt.Sprintf("%.3f", kcpu), "–", "–", "–", "–", "–", "–", "–"}
		if hasFloor {
			fcpu := perRecordMicros(floor.accept.CPUNs, floor.accept.Records)
			row[6], row[9], row[10] = fmt.Sprintf("%.3f", fcpu), fmt.Sprintf("%.2f", kcpu/fcpu), benchkit.YesNo(kcpu/fcpu <= goalFloorRatio)
		}
		if hasFranz {
			zcpu := perRecordMicros(franz.accept.CPUNs, franz.accept.Records)
			row[8], row[11], row[12] = fmt.Sprintf("%.3f", zcpu), fmt.Sprintf("%.2f", kcpu/zcpu), benchkit.YesNo(kcpu/zcpu <= goalFranzRatio)
			row[13] = fmt.Sprintf("%.2f", rate(k.accept)/rate(franz.accept))
			kr, fr := k.release, franz.release
			row[14] = fmt.Sprintf("%.2f", float64(kr.AckBatchBytes-kr.RedeliveryAckBytes)/float64(fr.AckBatchBytes-fr.RedeliveryAckBytes))
		}
		rows = append(rows, "| "+strings.Join(row, " | ")+" |")

		steady := []string{k.broker, fmt.Sprint(k.partitions), fmt.Sprint(k.valueBytes), k.compression, clientNames[k.client], fmt.Sprint(k.maxRecords), "–", fmt.Sprintf("%.3f", consumeMicros(k.accept)), "–", "–", "–"}
		if hasFloor {
			steady[6], steady[9] = fmt.Sprintf("%.3f", consumeMicros(floor.accept)), fmt.Sprintf("%.2f", consumeMicros(k.accept)/consumeMicros(floor.accept))
		}
		if hasFranz {
			steady[8], steady[10] = fmt.Sprintf("%.3f", consumeMicros(franz.accept)), fmt.Sprintf("%.2f", consumeMicros(k.accept)/consumeMicros(franz.accept))
		}
		steadyRows = append(steadyRows, "| "+strings.Join(steady, " | ")+" |")
	}
	if len(rows) == 0 {
		return
	}
	p("\nGoals: kshare's CPU per record at most %.1fx the floor's and at most %.1fx franz-go's share consumer's (accept scenario).\n\n", goalFloorRatio, goalFranzRatio)
	p("| broker | partitions | value B | codec | kshare | MaxRecords | CPU µs/rec floor | kshare | franz-go | kshare/floor | ≤ %.1f | kshare/franz-go | ≤ %.1f | rec/s kshare/franz-go | first-delivery ack bytes kshare/franz-go |\n", goalFloorRatio, goalFranzRatio)
	p("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|\n")
	p("%s\n", strings.Join(rows, "\n"))
	p("\nThe same, with CPU counted from the first record received on (without the client's creation, the group join and the decoding of the first fetch), per record.\n\n")
	p("| broker | partitions | value B | codec | kshare | MaxRecords | CPU µs/rec floor | kshare | franz-go | kshare/floor | kshare/franz-go |\n")
	p("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
	p("%s\n", strings.Join(steadyRows, "\n"))
}

// consumeMicros is a run's CPU per record from its first record received on.
func consumeMicros(r clientResult) float64 { return perRecordMicros(r.ConsumeCPUNs, r.Records) }

// maxRecordsCell is a result's MaxRecords column: – for the floor.
func maxRecordsCell(r runResult) string {
	if r.client == clientFloor {
		return "–"
	}
	return benchkit.Thousands(float64(r.maxRecords))
}

// findResult returns the result of client with maxRecords in the cell ce.
func findResult(results []runResult, ce cell, client string, maxRecords int) (runResult, bool) {
	for _, r := range results {
		if r.client == client && r.maxRecords == maxRecords && r.broker == ce.broker && r.partitions == ce.partitions && r.valueBytes == ce.valueBytes && r.compression == ce.compression {
			return r, true
		}
	}
	return runResult{}, false
}

func printLatency(p func(string, ...any), c parentConfig, rows []latencyRow) {
	p("\n## Latency: produce to Poll on an idle consumer (producer and consumer in one process)\n\n")
	p("%d samples, one record of %d B produced every %v to %v (uncompressed, linger 0, acks=all), each while the consumer waits in Poll (kshare: Poll with the default FetchMaxWait, explicit accept; franz-go: PollRecords, Record.Ack; floor: PollRecords). Latency: from the start of the produce call to the Poll that returns the record; produce ack: from the start of the produce call to its promise.\n\n",
		c.samples, latencyValueBytes, c.intervalMin, c.intervalMax)
	p("| broker | partitions | client | p50 | p99 | max | produce ack p50 | produce ack p99 |\n")
	p("|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		l := r.res
		p("| %s | %d | %s | %s | %s | %s | %s | %s |\n", r.broker, r.partitions, clientNames[r.client],
			micros(l.P50Ns), micros(l.P99Ns), micros(l.MaxNs), micros(l.AckP50Ns), micros(l.AckP99Ns))
	}
}

// micros formats nanoseconds as microseconds or milliseconds.
func micros(ns int64) string {
	if ns >= 10_000_000 {
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(ns)/1e3)
}

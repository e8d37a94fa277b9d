package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/groupconfig"

	"github.com/kshare/kshare/internal/benchcmd"
)

const (
	benchTopic = "bench"
	valueSize  = 16

	scenarioAccept  = "accept"
	scenarioRelease = "release"
)

// runResult is one client's runs against one broker and partition count.
type runResult struct {
	broker     string
	partitions int
	client     string
	accept     clientResult
	release    clientResult
}

// runAll runs every broker, partition count, scenario and client, and returns what it measured
// until the first failure.
func runAll(ctx context.Context, c parentConfig) ([]runResult, error) {
	dir, err := os.MkdirTemp("", "benchconsumer")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var results []runResult
	for _, b := range c.brokers {
		fmt.Fprintf(os.Stderr, "building %s\n", b)
		bin, err := buildBroker(ctx, b, dir)
		if err != nil {
			return results, err
		}
		for _, parts := range c.partitions {
			rs, err := runBroker(ctx, c, self, b, bin, parts)
			results = append(results, rs...)
			if err != nil {
				return results, fmt.Errorf("%s, %d partitions: %w", b, parts, err)
			}
		}
	}
	return results, nil
}

// runBroker starts one broker process, produces the records, and runs every client in both
// scenarios against it, each with a share group of its own.
func runBroker(ctx context.Context, c parentConfig, self, name, bin string, parts int) ([]runResult, error) {
	bp, err := startBrokerProc(ctx, name, bin, benchTopic, parts, c.verbose)
	if err != nil {
		return nil, err
	}
	defer func() { _, _, _ = bp.Stop(10 * time.Second) }()
	fmt.Fprintf(os.Stderr, "%s: producing %d records of %d B to %d partitions, in batches of up to %d B\n", name, c.records, valueSize, parts, c.batchBytes)
	start := time.Now()
	if err := produce(ctx, bp.Seeds[0], parts, c.records, c.batchBytes); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "  produced in %v\n", time.Since(start).Round(time.Millisecond))

	var out []runResult
	for _, client := range c.clients {
		r := runResult{broker: name, partitions: parts, client: client}
		for _, sc := range []string{scenarioAccept, scenarioRelease} {
			group := fmt.Sprintf("%s-%s", client, sc)
			if err := groupconfig.SetOn(ctx, bp.Seeds, group, "share.auto.offset.reset", "earliest"); err != nil {
				return out, err
			}
			args := []string{
				"-client=" + client, "-seed", bp.Seeds[0], "-topic", benchTopic, "-group", group,
				"-records", strconv.Itoa(c.records), "-partitions", strconv.Itoa(parts),
			}
			if c.profileDir != "" {
				args = append(args, "-cpuprofile", filepath.Join(c.profileDir, fmt.Sprintf("%s-%dp-%s.pprof", name, parts, group)))
			}
			if sc == scenarioRelease {
				args = append(args, "-release-every", strconv.Itoa(c.releaseEvery), "-decode-acks")
			}
			fmt.Fprintf(os.Stderr, "%s, %d partitions: %s, %s\n", name, parts, client, sc)
			res, err := runChild(ctx, self, args, c.verbose)
			if err != nil {
				return out, fmt.Errorf("%s %s: %w", client, sc, err)
			}
			fmt.Fprintf(os.Stderr, "  %.0f rec/s (%.0f with the join) in %v, %.2f µs CPU/rec, %.1f allocs/rec, %d deliveries, %d ShareFetch (%d B), %d ShareAcknowledge (%d B)\n",
				rate(res), rateWithJoin(res), time.Duration(res.ElapsedNs).Round(time.Millisecond), perRecordMicros(res.CPUNs, res.Records),
				float64(res.Mallocs)/float64(res.Records), res.Deliveries, res.ShareFetchRequests, res.ShareFetchBytes,
				res.ShareAckRequests, res.ShareAckBytes)
			if sc == scenarioAccept {
				r.accept = res
			} else {
				r.release = res
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// runChild runs this program in client mode and decodes the result it prints.
func runChild(ctx context.Context, self string, args []string, verbose bool) (clientResult, error) {
	var res clientResult
	cmd := exec.CommandContext(ctx, self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if verbose {
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	}
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("%v\n%s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("decoding the client's result %q: %w", stdout.String(), err)
	}
	if res.AckErrors > 0 {
		return res, fmt.Errorf("%d acknowledgements failed, first: %s", res.AckErrors, res.FirstErr)
	}
	if res.BadFrames > 0 {
		return res, fmt.Errorf("%d share requests could not be decoded", res.BadFrames)
	}
	return res, nil
}

// produce writes n records of valueSize bytes, record i to partition i%parts, in record
// batches of at most batchBytes bytes.
func produce(ctx context.Context, seed string, parts, n, batchBytes int) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seed),
		kgo.DefaultProduceTopic(benchTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := benchcmd.ProduceRoundRobin(ctx, cl, "", parts, n, valueSize); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	return nil
}

// rate is the records per second from the first record received to the flushed
// acknowledgements: the consumer's steady pace, without joining the group.
func rate(r clientResult) float64 {
	return float64(r.Records) / time.Duration(r.ConsumeNs).Seconds()
}

// rateWithJoin is the records per second from creating the client to the flushed
// acknowledgements.
func rateWithJoin(r clientResult) float64 {
	return float64(r.Records) / time.Duration(r.ElapsedNs).Seconds()
}

func perRecordMicros(ns int64, records int) float64 {
	return float64(ns) / 1e3 / float64(records)
}

func per1000(n int64, records int) float64 {
	return float64(n) * 1000 / float64(records)
}

// printReport writes the Markdown tables.
func printReport(out io.Writer, c parentConfig, results []runResult) {
	if len(results) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n## Share consumers: kshare and franz-go (%s records of %d B, each client its own process)\n\n", benchcmd.Thousands(float64(c.records)), valueSize)
	p("Accept scenario (every record accepted explicitly, one call per record): rec/s from the first record received to the acknowledgements flushed, and from the client's creation (group join included); client CPU and allocations from the client's creation to the acknowledgements flushed.\n")
	p("Release scenario (every %dth record released at first delivery, accepted on redelivery): bytes of ShareFetch+ShareAcknowledge requests written, and the exact wire size of their acknowledgement batches, per 1000 records.\n\n", c.releaseEvery)
	p("The acceptances of redelivered records (one batch of one offset each, since the released offsets are never adjacent: at least 19 B per record) are also counted apart; \"first-delivery ack bytes\" leaves them out.\n\n")
	p("| broker | partitions | client | rec/s | rec/s incl. join | CPU µs/rec | allocs/rec | req bytes/1000 (accept) | req bytes/1000 (release) | ack batches/1000 (release) | ack bytes/1000 (release) | of which redelivery acks | first-delivery ack bytes/1000 |\n")
	p("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		a, rl := r.accept, r.release
		p("| %s | %d | %s | %s | %s | %.2f | %.1f | %s | %s | %.1f | %s | %s | %s |\n", r.broker, r.partitions, r.client,
			benchcmd.Thousands(rate(a)), benchcmd.Thousands(rateWithJoin(a)), perRecordMicros(a.CPUNs, a.Records), float64(a.Mallocs)/float64(a.Records),
			benchcmd.Thousands(per1000(a.ShareFetchBytes+a.ShareAckBytes, a.Records)),
			benchcmd.Thousands(per1000(rl.ShareFetchBytes+rl.ShareAckBytes, rl.Records)),
			per1000(rl.AckBatches, rl.Records), benchcmd.Thousands(per1000(rl.AckBatchBytes, rl.Records)),
			benchcmd.Thousands(per1000(rl.RedeliveryAckBytes, rl.Records)), benchcmd.Thousands(per1000(rl.AckBatchBytes-rl.RedeliveryAckBytes, rl.Records)))
	}
	var cmp []string
	for _, k := range results {
		if k.client != clientKshare {
			continue
		}
		for _, f := range results {
			if f.client != clientFranz || f.broker != k.broker || f.partitions != k.partitions {
				continue
			}
			speed := rate(k.accept) / rate(f.accept)
			cpu := perRecordMicros(k.accept.CPUNs, k.accept.Records) / perRecordMicros(f.accept.CPUNs, f.accept.Records)
			ackRatio := float64(k.release.AckBatchBytes) / float64(f.release.AckBatchBytes)
			firstRatio := float64(k.release.AckBatchBytes-k.release.RedeliveryAckBytes) / float64(f.release.AckBatchBytes-f.release.RedeliveryAckBytes)
			reqRatio := float64(k.release.ShareFetchBytes+k.release.ShareAckBytes) / float64(f.release.ShareFetchBytes+f.release.ShareAckBytes)
			cmp = append(cmp, fmt.Sprintf("| %s | %d | %.2f | %s | %.2f | %.2f | %s | %.2f | %s | %.2f |", k.broker, k.partitions,
				speed, benchcmd.YesNo(speed >= 2), cpu, ackRatio, benchcmd.YesNo(ackRatio <= 1.0/3), firstRatio, benchcmd.YesNo(firstRatio <= 1.0/3), reqRatio))
		}
	}
	if len(cmp) > 0 {
		p("\nGoals: kshare at least 2x franz-go's records/s; kshare's ack bytes at most 1/3 of franz-go's at 10%% releases.\n\n")
		p("| broker | partitions | rec/s kshare/franz | ≥ 2x | CPU/rec kshare/franz | ack bytes kshare/franz | ≤ 1/3 | first-delivery ack bytes kshare/franz | ≤ 1/3 | request bytes kshare/franz |\n")
		p("|---|---:|---:|---|---:|---:|---|---:|---|---:|\n")
		p("%s\n", strings.Join(cmp, "\n"))
	}
}

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
)

const (
	benchTopic = "bench"

	scenarioAccept  = "accept"
	scenarioRelease = "release"

	// recordBytesBudget sets the default record count of a cell: as many records as fit in
	// this many value bytes, at most defaultRecords (1M of 16 B, 200k of 1 KiB).
	recordBytesBudget = 200_000 * 1024
	defaultRecords    = 1_000_000

	// defaultShareMaxRecords is what both share consumers ask for per ShareFetch by default
	// (Kafka's max.poll.records).
	defaultShareMaxRecords = 500
	// A broker keeps at most share.partition.max.record.locks records of a partition in flight
	// (2000 by default, at most 10000), so a share consumer asking for more per fetch gets
	// no more unless the group's limit is raised.
	defaultMaxRecordLocks = 2000
	maxRecordLocksCap     = 10000
)

// cell is one combination of the throughput matrix, run against one broker process.
type cell struct {
	broker      string
	partitions  int
	valueBytes  int
	compression string
	records     int
	// Of the batches the producer wrote: records, value bytes before and batch bytes after
	// compression (kgo's ProduceBatchMetrics).
	batchRecords, uncompressed, compressed int64
}

// runResult is one client's runs in one cell. A floor client has no release run and no
// maxRecords.
type runResult struct {
	cell
	client     string
	maxRecords int
	accept     clientResult
	release    clientResult
}

// cellRecords is the record count of a cell of values of size bytes: -records when given,
// else as many as recordBytesBudget holds, at most defaultRecords.
func cellRecords(c parentConfig, size int) int {
	if c.records > 0 {
		return c.records
	}
	return min(defaultRecords, recordBytesBudget/size)
}

// runAll runs every broker, partition count, value size, compression and client, then the
// latency workload, and returns what it measured until the first failure.
func runAll(ctx context.Context, c parentConfig) (report, error) {
	var rep report
	progs, err := benchkit.NewPrograms(ctx, "benchconsumer")
	if err != nil {
		return rep, err
	}
	defer progs.Close()
	self, err := os.Executable()
	if err != nil {
		return rep, err
	}
	for _, b := range c.brokers {
		bin, err := progs.Build(ctx, b)
		if err != nil {
			return rep, err
		}
		for _, parts := range c.partitions {
			if c.workloads[workloadThroughput] {
				for _, size := range c.valueBytes {
					for _, codec := range c.compressions {
						ce := cell{broker: b, partitions: parts, valueBytes: size, compression: codec, records: cellRecords(c, size)}
						rs, err := runCell(ctx, c, self, bin, ce)
						rep.throughput = append(rep.throughput, rs...)
						if err != nil {
							return rep, fmt.Errorf("%s, %d partitions, %d B, %s: %w", b, parts, size, codec, err)
						}
					}
				}
			}
			if c.workloads[workloadLatency] {
				rs, err := runLatency(ctx, c, self, b, bin, parts)
				rep.latency = append(rep.latency, rs...)
				if err != nil {
					return rep, fmt.Errorf("%s, %d partitions, latency: %w", b, parts, err)
				}
			}
		}
	}
	return rep, nil
}

// runCell starts one broker process, produces the cell's records, and runs every client
// against it: the share consumers in both scenarios, each with a share group of its own, the
// floor once.
func runCell(ctx context.Context, c parentConfig, self, bin string, ce cell) (out []runResult, err error) {
	o := brokerproc.Options{Name: ce.broker, Bin: bin, Brokers: 1, Topic: benchTopic, Partitions: ce.partitions}
	if slices.Max(c.shareMaxRecords) > defaultMaxRecordLocks {
		o.Configs = append(o.Configs, fmt.Sprintf("group.share.max.partition.max.record.locks=%d", maxRecordLocksCap))
	}
	bp, err := benchkit.StartBroker(ctx, o, c.verbose)
	if err != nil {
		return nil, err
	}
	defer benchkit.StopBroker(bp, &err)
	fmt.Fprintf(os.Stderr, "%s: producing %d records of %d B to %d partitions, %s, in batches of up to %d B\n",
		ce.broker, ce.records, ce.valueBytes, ce.partitions, ce.compression, c.batchBytes)
	start := time.Now()
	bm := newBatchMetrics(ce.records)
	if err := produce(ctx, bp.Seeds[0], ce, c.batchBytes, bm); err != nil {
		return nil, err
	}
	ce.batchRecords, ce.uncompressed, ce.compressed = bm.records.Load(), bm.uncompressed.Load(), bm.compressed.Load()
	fmt.Fprintf(os.Stderr, "  produced in %v, %.1f batch bytes per record\n", time.Since(start).Round(time.Millisecond), float64(ce.compressed)/float64(ce.batchRecords))

	for _, client := range c.clients {
		maxRecords := c.shareMaxRecords
		if client == clientFloor {
			maxRecords = []int{0}
		}
		for _, n := range maxRecords {
			r, err := runClientInCell(ctx, c, self, bp.Seeds[0], ce, client, n)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// runClientInCell runs one client against the cell's broker: a share consumer in both
// scenarios with MaxRecords maxRecords, the floor once.
func runClientInCell(ctx context.Context, c parentConfig, self, seed string, ce cell, client string, maxRecords int) (runResult, error) {
	r := runResult{cell: ce, client: client, maxRecords: maxRecords}
	scenarios := []string{scenarioAccept, scenarioRelease}
	if client == clientFloor {
		scenarios = scenarios[:1]
	}
	for _, sc := range scenarios {
		group := fmt.Sprintf("%s-%s", client, sc)
		if maxRecords != defaultShareMaxRecords && client != clientFloor {
			group += fmt.Sprintf("-r%d", maxRecords)
		}
		args := []string{
			"-client=" + client, "-seed", seed, "-topic", benchTopic, "-group", group,
			"-records", strconv.Itoa(ce.records), "-partitions", strconv.Itoa(ce.partitions),
		}
		if client != clientFloor {
			args = append(args, "-max-records", strconv.Itoa(maxRecords))
		}
		if err := prepareGroup(ctx, args); err != nil {
			return r, err
		}
		if c.profileDir != "" {
			name := fmt.Sprintf("%s-%dp-%dB-%s-%s.pprof", ce.broker, ce.partitions, ce.valueBytes, ce.compression, group)
			args = append(args, "-cpuprofile", filepath.Join(c.profileDir, name))
		}
		if sc == scenarioRelease {
			args = append(args, "-release-every", strconv.Itoa(c.releaseEvery), "-decode-acks")
		}
		fmt.Fprintf(os.Stderr, "%s, %d partitions, %d B, %s: %s, %s\n", ce.broker, ce.partitions, ce.valueBytes, ce.compression, group, sc)
		res, err := runRepeated(ctx, c, self, args, ce.partitions)
		if err != nil {
			return r, fmt.Errorf("%s %s: %w", client, sc, err)
		}
		fmt.Fprintf(os.Stderr, "  %.0f rec/s (%.0f with the join) in %v, %.3f µs CPU/rec, %.3f allocs/rec, %d deliveries, %d fetches (%d B), %d ShareAcknowledge (%d B)\n",
			rate(res), rateWithJoin(res), time.Duration(res.ElapsedNs).Round(time.Millisecond), perRecordMicros(res.CPUNs, res.Records),
			allocsPerRecord(res), res.Deliveries, res.ShareFetchRequests, res.ShareFetchBytes,
			res.ShareAckRequests, res.ShareAckBytes)
		if sc == scenarioAccept {
			r.accept = res
		} else {
			r.release = res
		}
	}
	return r, nil
}

// runRepeated runs one client child c.count times, each time with a share group of its own
// (the group's name with the run's number appended, from the second run on), and returns the
// run with the median CPU per record.
func runRepeated(ctx context.Context, c parentConfig, self string, args []string, parts int) (clientResult, error) {
	var runs []clientResult
	for i := range c.count {
		a := slices.Clone(args)
		if i > 0 {
			for j := range a {
				if a[j] == "-group" {
					a[j+1] += "-" + strconv.Itoa(i+1)
					if err := prepareGroup(ctx, a); err != nil {
						return clientResult{}, err
					}
				}
				if a[j] == "-cpuprofile" {
					a[j+1] = strings.TrimSuffix(a[j+1], ".pprof") + "-" + strconv.Itoa(i+1) + ".pprof"
				}
			}
		}
		var res clientResult
		if err := runChild(ctx, self, a, c.verbose, &res); err != nil {
			return res, err
		}
		if err := res.check(); err != nil {
			return res, err
		}
		runs = append(runs, res)
	}
	return benchkit.MedianBy(runs, func(r clientResult) float64 { return float64(r.CPUNs) / float64(r.Records) }), nil
}

// prepareGroup makes the share group named in a child's arguments start at the earliest
// offset and, when the child asks for more records per ShareFetch than a broker keeps in flight
// by default, raises the group's share.partition.max.record.locks to match; nothing for the
// floor.
func prepareGroup(ctx context.Context, args []string) error {
	var seed, group string
	maxRecords := defaultShareMaxRecords
	for j := 0; j+1 < len(args); j++ {
		switch args[j] {
		case "-seed":
			seed = args[j+1]
		case "-group":
			group = args[j+1]
		case "-max-records":
			n, err := strconv.Atoi(args[j+1])
			if err != nil {
				return err
			}
			maxRecords = n
		}
	}
	if slices.Contains(args, "-client="+clientFloor) {
		return nil
	}
	seeds := []string{seed}
	if err := groupconfig.SetOn(ctx, seeds, group, "share.auto.offset.reset", "earliest"); err != nil {
		return err
	}
	if maxRecords <= defaultMaxRecordLocks {
		return nil
	}
	return groupconfig.SetOn(ctx, seeds, group, "share.partition.max.record.locks", strconv.Itoa(maxRecords))
}

// runChild runs this program in client mode and decodes the JSON result it prints into res.
func runChild(ctx context.Context, self string, args []string, verbose bool, res any) error {
	cmd := exec.CommandContext(ctx, self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if verbose {
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(stdout.Bytes(), res); err != nil {
		return fmt.Errorf("decoding the client's result %q: %w", stdout.String(), err)
	}
	return nil
}

// check returns an error for a run whose acknowledgements failed or whose requests could not
// be decoded.
func (r clientResult) check() error {
	if r.AckErrors > 0 {
		return fmt.Errorf("%d acknowledgements failed, first: %s", r.AckErrors, r.FirstErr)
	}
	if r.BadFrames > 0 {
		return fmt.Errorf("%d share requests could not be decoded", r.BadFrames)
	}
	return nil
}

// batchMetrics adds up the producer's record batches (kgo.HookProduceBatchWritten). kgo calls
// the hook from a goroutine of its own, after the records' promises may have run, so produce
// waits until the hook has counted every record (all is closed then).
type batchMetrics struct {
	records, uncompressed, compressed atomic.Int64
	want                              int64 // set before producing
	all                               chan struct{}
	closeAll                          sync.Once
}

func newBatchMetrics(records int) *batchMetrics {
	return &batchMetrics{want: int64(records), all: make(chan struct{})}
}

func (m *batchMetrics) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, bm kgo.ProduceBatchMetrics) {
	m.uncompressed.Add(int64(bm.UncompressedBytes))
	m.compressed.Add(int64(bm.CompressedBytes))
	if m.records.Add(int64(bm.NumRecords)) >= m.want {
		m.closeAll.Do(func() { close(m.all) })
	}
}

// produce writes the cell's records, record i to partition i%parts, in record batches of at
// most batchBytes bytes compressed with the cell's codec.
func produce(ctx context.Context, seed string, ce cell, batchBytes int, bm *batchMetrics) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seed),
		kgo.DefaultProduceTopic(benchTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codecs[ce.compression]),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
		kgo.MaxBufferedRecords(100_000),
		kgo.WithHooks(bm),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	values := newValueMaker(ce.valueBytes)
	if err := benchkit.ProduceValues(ctx, cl, "", ce.partitions, ce.records, func(int) []byte { return values.next() }); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	select {
	case <-bm.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the batch hook to count %d records: %w", ce.records, ctx.Err())
	}
}

// codecs are the -compression names.
var codecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
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

func allocsPerRecord(r clientResult) float64 {
	return float64(r.Mallocs) / float64(r.Records)
}

func per1000(n int64, records int) float64 {
	return float64(n) * 1000 / float64(records)
}

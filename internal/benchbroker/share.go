package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/groupconfig"

	"github.com/kshare/kshare/internal/benchkit"
)

// The share workload: records produced as in the plain workload, then consumed by one franz-go
// share consumer that accepts every record explicitly. Only the consume phase is measured.

// shareGroupID is the share group of the share and lock-expiry workloads; every run uses a
// fresh broker, so it is always new.
const shareGroupID = "bench-share"

// shareMeasurement is what one run of the share workload against one broker gave.
type shareMeasurement struct {
	records       int
	consume       time.Duration // wall time from creating the share consumer to the last ack flushed
	brokerConsume time.Duration // broker CPU time in that phase
	client        time.Duration // this process's CPU time in that phase
	redelivered   int           // records received again after being received once (lock expiry)
}

func (m shareMeasurement) rate() float64 { return float64(m.records) / m.consume.Seconds() }

func (m shareMeasurement) perRecord(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(m.records)
}

func (m shareMeasurement) String() string {
	return fmt.Sprintf("share consume %v (%.0f rec/s), broker CPU %v = %.3f µs/rec, client CPU %.3f µs/rec, %d redelivered",
		m.consume.Round(time.Millisecond), m.rate(), m.brokerConsume.Round(time.Millisecond),
		m.perRecord(m.brokerConsume), m.perRecord(m.client), m.redelivered)
}

func medianShare(ms []shareMeasurement) shareMeasurement {
	out := shareMeasurement{
		records:       ms[0].records,
		consume:       benchkit.MedianOf(ms, func(m shareMeasurement) time.Duration { return m.consume }),
		brokerConsume: benchkit.MedianOf(ms, func(m shareMeasurement) time.Duration { return m.brokerConsume }),
		client:        benchkit.MedianOf(ms, func(m shareMeasurement) time.Duration { return m.client }),
	}
	for _, m := range ms {
		out.redelivered = max(out.redelivered, m.redelivered)
	}
	return out
}

// shareResult is a row of the share table.
type shareResult = row[shareMeasurement]

// runShare runs the share workload for every partition count against every program, c.runs
// times each, and returns the median of each.
func runShare(ctx context.Context, c *config, programs []*brokerProgram) ([]shareResult, []string, error) {
	var ws []workload
	for _, parts := range c.partitions {
		ws = append(ws, workload{size: 16, records: c.recordsShare, partitions: parts})
	}
	return runWorkloads(ctx, c, programs, ws, "share ", measureShare, medianShare)
}

// measureShare produces w's records to a fresh broker started from p, makes the share group
// start at the earliest offset, and measures one share consumer taking and accepting them all.
func measureShare(ctx context.Context, c *config, p *brokerProgram, w workload) (m shareMeasurement, err error) {
	const topic = "bench"
	bp, err := startBroker(ctx, p, c.clusterBrokers, topic, w.partitions, c.brokerConfigs, c.verbose)
	if err != nil {
		return m, err
	}
	defer benchkit.StopBroker(bp, &err)
	if _, err := produce(ctx, bp.Seeds, topic, w, c.client); err != nil {
		return m, err
	}
	if err := groupconfig.SetOn(ctx, bp.Seeds, shareGroupID, "share.auto.offset.reset", "earliest"); err != nil {
		return m, err
	}

	pid, self := bp.Pid(), os.Getpid()
	b0, _, err := benchkit.ProcessCPU(pid)
	if err != nil {
		return m, err
	}
	c0, _, err := benchkit.ProcessCPU(self)
	if err != nil {
		return m, err
	}
	var b1, c1 time.Duration
	var sampleErr error
	m.consume, m.redelivered, err = shareConsume(ctx, bp.Seeds, topic, w, c, func() {
		if b1, _, sampleErr = benchkit.ProcessCPU(pid); sampleErr == nil {
			c1, _, sampleErr = benchkit.ProcessCPU(self)
		}
	})
	if err != nil {
		return m, err
	}
	if sampleErr != nil {
		return m, sampleErr
	}
	m.records = w.records
	m.brokerConsume, m.client = b1-b0, c1-c0
	return m, nil
}

// shareConsume joins shareGroupID with one franz-go share consumer subscribed to topic, and
// polls until every one of w.records records (w.size bytes each, offsets 0 up in every
// partition) was received, accepting each record as it comes. It flushes the acks, calls done,
// then leaves the group. It returns the time from creating the client to the flushed acks, and
// how many records came more than once (a lock that expired before its accept arrived).
func shareConsume(ctx context.Context, seeds []string, topic string, w workload, c *config, done func()) (time.Duration, int, error) {
	var progress atomic.Int64
	ctx, cancel := phaseContext(ctx, c.client, "share consume", &progress, w.records)
	defer cancel()

	var (
		ackMu  sync.Mutex
		ackErr error
	)
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ShareGroup(shareGroupID),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				ackMu.Lock()
				if ackErr == nil {
					ackErr = err
				}
				ackMu.Unlock()
			}
		}),
	}
	if c.shareMaxRecords > 0 {
		opts = append(opts, kgo.ShareMaxRecords(int32(c.shareMaxRecords)))
	}
	if c.shareStrict {
		opts = append(opts, kgo.ShareMaxRecordsStrict())
	}
	start := time.Now()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()

	seen := make(map[int32][]bool) // per partition, by offset
	var got, again int
	for got < w.records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, 0, context.Cause(ctx)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("share fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return 0, 0, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckAccept)
			if ferr != nil {
				return
			}
			s := seen[r.Partition]
			if r.Offset < 0 || r.Offset >= int64(w.records) {
				ferr = fmt.Errorf("partition %d: offset %d, produced %d records in all", r.Partition, r.Offset, w.records)
				return
			}
			if len(r.Value) != w.size {
				ferr = fmt.Errorf("partition %d offset %d: value of %d bytes, want %d", r.Partition, r.Offset, len(r.Value), w.size)
				return
			}
			for int64(len(s)) <= r.Offset {
				s = append(s, false)
			}
			if s[r.Offset] {
				again++
			} else {
				s[r.Offset] = true
				got++
			}
			seen[r.Partition] = s
		})
		if ferr != nil {
			return 0, 0, ferr
		}
		progress.Store(int64(got))
	}
	if err := cl.FlushAcks(ctx); err != nil {
		return 0, 0, fmt.Errorf("flushing acks: %w", context.Cause(ctx))
	}
	elapsed := time.Since(start)
	done()
	ackMu.Lock()
	defer ackMu.Unlock()
	if ackErr != nil {
		return 0, 0, fmt.Errorf("acknowledging: %w", ackErr)
	}
	return elapsed, again, nil
}

// printShareReport writes the share table and the testbroker/kfake comparison.
func printShareReport(out io.Writer, c *config, results []shareResult) {
	if len(results) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	maxRecords := "kgo's default (500)"
	if c.shareMaxRecords > 0 {
		maxRecords = fmt.Sprint(c.shareMaxRecords)
	}
	if c.shareStrict {
		maxRecords += ", ShareMaxRecordsStrict"
	}
	p("\n### Share consume\n\n")
	p("Records produced first (as above), then group %s set to share.auto.offset.reset=earliest, then one franz-go share consumer "+
		"(ShareMaxRecords %s) polls and calls Record.Ack(AckAccept) on every record until all are accepted, and flushes the acks. "+
		"Broker CPU is read just before the consumer is created and just after the acks are flushed.\n\n", shareGroupID, maxRecords)
	p("| broker | record | partitions | records | share consume rec/s | broker CPU µs/rec | client CPU µs/rec | redelivered |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		m := r.m
		p("| %s | %s | %d | %d | %s | %.3f | %.2f | %d |\n", r.broker, sizeName(r.w.size), r.w.partitions, r.w.records,
			benchkit.Thousands(m.rate()), m.perRecord(m.brokerConsume), m.perRecord(m.client), m.redelivered)
	}
	var cmp []string
	versusKfake(results, "testbroker", func(tb, kf shareResult) {
		cpu := tb.m.perRecord(tb.m.brokerConsume) / kf.m.perRecord(kf.m.brokerConsume)
		rate := tb.m.rate() / kf.m.rate()
		cmp = append(cmp, fmt.Sprintf("| %s | %d | %.2f | %.2f | %s |", sizeName(tb.w.size), tb.w.partitions, cpu, rate, benchkit.YesNo(cpu <= 0.5)))
	})
	if len(cmp) > 0 {
		p("\nGoal: testbroker at most half of kfake's broker CPU per share-consumed record.\n\n")
		p("| record | partitions | broker CPU testbroker/kfake | rec/s testbroker/kfake | goal met |\n")
		p("|---|---:|---:|---:|---|\n")
		p("%s\n", strings.Join(cmp, "\n"))
	}
}

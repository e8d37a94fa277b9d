package kshareprom_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
)

// BenchmarkMetrics is shareconsumer's BenchmarkHooks with the real hook: the same workloads
// (poll: 200,000 records of 16 B accepted one by one in explicit mode, from the first records
// polled to CommitSync; process: Process with a handler that returns nil, from its start to
// the last outcome), against a testbroker process, without hooks and with a Metrics of its
// own registry per consumer. It reports allocations, bytes and time per record. Run it with
//
//	go test github.com/kshare/kshare/shareconsumer/kshareprom/... -run '^$' -bench . -benchtime 1x -count 5
func BenchmarkMetrics(b *testing.B) {
	const records = 200_000
	bb := startBenchBroker(b)
	bb.produce(b, records)
	// The first group to read the log is slower: it is not measured.
	warm := bb.newConsumer(b, shareconsumer.ExplicitAcknowledgement())
	pollAll(b, warm, records)
	closeConsumer(warm)
	for _, hc := range []struct {
		name  string
		hooks func() []shareconsumer.Opt
	}{
		{"none", func() []shareconsumer.Opt { return nil }},
		{"kshareprom", func() []shareconsumer.Opt {
			return []shareconsumer.Opt{shareconsumer.Hooks(kshareprom.New("kshare"))}
		}},
	} {
		b.Run("poll/hooks="+hc.name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, append(hc.hooks(), shareconsumer.ExplicitAcknowledgement())...)
				report(b, records, pollAll(b, c, records))
				closeConsumer(c)
			}
		})
		b.Run("process/hooks="+hc.name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, hc.hooks()...)
				report(b, records, processAll(b, c, records))
				closeConsumer(c)
			}
		})
	}
}

// The harness below is a short copy of shareconsumer's (memory_bench_test.go,
// hooks_bench_test.go), which is in that package's tests.

const benchTopic = "bench"

type benchBroker struct {
	proc   *brokerproc.Proc
	groups atomic.Int64
}

// startBenchBroker builds testbroker from the kshare module and runs it as a process with
// benchTopic of one partition and a lock limit of 10,000, stopped when the benchmark ends.
func startBenchBroker(b *testing.B) *benchBroker {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := brokerproc.ModuleRoot(ctx) // this module's: kshare's is two levels up
	if err != nil {
		b.Fatal(err)
	}
	bin, err := brokerproc.Build(ctx, filepath.Join(root, "..", ".."), b.TempDir(), "testbroker", brokerproc.TestbrokerPkg)
	if err != nil {
		b.Fatal(err)
	}
	proc, err := brokerproc.Start(ctx, brokerproc.Options{
		Name: "testbroker", Bin: bin, Brokers: 1, Topic: benchTopic, Partitions: 1,
		Configs: []string{ // as shareconsumer's benchmarks
			"group.share.max.partition.max.record.locks=10000",
			"group.share.partition.max.record.locks=10000",
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _, _ = proc.Stop(10 * time.Second) })
	return &benchBroker{proc: proc}
}

// produce writes n records of 16-byte values in record batches of up to 16 KiB.
func (bb *benchBroker) produce(b *testing.B, n int) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bb.proc.Seeds...), kgo.DefaultProduceTopic(benchTopic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16384),
		kgo.ProducerLinger(time.Second), kgo.MaxBufferedRecords(n+1))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Value: fmt.Appendf(nil, "value-%010d", i)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
}

// newConsumer creates a consumer of benchTopic in a new group that starts at the earliest offset.
func (bb *benchBroker) newConsumer(b *testing.B, opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	b.Helper()
	group := fmt.Sprintf("bench-%d", bb.groups.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := groupconfig.SetOn(ctx, bb.proc.Seeds, group, "share.auto.offset.reset", "earliest"); err != nil {
		b.Fatal(err)
	}
	c, err := shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(kgo.SeedBrokers(bb.proc.Seeds...)),
		shareconsumer.Group(group), shareconsumer.Topics(benchTopic),
	}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func closeConsumer(c *shareconsumer.Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// measured is what a workload allocated, in objects and bytes, and the time it took.
type measured struct {
	allocs, bytes uint64
	elapsed       time.Duration
}

func report(b *testing.B, n int, m measured) {
	b.ReportMetric(float64(m.allocs)/float64(n), "allocs/rec")
	b.ReportMetric(float64(m.bytes)/float64(n), "B/rec")
	b.ReportMetric(float64(m.elapsed.Nanoseconds())/float64(n), "ns/rec")
}

// pollAll accepts n records one by one and commits, measured from the first records polled.
func pollAll(b *testing.B, c *shareconsumer.Consumer, n int) measured {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ms0, ms1 runtime.MemStats
	var t0 time.Time
	for got := 0; got < n; {
		recs, err := c.Poll(ctx)
		if err != nil {
			b.Fatalf("Poll after %d records: %v", got, err)
		}
		if got == 0 && len(recs) > 0 {
			runtime.ReadMemStats(&ms0)
			t0 = time.Now()
		}
		for _, r := range recs {
			if err := c.Acknowledge(r, acktype.Accept); err != nil {
				b.Fatal(err)
			}
		}
		got += len(recs)
	}
	res, err := c.CommitSync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for tp, err := range res {
		if err != nil {
			b.Fatalf("accepting %v: %v", tp, err)
		}
	}
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&ms1)
	return measured{ms1.Mallocs - ms0.Mallocs, ms1.TotalAlloc - ms0.TotalAlloc, elapsed}
}

// processAll runs Process with a handler that returns nil until n records were handled,
// measured from Process's start.
func processAll(b *testing.B, c *shareconsumer.Consumer, n int) measured {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var done atomic.Int64
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	t0 := time.Now()
	err := c.Process(ctx, func(context.Context, *shareconsumer.Record) error { return nil },
		shareconsumer.OnRecordDone(func(shareconsumer.RecordOutcome) {
			if done.Add(1) == int64(n) {
				cancel()
			}
		}))
	if err != nil {
		b.Fatal(err)
	}
	if got := done.Load(); got < int64(n) {
		b.Fatalf("Process handled %d records, want %d: %v", got, n, ctx.Err())
	}
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&ms1)
	return measured{ms1.Mallocs - ms0.Mallocs, ms1.TotalAlloc - ms0.TotalAlloc, elapsed}
}

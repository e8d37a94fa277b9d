// Package benchhooks is the harness of the plugins' benchmarks (kshareprom's BenchmarkMetrics,
// kshareotel's BenchmarkOtel): the workloads of shareconsumer's BenchmarkHooks against a
// testbroker process, run without hooks and with a plugin. shareconsumer's own benchmark keeps
// its harness in its package's tests, which other modules cannot import.
package benchhooks

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
)

// Records is how many records each workload reads.
const Records = 200_000

const topic = "bench"

// Case is one way to run the workloads: its name in the benchmark's, and the options that add
// its hooks (a new hook value per consumer; nil for none).
type Case struct {
	Name  string
	Hooks func() []shareconsumer.Opt
}

// Run starts a testbroker process (built from kshareRoot, the kshare module's directory) with
// Records records of 16 B in batches of up to 16 KiB, reads them once unmeasured (the first
// group to read the log is slower), then for each case runs b.Run("poll/hooks=NAME") (records
// accepted one by one in explicit mode, from the first records polled to CommitSync) and
// b.Run("process/hooks=NAME") (Process with a handler that returns nil, from its start to the
// last outcome), each reporting allocs/rec, B/rec and ns/rec.
func Run(b *testing.B, kshareRoot string, cases ...Case) {
	bb := startBroker(b, kshareRoot)
	bb.produce(b, Records)
	warm := bb.newConsumer(b, shareconsumer.ExplicitAcknowledgement())
	pollAll(b, warm, Records)
	closeConsumer(warm)
	for _, hc := range cases {
		hooks := func() []shareconsumer.Opt {
			if hc.Hooks == nil {
				return nil
			}
			return hc.Hooks()
		}
		b.Run("poll/hooks="+hc.Name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, append(hooks(), shareconsumer.ExplicitAcknowledgement())...)
				report(b, Records, pollAll(b, c, Records))
				closeConsumer(c)
			}
		})
		b.Run("process/hooks="+hc.Name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, hooks()...)
				report(b, Records, processAll(b, c, Records))
				closeConsumer(c)
			}
		})
	}
}

type broker struct {
	proc   *brokerproc.Proc
	groups atomic.Int64
}

// startBroker runs testbroker as a process with the topic of one partition and a lock limit of
// 10,000 (as shareconsumer's benchmarks), stopped when the benchmark ends.
func startBroker(b *testing.B, kshareRoot string) *broker {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := brokerproc.Build(ctx, kshareRoot, b.TempDir(), "testbroker", brokerproc.TestbrokerPkg)
	if err != nil {
		b.Fatal(err)
	}
	proc, err := brokerproc.Start(ctx, brokerproc.Options{
		Name: "testbroker", Bin: bin, Brokers: 1, Topic: topic, Partitions: 1,
		Configs: []string{
			"group.share.max.partition.max.record.locks=10000",
			"group.share.partition.max.record.locks=10000",
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _, _ = proc.Stop(10 * time.Second) })
	return &broker{proc: proc}
}

// produce writes n records of 16-byte values in record batches of up to 16 KiB.
func (bb *broker) produce(b *testing.B, n int) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bb.proc.Seeds...), kgo.DefaultProduceTopic(topic),
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

// newConsumer creates a consumer of the topic in a new group that starts at the earliest offset.
func (bb *broker) newConsumer(b *testing.B, opts ...shareconsumer.Opt) *shareconsumer.Consumer {
	b.Helper()
	group := fmt.Sprintf("bench-%d", bb.groups.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := groupconfig.SetOn(ctx, bb.proc.Seeds, group, "share.auto.offset.reset", "earliest"); err != nil {
		b.Fatal(err)
	}
	c, err := shareconsumer.New(append([]shareconsumer.Opt{
		shareconsumer.ClientOpts(kgo.SeedBrokers(bb.proc.Seeds...)),
		shareconsumer.Group(group), shareconsumer.Topics(topic),
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

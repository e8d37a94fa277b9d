package shareconsumer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/internal/groupconfig"
)

// The memory and allocation benchmarks run testbroker as a process of its own, so that the
// heap and the allocations they measure are the consumer's alone. Run them with
//
//	go test ./shareconsumer -run '^$' -bench 'Held|AcceptLoop' -benchtime 1x -count 3
//
// Each iteration builds its state from nothing (a group of its own), so -benchtime 1x gives one
// measurement per -count.

const (
	benchTopic = "bench"
	// heldRecords is how many records the held-memory benchmarks hold: one record batch of
	// that many records, at most the partition's lock limit (set to it).
	heldRecords = 10_000
)

// benchBroker is a testbroker process shared by a benchmark's iterations.
type benchBroker struct {
	proc   *brokerproc.Proc
	groups atomic.Int64
}

// startBenchBroker builds and starts testbroker as a process with benchTopic of one partition
// and a lock limit of heldRecords, stopped when the benchmark ends.
func startBenchBroker(b *testing.B) *benchBroker {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := brokerproc.ModuleRoot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	bin, err := brokerproc.Build(ctx, root, b.TempDir(), "testbroker", brokerproc.TestbrokerPkg)
	if err != nil {
		b.Fatal(err)
	}
	locks := fmt.Sprint(heldRecords)
	proc, err := brokerproc.Start(ctx, brokerproc.Options{
		Name: "testbroker", Bin: bin, Brokers: 1, Topic: benchTopic, Partitions: 1,
		Configs: []string{
			"group.share.max.partition.max.record.locks=" + locks,
			"group.share.partition.max.record.locks=" + locks,
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _, _ = proc.Stop(10 * time.Second) })
	return &benchBroker{proc: proc}
}

// produce writes n records of 16-byte values in record batches of up to batchBytes bytes,
// and returns how many batches the producer wrote.
func (bb *benchBroker) produce(b *testing.B, n, batchBytes int) int {
	b.Helper()
	var batches countBatches
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bb.proc.Seeds...),
		kgo.DefaultProduceTopic(benchTopic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
		kgo.ProducerLinger(time.Second),
		kgo.MaxBufferedRecords(n+1),
		kgo.WithHooks(&batches),
	)
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
	return int(batches.n.Load())
}

type countBatches struct{ n atomic.Int64 }

func (c *countBatches) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	c.n.Add(1)
}

// newConsumer creates a consumer of benchTopic in a new group starting at the earliest
// offset (reset "earliest") or at the log's end ("latest"), with kgo options kopts.
func (bb *benchBroker) newConsumer(b *testing.B, reset string, kopts []kgo.Opt, opts ...Opt) *Consumer {
	b.Helper()
	group := fmt.Sprintf("bench-%d", bb.groups.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := groupconfig.SetOn(ctx, bb.proc.Seeds, group, "share.auto.offset.reset", reset); err != nil {
		b.Fatal(err)
	}
	kopts = append([]kgo.Opt{kgo.SeedBrokers(bb.proc.Seeds...)}, kopts...)
	c, err := New(append([]Opt{ClientOpts(kopts...), Group(group), Topics(benchTopic)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func closeConsumer(c *Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// heapInUse returns the bytes of live heap objects after two collections.
func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// pollAll polls c until it returned n records, and returns them.
func pollAll(b *testing.B, c *Consumer, n int) []*Record {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*Record
	for len(out) < n {
		recs, err := c.Poll(ctx)
		if err != nil {
			b.Fatalf("Poll after %d records: %v", len(out), err)
		}
		out = append(out, recs...)
	}
	return out
}

// BenchmarkHeldMemory reports the heap a consumer holds, measured with runtime.ReadMemStats
// after collections, against the heap before the consumer was created, divided by the records
// held (heldRecords records of 16-byte values in one record batch; the broker acquires it
// whole):
//
//   - buffered: a Poll with MaxPollRecords(1) returned one record; the rest of the acquired
//     batch waits in the consumer for later Polls;
//   - polled: Polls returned every record, none acknowledged (explicit mode); B/rec is with the
//     application's slice of the records dropped (what the consumer itself keeps),
//     B/rec-app with the slice kept;
//   - renewed: every polled record acknowledged with acktype.Renew and the renewals committed
//     (CommitSync); the consumer keeps them to return them again;
//   - idle: a subscribed consumer with its partition assigned and no records, waiting in
//     Poll; B/consumer.
func BenchmarkHeldMemory(b *testing.B) {
	bb := startBenchBroker(b)
	if n := bb.produce(b, heldRecords, 1<<20); n != 1 {
		b.Fatalf("the producer wrote %d batches, want 1", n)
	}
	b.Run("buffered", func(b *testing.B) {
		for b.Loop() {
			base := heapInUse()
			c := bb.newConsumer(b, "earliest", nil, ExplicitAcknowledgement(), MaxPollRecords(1))
			recs := pollAll(b, c, 1)
			held := heapInUse() - base
			runtime.KeepAlive(recs)
			if n := drainBuffered(b, c, recs); n != heldRecords-1 {
				b.Fatalf("%d records were buffered, want %d", n, heldRecords-1)
			}
			closeConsumer(c)
			b.ReportMetric(float64(held)/float64(heldRecords-1), "B/rec")
		}
	})
	b.Run("polled", func(b *testing.B) {
		for b.Loop() {
			base := heapInUse()
			c := bb.newConsumer(b, "earliest", nil, ExplicitAcknowledgement(), MaxPollRecords(heldRecords))
			recs := pollAll(b, c, heldRecords)
			withApp := heapInUse() - base
			runtime.KeepAlive(recs)
			recs = nil
			held := heapInUse() - base
			closeConsumer(c)
			b.ReportMetric(float64(held)/heldRecords, "B/rec")
			b.ReportMetric(float64(withApp)/heldRecords, "B/rec-app")
		}
	})
	b.Run("renewed", func(b *testing.B) {
		for b.Loop() {
			base := heapInUse()
			c := bb.newConsumer(b, "earliest", nil, ExplicitAcknowledgement(), MaxPollRecords(heldRecords))
			recs := pollAll(b, c, heldRecords)
			for _, r := range recs {
				if err := c.Acknowledge(r, acktype.Renew); err != nil {
					b.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := c.CommitSync(ctx)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			for tp, err := range res {
				if err != nil {
					b.Fatalf("renewing %v: %v", tp, err)
				}
			}
			recs = nil
			held := heapInUse() - base
			closeConsumer(c)
			b.ReportMetric(float64(held)/heldRecords, "B/rec")
		}
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			base := heapInUse()
			var fetches shareFetches
			c := bb.newConsumer(b, "latest", []kgo.Opt{kgo.WithHooks(&fetches)})
			held := idleHeap(b, c, &fetches, base)
			closeConsumer(c)
			b.ReportMetric(float64(held), "B/consumer")
		}
	})
}

// drainBuffered accepts recs and polls c, accepting what it gets, until a Poll finds nothing
// buffered (it then waits on the broker, which has no record left to give, until its context
// ends), and returns the records the Polls got.
func drainBuffered(b *testing.B, c *Consumer, recs []*Record) int {
	b.Helper()
	n := 0
	for {
		for _, r := range recs {
			if err := c.Acknowledge(r, acktype.Accept); err != nil {
				b.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		var err error
		recs, err = c.Poll(ctx)
		cancel()
		if err != nil || len(recs) == 0 {
			return n
		}
		n += len(recs)
	}
}

// shareFetches counts the ShareFetch requests a client wrote (kgo.HookBrokerWrite).
type shareFetches struct{ n atomic.Int64 }

func (s *shareFetches) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && kmsg.Key(key) == kmsg.ShareFetch {
		s.n.Add(1)
	}
}

// idleHeap runs Poll on c in a goroutine until c is a stable member with its partition
// assigned and has written a ShareFetch, then returns the heap held above base while the
// Poll waits.
func idleHeap(b *testing.B, c *Consumer, fetches *shareFetches, base int64) int64 {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := c.Poll(ctx); err != nil && ctx.Err() == nil {
				b.Errorf("Poll: %v", err)
				return
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for st := c.Status(); st.State != StateStable || len(st.Assigned) == 0 || fetches.n.Load() == 0; st = c.Status() {
		if time.Now().After(deadline) {
			b.Fatalf("not a stable member fetching after 30s: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return heapInUse() - base
}

// BenchmarkAcceptLoop consumes records of 16-byte values (batches of up to 16 KiB, as the
// benchconsumer harness produces) in explicit mode, one Acknowledge(r, acktype.Accept) per
// record, and reports the allocations (runtime.MemStats.Mallocs), bytes allocated and time
// per record, from the first Poll that returned records to the last acknowledgements
// committed: the steady accept loop, the group join left out. With and without FetchAhead.
func BenchmarkAcceptLoop(b *testing.B) {
	const records = 200_000
	bb := startBenchBroker(b)
	bb.produce(b, records, 16384)
	for _, bc := range []struct {
		name string
		opts []Opt
	}{
		{"fetchahead", []Opt{FetchAhead()}},
		{"default", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, "earliest", nil, append([]Opt{ExplicitAcknowledgement()}, bc.opts...)...)
				allocs, bytes, elapsed := acceptAll(b, c, records)
				closeConsumer(c)
				b.ReportMetric(allocs/records, "allocs/rec")
				b.ReportMetric(bytes/records, "B/rec")
				b.ReportMetric(float64(elapsed.Nanoseconds())/records, "ns/rec")
			}
		})
	}
}

// acceptAll accepts n records one by one and commits, and returns the allocations and bytes
// allocated from the first records polled to the commit, and the time it took.
func acceptAll(b *testing.B, c *Consumer, n int) (allocs, bytes float64, elapsed time.Duration) {
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
	elapsed = time.Since(t0)
	runtime.ReadMemStats(&ms1)
	return float64(ms1.Mallocs - ms0.Mallocs), float64(ms1.TotalAlloc - ms0.TotalAlloc), elapsed
}

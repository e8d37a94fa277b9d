package shareconsumer

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// noopHook implements every hook interface and does nothing: what the consumer pays for
// hooks themselves, events built and calls made.
type noopHook struct{}

func (noopHook) OnNewConsumer(*Consumer)                                       {}
func (noopHook) OnConsumerClosed(*Consumer)                                    {}
func (noopHook) OnShareFetch(ShareFetchEvent)                                  {}
func (noopHook) OnPoll(PollEvent)                                              {}
func (noopHook) OnProcessStart(ctx context.Context, _ *Record) context.Context { return ctx }
func (noopHook) OnProcessDone(context.Context, RecordOutcome)                  {}
func (noopHook) OnAcknowledge(AcknowledgeEvent)                                {}
func (noopHook) OnRenew(RenewEvent)                                            {}
func (noopHook) OnLockLost(LockLostEvent)                                      {}
func (noopHook) OnMembership(MembershipEvent)                                  {}
func (noopHook) OnLag(LagEvent)                                                {}

// BenchmarkHooks runs the same workloads without hooks and with noopHook, and reports the
// allocations, bytes allocated and time per record, against a testbroker process (as
// BenchmarkAcceptLoop, whose measurement poll uses), after one unmeasured pass over the records:
//
//   - poll: records of 16-byte values in explicit mode, one Acknowledge(r, acktype.Accept)
//     per record, from the first Poll that returned records to the commit;
//   - process: Process with a handler that returns nil at once, from Process's start to the
//     last record's outcome (the group join included: the consumer is created first, and its
//     first ShareFetch waits for Process).
//
// Run it with
//
//	go test ./shareconsumer -run '^$' -bench Hooks -benchtime 1x -count 5
func BenchmarkHooks(b *testing.B) {
	const records = 200_000
	bb := startBenchBroker(b)
	bb.produce(b, records, 16384) // each iteration reads them all, in a group of its own
	// The first group to read the log is slower (the broker's first reads, the benchmark's
	// first allocations): it is not measured, so that the order of the cases does not count.
	warm := bb.newConsumer(b, "earliest", nil, ExplicitAcknowledgement())
	acceptAll(b, warm, records)
	closeConsumer(warm)
	for _, hc := range []struct {
		name string
		opts []Opt
	}{
		{"none", nil},
		{"noop", []Opt{Hooks(noopHook{})}},
	} {
		b.Run("poll/hooks="+hc.name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, "earliest", nil, append([]Opt{ExplicitAcknowledgement()}, hc.opts...)...)
				allocs, bytes, elapsed := acceptAll(b, c, records)
				closeConsumer(c)
				b.ReportMetric(allocs/records, "allocs/rec")
				b.ReportMetric(bytes/records, "B/rec")
				b.ReportMetric(float64(elapsed.Nanoseconds())/records, "ns/rec")
			}
		})
		b.Run("process/hooks="+hc.name, func(b *testing.B) {
			for b.Loop() {
				c := bb.newConsumer(b, "earliest", nil, hc.opts...)
				allocs, bytes, elapsed := processAll(b, c, records)
				closeConsumer(c)
				b.ReportMetric(allocs/records, "allocs/rec")
				b.ReportMetric(bytes/records, "B/rec")
				b.ReportMetric(float64(elapsed.Nanoseconds())/records, "ns/rec")
			}
		})
	}
}

// processAll runs Process on c with a handler that accepts at once until n records were
// handled, and returns the allocations and bytes allocated meanwhile, and the time it took.
func processAll(b *testing.B, c *Consumer, n int) (allocs, bytes float64, elapsed time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var done atomic.Int64
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	t0 := time.Now()
	err := c.Process(ctx, func(context.Context, *Record) error { return nil }, OnRecordDone(func(RecordOutcome) {
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
	elapsed = time.Since(t0)
	runtime.ReadMemStats(&ms1)
	return float64(ms1.Mallocs - ms0.Mallocs), float64(ms1.TotalAlloc - ms0.TotalAlloc), elapsed
}

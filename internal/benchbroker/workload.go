package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// workload is one produce-then-consume run against a fresh broker.
type workload struct {
	size       int // bytes per record value; records have no key and no headers
	records    int
	partitions int
}

func (w workload) String() string {
	return fmt.Sprintf("%s x %d records, %d partition(s)", sizeName(w.size), w.records, w.partitions)
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// clientOpts are the options both client phases share; benchmark flags add to them.
type clientOpts struct {
	linger      time.Duration
	compression kgo.CompressionCodec
	codecName   string        // compression's name, for the report
	timeout     time.Duration // for each phase
	stall       time.Duration // a phase fails once it has made no progress for this long
}

// values hands out record values: windows of one random buffer, so records differ, compress as random
// data does, and cost no allocation. The seed is fixed, so every run sends the same bytes.
type values struct {
	buf  []byte
	size int
}

const valueWindows = 4096

func newValues(size int) values {
	buf := make([]byte, valueWindows+size)
	r := rand.NewChaCha8([32]byte{'k', 's', 'h', 'a', 'r', 'e'})
	_, _ = r.Read(buf)
	return values{buf: buf, size: size}
}

func (v values) get(i int) []byte {
	off := i % valueWindows
	return v.buf[off : off+v.size : off+v.size]
}

// produce sends w.records records to topic with an idempotent producer, as fast as the client's
// buffer lets it, flushes, and returns how long that took.
func produce(ctx context.Context, seeds []string, topic string, w workload, o clientOpts) (time.Duration, error) {
	var acked atomic.Int64
	ctx, cancel := phaseContext(ctx, o, "produce", &acked, w.records)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(o.linger),
		kgo.ProducerBatchCompression(o.compression),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()

	vals := newValues(w.size)
	res := produceResults{acked: &acked}
	start := time.Now()
	for i := range w.records {
		if res.failed.Load() {
			break
		}
		// Produce blocks while the client buffers its maximum of records, so this loop runs exactly
		// as fast as the broker takes them.
		cl.Produce(ctx, &kgo.Record{Value: vals.get(i)}, res.promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, context.Cause(ctx)
	}
	elapsed := time.Since(start)
	if err := res.err(); err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		return 0, fmt.Errorf("produce: %w", err)
	}
	if n := acked.Load(); n != int64(w.records) {
		return 0, fmt.Errorf("produce: %d of %d records acknowledged", n, w.records)
	}
	return elapsed, nil
}

// consume reads topic from the start of every partition, without a group, until it has w.records
// records, and returns how long that took. It checks that every partition's offsets run 0, 1, 2, ...
// and that every value has w.size bytes, so a broker that loses, duplicates or reorders records fails.
func consume(ctx context.Context, seeds []string, topic string, w workload, o clientOpts) (time.Duration, error) {
	var progress atomic.Int64
	ctx, cancel := phaseContext(ctx, o, "consume", &progress, w.records)
	defer cancel()
	start := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()

	next := make(map[int32]int64) // the offset we expect next, per partition
	var got int
	for got < w.records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return 0, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			if want := next[r.Partition]; r.Offset != want {
				ferr = fmt.Errorf("partition %d: got offset %d, want %d", r.Partition, r.Offset, want)
			} else if len(r.Value) != w.size {
				ferr = fmt.Errorf("partition %d offset %d: value of %d bytes, want %d", r.Partition, r.Offset, len(r.Value), w.size)
			}
			next[r.Partition] = r.Offset + 1
			got++
		})
		if ferr != nil {
			return 0, ferr
		}
		progress.Store(int64(got))
	}
	elapsed := time.Since(start)
	if got != w.records {
		return 0, fmt.Errorf("consumed %d records, produced %d", got, w.records)
	}
	return elapsed, nil
}

// phaseContext returns a context for one phase: it ends after o.timeout, or with an error saying so
// once done has not moved for o.stall, so a broker that stops answering fails fast.
func phaseContext(ctx context.Context, o clientOpts, phase string, done *atomic.Int64, total int) (context.Context, context.CancelFunc) {
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, o.timeout,
		fmt.Errorf("%s: not done after %v", phase, o.timeout))
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last, moved := done.Load(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if n := done.Load(); n != last {
					last, moved = n, now
				} else if now.Sub(moved) >= o.stall {
					cancel(fmt.Errorf("%s: no progress for %v, at %d of %d records", phase, o.stall, n, total))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(nil); cancelTimeout() }
}

// produceResults counts the records a producer's promises acknowledge and keeps the first
// error one reports.
type produceResults struct {
	acked  *atomic.Int64
	failed atomic.Bool
	mu     sync.Mutex
	first  error
}

// promise is a kgo produce promise.
func (r *produceResults) promise(_ *kgo.Record, err error) {
	if err == nil {
		r.acked.Add(1)
		return
	}
	r.mu.Lock()
	if r.first == nil {
		r.first = err
	}
	r.mu.Unlock()
	r.failed.Store(true)
}

// err is the first error a promise reported, if any.
func (r *produceResults) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/benchkit"
)

// The txn workload: the plain workload's 16 B records, produced in committed transactions of
// -txn-size records by a transactional franz-go producer, then consumed with read_committed.
// Broker CPU is sampled as in the plain workload; the report puts each broker's figure next to
// its plain one from the same run, when -workloads has plain too.

// txnGoal is issue 21's bound on transactional produce and read_committed consume against the
// plain workload, broker CPU per record.
const txnGoal = 1.5

const txnID = "benchbroker-txn"

func (c *config) txnWorkloads() []workload {
	var ws []workload
	for _, p := range c.partitions {
		ws = append(ws, workload{size: 16, records: c.recordsTxn, partitions: p})
	}
	return ws
}

// measureTxn runs the txn workload w against a fresh broker started from p.
func measureTxn(ctx context.Context, c *config, p *brokerProgram, w workload) (measurement, error) {
	produce := func(ctx context.Context, seeds []string, topic string, w workload, o clientOpts) (time.Duration, error) {
		return produceTxn(ctx, seeds, topic, w, o, c.txnSize)
	}
	return measurePhases(ctx, c, p, w, produce, consumeCommitted)
}

// produceTxn produces w.records records to topic in transactions of size records each (the
// last may be smaller), committing each, and returns how long that took. A broker that refuses
// transactions fails it at once, with the broker's answer.
func produceTxn(ctx context.Context, seeds []string, topic string, w workload, o clientOpts, size int) (time.Duration, error) {
	var acked atomic.Int64
	ctx, cancel := phaseContext(ctx, o, "transactional produce", &acked, w.records)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(o.linger),
		kgo.ProducerBatchCompression(o.compression),
		kgo.TransactionalID(txnID),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := checkTransactions(ctx, cl); err != nil {
		return 0, err
	}

	vals := newValues(w.size)
	res := produceResults{acked: &acked}
	start := time.Now()
	for i := 0; i < w.records; i += size {
		if err := cl.BeginTransaction(); err != nil {
			return 0, fmt.Errorf("transactional produce: begin: %w", err)
		}
		for j := i; j < min(i+size, w.records); j++ {
			cl.Produce(ctx, &kgo.Record{Value: vals.get(j)}, res.promise)
		}
		// kgo ends a transaction only after its records are flushed.
		if err := cl.Flush(ctx); err != nil {
			return 0, context.Cause(ctx)
		}
		if err := res.err(); err != nil {
			return 0, fmt.Errorf("transactional produce: %w", err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			return 0, fmt.Errorf("transactional produce: commit: %w", err)
		}
	}
	elapsed := time.Since(start)
	if n := acked.Load(); n != int64(w.records) {
		return 0, fmt.Errorf("transactional produce: %d of %d records acknowledged", n, w.records)
	}
	return elapsed, nil
}

// checkTransactions asks the cluster for the transaction coordinator of txnID, as the producer's
// first step does, so that a broker without transactions fails with its own answer instead of a
// client retrying until the stall limit.
func checkTransactions(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey = txnID
	req.CoordinatorKeys = []string{txnID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("the broker refuses transactions: FindCoordinator for a transactional id: %w", err)
	}
	code, msg := resp.ErrorCode, resp.ErrorMessage
	if len(resp.Coordinators) > 0 {
		code, msg = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].ErrorMessage
	}
	if code != 0 {
		name := fmt.Sprintf("error code %d", code)
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(code), &ke) {
			name = ke.Message
		}
		if msg != nil && *msg != "" {
			name += " (" + *msg + ")"
		}
		return fmt.Errorf("the broker refuses transactions: FindCoordinator for a transactional id answered %s", name)
	}
	return nil
}

// consumeCommitted reads topic with read_committed from the start of every partition, without a
// group, until it has w.records records, and returns how long that took. Offsets rise within each
// partition but skip the commit markers, so only their order and the record count are checked.
func consumeCommitted(ctx context.Context, seeds []string, topic string, w workload, o clientOpts) (time.Duration, error) {
	var progress atomic.Int64
	ctx, cancel := phaseContext(ctx, o, "read_committed consume", &progress, w.records)
	defer cancel()
	start := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()

	next := make(map[int32]int64) // the lowest offset we accept next, per partition
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
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			if r.Offset < next[r.Partition] {
				ferr = fmt.Errorf("partition %d: got offset %d, want %d or above", r.Partition, r.Offset, next[r.Partition])
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
	if got != w.records {
		return 0, fmt.Errorf("consumed %d records, produced %d", got, w.records)
	}
	return time.Since(start), nil
}

// printTxnReport writes the txn workload's table: each broker's figures, its plain figure of
// the same run (same partitions, 16 B records) and their ratio, and the ratio to kfake.
func printTxnReport(out io.Writer, c *config, results, plain []result) {
	if len(results) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n### Transactions: produce in transactions, consume with read_committed\n\n")
	p("16 B records produced by a transactional kgo producer in transactions of %d records, each flushed and committed, "+
		"then consumed with read_committed as the plain workload consumes. Plain is the plain workload's broker CPU per record in this run "+
		"(16 B, same partitions; `-workloads plain,txn`). Goal: txn/plain at most %.1f.\n\n", c.txnSize, txnGoal)
	p("| broker | partitions | records | produce rec/s | consume rec/s | broker CPU µs/rec | produce µs/rec | consume µs/rec | plain µs/rec | txn/plain | goal met | broker/kfake |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, r := range results {
		m := r.m
		cpu := m.perRecord(m.brokerBoth)
		plainCPU, ratio, met := "-", "-", "-"
		for _, pl := range plain {
			if pl.broker == r.broker && pl.w.size == r.w.size && pl.w.partitions == r.w.partitions {
				pc := pl.m.perRecord(pl.m.brokerBoth)
				plainCPU, ratio, met = fmt.Sprintf("%.3f", pc), fmt.Sprintf("%.2f", cpu/pc), benchkit.YesNo(cpu/pc <= txnGoal)
			}
		}
		vsKfake := "-"
		if r.broker != "kfake" {
			versusKfake(results, r.broker, func(tb, kf result) {
				if tb.w == r.w {
					vsKfake = fmt.Sprintf("%.2f", cpu/kf.m.perRecord(kf.m.brokerBoth))
				}
			})
		}
		p("| %s | %d | %d | %s | %s | %.3f | %.3f | %.3f | %s | %s | %s | %s |\n", r.broker, r.w.partitions, r.w.records,
			benchkit.Thousands(m.produceRate()), benchkit.Thousands(m.consumeRate()), cpu,
			m.perRecord(m.brokerProduce), m.perRecord(m.brokerConsume), plainCPU, ratio, met, vsKfake)
	}
}

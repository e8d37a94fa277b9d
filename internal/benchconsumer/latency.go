package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/shareconsumer"
)

// The latency workload: one child process runs a consumer that waits in Poll and a producer
// that produces one record at a time, at random intervals, each record's value carrying the
// time its produce call started, on the process's monotonic clock. The consumer's goroutine
// takes the time each record's Poll returned. Producer and consumer share the process, so the
// two times come from one clock.

const (
	latencyTopic = "latency"
	// latencyValueBytes is the size of a latency record's value: the run's nonce (so that
	// records of another client's run are ignored), the sample's index (warmupIndex for the
	// records that wait for the consumer to join) and the produce call's start, 8 bytes each.
	latencyValueBytes = 24
	warmupIndex       = math.MaxUint64
)

// latencyRow is one client's latency run.
type latencyRow struct {
	broker     string
	partitions int
	client     string
	res        latencyResult
}

// latencyResult is what a latency child reports, in nanoseconds.
type latencyResult struct {
	Client   string `json:"client"`
	Samples  int    `json:"samples"`
	P50Ns    int64  `json:"p50_ns"` // produce call start to the Poll returning the record
	P99Ns    int64  `json:"p99_ns"`
	MaxNs    int64  `json:"max_ns"`
	AckP50Ns int64  `json:"ack_p50_ns"` // produce call start to the produce promise
	AckP99Ns int64  `json:"ack_p99_ns"`
}

// runLatency starts a broker process with the latency topic and runs every client's latency
// child against it, each with a share group of its own (share.auto.offset.reset latest: a
// client sees only the records produced after it joined).
func runLatency(ctx context.Context, c parentConfig, self, name, bin string, parts int) (out []latencyRow, err error) {
	bp, err := benchkit.StartBroker(ctx, brokerproc.Options{Name: name, Bin: bin, Brokers: 1, Topic: latencyTopic, Partitions: parts}, c.verbose)
	if err != nil {
		return nil, err
	}
	defer benchkit.StopBroker(bp, &err)
	for _, client := range c.clients {
		args := []string{
			"-client=" + client, "-latency", "-seed", bp.Seeds[0], "-topic", latencyTopic, "-group", "latency-" + client,
			"-partitions", strconv.Itoa(parts), "-samples", strconv.Itoa(c.samples),
			"-interval-min", c.intervalMin.String(), "-interval-max", c.intervalMax.String(),
		}
		if c.profileDir != "" {
			args = append(args, "-cpuprofile", filepath.Join(c.profileDir, fmt.Sprintf("%s-%dp-latency-%s.pprof", name, parts, client)))
		}
		fmt.Fprintf(os.Stderr, "%s, %d partitions: latency, %s\n", name, parts, client)
		var runs []latencyResult
		for i := range c.count {
			a := slices.Clone(args)
			if i > 0 {
				a[slices.Index(a, "-group")+1] += "-" + strconv.Itoa(i+1)
				if j := slices.Index(a, "-cpuprofile"); j >= 0 {
					a[j+1] = strings.TrimSuffix(a[j+1], ".pprof") + "-" + strconv.Itoa(i+1) + ".pprof"
				}
			}
			var res latencyResult
			if err := runChild(ctx, self, a, c.verbose, &res); err != nil {
				return out, fmt.Errorf("%s: %w", client, err)
			}
			runs = append(runs, res)
		}
		res := benchkit.MedianBy(runs, func(r latencyResult) int64 { return r.P50Ns })
		fmt.Fprintf(os.Stderr, "  p50 %v, p99 %v, max %v; produce ack p50 %v\n", time.Duration(res.P50Ns), time.Duration(res.P99Ns),
			time.Duration(res.MaxNs), time.Duration(res.AckP50Ns))
		out = append(out, latencyRow{broker: name, partitions: parts, client: client, res: res})
	}
	return out, nil
}

// latencyConsumer is a consumer of the latency workload: poll waits for records, accepts
// them (share consumers) and returns their values.
type latencyConsumer interface {
	poll(ctx context.Context) ([][]byte, error)
	close()
}

// runLatencyClient runs the latency workload's child: it waits until the consumer gets a
// warm-up record, then produces c.samples records and times each to its Poll.
func runLatencyClient(ctx context.Context, c clientConfig) (latencyResult, error) {
	res := latencyResult{Client: c.client, Samples: c.samples}
	base := time.Now()
	nonce := uint64(base.UnixNano())
	lc, err := newLatencyConsumer(c)
	if err != nil {
		return res, err
	}
	defer lc.close()
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(c.seed),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return res, err
	}
	defer prod.Close()

	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	lat := make([]int64, c.samples) // by index, produce start to Poll; written by the poll goroutine
	warm, done, pollErr := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var polling sync.WaitGroup
	polling.Go(func() {
		got, warmed := 0, false
		seen := make([]bool, c.samples)
		for got < c.samples {
			vals, err := lc.poll(pollCtx)
			now := int64(time.Since(base))
			if err != nil {
				pollErr <- err
				return
			}
			for _, v := range vals {
				if len(v) != latencyValueBytes || binary.BigEndian.Uint64(v) != nonce {
					continue
				}
				i := binary.BigEndian.Uint64(v[8:])
				if i == warmupIndex {
					if !warmed {
						warmed = true
						close(warm)
					}
					continue
				}
				if i < uint64(c.samples) && !seen[i] {
					seen[i] = true
					lat[i] = now - int64(binary.BigEndian.Uint64(v[16:]))
					got++
				}
			}
		}
		close(done)
	})
	defer polling.Wait()
	defer stopPoll()

	value := func(i uint64) []byte {
		v := make([]byte, latencyValueBytes)
		binary.BigEndian.PutUint64(v, nonce)
		binary.BigEndian.PutUint64(v[8:], i)
		binary.BigEndian.PutUint64(v[16:], uint64(time.Since(base)))
		return v
	}
	// The consumer joins and starts fetching at the log's end: produce warm-up records until
	// one arrives, then let the consumer settle back into Poll.
	for warmed := false; !warmed; {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: value(warmupIndex)}).FirstErr(); err != nil {
			return res, fmt.Errorf("producing a warm-up record: %w", err)
		}
		select {
		case <-warm:
			warmed = true
		case <-time.After(200 * time.Millisecond):
		case err := <-pollErr:
			return res, fmt.Errorf("polling: %w", err)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	time.Sleep(200 * time.Millisecond)

	acks := make([]int64, c.samples)
	var (
		produced sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	rng := rand.New(rand.NewPCG(3, 4))
	span := int64(c.intervalMax - c.intervalMin)
	for i := range c.samples {
		time.Sleep(c.intervalMin + time.Duration(rng.Int64N(span+1)))
		start := time.Since(base)
		produced.Add(1)
		prod.Produce(ctx, &kgo.Record{Partition: int32(i % c.partitions), Value: value(uint64(i))}, func(_ *kgo.Record, err error) {
			acks[i] = int64(time.Since(base) - start)
			if err != nil {
				mu.Lock()
				firstErr = firstOf(firstErr, err)
				mu.Unlock()
			}
			produced.Done()
		})
	}
	produced.Wait()
	if firstErr != nil {
		return res, fmt.Errorf("producing: %w", firstErr)
	}
	select {
	case <-done:
	case err := <-pollErr:
		return res, fmt.Errorf("polling: %w", err)
	case <-ctx.Done():
		return res, fmt.Errorf("waiting for the records: %w", ctx.Err())
	}
	res.P50Ns, res.P99Ns, res.MaxNs = benchkit.Percentile(lat, 50), benchkit.Percentile(lat, 99), benchkit.Percentile(lat, 100)
	res.AckP50Ns, res.AckP99Ns = benchkit.Percentile(acks, 50), benchkit.Percentile(acks, 99)
	return res, nil
}

// firstOf returns the first error: prev when set, else err.
func firstOf(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}

func newLatencyConsumer(c clientConfig) (latencyConsumer, error) {
	switch c.client {
	case clientKshare, clientKshareWait:
		cons, err := shareconsumer.New(
			shareconsumer.ClientOpts(kgo.SeedBrokers(c.seed)),
			shareconsumer.Group(c.group),
			shareconsumer.Topics(c.topic),
			shareconsumer.ExplicitAcknowledgement(),
		)
		if err != nil {
			return nil, err
		}
		return kshareLatency{cons}, nil
	case clientFranz:
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seed), kgo.ConsumeTopics(c.topic), kgo.ShareGroup(c.group))
		if err != nil {
			return nil, err
		}
		return kgoLatency{cl: cl, share: true}, nil
	case clientFloor:
		parts := make(map[int32]kgo.Offset, c.partitions)
		for p := range c.partitions {
			parts[int32(p)] = kgo.NewOffset().AtEnd()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seed), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: parts}))
		if err != nil {
			return nil, err
		}
		return kgoLatency{cl: cl}, nil
	}
	return nil, fmt.Errorf("-client: want floor, kshare or franz, got %q", c.client)
}

type kshareLatency struct{ c *shareconsumer.Consumer }

func (k kshareLatency) poll(ctx context.Context) ([][]byte, error) {
	recs, err := k.c.Poll(ctx)
	if err != nil {
		return nil, err
	}
	vals := make([][]byte, len(recs))
	for i, r := range recs {
		vals[i] = r.Value
		if err := k.c.Acknowledge(r, acktype.Accept); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

func (k kshareLatency) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = k.c.Close(ctx)
}

// kgoLatency is franz-go's share consumer (share: every record accepted) or its direct
// consumer.
type kgoLatency struct {
	cl    *kgo.Client
	share bool
}

func (k kgoLatency) poll(ctx context.Context) ([][]byte, error) {
	fs := k.cl.PollRecords(ctx, 0)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) {
			ferr = fmt.Errorf("fetching %s/%d: %w", t, p, err)
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	var vals [][]byte
	fs.EachRecord(func(r *kgo.Record) {
		vals = append(vals, r.Value)
		if k.share {
			r.Ack(kgo.AckAccept)
		}
	})
	return vals, nil
}

func (k kgoLatency) close() { k.cl.Close() }

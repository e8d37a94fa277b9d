package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/wiretap"
	"github.com/kshare/kshare/shareconsumer"
)

// Client mode: one consumer in this process consumes every record of the topic and prints a
// clientResult as JSON on stdout.

const (
	clientFloor  = "floor"
	clientKshare = "kshare"
	// clientKshareWait is kshare at its default fetching: no FetchAhead, a ShareFetch only for a
	// waiting Poll, as Kafka's Java client fetches.
	clientKshareWait = "kshare-wait"
	clientFranz      = "franz"
)

// clientNames are the clients' names in the report, by -clients name.
var clientNames = map[string]string{clientFloor: "floor", clientKshare: "kshare", clientKshareWait: "kshare (no FetchAhead)", clientFranz: "franz-go"}

// isKshare reports whether client is one of kshare's.
func isKshare(client string) bool { return client == clientKshare || client == clientKshareWait }

// clientConfig is the command line of client mode.
type clientConfig struct {
	client       string
	seed         string
	topic        string
	group        string
	records      int
	partitions   int
	releaseEvery int  // 0: accept every record
	maxRecords   int  // share consumers: records per ShareFetch (kshare: MaxPollRecords)
	decodeAcks   bool // wrap the connections to decode acknowledgement batches
	timeout      time.Duration

	latency                  bool // run the latency workload instead
	samples                  int
	intervalMin, intervalMax time.Duration
}

// clientResult is what a client child reports.
type clientResult struct {
	Client     string `json:"client"`
	Records    int    `json:"records"`    // distinct records accepted
	Deliveries int    `json:"deliveries"` // records received, redeliveries included
	Released   int    `json:"released"`
	ElapsedNs  int64  `json:"elapsed_ns"` // client created to acknowledgements flushed
	ConsumeNs  int64  `json:"consume_ns"` // first record received to acknowledgements flushed
	CPUNs      int64  `json:"cpu_ns"`     // this process's user+system CPU in that span
	// ConsumeCPUNs is the CPU from the first record received to the flushed acknowledgements:
	// without the client's creation, group join and first fetch.
	ConsumeCPUNs int64  `json:"consume_cpu_ns"`
	Mallocs      uint64 `json:"mallocs"` // heap allocations in that span
	AllocBytes   uint64 `json:"alloc_bytes"`

	ShareFetchRequests int64 `json:"share_fetch_requests"`
	ShareFetchBytes    int64 `json:"share_fetch_bytes"`
	ShareAckRequests   int64 `json:"share_ack_requests"`
	ShareAckBytes      int64 `json:"share_ack_bytes"`

	// Decoded acknowledgement batches; only with -decode-acks.
	AckBatches    int64 `json:"ack_batches"`
	AckBatchBytes int64 `json:"ack_batch_bytes"`
	AckOffsets    int64 `json:"ack_offsets"`
	// Of those, the acceptances of redelivered records (offsets divisible by -release-every,
	// type Accept), and the size of the batches that hold one alone.
	RedeliveryAcks     int64 `json:"redelivery_acks"`
	RedeliveryAckBytes int64 `json:"redelivery_ack_bytes"`
	BadFrames          int64 `json:"bad_frames"`

	AckErrors int    `json:"ack_errors"`
	FirstErr  string `json:"first_ack_error,omitempty"`
}

func runClient(args []string) error {
	var c clientConfig
	fs := flag.NewFlagSet("benchconsumer client", flag.ContinueOnError)
	fs.StringVar(&c.client, "client", "", "floor, kshare or franz")
	fs.StringVar(&c.seed, "seed", "", "broker host:port")
	fs.StringVar(&c.topic, "topic", "", "topic to consume")
	fs.StringVar(&c.group, "group", "", "share group")
	fs.IntVar(&c.records, "records", 0, "records in the topic, offsets 0 up in every partition")
	fs.IntVar(&c.partitions, "partitions", 1, "partitions of the topic")
	fs.IntVar(&c.releaseEvery, "release-every", 0, "release every Nth offset at its first delivery (0: never)")
	fs.BoolVar(&c.decodeAcks, "decode-acks", false, "decode the acknowledgement batches written")
	fs.IntVar(&c.maxRecords, "max-records", defaultShareMaxRecords, "share consumers: MaxRecords of every ShareFetch (kshare: MaxPollRecords; franz-go: ShareMaxRecords)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&c.latency, "latency", false, "run the latency workload: produce -samples records one at a time and time each to its Poll")
	fs.IntVar(&c.samples, "samples", 1000, "latency: records to time")
	fs.DurationVar(&c.intervalMin, "interval-min", 5*time.Millisecond, "latency: least time between two records")
	fs.DurationVar(&c.intervalMax, "interval-max", 10*time.Millisecond, "latency: most time between two records")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the client run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := benchkit.StartCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if c.latency {
		if c.seed == "" || c.topic == "" || c.group == "" || c.samples < 1 {
			return errors.New("latency client mode needs -seed, -topic, -group and -samples")
		}
		res, err := runLatencyClient(ctx, c)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	if c.seed == "" || c.topic == "" || c.group == "" || c.records < 1 {
		return errors.New("client mode needs -seed, -topic, -group and -records")
	}

	var res clientResult
	switch c.client {
	case clientFloor:
		res, err = consumeFloor(ctx, c)
	case clientKshare, clientKshareWait:
		res, err = consumeKshare(ctx, c)
	case clientFranz:
		res, err = consumeFranz(ctx, c)
	default:
		err = fmt.Errorf("-client: want floor, kshare or franz, got %q", c.client)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// meter measures the span from start to stop: wall time, CPU, allocations, bytes written.
type meter struct {
	hook  requestBytes
	acks  ackCount
	span  benchkit.Meter
	deliv int
	rel   int
	first time.Time     // when the first record was received
	cpu1  time.Duration // the span's CPU time by then

	seen    [][]bool // per partition, by offset: accepted
	done    int
	records int

	mu       sync.Mutex
	ackErrs  int
	firstErr string
}

func newMeter(c clientConfig) *meter {
	m := &meter{records: c.records, seen: make([][]bool, c.partitions)}
	m.acks.releaseEvery = int64(c.releaseEvery)
	for p := range m.seen {
		m.seen[p] = make([]bool, c.records/c.partitions+1)
	}
	return m
}

func (m *meter) start() error { return m.span.Start() }

func (m *meter) stop(res *clientResult) error {
	s, err := m.span.Stop()
	if err != nil {
		return err
	}
	res.ElapsedNs, res.ConsumeNs = int64(s.Wall()), int64(s.End.Sub(m.first))
	// ConsumeCPUNs is the CPU time from the first record on: the span's CPU less what it had
	// used by then (cpu1, read by decide).
	res.CPUNs, res.ConsumeCPUNs = int64(s.CPU), int64(s.CPU-m.cpu1)
	res.Mallocs, res.AllocBytes = s.Mallocs, s.AllocBytes
	res.Records, res.Deliveries, res.Released = m.done, m.deliv, m.rel
	res.ShareFetchRequests, res.ShareFetchBytes = m.hook.fetchReqs.Load(), m.hook.fetchBytes.Load()
	res.ShareAckRequests, res.ShareAckBytes = m.hook.ackReqs.Load(), m.hook.ackBytes.Load()
	res.AckBatches, res.AckBatchBytes = m.acks.batches.Load(), m.acks.bytes.Load()
	res.AckOffsets, res.BadFrames = m.acks.offsets.Load(), m.acks.badFrame.Load()
	res.RedeliveryAcks, res.RedeliveryAckBytes = m.acks.redelAcks.Load(), m.acks.redelBytes.Load()
	m.mu.Lock()
	res.AckErrors, res.FirstErr = m.ackErrs, m.firstErr
	m.mu.Unlock()
	return nil
}

func (m *meter) ackErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ackErrs++
	if m.firstErr == "" {
		m.firstErr = err.Error()
	}
}

// decide returns whether the record at p/offset, at its delivery-th delivery, is released,
// and counts it; an error for an offset out of range.
func (m *meter) decide(c clientConfig, p int32, offset int64, delivery int) (release bool, err error) {
	if int(p) >= len(m.seen) || offset < 0 || offset >= int64(len(m.seen[p])) {
		return false, fmt.Errorf("record %d/%d out of range", p, offset)
	}
	if m.deliv == 0 {
		m.first = time.Now()
		cpu, err := m.span.CPU()
		if err != nil {
			return false, err
		}
		m.cpu1 = cpu
	}
	m.deliv++
	if c.releaseEvery > 0 && offset%int64(c.releaseEvery) == 0 && delivery <= 1 {
		m.rel++
		return true, nil
	}
	if !m.seen[p][offset] {
		m.seen[p][offset] = true
		m.done++
	}
	return false, nil
}

func (m *meter) kgoOpts(c clientConfig) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.seed), kgo.WithHooks(&m.hook)}
	if c.decodeAcks {
		opts = append(opts, kgo.Dialer(wiretap.Dialer(m.acks.onRequest)))
	}
	return opts
}

// consumeKshare consumes with kshare's consumer in explicit mode, one Acknowledge per record,
// with FetchAhead unless the client is kshare-wait.
func consumeKshare(ctx context.Context, c clientConfig) (clientResult, error) {
	res := clientResult{Client: c.client}
	m := newMeter(c)
	if err := m.start(); err != nil {
		return res, err
	}
	opts := []shareconsumer.Opt{
		shareconsumer.ClientOpts(m.kgoOpts(c)...),
		shareconsumer.Group(c.group),
		shareconsumer.Topics(c.topic),
		shareconsumer.ExplicitAcknowledgement(),
		shareconsumer.MaxPollRecords(c.maxRecords),
		shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
			if ac.Err != nil {
				m.ackErr(ac.Err)
			}
		}),
	}
	if c.client == clientKshare {
		opts = append(opts, shareconsumer.FetchAhead())
	}
	cons, err := shareconsumer.New(opts...)
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cons.Close(cctx)
	}()
	for m.done < m.records {
		recs, err := cons.Poll(ctx)
		if err != nil {
			return res, fmt.Errorf("Poll after %d records: %w", m.done, err)
		}
		for _, r := range recs {
			release, err := m.decide(c, r.Partition, r.Offset, int(r.DeliveryCount))
			if err != nil {
				return res, err
			}
			t := acktype.Accept
			if release {
				t = acktype.Release
			}
			if err := cons.Acknowledge(r, t); err != nil {
				return res, fmt.Errorf("Acknowledge %d/%d: %w", r.Partition, r.Offset, err)
			}
		}
	}
	results, err := cons.CommitSync(ctx)
	if err != nil {
		return res, fmt.Errorf("CommitSync: %w", err)
	}
	for _, err := range results {
		if err != nil {
			m.ackErr(err)
		}
	}
	return res, m.stop(&res)
}

// consumeFranz consumes with franz-go's share consumer, one Record.Ack per record.
func consumeFranz(ctx context.Context, c clientConfig) (clientResult, error) {
	res := clientResult{Client: clientFranz}
	m := newMeter(c)
	if err := m.start(); err != nil {
		return res, err
	}
	opts := append(m.kgoOpts(c),
		kgo.ConsumeTopics(c.topic),
		kgo.ShareGroup(c.group),
		kgo.ShareMaxRecords(int32(c.maxRecords)),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				m.ackErr(err)
			}
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	err = pollUntilDone(ctx, cl, m, func(r *kgo.Record) error {
		release, err := m.decide(c, r.Partition, r.Offset, int(r.DeliveryCount()))
		if err != nil {
			return err
		}
		if release {
			r.Ack(kgo.AckRelease)
		} else {
			r.Ack(kgo.AckAccept)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := cl.FlushAcks(ctx); err != nil {
		return res, fmt.Errorf("FlushAcks: %w", err)
	}
	return res, m.stop(&res)
}

// consumeFloor reads every partition from its start with franz-go's direct consumer (no group,
// no acknowledgements) until it has every record: the cost of the same bytes without share
// semantics.
func consumeFloor(ctx context.Context, c clientConfig) (clientResult, error) {
	res := clientResult{Client: clientFloor}
	m := newMeter(c)
	if err := m.start(); err != nil {
		return res, err
	}
	parts := make(map[int32]kgo.Offset, c.partitions)
	for p := range c.partitions {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	opts := append(m.kgoOpts(c), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: parts}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	err = pollUntilDone(ctx, cl, m, func(r *kgo.Record) error {
		_, err := m.decide(c, r.Partition, r.Offset, 1)
		return err
	})
	if err != nil {
		return res, err
	}
	return res, m.stop(&res)
}

// pollUntilDone polls cl and gives every record to handle until m has every record, and
// returns the first error: the context's end or a fetch error (saying how many records had
// been consumed), or handle's, after which the records polled with it are not handled.
func pollUntilDone(ctx context.Context, cl *kgo.Client, m *meter, handle func(*kgo.Record) error) error {
	for m.done < m.records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("after %d records: %w", m.done, ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("fetching %s/%d: %w", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if ferr == nil {
				ferr = handle(r)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/groupconfig"
)

// The lock-expiry workload measures how late, on the real clock, a broker offers again a record
// whose acquisition lock expired. Two members of one share group speak ShareFetch themselves,
// so no client prefetch or ack batching is in the way. For each sample one record is produced;
// member A acquires it and never acknowledges it; member B then long-polls ShareFetch until the
// broker hands B the record, with delivery count 2, and accepts it. The lock's deadline lies
// between A's request being sent plus the lock duration and A's response arriving plus the
// lock duration. Lateness is B's receipt minus the later of the two, A's response plus the lock
// duration; it is also reported from the earlier one, an upper bound, too high by at most A's
// round trip.

// lockResult is what the lock-expiry workload gave for one broker.
type lockResult struct {
	broker string
	lock   time.Duration
	late   []time.Duration // per sample: B's receipt minus (A's response + lock duration)
	upper  []time.Duration // per sample: B's receipt minus (A's request sent + lock duration)
	rttMax time.Duration   // the longest ShareFetch round trip of A that acquired a sample record
}

// runLockExpiry runs the lock-expiry workload against every program, one broker at a time.
func runLockExpiry(ctx context.Context, c *config, programs []*brokerProgram) ([]lockResult, []string, error) {
	var (
		results  []lockResult
		failures []string
	)
	for _, p := range programs {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		samples := c.lockSamples
		if p.name == "kfake" {
			samples = c.lockSamplesKfake
		}
		if samples == 0 {
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: lock expiry, %d samples, lock duration %v\n", p.name, samples, c.lockDuration)
		r, err := measureLockExpiry(ctx, c, p, samples)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchbroker: %s: lock expiry: %v\n", p.name, err)
			failures = append(failures, fmt.Sprintf("%s, lock expiry: %s", p.name, benchkit.FirstLine(err)))
			continue
		}
		fmt.Fprintf(os.Stderr, "  late by p50 %v, p99 %v, max %v (upper bounds: %v, %v, %v)\n",
			benchkit.Percentile(r.late, 50), benchkit.Percentile(r.late, 99), benchkit.Percentile(r.late, 100),
			benchkit.Percentile(r.upper, 50), benchkit.Percentile(r.upper, 99), benchkit.Percentile(r.upper, 100))
		results = append(results, r)
	}
	return results, failures, nil
}

// lockConfigs returns the broker configs that set the lock duration to d on broker p.
// testbroker keeps Kafka's bounds, so its lower bound (group.share.min.record.lock.duration.ms,
// at least 1000) comes down too; kfake has no bounds.
func lockConfigs(p *brokerProgram, d time.Duration) []string {
	ms := fmt.Sprint(d.Milliseconds())
	if p.name == "testbroker" {
		return []string{"group.share.min.record.lock.duration.ms=" + ms, "group.share.record.lock.duration.ms=" + ms}
	}
	return []string{"group.share.record.lock.duration.ms=" + ms}
}

func measureLockExpiry(ctx context.Context, c *config, p *brokerProgram, samples int) (r lockResult, err error) {
	const topic = "lock"
	r = lockResult{broker: p.name, lock: c.lockDuration}
	configs := append(lockConfigs(p, c.lockDuration), c.brokerConfigs...)
	bp, err := startBroker(ctx, p, c.clusterBrokers, topic, 1, configs, c.verbose)
	if err != nil {
		return r, err
	}
	defer benchkit.StopBroker(bp, &err)
	if err := groupconfig.SetOn(ctx, bp.Seeds, shareGroupID, "share.auto.offset.reset", "earliest"); err != nil {
		return r, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(bp.Seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return r, err
	}
	defer prod.Close()
	a, err := joinRawMember(ctx, bp.Seeds, topic)
	if err != nil {
		return r, fmt.Errorf("member A: %w", err)
	}
	defer a.close()
	b, err := joinRawMember(ctx, bp.Seeds, topic)
	if err != nil {
		return r, fmt.Errorf("member B: %w", err)
	}
	defer b.close()

	for i := range samples {
		rec := &kgo.Record{Value: []byte(fmt.Sprintf("lock-%d", i))}
		if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return r, fmt.Errorf("producing: %w", err)
		}

		// A acquires the record. It is available at once; retry only an empty answer.
		var sent, acquired time.Time
		for acquired.IsZero() {
			sent = time.Now()
			got, err := a.fetch(ctx, 5*time.Second)
			if err != nil {
				return r, fmt.Errorf("member A: %w", err)
			}
			switch {
			case len(got) == 0:
				if time.Since(sent) > 30*time.Second {
					return r, fmt.Errorf("member A: record %d not delivered in 30s", rec.Offset)
				}
			case len(got) != 1 || got[0].FirstOffset != rec.Offset || got[0].LastOffset != rec.Offset || got[0].DeliveryCount != 1:
				return r, fmt.Errorf("member A: acquired %+v, want offset %d with delivery count 1", got, rec.Offset)
			default:
				acquired = time.Now()
			}
		}
		r.rttMax = max(r.rttMax, acquired.Sub(sent))
		deadline := acquired.Add(c.lockDuration)

		// B long-polls until the broker offers the record again.
		var received time.Time
		for {
			wait := time.Until(deadline.Add(c.lockWait))
			if wait <= 0 {
				return r, fmt.Errorf("record %d not offered again within %v of its lock deadline (%d samples taken)", rec.Offset, c.lockWait, len(r.late))
			}
			got, err := b.fetch(ctx, wait)
			now := time.Now()
			if err != nil {
				return r, fmt.Errorf("member B: %w", err)
			}
			if len(got) == 0 {
				continue
			}
			if len(got) != 1 || got[0].FirstOffset != rec.Offset || got[0].LastOffset != rec.Offset || got[0].DeliveryCount != 2 {
				return r, fmt.Errorf("member B: acquired %+v, want offset %d with delivery count 2", got, rec.Offset)
			}
			received = now
			break
		}
		r.late = append(r.late, received.Sub(deadline))
		r.upper = append(r.upper, received.Sub(sent.Add(c.lockDuration)))
		if err := b.accept(ctx, rec.Offset); err != nil {
			return r, fmt.Errorf("member B: %w", err)
		}
	}
	if err := errors.Join(a.heartbeatErr(), b.heartbeatErr()); err != nil {
		return r, err
	}
	return r, nil
}

// rawMember is one share group member that sends its own ShareGroupHeartbeat, ShareFetch and
// ShareAcknowledge requests through a franz-go client, for partition 0 of one topic.
type rawMember struct {
	cl      *kgo.Client
	id      string
	topicID [16]byte
	leader  int32
	epoch   int32 // the share session epoch of the next request

	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	hbErr error
}

// joinRawMember joins shareGroupID with a new member id and keeps heartbeating in the
// background until close.
func joinRawMember(ctx context.Context, seeds []string, topic string) (*rawMember, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	m := &rawMember{cl: cl, id: base64.RawURLEncoding.EncodeToString(raw[:])}

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(mdResp.Topics) != 1 || len(mdResp.Topics[0].Partitions) == 0 || mdResp.Topics[0].ErrorCode != 0 {
		cl.Close()
		return nil, fmt.Errorf("metadata: no partition 0 of %s", topic)
	}
	m.topicID, m.leader = mdResp.Topics[0].TopicID, mdResp.Topics[0].Partitions[0].Leader

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = shareGroupID, m.id, 0, []string{topic}
	resp, err := hb.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("joining: %w", err)
	}
	hbCtx, stop := context.WithCancel(ctx)
	m.stop = stop
	m.wg.Add(1)
	go m.heartbeat(hbCtx, resp.MemberEpoch, time.Duration(resp.HeartbeatIntervalMillis)*time.Millisecond)
	return m, nil
}

func (m *rawMember) heartbeat(ctx context.Context, epoch int32, interval time.Duration) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = shareGroupID, m.id, epoch
		resp, err := hb.RequestWith(ctx, m.cl)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			m.mu.Lock()
			m.hbErr = fmt.Errorf("heartbeat: %w", err)
			m.mu.Unlock()
			return
		}
		epoch = resp.MemberEpoch
		if resp.HeartbeatIntervalMillis > 0 {
			interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
	}
}

func (m *rawMember) heartbeatErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hbErr
}

func (m *rawMember) close() {
	m.stop()
	m.wg.Wait()
	m.cl.Close()
}

// nextEpoch advances the share session epoch after a successful request, as Kafka does.
func (m *rawMember) nextEpoch() {
	if m.epoch == math.MaxInt32 {
		m.epoch = 1
	} else {
		m.epoch++
	}
}

// fetch sends one ShareFetch for partition 0 that waits up to maxWait for one record, and
// returns the ranges it acquired.
func (m *rawMember) fetch(ctx context.Context, maxWait time.Duration) ([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, error) {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(shareGroupID), kmsg.StringPtr(m.id), m.epoch
	req.MaxWaitMillis = int32(min(maxWait, time.Minute).Milliseconds())
	req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 1, 1<<20, 1, 1
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = m.topicID
	t.Partitions = []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err != nil {
		return nil, fmt.Errorf("share fetch: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("share fetch: %w", err)
	}
	m.nextEpoch()
	var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("share fetch, partition %d: %w", rp.Partition, err)
			}
			got = append(got, rp.AcquiredRecords...)
		}
	}
	return got, nil
}

// accept acknowledges offset of partition 0 as ACCEPT with a ShareAcknowledge.
func (m *rawMember) accept(ctx context.Context, offset int64) error {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(shareGroupID), kmsg.StringPtr(m.id), m.epoch
	batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = offset, offset, []int8{1}
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	p.AcknowledgementBatches = append(p.AcknowledgementBatches, batch)
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID, t.Partitions = m.topicID, append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err != nil {
		return fmt.Errorf("share acknowledge: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("share acknowledge: %w", err)
	}
	m.nextEpoch()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("share acknowledge, partition %d: %w", rp.Partition, err)
			}
		}
	}
	return nil
}

// printLockReport writes the lock-expiry table.
func printLockReport(out io.Writer, c *config, results []lockResult) {
	if len(results) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("\n### Lock expiry on the real clock\n\n")
	p("One partition; per sample one record is produced, member A acquires it with a raw ShareFetch and never acknowledges it, "+
		"member B long-polls ShareFetch until it is offered again (delivery count 2) and accepts it. Lock duration %v "+
		"(testbroker: group.share.min.record.lock.duration.ms and group.share.record.lock.duration.ms; kfake: group.share.record.lock.duration.ms; "+
		"kfake's sweep interval left at its default). Lateness is B's receipt minus (A's response + lock duration); "+
		"the upper bound is B's receipt minus (A's request sent + lock duration), too high by at most A's round trip. "+
		"kfake releases expired locks from a sweep ticker; since each sample starts just after the sweep that handed B the previous record, "+
		"its figures show the sweep interval minus the lock duration, where a lock expiring at a random moment waits half a sweep interval on average.\n\n", c.lockDuration)
	p("| broker | samples | late p50 | late p99 | late max | upper bound p50 | upper bound p99 | upper bound max | A's round trip max |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	round := func(d time.Duration) string {
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1e3)
	}
	var goal []string
	for _, r := range results {
		p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.broker, len(r.late),
			round(benchkit.Percentile(r.late, 50)), round(benchkit.Percentile(r.late, 99)), round(benchkit.Percentile(r.late, 100)),
			round(benchkit.Percentile(r.upper, 50)), round(benchkit.Percentile(r.upper, 99)), round(benchkit.Percentile(r.upper, 100)), round(r.rttMax))
		if r.broker == "testbroker" {
			met := "no"
			if benchkit.Percentile(r.late, 99) < 5*time.Millisecond {
				met = "yes"
			}
			goal = append(goal, fmt.Sprintf("Goal: testbroker offers an expired lock's record again within 5 ms of its deadline (p99): %s.", met))
		}
	}
	if len(goal) > 0 {
		p("\n%s\n", strings.Join(goal, "\n"))
	}
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// brokerFetchers are one running broker's replica fetchers: one per other broker, each
// fetching the partitions that broker leads and this one follows (Kafka's
// num.replica.fetchers = 1).
type brokerFetchers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (f *brokerFetchers) stop() { f.cancel() }
func (f *brokerFetchers) wait() { f.wg.Wait() }

func (m *Manager) startFetchersLocked(broker int32) *brokerFetchers {
	ctx, cancel := context.WithCancel(context.Background())
	f := &brokerFetchers{cancel: cancel}
	for leader := range int32(m.cfg.Brokers) {
		if leader == broker {
			continue
		}
		f.wg.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer f.wg.Done()
			(&fetcher{m: m, broker: broker, leader: leader, heard: make(map[*Partition]int32)}).run(ctx)
		}()
	}
	return f
}

// fetcher is Kafka's ReplicaFetcherThread for one (follower broker, leader broker) pair.
type fetcher struct {
	m              *Manager
	broker, leader int32
	cn             *client
	// heard is, per partition, the leader epoch of the last response this follower had from
	// the leader: until then its high watermark counts as unknown (-1), as a KRaft follower's
	// does at the start of an epoch.
	heard map[*Partition]int32
}

func (f *fetcher) run(ctx context.Context) {
	defer f.disconnect()
	for ctx.Err() == nil {
		topology := f.m.Topology()
		parts := f.m.followed(f.broker, f.leader)
		if len(parts) == 0 || !f.m.Alive(f.leader) {
			f.disconnect()
			f.waitFor(ctx, topology, 0)
			continue
		}
		if f.cn == nil {
			cn, err := dial(ctx, f.m.cfg.Dial, f.m.cfg.Addr(f.leader), fmt.Sprintf("broker-%d-fetcher-0", f.broker), f.m.cfg.Authenticate)
			if err != nil {
				f.m.cfg.Logger.Debug("replica fetcher cannot reach its leader", "broker", f.broker, "leader", f.leader, "err", err)
				f.waitFor(ctx, topology, f.m.cfg.Settings().FetchBackoff)
				continue
			}
			f.cn = cn
		}
		progressed, err := f.fetchOnce(ctx, parts)
		if err != nil {
			if ctx.Err() == nil {
				f.m.cfg.Logger.Debug("replica fetch failed", "broker", f.broker, "leader", f.leader, "err", err)
			}
			f.disconnect()
			f.waitFor(ctx, topology, f.m.cfg.Settings().FetchBackoff)
			continue
		}
		if !progressed {
			f.waitFor(ctx, topology, f.m.cfg.Settings().FetchBackoff)
		}
	}
}

func (f *fetcher) disconnect() {
	if f.cn != nil {
		f.cn.close()
		f.cn = nil
	}
}

// waitFor waits for a topology change, the end of ctx or, when backoff is positive, that long
// on the cluster clock.
func (f *fetcher) waitFor(ctx context.Context, topology <-chan struct{}, backoff time.Duration) {
	var expired chan struct{}
	if backoff > 0 {
		expired = make(chan struct{})
		t := f.m.cfg.Clock.AfterFunc(backoff, func() { close(expired) })
		defer t.Stop()
	}
	select {
	case <-ctx.Done():
	case <-topology:
	case <-expired:
	}
}

// fetchOnce sends one FETCH for parts and applies its answer. It reports whether any
// partition got an answer without an error, so that a fetcher whose partitions all failed
// backs off.
func (f *fetcher) fetchOnce(ctx context.Context, parts []*Partition) (bool, error) {
	s := f.m.cfg.Settings()
	req := kmsg.NewPtrFetchRequest()
	if req.Version = f.cn.version(req); req.Version < 4 {
		return false, fmt.Errorf("leader %d offers no usable Fetch version", f.leader)
	}
	req.ReplicaID = f.broker
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.broker, f.m.BrokerEpoch(f.broker)
	req.MaxWaitMillis = int32(s.FetchWaitMax / time.Millisecond)
	req.MinBytes = s.FetchMinBytes
	req.MaxBytes = s.FetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	type sent struct {
		p     *Partition
		epoch int32
	}
	var order []sent
	for _, p := range parts {
		st := p.State()
		lg := st.Log(f.broker)
		if lg == nil || st.Leader != f.leader {
			continue
		}
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].TopicID != p.TopicID {
			req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: p.Topic, TopicID: p.TopicID})
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.Index
		rp.CurrentLeaderEpoch = st.LeaderEpoch
		rp.FetchOffset = lg.LogEndOffset()
		rp.LastFetchedEpoch = lg.LatestEpoch()
		rp.LogStartOffset = lg.LogStartOffset()
		rp.PartitionMaxBytes = s.FetchMaxBytes
		rp.HighWatermark = -1
		if e, ok := f.heard[p]; ok && e == st.LeaderEpoch {
			rp.HighWatermark = lg.HighWatermark()
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
		order = append(order, sent{p, st.LeaderEpoch})
	}
	if len(order) == 0 {
		return false, nil
	}
	for p := range f.heard { // forget partitions no longer fetched (deleted, or led elsewhere)
		if !slices.ContainsFunc(order, func(s sent) bool { return s.p == p }) {
			delete(f.heard, p)
		}
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := f.cn.roundTrip(req, resp); err != nil {
		return false, err
	}
	if resp.ErrorCode != 0 {
		return false, kerr.ErrorForCode(resp.ErrorCode)
	}
	progressed := false
	for _, rt := range resp.Topics {
		for k := range rt.Partitions {
			rp := &rt.Partitions[k]
			j := slices.IndexFunc(order, func(s sent) bool {
				return (s.p.TopicID == rt.TopicID || s.p.Topic == rt.Topic) && s.p.Index == rp.Partition
			})
			if j < 0 {
				continue
			}
			s := order[j]
			ok, err := f.apply(ctx, s.p, s.epoch, rp)
			if err != nil {
				return progressed, err
			}
			progressed = progressed || ok
		}
	}
	return progressed, nil
}

// apply takes one partition's answer: it truncates a diverging log, appends the records and
// takes the leader's high watermark, or repairs an offset the leader does not have.
func (f *fetcher) apply(ctx context.Context, p *Partition, epoch int32, rp *kmsg.FetchResponseTopicPartition) (bool, error) {
	lg := p.State().Log(f.broker)
	if lg == nil {
		return false, nil
	}
	switch err := kerr.ErrorForCode(rp.ErrorCode); err {
	case nil:
	case kerr.OffsetOutOfRange:
		return false, f.repairOutOfRange(p, epoch)
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and the like: the topology is about to
		// say where the partition went.
		return false, nil
	}
	f.heard[p] = epoch
	if d := rp.DivergingEpoch; d.EndOffset >= 0 {
		f.truncateDiverging(p, epoch, d.Epoch, d.EndOffset)
		return true, nil
	}
	var records []byte
	if len(rp.RecordBatches) > 0 {
		records = rp.RecordBatches
	}
	if err := p.Replicated(f.broker, epoch, records, rp.HighWatermark); err != nil {
		f.m.cfg.Logger.Warn("replica fetcher could not append what its leader sent", "broker", f.broker, "partition", p.String(), "err", err)
		return false, nil
	}
	if err := p.FollowLogStart(f.broker, epoch, rp.LogStartOffset); err != nil {
		f.m.cfg.Logger.Warn("replica fetcher could not take its leader's log start offset", "broker", f.broker, "partition", p.String(), "err", err)
	}
	return true, nil
}

// truncateDiverging truncates the follower's log where it stops agreeing with the leader's
// (of leaderEpoch), as Kafka's fetcher does on a diverging epoch: to the lower of the leader's
// end offset for that epoch and the follower's own end offset for it.
func (f *fetcher) truncateDiverging(p *Partition, leaderEpoch, epoch int32, leaderEnd int64) {
	err := p.AsFollower(f.broker, leaderEpoch, func(lg *log.Partition) error {
		to := leaderEnd
		if e, end := lg.EndOffsetForEpoch(epoch); e >= 0 {
			to = min(to, end)
		}
		to = min(to, lg.LogEndOffset()) // an epoch the follower cannot place: Kafka's fallback
		f.m.cfg.Logger.Info("truncating a diverging replica", "broker", f.broker, "partition", p.String(), "offset", to)
		return lg.TruncateTo(to)
	})
	if err != nil {
		f.m.cfg.Logger.Warn("replica truncation failed", "broker", f.broker, "partition", p.String(), "err", err)
	}
}

// repairOutOfRange asks the leader for its log start and end offsets, as Kafka's fetcher does
// on OFFSET_OUT_OF_RANGE, and truncates a log that is ahead of the leader's, or restarts one
// that is behind the leader's log start.
func (f *fetcher) repairOutOfRange(p *Partition, epoch int32) error {
	offset := func(ts int64) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		if req.Version = f.cn.version(req); req.Version < 0 {
			return -1, fmt.Errorf("leader %d offers no ListOffsets", f.leader)
		}
		req.ReplicaID = f.broker
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = p.Topic
		rpp := kmsg.NewListOffsetsRequestTopicPartition()
		rpp.Partition, rpp.CurrentLeaderEpoch, rpp.Timestamp = p.Index, epoch, ts
		rt.Partitions = append(rt.Partitions, rpp)
		req.Topics = append(req.Topics, rt)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		if err := f.cn.roundTrip(req, resp); err != nil {
			return -1, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return -1, fmt.Errorf("ListOffsets answer for %s has %d topics", p, len(resp.Topics))
		}
		sp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
			return -1, err
		}
		return sp.Offset, nil
	}
	end, err := offset(-1)
	if err != nil {
		return ignoreLeaderErrors(err)
	}
	start, err := offset(-2)
	if err != nil {
		return ignoreLeaderErrors(err)
	}
	return ignoreLeaderErrors(p.AsFollower(f.broker, epoch, func(lg *log.Partition) error {
		switch {
		case lg.LogEndOffset() > end:
			f.m.cfg.Logger.Info("truncating a replica ahead of its leader", "broker", f.broker, "partition", p.String(), "offset", end)
			return lg.TruncateTo(end)
		case lg.LogEndOffset() < start:
			return lg.TruncateFullyAndStartAt(start)
		}
		return nil
	}))
}

// ignoreLeaderErrors keeps a Kafka error (the leader's answer, or the log's refusal) from
// ending the connection: only transport errors do; the next fetch tries again.
func ignoreLeaderErrors(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return nil
	}
	return err
}

// sortPartitions orders partitions by topic name, then index, so that fetch requests are
// stable.
func sortPartitions(ps []*Partition) {
	slices.SortFunc(ps, func(a, b *Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Index - b.Index)
	})
}

package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/config"
)

// rack returns broker id's rack (broker.rack), or nil when it has none.
func (c *Cluster) rack(id int32) *string {
	if int(id) >= len(c.cfg.Racks) || c.cfg.Racks[id] == "" {
		return nil
	}
	return &c.cfg.Racks[id]
}

// readPreferring reads parts as readAndWait does, except the partitions whose reads this
// leader sends to a preferred read replica (KIP-392, preferredReadReplica): those are answered
// with that replica in PreferredReadReplica, the leader's high watermark, last stable offset
// and log start offset, and no records; and since the client has somewhere else to go, the
// fetch answers at once, without waiting for MinBytes, as Kafka's does.
func (b *Broker) readPreferring(req *kmsg.FetchRequest, parts []fetchPart, from fetcher) {
	var rest []fetchPart
	var restAt []int // where each of rest came from in parts
	for i := range parts {
		fp := &parts[i]
		id := b.preferredReadReplica(req, fp, from)
		if id < 0 {
			rest, restAt = append(rest, *fp), append(restAt, i)
			continue
		}
		lg := fp.p.State().LeaderLog()
		fp.out.PreferredReadReplica = id
		fp.out.HighWatermark = lg.HighWatermark()
		fp.out.LastStableOffset = lg.LastStableOffset()
		fp.out.LogStartOffset = lg.LogStartOffset()
	}
	if len(rest) == len(parts) {
		b.readAndWait(req, parts, from)
		return
	}
	noWait := *req
	noWait.MaxWaitMillis = 0
	b.readAndWait(&noWait, rest, from)
	for j, i := range restAt {
		parts[i] = rest[j]
	}
}

// preferredReadReplica returns the replica a consumer's fetch of fp should read from instead,
// or -1 to read here, as Kafka's ReplicaManager.findPreferredReadReplica decides with the
// RackAwareReplicaSelector: only a leader names one, only to a consumer's fetch from v11 (the
// version that carries RackID), and only with replica.selector.class set. The candidates are
// the leader and the followers in the ISR on running brokers whose log, as the leader last
// saw it, holds the fetch offset (log start offset <= FetchOffset <= log end offset). A client
// without a rack, or whose rack holds no candidate or holds the leader, reads from the leader;
// otherwise it goes to the candidate in its rack with the highest log end offset, then the
// one caught up most recently, then the highest broker id. A partition in error (a wrong
// CurrentLeaderEpoch) reads here, so that the read reports the error.
func (b *Broker) preferredReadReplica(req *kmsg.FetchRequest, fp *fetchPart, from fetcher) int32 {
	c := b.c
	if from.follower() || req.Version < 11 || req.Rack == "" || fp.err != nil {
		return -1
	}
	if c.configs.Snapshot().ReplicaSelector != config.RackAwareReplicaSelector {
		return -1
	}
	st := fp.p.State()
	if b.replicaError(st, fp.req.CurrentLeaderEpoch, true) != nil {
		return -1
	}
	if r := c.rack(b.id); r != nil && *r == req.Rack {
		return -1
	}
	best := int32(-1)
	var bestLEO int64
	var bestCaughtUp time.Time
	for _, f := range fp.p.Followers() {
		r := c.rack(f.Broker)
		lg := st.Log(f.Broker)
		switch {
		case r == nil || *r != req.Rack, !st.InISR(f.Broker), !c.replicas.Alive(f.Broker), lg == nil:
			continue
		case f.LogEndOffset < fp.req.FetchOffset, lg.LogStartOffset() > fp.req.FetchOffset:
			continue
		}
		better := best < 0 || f.LogEndOffset > bestLEO ||
			f.LogEndOffset == bestLEO && (f.LastCaughtUp.After(bestCaughtUp) || f.LastCaughtUp.Equal(bestCaughtUp) && f.Broker > best)
		if better {
			best, bestLEO, bestCaughtUp = f.Broker, f.LogEndOffset, f.LastCaughtUp
		}
	}
	return best
}

package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(23, 2, 4, (*Broker).handleOffsetForLeaderEpoch, failedOffsetForLeaderEpoch, offsetForLeaderEpochScope)
}

// handleOffsetForLeaderEpoch answers OffsetForLeaderEpoch v2-4 (Kafka 4 removed v0 and v1) as
// Kafka's ReplicaManager.lastOffsetForLeaderEpoch does. Per partition, in request order:
//
//   - an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
//   - a broker holding no replica of it is NOT_LEADER_OR_FOLLOWER;
//   - a CurrentLeaderEpoch older or newer than the partition's is FENCED_LEADER_EPOCH or
//     UNKNOWN_LEADER_EPOCH (-1 skips the check);
//   - a follower is NOT_LEADER_OR_FOLLOWER, whatever the ReplicaID (v3+): Kafka serves this API
//     from the leader only, to consumers, followers and tools alike;
//   - otherwise the leader's log answers LeaderEpoch with log.Partition.EndOffsetForEpoch: the
//     largest epoch not above it and where that epoch ends (the log end offset for the latest
//     epoch, not the high watermark, whoever asks), or LeaderEpoch -1 and EndOffset -1, without
//     an error, for an epoch the log cannot place (-1, or one above the latest).
//
// A partition named twice is answered twice, as Kafka's collections allow.
func (b *Broker) handleOffsetForLeaderEpoch(cn *conn, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	// A follower has CLUSTER_ACTION; anyone else needs DESCRIBE on each topic.
	replica := cn.authorizeCluster(acl.OpClusterAction)
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Topic = rt.Topic
		t := b.c.meta.Topic(rt.Topic)
		denied := !replica && !cn.authorizeTopic(acl.OpDescribe, rt.Topic)
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			b.endOffsetForEpoch(t, rp, sp)
		}
	}
	return resp
}

// endOffsetForEpoch answers one partition into sp, which has Kafka's defaults (leader epoch
// and end offset -1).
func (b *Broker) endOffsetForEpoch(t *metadata.Topic, rp *kmsg.OffsetForLeaderEpochRequestTopicPartition, sp *kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	p := b.c.meta.Partition(t, rp.Partition)
	if p == nil {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	st := p.State()
	if err := b.replicaError(st, rp.CurrentLeaderEpoch, true); err != nil {
		sp.ErrorCode = err.Code
		return
	}
	sp.LeaderEpoch, sp.EndOffset = st.Log(b.id).EndOffsetForEpoch(rp.LeaderEpoch)
}

func failedOffsetForLeaderEpoch(r *kmsg.OffsetForLeaderEpochRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	for _, t := range r.Topics {
		rt := kmsg.OffsetForLeaderEpochResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func offsetForLeaderEpochScope(c *Cluster, r *kmsg.OffsetForLeaderEpochRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.topic(t.Topic)
	}
	return s.result()
}

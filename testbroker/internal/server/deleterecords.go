package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(21, 0, 2, (*Broker).handleDeleteRecords, failedDeleteRecords, deleteRecordsScope)
}

// handleDeleteRecords answers DeleteRecords v0-2 as Kafka's KafkaApis and
// ReplicaManager.deleteRecords do: each partition's log start offset moves up to Offset (-1:
// the high watermark) on its leader (replica.Partition.DeleteRecords), and LowWatermark is the
// leader's log start offset afterwards. Per partition, with LowWatermark -1:
//
//   - an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
//   - an internal topic: INVALID_TOPIC_EXCEPTION;
//   - a broker that does not lead the partition: NOT_LEADER_OR_FOLLOWER;
//   - a topic whose cleanup.policy does not include delete: POLICY_VIOLATION;
//   - an offset past the high watermark, or negative other than -1: OFFSET_OUT_OF_RANGE.
//
// A partition named twice is answered once, with the last offset given, as Kafka's map of
// requested offsets keeps it.
//
// Kafka then waits, up to TimeoutMillis, until every live replica's log start offset has
// reached the new one (DelayedDeleteRecords, whose low watermark is the smallest of them); the
// followers learn it from their next fetch. testbroker answers at once with the leader's: a
// follower's log start offset follows at its next fetch response, so a test that inspects the
// replicas waits for them.
func (b *Broker) handleDeleteRecords(cn *conn, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type key struct {
		topic     string
		partition int32
	}
	offsets := make(map[key]int64)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			offsets[key{rt.Topic, rp.Partition}] = rp.Offset
		}
	}
	answered := make(map[key]bool, len(offsets))
	for _, rt := range req.Topics {
		st := kmsg.DeleteRecordsResponseTopic{Topic: rt.Topic}
		t := c.meta.Topic(rt.Topic)
		denied := !cn.authorizeTopic(acl.OpDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			k := key{rt.Topic, rp.Partition}
			if answered[k] {
				continue
			}
			answered[k] = true
			sp := kmsg.DeleteRecordsResponseTopicPartition{Partition: rp.Partition, LowWatermark: -1}
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if low, err := b.deleteRecords(t, rt.Topic, rp.Partition, offsets[k]); err != nil {
				sp.ErrorCode = err.Code
			} else {
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp
}

// deleteRecords moves one partition's log start offset and returns the low watermark.
func (b *Broker) deleteRecords(t *metadata.Topic, name string, index int32, offset int64) (int64, *kerr.Error) {
	p := b.c.meta.Partition(t, index)
	switch {
	case p == nil:
		return -1, kerr.UnknownTopicOrPartition
	case isInternalTopic(name): // only their coordinators remove their records
		return -1, kerr.InvalidTopicException
	}
	st := p.State()
	if err := b.leaderError(st, -1); err != nil {
		return -1, err
	}
	if !b.c.configs.LogPolicy(b.c.meta.TopicConfigs(t)).Delete {
		return -1, kerr.PolicyViolation
	}
	low, err := p.DeleteRecords(st, offset)
	if err != nil {
		return -1, kerrOf(err)
	}
	return low, nil
}

func failedDeleteRecords(r *kmsg.DeleteRecordsRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range r.Topics {
		rt := kmsg.DeleteRecordsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsResponseTopicPartition{Partition: p.Partition, LowWatermark: -1, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func deleteRecordsScope(_ *Cluster, r *kmsg.DeleteRecordsRequest) (topics, groups []string) {
	for _, t := range r.Topics {
		topics = append(topics, t.Topic)
	}
	return topics, nil
}

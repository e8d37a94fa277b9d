package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(2, 1, 11, (*Broker).handleListOffsets, failedListOffsets, listOffsetsScope)
}

// The special timestamps of ListOffsets and the first version that accepts each.
const (
	latestTimestamp        = -1 // the offset consumers read up to (v1+)
	earliestTimestamp      = -2 // the log start offset (v1+)
	maxTimestamp           = -3 // the record with the largest timestamp, KIP-734 (v7+)
	earliestLocalTimestamp = -4 // the local log start offset, KIP-405 (v8+)
	latestTieredTimestamp  = -5 // the last offset in remote storage, KIP-1005 (v9+)
	earliestPendingUpload  = -6 // the first offset not yet in remote storage, KIP-1023 (v11+)
)

// minVersionForTimestamp returns the first ListOffsets version that accepts a special
// timestamp, or -1 for a negative timestamp no version up to v11 knows (Kafka's
// ReplicaManager.timestampMinSupportedVersion).
func minVersionForTimestamp(ts int64) int16 {
	switch ts {
	case latestTimestamp, earliestTimestamp:
		return 1
	case maxTimestamp:
		return 7
	case earliestLocalTimestamp:
		return 8
	case latestTieredTimestamp:
		return 9
	case earliestPendingUpload:
		return 11
	}
	return -1
}

// Replica ids a ListOffsets request can come from.
const (
	consumerReplicaID  = -1 // a client: reads up to the high watermark, only from the leader
	debuggingReplicaID = -2 // a tool: may ask a follower
)

// handleListOffsets answers ListOffsets v1-11 as Kafka's ReplicaManager.fetchOffset and
// UnifiedLog.fetchOffsetByTimestamp do. Per partition, by Timestamp:
//
//   - -2 (earliest) and -4 (earliest local: there is no remote storage): the log start offset,
//     with the epoch of the leader epoch cache's first entry when it starts there;
//   - -1 (latest): the offset reads stop at, with the partition's leader epoch: for a client
//     the high watermark, or with READ_COMMITTED the last stable offset (log.Partition's
//     ReadLimit), and for a follower the log end offset;
//   - -3 (max timestamp): the first record holding the largest timestamp, in the first batch
//     holding it, with that timestamp and the batch's epoch;
//   - -5 (latest tiered) and -6 (earliest pending upload): offset -1 and epoch -1, as on a
//     Kafka topic without remote storage;
//   - 0 or more: the first record at or after the log start offset whose timestamp is
//     Timestamp or later, with its timestamp and its batch's epoch (log.Partition's
//     OffsetForTimestamp).
//
// A search that finds nothing, or only a record at or past the offset reads stop at, answers
// offset -1 and timestamp -1 without an error, as Kafka does; except that a client asking a
// leader whose high watermark has not yet reached the start of its leader epoch gets
// OFFSET_NOT_AVAILABLE for -1 and for such a search. Special timestamps get timestamp -1.
// LeaderEpoch is v4+. A special timestamp the request's version does not know is
// UNSUPPORTED_VERSION; a partition named twice is INVALID_REQUEST, answered once; an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a broker that does not lead the partition
// answers NOT_LEADER_OR_FOLLOWER, except to the debugging replica id (-2) on a follower;
// a CurrentLeaderEpoch (v4+) older or newer than the partition's is FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH.
func (b *Broker) handleListOffsets(cn *conn, req *kmsg.ListOffsetsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	dups := duplicatePartitions(req)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Topic = rt.Topic
		t := c.meta.Topic(rt.Topic)
		denied := !cn.authorizeTopic(acl.OpDescribe, rt.Topic)
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, 0, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			key := listOffsetsKey{rt.Topic, rp.Partition}
			if answered, dup := dups[key]; dup {
				if !answered {
					dups[key] = true
					sp.ErrorCode = kerr.InvalidRequest.Code
					st.Partitions = append(st.Partitions, sp)
				}
				continue
			}
			b.listOffset(req, t, rp, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return resp
}

// listOffsetsKey names a partition of a ListOffsets request.
type listOffsetsKey struct {
	topic     string
	partition int32
}

// duplicatePartitions returns the partitions the request names more than once, each mapped to
// false (not answered yet); nil when there are none.
func duplicatePartitions(req *kmsg.ListOffsetsRequest) map[listOffsetsKey]bool {
	total := 0
	for i := range req.Topics {
		total += len(req.Topics[i].Partitions)
	}
	if total < 2 {
		return nil
	}
	seen := make(map[listOffsetsKey]struct{}, total)
	var dups map[listOffsetsKey]bool
	for i := range req.Topics {
		for _, p := range req.Topics[i].Partitions {
			key := listOffsetsKey{req.Topics[i].Topic, p.Partition}
			if _, ok := seen[key]; !ok {
				seen[key] = struct{}{}
				continue
			}
			if dups == nil {
				dups = make(map[listOffsetsKey]bool)
			}
			dups[key] = false
		}
	}
	return dups
}

// listOffset answers one partition of a ListOffsets request into sp, which has Kafka's
// defaults (offset, timestamp and leader epoch -1).
func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, t *metadata.Topic, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if rp.Timestamp < 0 {
		if v := minVersionForTimestamp(rp.Timestamp); v < 0 || req.Version < v {
			sp.ErrorCode = kerr.UnsupportedVersion.Code
			return
		}
	}
	p := b.c.meta.Partition(t, rp.Partition)
	if p == nil {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	st := p.State()
	if err := b.replicaError(st, rp.CurrentLeaderEpoch, req.ReplicaID != debuggingReplicaID); err != nil {
		sp.ErrorCode = err.Code
		return
	}
	lg := st.Log(b.id)
	// The offset reads stop at: a follower reads the whole log, a client up to the high
	// watermark or, reading committed records only, the last stable offset.
	client := req.ReplicaID == consumerReplicaID
	limit := lg.LogEndOffset()
	if client {
		limit = lg.ReadLimit(req.IsolationLevel == 1)
	}
	// A new leader's high watermark may lag behind the offset its epoch started at: Kafka
	// refuses clients an answer it cannot yet stand by.
	var notAvailable bool
	if start, ok := lg.EpochStartOffset(st.LeaderEpoch); client && ok && start > lg.HighWatermark() {
		notAvailable = true
	}
	var at log.TimestampOffset
	found := false
	switch rp.Timestamp {
	case earliestTimestamp, earliestLocalTimestamp:
		sp.Offset, sp.LeaderEpoch = lg.LogStartOffset(), lg.LogStartEpoch()
		return
	case latestTimestamp:
		if notAvailable {
			sp.ErrorCode = kerr.OffsetNotAvailable.Code
			return
		}
		sp.Offset, sp.LeaderEpoch = limit, st.LeaderEpoch
		return
	case latestTieredTimestamp, earliestPendingUpload:
		return
	case maxTimestamp:
		at, found = lg.MaxTimestamp(limit)
	default:
		at, found = lg.OffsetForTimestamp(rp.Timestamp, limit)
	}
	switch {
	case found:
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = at.Offset, at.Timestamp, at.LeaderEpoch
	case notAvailable:
		sp.ErrorCode = kerr.OffsetNotAvailable.Code
	}
}

func failedListOffsets(r *kmsg.ListOffsetsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, t := range r.Topics {
		rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func listOffsetsScope(c *Cluster, r *kmsg.ListOffsetsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.topic(t.Topic)
	}
	return s.result()
}

package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/share"
)

func init() {
	register(91, 0, 0, (*Broker).handleAlterShareGroupOffsets, failedAlterShareGroupOffsets, alterShareGroupOffsetsScope)
}

// negativePartitionMessage is the share coordinator's message for a partition index below 0.
const negativePartitionMessage = "The partition id cannot be a negative number."

// handleAlterShareGroupOffsets sets share-partition start offsets (v0), as Kafka's
// KafkaApis.handleAlterShareGroupOffsetsRequest, GroupMetadataManager.alterShareGroupOffsets and
// the share coordinator's initializeState do (group.Coordinator.AlterShareGroupOffsets has the
// group rules, share.Manager.SetStartOffset what happens to the share partition):
//
//   - An empty group id is INVALID_GROUP_ID and a broker that does not coordinate the group
//     answers NOT_COORDINATOR; a group of another type is GROUP_ID_NOT_FOUND "Group <id> is
//     not a share group." and one with members NON_EMPTY_GROUP "The group is not empty.". These
//     are top-level, with a message and no topics.
//   - A missing group is created, empty, when a topic of the request exists.
//   - A topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION with the code's message on
//     each of its partitions and a zero topic id; such topics come first (Kafka's broker answers
//     them before its coordinator does). Then every existing topic with its id: a partition
//     index the topic lacks is UNKNOWN_TOPIC_OR_PARTITION, a negative one INVALID_REQUEST "The
//     partition id cannot be a negative number.", and every other partition restarts at its
//     StartOffset (-1: from share.auto.offset.reset at the next fetch), without checking it
//     against the log.
func (b *Broker) handleAlterShareGroupOffsets(cn *conn, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if !cn.authorizeGroup(acl.OpRead, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	if err := shareOffsetsGroupCheck(b, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), topLevelMessage(err)
		return resp
	}
	var denied []kmsg.AlterShareGroupOffsetsRequestTopic
	req.Topics, denied = splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.AlterShareGroupOffsetsRequestTopic) string { return t.Topic })
	type reset struct {
		tp    share.TopicPartition
		start int64
	}
	var (
		unknown, known []kmsg.AlterShareGroupOffsetsResponseTopic
		resets         []reset
	)
	for _, rt := range req.Topics {
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		t := c.meta.Topic(rt.Topic)
		n := int32(0)
		if t != nil {
			out.TopicID, n = t.ID, int32(len(c.meta.Partitions(t)))
		}
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case p.Partition >= n:
				rp.ErrorCode, rp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, &kerr.UnknownTopicOrPartition.Description
			case p.Partition < 0:
				msg := negativePartitionMessage
				rp.ErrorCode, rp.ErrorMessage = kerr.InvalidRequest.Code, &msg
			default:
				resets = append(resets, reset{share.TopicPartition{Topic: t.ID, Partition: p.Partition}, p.StartOffset})
			}
			out.Partitions = append(out.Partitions, rp)
		}
		if t == nil {
			unknown = append(unknown, out)
		} else {
			known = append(known, out)
		}
	}
	err := c.groups.AlterShareGroupOffsets(req.GroupID, len(known) > 0, func() {
		for _, r := range resets {
			c.shares.SetStartOffset(req.GroupID, r.tp, r.start)
		}
	})
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), topLevelMessage(err)
		return resp
	}
	resp.Topics = append(unknown, known...)
	for _, rt := range denied {
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, kerr.TopicAuthorizationFailed.Code, &msgTopicAuthorizationFailed
			out.Partitions = append(out.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// failedAlterShareGroupOffsets is an AlterShareGroupOffsets answered with code at the top level
// and on every requested partition.
func failedAlterShareGroupOffsets(req *kmsg.AlterShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	resp.ErrorCode = code
	for _, rt := range req.Topics {
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			out.Partitions = append(out.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func alterShareGroupOffsetsScope(c *Cluster, req *kmsg.AlterShareGroupOffsetsRequest) (topics, groups []string) {
	s := scope{c: c}
	s.group(req.GroupID)
	for _, rt := range req.Topics {
		s.topic(rt.Topic)
	}
	return s.result()
}

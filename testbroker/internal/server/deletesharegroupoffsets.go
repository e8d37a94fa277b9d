package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(92, 0, 0, (*Broker).handleDeleteShareGroupOffsets, failedDeleteShareGroupOffsets, deleteShareGroupOffsetsScope)
}

// noOffsetInformationMessage is Kafka's message for a topic the group has no share state for.
const noOffsetInformationMessage = "There is no offset information to delete."

// handleDeleteShareGroupOffsets deletes a share group's state of whole topics (v0), as Kafka's
// KafkaApis.handleDeleteShareGroupOffsetsRequest and the group coordinator's
// initiateDeleteShareGroupOffsets do (group.Coordinator.DeleteShareGroupOffsets has the group
// rules, share.Manager.DeleteState what happens to the share partitions):
//
//   - An empty group id is INVALID_GROUP_ID and a broker that does not coordinate the group
//     answers NOT_COORDINATOR; a missing group is GROUP_ID_NOT_FOUND "Group <id> not found.", a
//     group of another type GROUP_ID_NOT_FOUND "Group <id> is not a share group." and one with
//     members NON_EMPTY_GROUP "The group is not empty.". These are top-level, with a message and
//     no topics.
//   - Otherwise each topic the group has share state for is deleted and listed first, with its
//     id and no error; the group's next ShareFetch of its partitions starts afresh from
//     share.auto.offset.reset. Then, in request order, a topic that does not exist is
//     UNKNOWN_TOPIC_OR_PARTITION with the code's message, and one the group has no share state
//     for UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete.", both with a
//     zero topic id.
//
// Kafka answers a group that never had any share state with no topics at all; this cluster
// does not tell such a group apart and answers each topic as above.
func (b *Broker) handleDeleteShareGroupOffsets(cn *conn, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !cn.authorizeGroup(acl.OpDelete, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	if err := shareOffsetsGroupCheck(b, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), topLevelMessage(err)
		return resp
	}
	var denied []kmsg.DeleteShareGroupOffsetsRequestTopic
	req.Topics, denied = splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.DeleteShareGroupOffsetsRequestTopic) string { return t.Topic })
	var deleted, failed []kmsg.DeleteShareGroupOffsetsResponseTopic
	deletedIDs := make(map[[16]byte]bool)
	err := c.groups.DeleteShareGroupOffsets(req.GroupID, func() {
		for _, rt := range req.Topics {
			out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			out.Topic = rt.Topic
			t := c.meta.Topic(rt.Topic)
			switch {
			case t == nil:
				out.ErrorCode, out.ErrorMessage = kerr.UnknownTopicOrPartition.Code, &kerr.UnknownTopicOrPartition.Description
			case deletedIDs[t.ID]:
				continue
			case c.shares.DeleteState(req.GroupID, t.ID):
				deletedIDs[t.ID] = true
				out.TopicID = t.ID
				deleted = append(deleted, out)
				continue
			default:
				msg := noOffsetInformationMessage
				out.ErrorCode, out.ErrorMessage = kerr.UnknownTopicOrPartition.Code, &msg
			}
			failed = append(failed, out)
		}
	})
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), topLevelMessage(err)
		return resp
	}
	resp.Topics = append(deleted, failed...)
	for _, rt := range denied {
		out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		out.Topic, out.ErrorCode, out.ErrorMessage = rt.Topic, kerr.TopicAuthorizationFailed.Code, &msgTopicAuthorizationFailed
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// failedDeleteShareGroupOffsets is a DeleteShareGroupOffsets answered with code at the top level
// and on every requested topic.
func failedDeleteShareGroupOffsets(req *kmsg.DeleteShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	resp.ErrorCode = code
	for _, rt := range req.Topics {
		out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		out.Topic, out.ErrorCode = rt.Topic, code
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func deleteShareGroupOffsetsScope(c *Cluster, req *kmsg.DeleteShareGroupOffsetsRequest) (topics, groups []string) {
	s := scope{c: c}
	s.group(req.GroupID)
	for _, rt := range req.Topics {
		s.topic(rt.Topic)
	}
	return s.result()
}

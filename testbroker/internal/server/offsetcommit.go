package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(8, 0, 9, (*Broker).handleOffsetCommit, failedOffsetCommit, offsetCommitScope)
}

// handleOffsetCommit runs an OffsetCommit (v0-9; group.Coordinator.CommitOffsets has the
// rules), one code per partition. A broker that does not coordinate the group answers
// NOT_COORDINATOR for every partition.
func (b *Broker) handleOffsetCommit(cn *conn, req *kmsg.OffsetCommitRequest) kmsg.Response {
	c := b.c
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return failedOffsetCommit(req, kerr.GroupAuthorizationFailed.Code)
	}
	if c.coordinatorFor(req.Group) != b.id {
		return failedOffsetCommit(req, kerr.NotCoordinator.Code)
	}
	var denied []kmsg.OffsetCommitRequestTopic
	req.Topics, denied = splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.OffsetCommitRequestTopic) string { return t.Topic })
	oc := group.OffsetCommit{
		GroupID: req.Group,
		Member: group.OffsetCommitMember{
			MemberID:                  req.MemberID,
			GroupInstanceID:           req.InstanceID,
			GenerationIDOrMemberEpoch: req.Generation,
			Version:                   req.Version,
		},
	}
	for _, t := range req.Topics {
		ot := group.OffsetCommitTopic{Name: t.Topic}
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			ot.Partitions = append(ot.Partitions, group.OffsetCommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: p.Metadata})
		}
		oc.Topics = append(oc.Topics, ot)
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range c.groups.CommitOffsets(oc) {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codeOf(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, t := range denied {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failedOffsetCommit is an OffsetCommit answered with code for every partition.
func failedOffsetCommit(req *kmsg.OffsetCommitRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func offsetCommitScope(_ *Cluster, req *kmsg.OffsetCommitRequest) (topics, groups []string) {
	for _, t := range req.Topics {
		topics = append(topics, t.Topic)
	}
	return topics, []string{req.Group}
}

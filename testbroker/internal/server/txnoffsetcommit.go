package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

func init() {
	register(28, 0, 5, (*Broker).handleTxnOffsetCommit, failedTxnOffsetCommit, txnOffsetCommitScope)
}

// handleTxnOffsetCommit commits offsets as part of a transaction, on the group's coordinator:
// the transaction check first (txn.Coordinator.TxnOffsetCommit: from v5, TV2, the group joins
// the transaction; before, it must have been added with AddOffsetsToTxn), its error every
// partition's as converted for clients (txnVerifyError), then the group's checks and pending
// offsets (group.Coordinator.CommitTxnOffsets), visible once the transaction commits. A group
// this broker does not coordinate is NOT_COORDINATOR.
func (b *Broker) handleTxnOffsetCommit(cn *conn, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	c := b.c
	if !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		return failedTxnOffsetCommit(req, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return failedTxnOffsetCommit(req, kerr.GroupAuthorizationFailed.Code)
	}
	if req.TransactionalID == "" {
		return failedTxnOffsetCommit(req, kerr.InvalidRequest.Code)
	}
	if c.coordinatorFor(req.Group) != b.id {
		return failedTxnOffsetCommit(req, kerr.NotCoordinator.Code)
	}
	var denied []kmsg.TxnOffsetCommitRequestTopic
	req.Topics, denied = splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic })
	oc := group.OffsetCommit{
		GroupID: req.Group,
		Member: group.OffsetCommitMember{
			MemberID:                  req.MemberID,
			GroupInstanceID:           req.InstanceID,
			GenerationIDOrMemberEpoch: req.Generation,
			Version:                   req.Version,
		},
	}
	if req.Version < 3 {
		oc.Member.GenerationIDOrMemberEpoch = -1
	}
	for _, t := range req.Topics {
		ot := group.OffsetCommitTopic{Name: t.Topic}
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			ot.Partitions = append(ot.Partitions, group.OffsetCommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: p.Metadata})
		}
		oc.Topics = append(oc.Topics, ot)
	}
	v := txn.V0
	if req.Version >= 5 {
		v = txn.V2
	}
	var results []group.TopicResults
	err := c.txns.TxnOffsetCommit(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, v, func() {
		results = c.groups.CommitTxnOffsets(req.ProducerID, oc)
	})
	if err != nil {
		return failedTxnOffsetCommit(req, codeOf(txnVerifyError(err, req.Version >= 4)))
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range results {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codeOf(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, t := range denied {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failedTxnOffsetCommit answers every partition with code.
func failedTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func txnOffsetCommitScope(_ *Cluster, req *kmsg.TxnOffsetCommitRequest) (topics, groups []string) {
	for _, t := range req.Topics {
		topics = append(topics, t.Topic)
	}
	return topics, []string{req.Group}
}

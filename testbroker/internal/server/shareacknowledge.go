package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/share"
)

func init() {
	register(79, 1, 2, (*Broker).handleShareAcknowledge, failedShareAcknowledge, shareAcknowledgeScope)
}

// Kafka's messages for malformed share requests (KafkaApis.handleShareFetchRequest and
// handleShareAcknowledgeRequest).
const (
	msgInvalidShareGroupID  = "Invalid group id in the request."
	msgInvalidShareMemberID = "Invalid member id in the request."
)

// shareIDsError checks the group and member ids a ShareFetch or ShareAcknowledge carries, as
// KafkaApis does first: a null group id, then an invalid member id, is INVALID_REQUEST.
func shareIDsError(group, member *string) error {
	if group == nil {
		return kafkaerr.New(kerr.InvalidRequest, msgInvalidShareGroupID)
	}
	if !validShareMemberID(member) {
		return kafkaerr.New(kerr.InvalidRequest, msgInvalidShareMemberID)
	}
	return nil
}

// validShareMemberID is KafkaApis.isMemberIdValid: not null, not empty, and at most 36 Java
// characters (UTF-16 code units), the length of a printed UUID.
func validShareMemberID(id *string) bool {
	if id == nil || *id == "" {
		return false
	}
	units := 0
	for _, r := range *id {
		units++
		if r > 0xFFFF {
			units++ // a surrogate pair in Java
		}
	}
	return units <= 36
}

// maxAckType is the highest acknowledgement type a share request version may carry: RENEW (4)
// from version 2 (Kafka checks version == 2), REJECT (3) before.
func maxAckType(version int16) int8 {
	if version == 2 {
		return 4
	}
	return 3
}

// shareFetchAcks returns the ShareFetch's partitions with their acknowledgement batches, and
// whether any partition has one.
func shareFetchAcks(req *kmsg.ShareFetchRequest) ([]share.AckPartition, bool) {
	var a ackCollector
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			collectAcks(&a, t.TopicID, t.Partitions[j].Partition, t.Partitions[j].AcknowledgementBatches)
		}
	}
	if len(a.all) == 0 {
		return nil, false
	}
	return a.out, true
}

// shareAcknowledgeAcks returns the ShareAcknowledge's partitions with their batches.
func shareAcknowledgeAcks(req *kmsg.ShareAcknowledgeRequest) []share.AckPartition {
	var a ackCollector
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			collectAcks(&a, t.TopicID, t.Partitions[j].Partition, t.Partitions[j].AcknowledgementBatches)
		}
	}
	return a.out
}

// ackBatch is either request's acknowledgement batch; the two types have the same fields.
type ackBatch interface {
	kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch | kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch
}

// ackCollector gathers a request's partitions with their batches, which share one slice.
type ackCollector struct {
	all []share.AckBatch
	out []share.AckPartition
}

// collectAcks adds one partition and its batches, whose types alias the request's.
func collectAcks[B ackBatch](a *ackCollector, topicID [16]byte, partition int32, batches []B) {
	first := len(a.all)
	for _, b := range batches {
		fb := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch(b)
		a.all = append(a.all, share.AckBatch{FirstOffset: fb.FirstOffset, LastOffset: fb.LastOffset, Types: fb.AcknowledgeTypes})
	}
	a.out = append(a.out, share.AckPartition{TopicPartition: share.TopicPartition{Topic: topicID, Partition: partition}, Batches: a.all[first:len(a.all):len(a.all)]})
}

// handleShareAcknowledge answers ShareAcknowledge v1-2 in Kafka's order
// (KafkaApis.handleShareAcknowledgeRequest): a null group id, then a member id that is null,
// empty or longer than 36 characters, are INVALID_REQUEST with Kafka's message; then the
// session rules of share.Sessions.OpenAcknowledge, whose failures are top-level codes; then the
// acknowledgements, applied as share.Manager.Acknowledge says, with RENEW allowed only in version 2 with
// IsRenewAck; those on a topic the principal may not READ are TOPIC_AUTHORIZATION_FAILED and
// not applied, once their topic id and batches pass Kafka's checks (an invalid batch is
// INVALID_REQUEST whatever the ACLs). A partition refused with NOT_LEADER_OR_FOLLOWER names its current leader in
// CurrentLeader and NodeEndpoints, as Kafka's response does. Epoch -1 then closes the member's
// session and releases what it holds in the session's partitions. Version 2 carries the
// group's share.record.lock.duration.ms in AcquisitionLockTimeoutMs (0 on top-level errors).
//
// Kafka's own top-level error responses carry no ErrorMessage (getErrorResponse keeps only the
// code); this one sends Kafka's message text, which clients only display.
func (b *Broker) handleShareAcknowledge(cn *conn, req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
		return resp
	}
	if req.GroupID != nil && !cn.authorizeGroup(acl.OpRead, *req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if err := shareIDsError(req.GroupID, req.MemberID); err != nil {
		return fail(err)
	}
	group, member := *req.GroupID, *req.MemberID
	ss := c.shares.Sessions(b.id)
	if err := ss.OpenAcknowledge(group, member, req.ShareSessionEpoch); err != nil {
		return fail(err)
	}
	renew := req.Version >= 2 && req.IsRenewAck
	allowed, refused := splitDeniedAcks(shareAcknowledgeAcks(req), cn.topicReadDenied(), maxAckType(req.Version), renew)
	outcomes := append(c.shares.Acknowledge(b.id, group, member, allowed, maxAckType(req.Version), renew), refused...)
	if req.ShareSessionEpoch == -1 {
		ss.Release(group, member)
	}
	for _, o := range outcomes {
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = o.Partition, o.Code, o.Message
		if o.Code == kerr.NotLeaderForPartition.Code {
			if p := c.meta.Partition(c.meta.TopicByID(o.Topic), o.Partition); p != nil {
				st := p.State()
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
				c.appendShareAckNodeEndpoint(resp, st.Leader)
			}
		}
		i := len(resp.Topics) - 1
		for ; i >= 0 && resp.Topics[i].TopicID != o.Topic; i-- {
		}
		if i < 0 {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = o.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	resp.AcquisitionLockTimeoutMillis = c.shareLockDurationMs(group)
	return resp
}

func failedShareAcknowledge(r *kmsg.ShareAcknowledgeRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.ShareAcknowledgeResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func shareAcknowledgeScope(c *Cluster, r *kmsg.ShareAcknowledgeRequest) (topics, groups []string) {
	s := scope{c: c}
	if r.GroupID != nil {
		s.group(*r.GroupID)
	}
	for _, t := range r.Topics {
		s.topicID(t.TopicID)
	}
	return s.result()
}

// appendShareAckNodeEndpoint adds the address of node id to a ShareAcknowledge response unless
// it is there.
func (c *Cluster) appendShareAckNodeEndpoint(resp *kmsg.ShareAcknowledgeResponse, id int32) {
	for _, have := range resp.NodeEndpoints {
		if have.NodeID == id {
			return
		}
	}
	if nb := c.broker(id); nb != nil {
		resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: id, Host: nb.host, Port: nb.port})
	}
}

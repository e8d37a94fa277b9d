package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(77, 1, 1, (*Broker).handleShareGroupDescribe, failedShareGroupDescribe, shareGroupDescribeScope)
}

// handleShareGroupDescribe describes share groups (v1), one result per requested id, in the
// request's order. An empty id is INVALID_GROUP_ID; a group this broker does not coordinate is
// NOT_COORDINATOR; a missing group is GROUP_ID_NOT_FOUND "Group <id> not found." and a group of
// another type GROUP_ID_NOT_FOUND "Group <id> is not a share group.". A group the principal may
// not DESCRIBE is GROUP_AUTHORIZATION_FAILED, and one whose members' assignments name a topic
// it may not DESCRIBE is answered as Kafka 4.x does (KafkaApis.handleShareGroupDescribe), by an
// entry with TOPIC_AUTHORIZATION_FAILED, msgAssignedTopicsDenied and no members; subscribed
// topic names are not checked. AuthorizedOperations is Integer.MIN_VALUE unless asked for, and
// then the group operations the principal may perform.
func (b *Broker) handleShareGroupDescribe(cn *conn, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		dg.AuthorizedOperations = authorizedOperationsOmitted
		info, err := describedGroup(b, id, c.groups.ShareGroup)
		if !cn.authorizeGroup(acl.OpDescribe, id) {
			err = kerr.GroupAuthorizationFailed
		}
		if err != nil {
			dg.ErrorCode = codeOf(err)
			dg.ErrorMessage = messageOf(err)
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if !mayDescribeAssignedTopics(cn, info.Members, func(m *group.ShareMemberInfo) [][]group.TopicPartitions {
			return [][]group.TopicPartitions{m.Assignment}
		}) {
			dg.ErrorCode = kerr.TopicAuthorizationFailed.Code
			dg.ErrorMessage = kmsg.StringPtr(msgAssignedTopicsDenied)
			dg.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.GroupState = info.State
		dg.GroupEpoch = info.GroupEpoch
		dg.AssignmentEpoch = info.AssignmentEpoch
		dg.Assignor = group.ShareAssignorName
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = cn.authorizedOperations(acl.ResourceGroup, id)
		}
		for _, m := range info.Members {
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID, rm.RackID, rm.MemberEpoch = m.MemberID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopicNames = m.SubscribedTopicNames
			rm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
			for _, tp := range m.Assignment {
				rtp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				rtp.TopicID, rtp.Topic, rtp.Partitions = tp.TopicID, tp.Topic, tp.Partitions
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, rtp)
			}
			dg.Members = append(dg.Members, rm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func failedShareGroupDescribe(r *kmsg.ShareGroupDescribeRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	for _, g := range r.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID, dg.ErrorCode = g, code
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func shareGroupDescribeScope(c *Cluster, r *kmsg.ShareGroupDescribeRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, g := range r.GroupIDs {
		s.group(g)
	}
	return s.result()
}

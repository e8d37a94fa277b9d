package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(69, 0, 1, func(b *Broker, cn *conn, r *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
		return b.handleConsumerGroupDescribe(cn, r)
	}, failedConsumerGroupDescribe, consumerGroupDescribeScope)
}

// consumerMemberType is ConsumerGroupDescribe v1's MemberType of a member using the consumer
// protocol (0 is the classic protocol).
const consumerMemberType = 1

// handleConsumerGroupDescribe describes consumer groups (v0-1), one result per requested id,
// in the request's order. An empty id is INVALID_GROUP_ID; a group this broker does not
// coordinate is NOT_COORDINATOR; a missing group is GROUP_ID_NOT_FOUND "Group <id> not
// found." and a group of another type GROUP_ID_NOT_FOUND "Group <id> is not a consumer
// group.". A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED, and one
// whose members' assignments or target assignments name a topic it may not DESCRIBE is
// answered as Kafka 4.x does (KafkaApis.handleConsumerGroupDescribe), by an entry with
// TOPIC_AUTHORIZATION_FAILED, msgAssignedTopicsDenied and no members; subscribed topic names
// are not checked. AuthorizedOperations is Integer.MIN_VALUE unless asked for, and then the
// group operations the principal may perform.
func (b *Broker) handleConsumerGroupDescribe(cn *conn, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = authorizedOperationsOmitted
		info, err := describedGroup(b, id, c.groups.ConsumerGroup)
		if !cn.authorizeGroup(acl.OpDescribe, id) {
			err = kerr.GroupAuthorizationFailed
		}
		if err != nil {
			dg.ErrorCode = codeOf(err)
			dg.ErrorMessage = messageOf(err)
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if !mayDescribeAssignedTopics(cn, info.Members, func(m *group.ConsumerMemberInfo) [][]group.TopicPartitions {
			return [][]group.TopicPartitions{m.Assignment, m.TargetAssignment}
		}) {
			dg.ErrorCode = kerr.TopicAuthorizationFailed.Code
			dg.ErrorMessage = kmsg.StringPtr(msgAssignedTopicsDenied)
			dg.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.State = info.State
		dg.Epoch = info.GroupEpoch
		dg.AssignmentEpoch = info.AssignmentEpoch
		dg.AssignorName = info.AssignorName
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = cn.authorizedOperations(acl.ResourceGroup, id)
		}
		for _, m := range info.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics, rm.SubscribedTopicRegex = m.SubscribedTopicNames, m.SubscribedTopicRegex
			rm.Assignment.TopicPartitions = describedPartitions(m.Assignment)
			rm.TargetAssignment.TopicPartitions = describedPartitions(m.TargetAssignment)
			rm.MemberType = consumerMemberType
			dg.Members = append(dg.Members, rm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// msgAssignedTopicsDenied is Kafka's message for a described consumer or share group whose
// members are assigned a topic the principal may not DESCRIBE.
const msgAssignedTopicsDenied = "The group has described topic(s) that the client is not authorized to describe."

// mayDescribeAssignedTopics reports whether the principal may DESCRIBE every topic in the
// members' assignments, as assigned returns them for a member.
func mayDescribeAssignedTopics[M any](cn *conn, members []M, assigned func(*M) [][]group.TopicPartitions) bool {
	if cn.b.c.authz == nil {
		return true
	}
	checked := make(map[string]bool) // members mostly share their topics: ask once per topic
	for i := range members {
		for _, tps := range assigned(&members[i]) {
			for _, tp := range tps {
				if checked[tp.Topic] {
					continue
				}
				if !cn.authorizeTopic(acl.OpDescribe, tp.Topic) {
					return false
				}
				checked[tp.Topic] = true
			}
		}
	}
	return true
}

func describedPartitions(tps []group.TopicPartitions) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	for _, tp := range tps {
		rtp := kmsg.NewAssignmentTopicPartition()
		rtp.TopicID, rtp.Topic, rtp.Partitions = tp.TopicID, tp.Topic, tp.Partitions
		out = append(out, rtp)
	}
	return out
}

// failedConsumerGroupDescribe answers every requested group with code.
func failedConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group, dg.ErrorCode, dg.AuthorizedOperations = id, code, authorizedOperationsOmitted
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// consumerGroupDescribeScope is the groups a describe names.
func consumerGroupDescribeScope(_ *Cluster, req *kmsg.ConsumerGroupDescribeRequest) (topics, groups []string) {
	return nil, req.Groups
}

// ConsumerGroup returns a snapshot of a consumer group; ok is false when no consumer group
// has this id.
func (c *Cluster) ConsumerGroup(id string) (group.ConsumerGroupInfo, bool) {
	info, err := c.groups.ConsumerGroup(id)
	return info, err == nil
}

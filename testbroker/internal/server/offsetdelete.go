package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(47, 0, 0, (*Broker).handleOffsetDelete, failedOffsetDelete, offsetDeleteScope)
}

// handleOffsetDelete runs an OffsetDelete (v0; group.Coordinator.DeleteOffsets has the rules):
// a request-wide error is the top-level code, with no topics; otherwise each partition has its
// own. A broker that does not coordinate the group answers NOT_COORDINATOR.
func (b *Broker) handleOffsetDelete(cn *conn, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !cn.authorizeGroup(acl.OpDelete, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	req.Topics, denied = splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.OffsetDeleteRequestTopic) string { return t.Topic })
	if c.coordinatorFor(req.Group) != b.id {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	var topics []group.OffsetDeleteTopic
	for _, t := range req.Topics {
		dt := group.OffsetDeleteTopic{Name: t.Topic}
		for _, p := range t.Partitions {
			dt.Partitions = append(dt.Partitions, p.Partition)
		}
		topics = append(topics, dt)
	}
	res, err := c.groups.DeleteOffsets(req.Group, topics)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	for _, t := range res {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codeOf(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, t := range denied {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failedOffsetDelete is an OffsetDelete answered with code at the top level.
func failedOffsetDelete(req *kmsg.OffsetDeleteRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = code
	return resp
}

func offsetDeleteScope(_ *Cluster, req *kmsg.OffsetDeleteRequest) (topics, groups []string) {
	for _, t := range req.Topics {
		topics = append(topics, t.Topic)
	}
	return topics, []string{req.Group}
}

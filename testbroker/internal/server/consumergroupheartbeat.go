package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(68, 0, 1, (*Broker).handleConsumerGroupHeartbeat, failedConsumerGroupHeartbeat, consumerGroupHeartbeatScope)
}

// consumerGroupConfig is what a consumer group runs with: its heartbeat interval and session
// timeout (group configs, else the broker's group.consumer.*), group.consumer.max.size, and
// the assignors of Kafka's default group.consumer.assignors, uniform first.
func (c *Cluster) consumerGroupConfig(id string) group.ConsumerConfig {
	g := &c.configs.Snapshot().Group(id).Consumer
	return group.ConsumerConfig{
		HeartbeatInterval: g.HeartbeatInterval,
		SessionTimeout:    g.SessionTimeout,
		MaxSize:           g.MaxSize,
		Assignors:         []string{group.UniformAssignorName, group.RangeAssignorName},
	}
}

// TopicNames lists every topic, for consumer groups' regular expression subscriptions.
func (t coordinatorTopics) TopicNames() []string {
	topics := t.c.meta.SortedTopics()
	names := make([]string, len(topics))
	for i, tp := range topics {
		names[i] = tp.Name
	}
	return names
}

// handleConsumerGroupHeartbeat runs a ConsumerGroupHeartbeat (v0-1) as Kafka's group
// coordinator does (group.Coordinator.ConsumerHeartbeat has the rules): the request is
// validated first, then a broker that does not coordinate the group answers NOT_COORDINATOR.
// Errors go in the top-level ErrorCode and ErrorMessage. The member's ClientId is the request
// header's and its ClientHost the connection's remote address.
func (b *Broker) handleConsumerGroupHeartbeat(cn *conn, req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	if code := cn.groupHeartbeatDenied(req.Group, req.SubscribedTopicNames); code != 0 {
		return failedConsumerGroupHeartbeat(req, code)
	}
	c := b.c
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	hb := group.ConsumerHeartbeat{
		Version:              req.Version,
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		InstanceID:           req.InstanceID,
		RackID:               req.RackID,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		SubscribedTopicNames: req.SubscribedTopicNames,
		SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor:       req.ServerAssignor,
		ClientID:             cn.clientID,
		ClientHost:           clientHost(cn.nc.RemoteAddr()),
	}
	if req.Topics != nil {
		hb.Owned = make(map[[16]byte][]int32, len(req.Topics))
		for _, t := range req.Topics {
			hb.Owned[t.TopicID] = append(hb.Owned[t.TopicID], t.Partitions...)
		}
	}
	fail := func(err error) kmsg.Response {
		resp.ErrorCode = codeOf(err)
		resp.ErrorMessage = messageOf(err)
		return resp
	}
	if err := group.ValidateConsumerHeartbeat(&hb, c.consumerGroupConfig(req.Group).Assignors); err != nil {
		return fail(err)
	}
	if c.coordinatorFor(req.Group) != b.id {
		return fail(kerr.NotCoordinator)
	}
	res, err := c.groups.ConsumerHeartbeat(hb)
	if err != nil {
		return fail(err)
	}
	resp.MemberID = &res.MemberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval / time.Millisecond)
	if res.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, tp := range res.Assignment {
			rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			rt.TopicID, rt.Partitions = tp.TopicID, tp.Partitions
			a.Topics = append(a.Topics, rt)
		}
		resp.Assignment = &a
	}
	return resp
}

// failedConsumerGroupHeartbeat answers a heartbeat with code and no member.
func failedConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp
}

// consumerGroupHeartbeatScope is the group and the topics a heartbeat names (subscribed and
// owned).
func consumerGroupHeartbeatScope(c *Cluster, req *kmsg.ConsumerGroupHeartbeatRequest) (topics, groups []string) {
	topics = append(topics, req.SubscribedTopicNames...)
	for _, t := range req.Topics {
		if tp := c.meta.TopicByID(t.TopicID); tp != nil {
			topics = append(topics, tp.Name)
		}
	}
	return topics, []string{req.Group}
}

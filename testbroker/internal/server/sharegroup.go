package server

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/group"
)

// groupAuthorizedOperations is what a describe reports when asked for the authorized
// operations of a group: with no authorizer Kafka grants every operation a group supports,
// READ (3), DELETE (6), DESCRIBE (8), DESCRIBE_CONFIGS (10) and ALTER_CONFIGS (11), as bits.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// authorizedOperationsOmitted is the AuthorizedOperations of a describe that did not ask for
// them (Integer.MIN_VALUE).
const authorizedOperationsOmitted = -2147483648

// newGroupCoordinator returns the cluster's group coordinator, reading topics and configs from
// the cluster at every heartbeat.
func (c *Cluster) newGroupCoordinator() *group.Coordinator {
	return group.NewCoordinator(group.Config{
		Clock:  c.clock,
		Topics: coordinatorTopics{c},
		ShareConfig: func(id string) group.ShareConfig {
			return group.ShareConfig{
				HeartbeatInterval: time.Duration(c.groupConfigInt(id, "share.heartbeat.interval.ms")) * time.Millisecond,
				SessionTimeout:    time.Duration(c.groupConfigInt(id, "share.session.timeout.ms")) * time.Millisecond,
				MaxSize:           c.configs.int("group.share.max.size"),
			}
		},
		ConsumerConfig: c.consumerGroupConfig,
	})
}

// coordinatorTopics shows the cluster's topics to the group coordinator.
type coordinatorTopics struct{ c *Cluster }

func (t coordinatorTopics) TopicByName(name string) (group.TopicMeta, bool) {
	tp := t.c.topic(name)
	if tp == nil {
		return group.TopicMeta{}, false
	}
	return group.TopicMeta{Name: tp.Name, ID: tp.ID, Partitions: int32(len(t.c.partitions(tp)))}, true
}

func (t coordinatorTopics) TopicName(id [16]byte) (string, bool) {
	tp := t.c.topicByID(id)
	if tp == nil {
		return "", false
	}
	return tp.Name, true
}

// handleShareGroupHeartbeat runs a ShareGroupHeartbeat (v1) as Kafka's group coordinator does
// (group.Coordinator.ShareHeartbeat has the rules): the request is validated first, then a
// broker that does not coordinate the group answers NOT_COORDINATOR (no message), as Kafka's
// coordinator runtime does for a __consumer_offsets partition it does not lead. Errors go in the
// top-level ErrorCode and ErrorMessage. The member's ClientId is the request header's and its
// ClientHost the connection's remote address as Java prints an InetAddress ("/127.0.0.1").
func (b *Broker) handleShareGroupHeartbeat(cn *conn, req *kmsg.ShareGroupHeartbeatRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	hb := group.ShareHeartbeat{
		GroupID:              req.GroupID,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		RackID:               req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames,
		ClientID:             cn.clientID,
		ClientHost:           clientHost(cn.nc.RemoteAddr()),
	}
	fail := func(err error) kmsg.Response {
		resp.ErrorCode = codeOf(err)
		resp.ErrorMessage = messageOf(err)
		return resp
	}
	if err := group.ValidateShareHeartbeat(&hb); err != nil {
		return fail(err)
	}
	if c.coordinatorFor(req.GroupID) != b.id {
		return fail(kerr.NotCoordinator)
	}
	res, err := c.groups.ShareHeartbeat(hb)
	if err != nil {
		return fail(err)
	}
	resp.MemberID = &res.MemberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval / time.Millisecond)
	if res.HasAssignment {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, tp := range res.Assignment {
			rtp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			rtp.TopicID, rtp.Partitions = tp.TopicID, tp.Partitions
			a.TopicPartitions = append(a.TopicPartitions, rtp)
		}
		resp.Assignment = &a
	}
	return resp
}

// clientHost formats a client address as Kafka's RequestContext.clientAddress prints it: an
// InetAddress without a resolved host name, "/" and the IP (on an in-memory network, the
// dialer's host name).
func clientHost(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return "/" + host
	}
	return "/" + addr.String()
}

// handleShareGroupDescribe describes share groups (v1), one result per requested id, in the
// request's order. An empty id is INVALID_GROUP_ID; a group this broker does not coordinate is
// NOT_COORDINATOR; a missing group is GROUP_ID_NOT_FOUND "Group <id> not found." and a group of
// another type GROUP_ID_NOT_FOUND "Group <id> is not a share group.". AuthorizedOperations is
// Integer.MIN_VALUE unless asked for, and then every operation a group supports, since the
// cluster has no authorizer.
func (b *Broker) handleShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		dg.AuthorizedOperations = authorizedOperationsOmitted
		var err error
		var info group.ShareGroupInfo
		switch {
		case id == "":
			err = kerr.InvalidGroupID
		case c.coordinatorFor(id) != b.id:
			err = kerr.NotCoordinator
		default:
			info, err = c.groups.ShareGroup(id)
		}
		if err != nil {
			dg.ErrorCode = codeOf(err)
			dg.ErrorMessage = messageOf(err)
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.GroupState = info.State
		dg.GroupEpoch = info.GroupEpoch
		dg.AssignmentEpoch = info.AssignmentEpoch
		dg.Assignor = group.ShareAssignorName
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupAuthorizedOperations
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

// ShareGroup returns a snapshot of a share group; ok is false when no share group has this id.
func (c *Cluster) ShareGroup(id string) (group.ShareGroupInfo, bool) {
	info, err := c.groups.ShareGroup(id)
	return info, err == nil
}

// ShareGroups returns the ids of every share group, sorted.
func (c *Cluster) ShareGroups() []string { return c.groups.ShareGroupIDs() }

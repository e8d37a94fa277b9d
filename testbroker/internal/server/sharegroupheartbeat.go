package server

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(76, 1, 1, (*Broker).handleShareGroupHeartbeat, failedShareGroupHeartbeat, shareGroupHeartbeatScope)
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
	if code := cn.groupHeartbeatDenied(req.GroupID, req.SubscribedTopicNames); code != 0 {
		resp.ErrorCode = code
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

func failedShareGroupHeartbeat(r *kmsg.ShareGroupHeartbeatRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp
}

func shareGroupHeartbeatScope(c *Cluster, r *kmsg.ShareGroupHeartbeatRequest) (topics, groups []string) {
	s := scope{c: c}
	s.group(r.GroupID)
	for _, name := range r.SubscribedTopicNames {
		s.topic(name)
	}
	return s.result()
}

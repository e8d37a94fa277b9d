package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(12, 0, 4, (*Broker).handleHeartbeat, failedHeartbeat,
		func(_ *Cluster, r *kmsg.HeartbeatRequest) ([]string, []string) { return groupScopeOf(r.Group) })
}

// handleHeartbeat runs a classic Heartbeat (v0-4; group.Coordinator.Heartbeat has the rules);
// a broker that does not coordinate the group answers NOT_COORDINATOR.
func (b *Broker) handleHeartbeat(cn *conn, req *kmsg.HeartbeatRequest) kmsg.Response {
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return failedHeartbeat(req, kerr.GroupAuthorizationFailed.Code)
	}
	c := b.c
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.Group != "" && c.coordinatorFor(req.Group) != b.id {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	resp.ErrorCode = codeOf(c.groups.Heartbeat(group.Heartbeat{
		GroupID:         req.Group,
		GenerationID:    req.Generation,
		MemberID:        req.MemberID,
		GroupInstanceID: req.InstanceID,
	}))
	return resp
}

func failedHeartbeat(req *kmsg.HeartbeatRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = code
	return resp
}

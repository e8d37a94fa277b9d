package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(11, 0, 9, (*Broker).handleJoinGroup, failedJoinGroup,
		func(_ *Cluster, r *kmsg.JoinGroupRequest) ([]string, []string) { return groupScopeOf(r.Group) })
}

// handleJoinGroup runs a JoinGroup (v0-9; group.Coordinator.JoinGroup has the rules) and
// waits, without holding the coordinator, until the join completes: at once for an error or a
// repeated join, else at the end of the rebalance. A broker that does not coordinate the group
// answers NOT_COORDINATOR. v0 has no rebalance timeout: the session timeout stands for it, as
// in Kafka.
func (b *Broker) handleJoinGroup(cn *conn, req *kmsg.JoinGroupRequest) kmsg.Response {
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return deniedJoinGroup(req)
	}
	c := b.c
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if req.Group != "" && c.coordinatorFor(req.Group) != b.id {
		resp.ErrorCode, resp.MemberID = kerr.NotCoordinator.Code, req.MemberID
		return joinGroupResponse(resp)
	}
	rebalance := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		rebalance = req.SessionTimeoutMillis
	}
	jg := group.JoinGroup{
		GroupID:          req.Group,
		MemberID:         req.MemberID,
		GroupInstanceID:  req.InstanceID,
		SessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(rebalance) * time.Millisecond,
		ProtocolType:     req.ProtocolType,
		Version:          req.Version,
		ClientID:         cn.clientID,
		ClientHost:       clientHost(cn.nc.RemoteAddr()),
	}
	for _, p := range req.Protocols {
		jg.Protocols = append(jg.Protocols, group.Protocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)})
	}
	res, ok := awaitGroup(cn, c, c.groups.JoinGroup(jg))
	if !ok {
		return nil
	}
	resp.ErrorCode = codeOf(res.Err)
	resp.MemberID = res.MemberID
	resp.Generation = -1
	if res.Err == nil {
		resp.Generation = res.GenerationID
		resp.ProtocolType, resp.Protocol = res.ProtocolType, res.ProtocolName
		resp.LeaderID = res.LeaderID
		resp.SkipAssignment = res.SkipAssignment
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.GroupInstanceID, m.Metadata
			resp.Members = append(resp.Members, rm)
		}
	}
	return joinGroupResponse(resp)
}

// joinGroupResponse completes a JoinGroup response as Kafka's JoinGroupResponse does: before
// v7 the protocol name is not nullable, so a missing one is "".
func joinGroupResponse(resp *kmsg.JoinGroupResponse) *kmsg.JoinGroupResponse {
	if resp.Version < 7 && resp.Protocol == nil {
		empty := ""
		resp.Protocol = &empty
	}
	return resp
}

// deniedJoinGroup answers a JoinGroup the principal may not READ the group for as Kafka's
// JoinGroupRequest.getErrorResponse does: GROUP_AUTHORIZATION_FAILED, generation -1 and an
// empty member id, leader and protocol name.
func deniedJoinGroup(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
	return joinGroupResponse(resp)
}

// failedJoinGroup is a JoinGroup answered with code, echoing the member id.
func failedJoinGroup(req *kmsg.JoinGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode, resp.MemberID, resp.Generation = code, req.MemberID, -1
	return joinGroupResponse(resp)
}

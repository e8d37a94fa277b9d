package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(13, 0, 5, (*Broker).handleLeaveGroup, failedLeaveGroup,
		func(_ *Cluster, r *kmsg.LeaveGroupRequest) ([]string, []string) { return groupScopeOf(r.Group) })
}

// handleLeaveGroup runs a LeaveGroup (v0-5; group.Coordinator.LeaveGroup has the rules). Before
// v3 the request names one member by id and its error is the top-level one, as Kafka's
// LeaveGroupResponse moves it there; from v3 each member gets its own code and the top-level
// code is NONE unless the whole request failed. A broker that does not coordinate the group
// answers NOT_COORDINATOR.
func (b *Broker) handleLeaveGroup(cn *conn, req *kmsg.LeaveGroupRequest) kmsg.Response {
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return failedLeaveGroup(req, kerr.GroupAuthorizationFailed.Code)
	}
	c := b.c
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if req.Group != "" && c.coordinatorFor(req.Group) != b.id {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	members := []group.LeaveMember{{MemberID: req.MemberID}}
	if req.Version >= 3 {
		members = members[:0]
		for _, m := range req.Members {
			members = append(members, group.LeaveMember{MemberID: m.MemberID, GroupInstanceID: m.InstanceID})
		}
	}
	errs, err := c.groups.LeaveGroup(req.Group, members)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	if req.Version < 3 {
		resp.ErrorCode = codeOf(errs[0])
		return resp
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.GroupInstanceID, codeOf(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// failedLeaveGroup is a LeaveGroup answered with code, top level and (v3+) for every member.
func failedLeaveGroup(req *kmsg.LeaveGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = code
	if req.Version >= 3 {
		for _, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, code
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

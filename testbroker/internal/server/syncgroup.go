package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(14, 0, 5, (*Broker).handleSyncGroup, failedSyncGroup,
		func(_ *Cluster, r *kmsg.SyncGroupRequest) ([]string, []string) { return groupScopeOf(r.Group) })
}

// handleSyncGroup runs a SyncGroup (v0-5; group.Coordinator.SyncGroup has the rules) and waits,
// without holding the coordinator, for the member's assignment. From v5 the request must name
// its protocol type and name, else INCONSISTENT_GROUP_PROTOCOL before anything else, as
// KafkaApis answers; a broker that does not coordinate the group answers NOT_COORDINATOR.
func (b *Broker) handleSyncGroup(cn *conn, req *kmsg.SyncGroupRequest) kmsg.Response {
	if !cn.authorizeGroup(acl.OpRead, req.Group) {
		return failedSyncGroup(req, kerr.GroupAuthorizationFailed.Code)
	}
	c := b.c
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.MemberAssignment = []byte{}
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp
	}
	if req.Group != "" && c.coordinatorFor(req.Group) != b.id {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	sg := group.SyncGroup{
		GroupID:         req.Group,
		GenerationID:    req.Generation,
		MemberID:        req.MemberID,
		GroupInstanceID: req.InstanceID,
		ProtocolType:    req.ProtocolType,
		ProtocolName:    req.Protocol,
		Assignments:     make(map[string][]byte, len(req.GroupAssignment)),
	}
	for _, a := range req.GroupAssignment {
		sg.Assignments[a.MemberID] = a.MemberAssignment
	}
	res, ok := awaitGroup(cn, c, c.groups.SyncGroup(sg))
	if !ok {
		return nil
	}
	resp.ErrorCode = codeOf(res.Err)
	if res.Err == nil {
		resp.ProtocolType, resp.Protocol = res.ProtocolType, res.ProtocolName
		resp.MemberAssignment = res.Assignment
	}
	return resp
}

// failedSyncGroup is a SyncGroup answered with code and an empty assignment.
func failedSyncGroup(req *kmsg.SyncGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode, resp.MemberAssignment = code, []byte{}
	return resp
}

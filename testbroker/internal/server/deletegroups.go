package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(42, 0, 2, (*Broker).handleDeleteGroups, failedDeleteGroups,
		func(_ *Cluster, r *kmsg.DeleteGroupsRequest) ([]string, []string) { return nil, r.Groups })
}

// handleDeleteGroups deletes groups of any type (v0-2; group.Coordinator.DeleteGroups has the
// rules), one result per id; a group this broker does not coordinate is NOT_COORDINATOR.
// Versions 0-2 carry no error message.
func (b *Broker) handleDeleteGroups(cn *conn, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var local []string
	isLocal := make([]bool, len(req.Groups))
	denied := make([]bool, len(req.Groups))
	for i, id := range req.Groups {
		if denied[i] = !cn.authorizeGroup(acl.OpDelete, id); denied[i] {
			continue
		}
		if isLocal[i] = c.coordinatorFor(id) == b.id; isLocal[i] {
			local = append(local, id)
		}
	}
	errs := c.groups.DeleteGroups(local)
	for i, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		switch {
		case denied[i]:
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !isLocal[i]:
			rg.ErrorCode = kerr.NotCoordinator.Code
		default:
			rg.ErrorCode, rg.ErrorMessage = codeOf(errs[0]), messageOf(errs[0])
			errs = errs[1:]
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func failedDeleteGroups(req *kmsg.DeleteGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(15, 0, 6, (*Broker).handleDescribeGroups, failedDescribeGroups,
		func(_ *Cluster, r *kmsg.DescribeGroupsRequest) ([]string, []string) { return nil, r.Groups })
}

// handleDescribeGroups describes classic groups (v0-6), one result per requested id. An empty
// id is INVALID_GROUP_ID, a group this broker does not coordinate NOT_COORDINATOR. A missing group, or one of another type,
// has state Dead; from v6 it also carries GROUP_ID_NOT_FOUND with "Group <id> not found." or
// "Group <id> is not a classic group." (KIP-1043), before v6 no error. Members carry their
// metadata for the group's protocol only when the group is Stable (the protocol is then
// reported too). AuthorizedOperations is Integer.MIN_VALUE unless asked for (v3+).
func (b *Broker) handleDescribeGroups(cn *conn, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = authorizedOperationsOmitted
		switch {
		case !cn.authorizeGroup(acl.OpDescribe, id):
			dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case id == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case c.coordinatorFor(id) != b.id:
			dg.ErrorCode = kerr.NotCoordinator.Code
		}
		if dg.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		info, err := c.groups.ClassicGroup(id)
		if err != nil {
			dg.State = "Dead"
			if !errors.Is(err, kerr.GroupIDNotFound) || req.Version >= 6 {
				dg.ErrorCode, dg.ErrorMessage = codeOf(err), messageOf(err)
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.State, dg.ProtocolType = info.State, info.ProtocolType
		stable := info.State == "Stable"
		if stable {
			dg.Protocol = info.ProtocolName
		}
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = cn.authorizedOperations(acl.ResourceGroup, id)
		}
		for _, m := range info.Members {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.MemberID, m.GroupInstanceID, m.ClientID, m.ClientHost
			dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, m.Assignment
			if stable {
				dm.ProtocolMetadata = m.Metadata
			}
			dg.Members = append(dg.Members, dm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// failedDescribeGroups is a DescribeGroups answered with code for every group.
func failedDescribeGroups(req *kmsg.DescribeGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.ErrorCode, dg.AuthorizedOperations = id, code, authorizedOperationsOmitted
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

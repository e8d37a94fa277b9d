package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(16, 0, 5, (*Broker).handleListGroups, failedListGroups, noScope[*kmsg.ListGroupsRequest])
}

// handleListGroups lists the groups this broker coordinates (v0-5), as each Kafka broker lists
// those of the __consumer_offsets partitions it leads, filtered by StatesFilter (v4+) and
// TypesFilter (v5+) as group.Coordinator.ListGroups does. GroupType is the lowercase type name
// and ProtocolType the group's: "consumer", "share", or a classic group's own ("" for a
// simple group).
func (b *Broker) handleListGroups(cn *conn, req *kmsg.ListGroupsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, err := c.groups.ListGroups(req.StatesFilter, req.TypesFilter)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	clusterDescribe := cn.authorizeCluster(acl.OpDescribe)
	for _, g := range groups {
		if c.coordinatorFor(g.ID) != b.id || !clusterDescribe && !cn.authorizeGroup(acl.OpDescribe, g.ID) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, g.ProtocolType, g.State, g.Type.String()
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

func failedListGroups(req *kmsg.ListGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = code
	return resp
}

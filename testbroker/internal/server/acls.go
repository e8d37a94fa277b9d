package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(29, 1, 3, (*Broker).handleDescribeACLs, failedDescribeACLs, noScope[*kmsg.DescribeACLsRequest])
	register(30, 1, 3, (*Broker).handleCreateACLs, failedCreateACLs, noScope[*kmsg.CreateACLsRequest])
	register(31, 1, 3, (*Broker).handleDeleteACLs, failedDeleteACLs, noScope[*kmsg.DeleteACLsRequest])
}

// Kafka's messages when no authorizer is configured (AclApis): DescribeAcls words it
// differently from CreateAcls and DeleteAcls.
const (
	noAuthorizerDescribe = "No Authorizer is configured on the broker"
	noAuthorizer         = "No Authorizer is configured."
)

// handleCreateACLs adds ACLs (v1-3), each validated as Kafka validates it; a request by a
// principal without ALTER on the cluster fails every creation with CLUSTER_AUTHORIZATION_FAILED.
func (b *Broker) handleCreateACLs(cn *conn, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	a := b.c.authz
	if !cn.authorizeCluster(acl.OpAlter) {
		return failedCreateACLs(req, kerr.ClusterAuthorizationFailed.Code)
	}
	if a == nil {
		resp = failedCreateACLs(req, kerr.SecurityDisabled.Code).(*kmsg.CreateACLsResponse)
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = kmsg.StringPtr(noAuthorizer)
		}
		return resp
	}
	bindings := make([]acl.Binding, len(req.Creations))
	for i, cr := range req.Creations {
		bindings[i] = acl.Binding{
			ResourceType: acl.ResourceType(cr.ResourceType), ResourceName: cr.ResourceName,
			PatternType: acl.PatternType(cr.ResourcePatternType), Principal: cr.Principal, Host: cr.Host,
			Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType),
		}
	}
	for _, err := range a.Create(bindings) {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = codeOf(err), messageOf(err)
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func failedCreateACLs(req *kmsg.CreateACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode = code
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// handleDescribeACLs lists the ACLs a filter matches (v1-3), grouped by resource pattern in
// the order they were created; it needs DESCRIBE on the cluster.
func (b *Broker) handleDescribeACLs(cn *conn, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	a := b.c.authz
	switch {
	case !cn.authorizeCluster(acl.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	case a == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerDescribe)
		return resp
	}
	f := acl.Filter{
		ResourceType: acl.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: acl.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType),
	}
	if !f.ResourceType.Known() || !f.PatternType.Known() || !f.Operation.Known() || !f.Permission.Known() {
		// Kafka cannot parse such a request (DescribeAclsRequest.validate) and closes the
		// connection; testbroker answers it.
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("DescribeAclsRequest contains UNKNOWN elements")
		return resp
	}
	type pattern struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	index := map[pattern]int{}
	for _, bd := range a.Describe(f) {
		p := pattern{bd.ResourceType, bd.ResourceName, bd.PatternType}
		i, ok := index[p]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(p.rt), p.name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(p.pt)
			i = len(resp.Resources)
			index[p] = i
			resp.Resources = append(resp.Resources, r)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = bd.Principal, bd.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return resp
}

func failedDescribeACLs(req *kmsg.DescribeACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = code
	return resp
}

// handleDeleteACLs deletes the ACLs each filter matches (v1-3), all filters at once, and
// reports per filter what it deleted; it needs ALTER on the cluster.
func (b *Broker) handleDeleteACLs(cn *conn, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	a := b.c.authz
	if !cn.authorizeCluster(acl.OpAlter) {
		return failedDeleteACLs(req, kerr.ClusterAuthorizationFailed.Code)
	}
	if a == nil {
		resp = failedDeleteACLs(req, kerr.SecurityDisabled.Code).(*kmsg.DeleteACLsResponse)
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = kmsg.StringPtr(noAuthorizer)
		}
		return resp
	}
	filters := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.Filter{
			ResourceType: acl.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: acl.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
			Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType),
		}
	}
	deleted, errs := a.Delete(filters)
	for i := range filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = codeOf(errs[i]), messageOf(errs[i])
		for _, bd := range deleted[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			m.Principal, m.Host = bd.Principal, bd.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func failedDeleteACLs(req *kmsg.DeleteACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode = code
		resp.Results = append(resp.Results, r)
	}
	return resp
}

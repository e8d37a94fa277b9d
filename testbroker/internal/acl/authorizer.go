package acl

import (
	"slices"
	"strings"
	"sync"
)

// Authorizer holds a cluster's ACLs and answers authorization questions about them. It is
// safe for concurrent use.
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool

	mu   sync.RWMutex
	acls []Binding // each binding once, in creation order
}

// New returns an Authorizer without ACLs. superUsers are principals ("User:alice") allowed
// everything; allowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
func New(superUsers []string, allowEveryoneIfNoACL bool) *Authorizer {
	a := &Authorizer{superUsers: make(map[string]bool, len(superUsers)), allowIfNoACL: allowEveryoneIfNoACL}
	for _, u := range superUsers {
		a.superUsers[u] = true
	}
	return a
}

// ParseSuperUsers splits a super.users value, principals separated by semicolons, as
// StandardAuthorizer.getConfiguredSuperUsers does: each trimmed, empty ones dropped.
func ParseSuperUsers(v string) []string {
	var users []string
	for _, u := range strings.Split(v, ";") {
		if u = strings.TrimSpace(u); u != "" {
			users = append(users, u)
		}
	}
	return users
}

// Create adds each valid binding and returns one result per binding: nil, or the error
// Validate gives. A binding that exists already is not added twice, and succeeds.
func (a *Authorizer) Create(bindings []Binding) []error {
	errs := make([]error, len(bindings))
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, b := range bindings {
		if errs[i] = b.Validate(); errs[i] != nil {
			continue
		}
		if !slices.Contains(a.acls, b) {
			a.acls = append(a.acls, b)
		}
	}
	return errs
}

// Describe returns the bindings f matches, in creation order.
func (a *Authorizer) Describe(f Filter) []Binding {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []Binding
	for _, b := range a.acls {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Delete removes, for each filter, the bindings it matches, and returns them per filter with
// the filter's error (Filter.Validate) where it has one. A binding that two filters match is
// reported for both, as Kafka does. The filters are applied together, atomically.
func (a *Authorizer) Delete(filters []Filter) (deleted [][]Binding, errs []error) {
	deleted, errs = make([][]Binding, len(filters)), make([]error, len(filters))
	a.mu.Lock()
	defer a.mu.Unlock()
	gone := make([]bool, len(a.acls))
	for i, f := range filters {
		if errs[i] = f.Validate(); errs[i] != nil {
			continue
		}
		for j, b := range a.acls {
			if f.Matches(b) {
				deleted[i] = append(deleted[i], b)
				gone[j] = true
			}
		}
	}
	kept := a.acls[:0]
	for j, b := range a.acls {
		if !gone[j] {
			kept = append(kept, b)
		}
	}
	clear(a.acls[len(kept):])
	a.acls = kept
	return deleted, errs
}

// Authorize reports whether principal, connected from host, may perform op on the resource
// of type rt named name (ClusterName for the cluster), by StandardAuthorizerData.authorize's
// rules (see the package doc).
func (a *Authorizer) Authorize(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	covered, allowed := false, false
	for _, b := range a.acls {
		if b.ResourceType != rt || !b.covers(name) {
			continue
		}
		covered = true
		switch b.result(principal, host, op) {
		case Deny:
			return false
		case Allow:
			allowed = true
		}
	}
	if !covered {
		return a.allowIfNoACL
	}
	return allowed
}

// covers reports whether b's pattern applies to the resource named name.
func (b Binding) covers(name string) bool {
	switch b.PatternType {
	case PatternLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// result is what b says about principal doing op from host: Allow, Deny, or
// PermissionUnknown when b does not apply (StandardAuthorizerData.findResult). An ALLOW
// applies to the operations its operation implies; a DENY only to its own operation (and ALL
// to every one).
func (b Binding) result(principal, host string, op Operation) Permission {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if b.Host != Wildcard && b.Host != host {
		return PermissionUnknown
	}
	if b.Operation != OpAll && b.Operation != op && (b.Permission == Deny || !implies(b.Operation, op)) {
		return PermissionUnknown
	}
	return b.Permission
}

// implies reports whether an ALLOW of granted allows op as well.
func implies(granted, op Operation) bool {
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AuthorizeByResourceType reports whether principal, connected from host, may perform op on
// at least one resource of type rt, by Kafka's Authorizer.authorizeByResourceType: if op is
// authorized on a literal resource named "hardcode" (which a super user always is, and
// anyone is when allow.everyone.if.no.acl.found is on and no ACL covers that name), it is;
// otherwise an ALLOW of op (or ALL) on some literal name or prefix that no DENY covers, or on
// the literal wildcard without a wildcard DENY. InitProducerId without a transactional id
// asks it of WRITE on topics.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op Operation, rt ResourceType) bool {
	if a.Authorize(principal, host, op, rt, "hardcode") {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var allowLiteral, allowPrefixed []string
	denyLiteral, denyPrefixed := map[string]bool{}, map[string]bool{}
	wildcardAllow := false
	for _, b := range a.acls {
		if b.ResourceType != rt ||
			(b.Host != host && b.Host != Wildcard) ||
			(b.Principal != principal && b.Principal != WildcardPrincipal) ||
			(b.Operation != op && b.Operation != OpAll) {
			continue
		}
		switch {
		case b.Permission == Deny && b.PatternType == PatternLiteral && b.ResourceName == Wildcard:
			return false
		case b.Permission == Deny && b.PatternType == PatternLiteral:
			denyLiteral[b.ResourceName] = true
		case b.Permission == Deny:
			denyPrefixed[b.ResourceName] = true
		case b.PatternType == PatternLiteral && b.ResourceName == Wildcard:
			wildcardAllow = true
		case b.PatternType == PatternLiteral:
			allowLiteral = append(allowLiteral, b.ResourceName)
		default:
			allowPrefixed = append(allowPrefixed, b.ResourceName)
		}
	}
	if wildcardAllow {
		return true
	}
	deniedByPrefix := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefixed[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !deniedByPrefix(n) {
			return true
		}
	}
	for _, n := range allowPrefixed {
		if !deniedByPrefix(n) {
			return true
		}
	}
	return false
}

// AuthorizedOperations returns the operations of rt's supported ones that principal may
// perform on the resource, as the bit field of authorized-operations fields (bit i set for
// the operation of code i), as AuthHelper.authorizedOperations computes it.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[rt] {
		if a.Authorize(principal, host, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

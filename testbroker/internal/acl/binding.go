package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string // "User:name", or "User:*" for every principal
	Host         string // a client address, or "*" for every host
	Operation    Operation
	Permission   Permission
}

// Validate checks b as Kafka checks an ACL to create (AclApis.handleCreateAcls, then
// AclControlManager.validateNewAcl), in Kafka's order. The error wraps kerr.InvalidRequest
// with Kafka's message, sent on the wire: "INVALID_REQUEST: Invalid patternType MATCH".
func (b Binding) Validate() error {
	switch {
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return invalid("The only valid name for the CLUSTER resource is " + ClusterName)
	case b.ResourceName == "":
		return invalid("Invalid empty resource name")
	case !b.ResourceType.Known() || b.ResourceType == ResourceAny:
		return invalid("Invalid resourceType " + b.ResourceType.String())
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return invalid("Invalid patternType " + b.PatternType.String())
	case !b.Operation.Known() || b.Operation == OpAny:
		return invalid("Invalid operation " + b.Operation.String())
	case b.Permission != Allow && b.Permission != Deny:
		return invalid("Invalid permissionType " + b.Permission.String())
	case !strings.Contains(b.Principal, ":"):
		return invalid("Could not parse principal from `" + b.Principal + "` " +
			"(no colon is present separating the principal type from the principal name)")
	}
	return nil
}

// invalid is INVALID_REQUEST with Kafka's message, sent on the wire.
func invalid(msg string) error { return kafkaerr.New(kerr.InvalidRequest, "%s", msg) }

// Filter selects bindings for DescribeAcls and DeleteAcls, as Kafka's AclBindingFilter: a
// ResourceType, Operation or Permission of ANY and a nil name, principal or host match every
// binding. PatternType LITERAL or PREFIXED matches bindings of that type with exactly the
// name; ANY matches bindings of any type with exactly the name; MATCH matches every binding
// that applies to the named resource: the literal name, the literal wildcard "*", and every
// prefix of it.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate checks f as Kafka checks a delete filter (AclControlManager.validateFilter): a
// field of an unknown code makes the filter unknown.
func (f Filter) Validate() error {
	if !f.ResourceType.Known() || !f.PatternType.Known() {
		return invalid("Unknown patternFilter.")
	}
	if !f.Operation.Known() || !f.Permission.Known() {
		return invalid("Unknown entryFilter.")
	}
	return nil
}

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) && f.matchesEntry(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case PatternLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

func (f Filter) matchesEntry(b Binding) bool {
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}

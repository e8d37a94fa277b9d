package acl

// ResourceType is the type of a resource an ACL applies to, with Kafka's codes
// (org.apache.kafka.common.resource.ResourceType).
type ResourceType int8

// The resource types.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the one name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name and host that match any.
const Wildcard = "*"

// WildcardPrincipal is the principal that matches every principal.
const WildcardPrincipal = "User:*"

// PatternType says how an ACL's resource name matches resources, with Kafka's codes
// (org.apache.kafka.common.resource.PatternType). ANY and MATCH are for filters only.
type PatternType int8

// The pattern types.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is what an ACL allows or denies, with Kafka's codes
// (org.apache.kafka.common.acl.AclOperation).
type Operation int8

// The operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

// Permission is whether an ACL allows or denies, with Kafka's codes
// (org.apache.kafka.common.acl.AclPermissionType). ANY is for filters only.
type Permission int8

// The permission types.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER",
}

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL",
	PatternPrefixed: "PREFIXED",
}

var operationNames = map[Operation]string{
	OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE",
	OpCreate: "CREATE", OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE",
	OpClusterAction: "CLUSTER_ACTION", OpDescribeConfigs: "DESCRIBE_CONFIGS",
	OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS",
	OpTwoPhaseCommit: "TWO_PHASE_COMMIT",
}

var permissionNames = map[Permission]string{
	PermissionUnknown: "UNKNOWN", PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW",
}

// Known reports whether t is one of Kafka's codes; Kafka reads any other code as UNKNOWN.
func (t ResourceType) Known() bool { _, ok := resourceNames[t]; return ok && t != ResourceUnknown }

// Known reports whether p is one of Kafka's codes other than UNKNOWN.
func (p PatternType) Known() bool { _, ok := patternNames[p]; return ok && p != PatternUnknown }

// Known reports whether o is one of Kafka's codes other than UNKNOWN.
func (o Operation) Known() bool { _, ok := operationNames[o]; return ok && o != OpUnknown }

// Known reports whether p is one of Kafka's codes other than UNKNOWN.
func (p Permission) Known() bool { _, ok := permissionNames[p]; return ok && p != PermissionUnknown }

// String returns Kafka's name of the type; a code Kafka does not know is UNKNOWN, as
// ResourceType.fromCode reads it.
func (t ResourceType) String() string { return nameOr(resourceNames, t) }

// String returns Kafka's name of the pattern type.
func (p PatternType) String() string { return nameOr(patternNames, p) }

// String returns Kafka's name of the operation.
func (o Operation) String() string { return nameOr(operationNames, o) }

// String returns Kafka's name of the permission type.
func (p Permission) String() string { return nameOr(permissionNames, p) }

func nameOr[K comparable](names map[K]string, k K) string {
	if n, ok := names[k]; ok {
		return n
	}
	return "UNKNOWN"
}

// supportedOperations are the operations that apply to each resource type, in Kafka's
// AclEntry.supportedOperations: what an authorized-operations field reports on.
var supportedOperations = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite, OpTwoPhaseCommit},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// Supported returns the bit field of the operations that apply to resources of type rt (bit i
// for the operation of code i): what an authorized-operations field holds for a principal
// allowed everything.
func Supported(rt ResourceType) int32 {
	var bits int32
	for _, op := range supportedOperations[rt] {
		bits |= 1 << op
	}
	return bits
}

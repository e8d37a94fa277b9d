// Package acl holds a cluster's access control lists and decides, as Kafka's StandardAuthorizer
// does, whether a principal connected from a host may perform an operation on a resource.
//
// A Binding is one ACL: a resource pattern (type, name, LITERAL or PREFIXED) and an entry
// (principal, host, operation, ALLOW or DENY). Bindings are created with Kafka's CreateAcls
// validation and messages, and found or deleted with a Filter, whose ANY and MATCH pattern
// types and null fields follow Kafka's AclBindingFilter.
//
// Authorize applies Kafka's rules: super users may do anything; otherwise the ACLs whose
// pattern covers the resource (the literal name, the literal wildcard "*", or a prefix) and
// whose principal (the principal or "User:*") and host (the client's address or "*") match are
// consulted; any DENY wins over every ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER implies
// DESCRIBE, one of ALTER_CONFIGS implies DESCRIBE_CONFIGS, and ALL implies everything; when no
// ACL at all covers the resource, allow.everyone.if.no.acl.found decides.
package acl

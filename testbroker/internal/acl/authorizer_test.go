package acl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func allow(rt ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: Wildcard, Operation: op, Permission: Allow}
}

func deny(rt ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	b := allow(rt, name, pt, principal, op)
	b.Permission = Deny
	return b
}

func authorizer(t *testing.T, allowIfNoACL bool, bindings ...Binding) *Authorizer {
	t.Helper()
	a := New([]string{"User:admin"}, allowIfNoACL)
	for _, err := range a.Create(bindings) {
		require.NoError(t, err)
	}
	return a
}

func TestAuthorizeRules(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	cases := []struct {
		name      string
		acls      []Binding
		allowNone bool
		principal string
		host      string
		op        Operation
		rt        ResourceType
		resource  string
		want      bool
	}{
		{"no ACL denies", nil, false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", false},
		{"no ACL with allow.everyone allows", nil, true, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true},
		{"an ACL for someone else denies even with allow.everyone",
			[]Binding{allow(ResourceTopic, "t", PatternLiteral, bob, OpRead)}, true, alice, "h", OpRead, ResourceTopic, "t", false},
		{"allow.everyone applies only to resources without ACLs",
			[]Binding{allow(ResourceTopic, "t", PatternLiteral, bob, OpRead)}, true, alice, "h", OpRead, ResourceTopic, "u", true},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "t", true},
		{"literal is not a prefix", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "tt", false},
		{"other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpWrite, ResourceTopic, "t", false},
		{"other resource type", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpRead, ResourceGroup, "t", false},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "any", true},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "t", true},
		{"prefixed", []Binding{allow(ResourceTopic, "orders-", PatternPrefixed, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "orders-eu", true},
		{"prefixed equal name", []Binding{allow(ResourceTopic, "orders", PatternPrefixed, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "orders", true},
		{"prefixed no match", []Binding{allow(ResourceTopic, "orders-", PatternPrefixed, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "order", false},
		{"prefixed star is not a wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "t", false},
		{"deny beats allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead),
			deny(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "t", false},
		{"prefixed deny beats literal allow", []Binding{
			allow(ResourceTopic, "secret-a", PatternLiteral, alice, OpRead),
			deny(ResourceTopic, "secret-", PatternPrefixed, alice, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "secret-a", false},
		{"wildcard deny beats literal allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead),
			deny(ResourceTopic, "*", PatternLiteral, WildcardPrincipal, OpRead)}, false, alice, "h", OpRead, ResourceTopic, "t", false},
		{"deny of another operation does not deny", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpAll),
			deny(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, false, alice, "h", OpRead, ResourceTopic, "t", true},
		{"deny READ does not deny DESCRIBE", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpDescribe),
			deny(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false, alice, "h", OpDescribe, ResourceTopic, "t", true},
		{"deny ALL denies everything", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead),
			deny(ResourceTopic, "t", PatternLiteral, alice, OpAll)}, false, alice, "h", OpRead, ResourceTopic, "t", false},
		{"allow ALL", []Binding{allow(ResourceGroup, "g", PatternLiteral, alice, OpAll)}, false, alice, "h", OpDelete, ResourceGroup, "g", true},
		{"READ implies DESCRIBE", []Binding{allow(ResourceGroup, "g", PatternLiteral, alice, OpRead)}, false, alice, "h", OpDescribe, ResourceGroup, "g", true},
		{"WRITE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, false, alice, "h", OpDescribe, ResourceTopic, "t", true},
		{"DELETE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpDelete)}, false, alice, "h", OpDescribe, ResourceTopic, "t", true},
		{"ALTER implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAlter)}, false, alice, "h", OpDescribe, ResourceTopic, "t", true},
		{"CREATE does not imply DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpCreate)}, false, alice, "h", OpDescribe, ResourceTopic, "t", false},
		{"DESCRIBE does not imply READ", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpDescribe)}, false, alice, "h", OpRead, ResourceTopic, "t", false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAlterConfigs)}, false, alice, "h", OpDescribeConfigs, ResourceTopic, "t", true},
		{"ALTER does not imply ALTER_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAlter)}, false, alice, "h", OpAlterConfigs, ResourceTopic, "t", false},
		{"host matches", []Binding{{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: Allow}},
			false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true},
		{"other host", []Binding{{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: Allow}},
			false, alice, "10.0.0.2", OpRead, ResourceTopic, "t", false},
		{"deny from one host only", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead),
			{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: alice, Host: "10.0.0.9", Operation: OpRead, Permission: Deny}},
			false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true},
		{"super user beats deny", []Binding{deny(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, OpAll)}, false, "User:admin", "h", OpRead, ResourceTopic, "t", true},
		{"super user without ACLs", nil, false, "User:admin", "h", OpClusterAction, ResourceCluster, ClusterName, true},
		{"anonymous", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:ANONYMOUS", OpRead)}, false, "User:ANONYMOUS", "h", OpRead, ResourceTopic, "t", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := authorizer(t, tc.allowNone, tc.acls...)
			assert.Equal(t, tc.want, a.Authorize(tc.principal, tc.host, tc.op, tc.rt, tc.resource))
		})
	}
}

func TestValidateMessages(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:alice", OpRead)
	with := func(f func(*Binding)) Binding { b := ok; f(&b); return b }
	cases := []struct {
		b   Binding
		msg string
	}{
		{with(func(b *Binding) { b.ResourceType, b.ResourceName = ResourceCluster, "c" }), "The only valid name for the CLUSTER resource is kafka-cluster"},
		{with(func(b *Binding) { b.ResourceName = "" }), "Invalid empty resource name"},
		{with(func(b *Binding) { b.ResourceType = ResourceAny }), "Invalid resourceType ANY"},
		{with(func(b *Binding) { b.ResourceType = 42 }), "Invalid resourceType UNKNOWN"},
		{with(func(b *Binding) { b.PatternType = PatternMatch }), "Invalid patternType MATCH"},
		{with(func(b *Binding) { b.PatternType = PatternAny }), "Invalid patternType ANY"},
		{with(func(b *Binding) { b.Operation = OpAny }), "Invalid operation ANY"},
		{with(func(b *Binding) { b.Permission = PermissionAny }), "Invalid permissionType ANY"},
		{with(func(b *Binding) { b.Principal = "alice" }), "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
	}
	for _, tc := range cases {
		err := tc.b.Validate()
		require.Error(t, err, tc.msg)
		assert.True(t, errors.Is(err, kerr.InvalidRequest))
		assert.Equal(t, kerr.InvalidRequest.Message+": "+tc.msg, err.Error())
	}
	assert.NoError(t, ok.Validate())
	cluster := allow(ResourceCluster, ClusterName, PatternLiteral, "User:alice", OpAlter)
	assert.NoError(t, cluster.Validate())

	a := New(nil, false)
	errs := a.Create([]Binding{ok, with(func(b *Binding) { b.PatternType = PatternMatch }), ok})
	assert.NoError(t, errs[0])
	assert.Error(t, errs[1])
	assert.NoError(t, errs[2])
	assert.Len(t, a.Describe(Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}), 1, "a binding is stored once")
}

func ptr(s string) *string { return &s }

func TestFilters(t *testing.T) {
	lit := allow(ResourceTopic, "orders", PatternLiteral, "User:alice", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:bob", OpWrite)
	pre := deny(ResourceTopic, "ord", PatternPrefixed, "User:alice", OpRead)
	grp := allow(ResourceGroup, "orders", PatternLiteral, "User:alice", OpRead)
	all := []Binding{lit, wild, pre, grp}
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	with := func(f func(*Filter)) Filter { g := any; f(&g); return g }
	cases := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"everything", any, all},
		{"by type", with(func(f *Filter) { f.ResourceType = ResourceGroup }), []Binding{grp}},
		{"ANY with a name is exact", with(func(f *Filter) { f.ResourceName = ptr("orders") }), []Binding{lit, grp}},
		{"LITERAL", with(func(f *Filter) { f.PatternType = PatternLiteral }), []Binding{lit, wild, grp}},
		{"LITERAL wildcard name is exact", with(func(f *Filter) { f.PatternType, f.ResourceName = PatternLiteral, ptr("*") }), []Binding{wild}},
		{"PREFIXED", with(func(f *Filter) { f.PatternType = PatternPrefixed }), []Binding{pre}},
		{"MATCH", with(func(f *Filter) {
			f.ResourceType, f.PatternType, f.ResourceName = ResourceTopic, PatternMatch, ptr("orders")
		}), []Binding{lit, wild, pre}},
		{"MATCH other name", with(func(f *Filter) { f.ResourceType, f.PatternType, f.ResourceName = ResourceTopic, PatternMatch, ptr("x") }), []Binding{wild}},
		{"principal", with(func(f *Filter) { f.Principal = ptr("User:bob") }), []Binding{wild}},
		{"host", with(func(f *Filter) { f.Host = ptr("10.0.0.1") }), nil},
		{"operation", with(func(f *Filter) { f.Operation = OpWrite }), []Binding{wild}},
		{"permission", with(func(f *Filter) { f.Permission = Deny }), []Binding{pre}},
	}
	a := authorizer(t, false, all...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, a.Describe(tc.f)) })
	}

	deleted, errs := a.Delete([]Filter{
		with(func(f *Filter) { f.Permission = Deny }),
		with(func(f *Filter) { f.PatternType = PatternUnknown }),
		with(func(f *Filter) { f.Operation = OpUnknown }),
		with(func(f *Filter) { f.ResourceType = ResourceGroup }),
	})
	assert.Equal(t, [][]Binding{{pre}, nil, nil, {grp}}, deleted)
	assert.NoError(t, errs[0])
	assert.EqualError(t, errs[1], kerr.InvalidRequest.Message+": Unknown patternFilter.")
	assert.EqualError(t, errs[2], kerr.InvalidRequest.Message+": Unknown entryFilter.")
	assert.Equal(t, []Binding{lit, wild}, a.Describe(any))
}

func TestAuthorizeByResourceType(t *testing.T) {
	const alice = "User:alice"
	cases := []struct {
		name string
		// everyone is allow.everyone.if.no.acl.found: the hard-coded name then decides while
		// no ACL covers it.
		everyone bool
		acls     []Binding
		want     bool
	}{
		{"none", false, nil, false},
		{"literal allow", false, []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, true},
		{"allow ALL", false, []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAll)}, true},
		{"other operation", false, []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, false},
		{"literal denied", false, []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite), deny(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, false},
		{"prefix denied", false, []Binding{allow(ResourceTopic, "abc", PatternLiteral, alice, OpWrite), deny(ResourceTopic, "ab", PatternPrefixed, alice, OpWrite)}, false},
		{"longer prefix deny does not cover", false, []Binding{allow(ResourceTopic, "ab", PatternPrefixed, alice, OpWrite), deny(ResourceTopic, "abc", PatternPrefixed, alice, OpWrite)}, true},
		{"wildcard allow", false, []Binding{allow(ResourceTopic, "*", PatternLiteral, WildcardPrincipal, OpWrite)}, true},
		{"wildcard deny", false, []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite), deny(ResourceTopic, "*", PatternLiteral, alice, OpWrite)}, false},
		{"allow everyone/no ACLs", true, nil, true},
		{"allow everyone/ACLs on other names only", true, []Binding{deny(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, true},
		{"allow everyone/an ACL covers hardcode", true, []Binding{deny(ResourceTopic, "hard", PatternPrefixed, alice, OpWrite)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := authorizer(t, tc.everyone, tc.acls...)
			assert.Equal(t, tc.want, a.AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic))
		})
	}
	assert.True(t, New([]string{alice}, false).AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic), "super user")
}

func TestAuthorizedOperationsAndSuperUsers(t *testing.T) {
	a := authorizer(t, false, allow(ResourceGroup, "g", PatternLiteral, "User:alice", OpRead))
	assert.Equal(t, int32(1<<OpRead|1<<OpDescribe), a.AuthorizedOperations("User:alice", "h", ResourceGroup, "g"))
	assert.Equal(t, int32(1<<3|1<<6|1<<8|1<<10|1<<11), a.AuthorizedOperations("User:admin", "h", ResourceGroup, "g"))
	assert.Equal(t, []string{"User:a", "User:b"}, ParseSuperUsers(" User:a ;; User:b;"))
	assert.Nil(t, ParseSuperUsers(""))
}

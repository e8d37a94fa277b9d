package testbroker

import "github.com/kshare/kshare/testbroker/internal/group"

// GroupListing is a group as ListGroups reports it.
type GroupListing struct {
	GroupID string
	// Type is "classic", "consumer", "share" or "streams".
	Type string
	// State is the group's state: "Empty", "Stable", "PreparingRebalance",
	// "CompletingRebalance", ... as its type names them.
	State string
	// ProtocolType is "consumer", "share", or a classic group's own protocol type ("" for a
	// group that only holds committed offsets).
	ProtocolType string
}

// Groups returns every group of the cluster, of every type, sorted by id.
func (c *Cluster) Groups() []GroupListing {
	var out []GroupListing
	for _, g := range c.s.Groups() {
		out = append(out, GroupListing{GroupID: g.ID, Type: g.Type.String(), State: g.State, ProtocolType: g.ProtocolType})
	}
	return out
}

// ClassicGroupInfo is a snapshot of a classic group, as DescribeGroups reports it.
type ClassicGroupInfo = group.ClassicGroupInfo

// ClassicMemberInfo is a snapshot of a classic group member.
type ClassicMemberInfo = group.ClassicMemberInfo

// ClassicGroup returns a snapshot of a classic group; ok is false when there is no classic
// group with this id.
func (c *Cluster) ClassicGroup(id string) (ClassicGroupInfo, bool) {
	return c.s.ClassicGroup(id)
}

// CommittedOffset is a committed offset of a group.
type CommittedOffset = group.CommittedOffset

// CommittedOffsets returns a group's committed offsets, by topic and partition; nil when the
// group does not exist. Offsets outlive the group's members, and go with DeleteGroups.
func (c *Cluster) CommittedOffsets(group string) map[string]map[int32]CommittedOffset {
	offsets, _ := c.s.CommittedOffsets(group)
	return offsets
}

package testbroker

import "time"

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
type ClassicGroupInfo struct {
	GroupID string
	// State is "Empty", "PreparingRebalance", "CompletingRebalance" or "Stable".
	State string
	// GenerationID is bumped by every completed join phase.
	GenerationID int32
	// ProtocolType is the members' protocol type ("consumer", "connect", ...), "" for a group
	// that only holds committed offsets.
	ProtocolType string
	// ProtocolName is the protocol the members voted for (the balancer, for consumers); "" until
	// the first generation with members.
	ProtocolName string
	LeaderID     string
	// Members are sorted by member id.
	Members []ClassicMemberInfo
}

// ClassicMemberInfo is a snapshot of a classic group member.
type ClassicMemberInfo struct {
	MemberID string
	// GroupInstanceID is set for a static member.
	GroupInstanceID *string
	ClientID        string
	// ClientHost is the client's address as Kafka prints it ("/127.0.0.1").
	ClientHost string
	// Metadata is the member's metadata for the selected protocol.
	Metadata []byte
	// Assignment is what the leader assigned the member in this generation.
	Assignment []byte
}

// ClassicGroup returns a snapshot of a classic group; ok is false when there is no classic
// group with this id.
func (c *Cluster) ClassicGroup(id string) (ClassicGroupInfo, bool) {
	g, ok := c.s.ClassicGroup(id)
	if !ok {
		return ClassicGroupInfo{}, false
	}
	info := ClassicGroupInfo{
		GroupID:      g.GroupID,
		State:        g.State,
		GenerationID: g.GenerationID,
		ProtocolType: g.ProtocolType,
		ProtocolName: g.ProtocolName,
		LeaderID:     g.LeaderID,
	}
	for _, m := range g.Members {
		info.Members = append(info.Members, ClassicMemberInfo(m))
	}
	return info, true
}

// CommittedOffset is a committed offset of a group.
type CommittedOffset struct {
	Offset int64
	// LeaderEpoch is -1 when the commit carried none.
	LeaderEpoch int32
	Metadata    string
	// CommitTime is the cluster clock's time of the commit.
	CommitTime time.Time
}

// CommittedOffsets returns a group's committed offsets, by topic and partition; nil when the
// group does not exist. Offsets outlive the group's members, and go with DeleteGroups.
func (c *Cluster) CommittedOffsets(group string) map[string]map[int32]CommittedOffset {
	offsets, ok := c.s.CommittedOffsets(group)
	if !ok {
		return nil
	}
	out := make(map[string]map[int32]CommittedOffset, len(offsets))
	for t, ps := range offsets {
		out[t] = make(map[int32]CommittedOffset, len(ps))
		for p, o := range ps {
			out[t][p] = CommittedOffset(o)
		}
	}
	return out
}

package server

import (
	"github.com/kshare/kshare/testbroker/internal/group"
)

// classicGroupConfig is the classic groups' configuration, from the broker configs
// group.min.session.timeout.ms, group.max.session.timeout.ms, group.initial.rebalance.delay.ms
// and group.max.size.
func (c *Cluster) classicGroupConfig() group.ClassicConfig {
	cg := c.configs.Snapshot().ClassicGroup
	return group.ClassicConfig{
		MinSessionTimeout:     cg.MinSessionTimeout,
		MaxSessionTimeout:     cg.MaxSessionTimeout,
		InitialRebalanceDelay: cg.InitialRebalanceDelay,
		MaxSize:               cg.MaxSize,
	}
}

// Groups returns every group of the cluster, sorted by id.
func (c *Cluster) Groups() []group.Listing { return c.groups.Groups() }

// ClassicGroup returns a snapshot of a classic group; ok is false when no classic group has
// this id.
func (c *Cluster) ClassicGroup(id string) (group.ClassicGroupInfo, bool) {
	info, err := c.groups.ClassicGroup(id)
	return info, err == nil
}

// CommittedOffsets returns a group's committed offsets by topic and partition; ok is false
// when the group does not exist.
func (c *Cluster) CommittedOffsets(id string) (map[string]map[int32]group.CommittedOffset, bool) {
	return c.groups.CommittedOffsets(id)
}

// awaitGroup waits for a parked group request's answer; ok is false if the connection or the
// cluster closed first (the request then gets no response).
func awaitGroup[T any](cn *conn, c *Cluster, ch <-chan T) (res T, ok bool) {
	select {
	case res = <-ch:
		return res, true
	case <-cn.done:
	case <-c.closed:
	}
	return res, false
}

// groupScopeOf is the fault scope of a request that names one group.
func groupScopeOf(id string) ([]string, []string) { return nil, []string{id} }

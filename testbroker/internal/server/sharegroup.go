package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/group"
)

// authorizedOperationsOmitted is the AuthorizedOperations of a describe that did not ask for
// them (Integer.MIN_VALUE).
const authorizedOperationsOmitted = -2147483648

// newGroupCoordinator returns the cluster's group coordinator, reading topics and configs from
// the cluster at every heartbeat.
func (c *Cluster) newGroupCoordinator() *group.Coordinator {
	return group.NewCoordinator(group.Config{
		Clock:  c.clock,
		Topics: coordinatorTopics{c},
		ShareConfig: func(id string) group.ShareConfig {
			g := &c.configs.Snapshot().Group(id).Share
			return group.ShareConfig{HeartbeatInterval: g.HeartbeatInterval, SessionTimeout: g.SessionTimeout, MaxSize: g.MaxSize}
		},
		ClassicConfig:  c.classicGroupConfig,
		ConsumerConfig: c.consumerGroupConfig,
	})
}

// coordinatorTopics shows the cluster's topics to the group coordinator.
type coordinatorTopics struct{ c *Cluster }

func (t coordinatorTopics) TopicByName(name string) (group.TopicMeta, bool) {
	tp := t.c.meta.Topic(name)
	if tp == nil {
		return group.TopicMeta{}, false
	}
	return group.TopicMeta{Name: tp.Name, ID: tp.ID, Partitions: int32(len(t.c.meta.Partitions(tp)))}, true
}

func (t coordinatorTopics) TopicName(id [16]byte) (string, bool) {
	tp := t.c.meta.TopicByID(id)
	if tp == nil {
		return "", false
	}
	return tp.Name, true
}

// ShareGroup returns a snapshot of a share group; ok is false when no share group has this id.
func (c *Cluster) ShareGroup(id string) (group.ShareGroupInfo, bool) {
	info, err := c.groups.ShareGroup(id)
	return info, err == nil
}

// ShareGroups returns the ids of every share group, sorted.
func (c *Cluster) ShareGroups() []string { return c.groups.ShareGroupIDs() }

// describedGroup looks a group up for a describe RPC: INVALID_GROUP_ID for an empty id,
// NOT_COORDINATOR for a group another broker coordinates, else what lookup answers.
func describedGroup[I any](b *Broker, id string, lookup func(string) (I, error)) (I, error) {
	var none I
	switch {
	case id == "":
		return none, kerr.InvalidGroupID
	case b.c.coordinatorFor(id) != b.id:
		return none, kerr.NotCoordinator
	}
	return lookup(id)
}

package server

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/group"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/share"
)

// newShareManager returns the cluster's share partition manager, reading topics and configs
// from the cluster.
func (c *Cluster) newShareManager() *share.Manager {
	return share.NewManager(share.ManagerConfig{
		Metadata:    shareMetadata{c},
		Clock:       c.clock,
		Brokers:     c.cfg.Brokers,
		Settings:    func(group string) share.Settings { return c.configs.Snapshot().Group(group).Share.Partition },
		MaxSessions: func() int { return c.configs.Snapshot().MaxShareSessions },
		Done:        c.closed,
	})
}

// shareMetadata shows the cluster's topics to the share partition manager.
type shareMetadata struct{ c *Cluster }

func (m shareMetadata) TopicExists(id [16]byte) bool { return m.c.meta.TopicByID(id) != nil }

func (m shareMetadata) Placement(tp share.TopicPartition) (share.Placement, bool) {
	p := m.c.meta.Partition(m.c.meta.TopicByID(tp.Topic), tp.Partition)
	if p == nil {
		return share.Placement{}, false
	}
	st := p.State()
	lg := st.LeaderLog()
	if lg == nil {
		// No replica leads: the log of the ISR member kept to lead again, so that share state
		// made meanwhile (AlterShareGroupOffsets) has a log to read.
		lg = st.Log(st.ISR[0])
	}
	return share.Placement{Log: lg, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch}, true
}

// shareLockDurationMs returns a group's effective share.record.lock.duration.ms, the
// AcquisitionLockTimeoutMs of its ShareFetch and ShareAcknowledge responses.
func (c *Cluster) shareLockDurationMs(group string) int32 {
	return int32(c.configs.Snapshot().Group(group).Share.Partition.LockDuration / time.Millisecond)
}

// SharePartitionState returns group's share partition of a topic partition, for inspection; ok is
// false when the topic does not exist or no ShareFetch of the group has reached the partition.
func (c *Cluster) SharePartitionState(group, topic string, partition int32) (*share.Partition, bool) {
	t := c.meta.Topic(topic)
	if t == nil {
		return nil, false
	}
	sp := c.shares.Get(group, share.TopicPartition{Topic: t.ID, Partition: partition})
	return sp, sp != nil
}

// ShareSessionInfo is one share session of a broker.
type ShareSessionInfo struct {
	Group  string
	Member string
	// Epoch is the share session epoch the member's next ShareFetch or ShareAcknowledge must
	// carry.
	Epoch int32
	// Partitions are the partitions the session fetches, by topic; Topic is empty for a topic
	// id that was unknown or whose topic was deleted.
	Partitions []group.TopicPartitions
}

// ShareSessions returns the share sessions of a broker, sorted by group then member; nil for an
// unknown broker.
func (c *Cluster) ShareSessions(broker int32) []ShareSessionInfo {
	ss := c.shares.Sessions(broker)
	if ss == nil {
		return nil
	}
	out := []ShareSessionInfo{}
	for _, info := range ss.Snapshot() {
		st := ShareSessionInfo{Group: info.Group, Member: info.Member, Epoch: info.Epoch}
		for _, tp := range info.Partitions {
			i := slices.IndexFunc(st.Partitions, func(tpi group.TopicPartitions) bool { return tpi.TopicID == tp.Topic })
			if i < 0 {
				st.Partitions = append(st.Partitions, group.TopicPartitions{TopicID: tp.Topic})
				i = len(st.Partitions) - 1
			}
			st.Partitions[i].Partitions = append(st.Partitions[i].Partitions, tp.Partition)
		}
		for j := range st.Partitions {
			tpi := &st.Partitions[j]
			if t := c.meta.TopicByID(tpi.TopicID); t != nil {
				tpi.Topic = t.Name
			}
			slices.Sort(tpi.Partitions)
		}
		out = append(out, st)
	}
	return out
}

// shareOffsetsGroupCheck is what Kafka answers a share-group offset RPC (Alter, Delete) with
// before its group coordinator looks at the group: INVALID_GROUP_ID for an empty id, then
// NOT_COORDINATOR from a broker that does not coordinate the group, each with its code's
// default message; nil when the coordinator is to decide.
func shareOffsetsGroupCheck(b *Broker, id string) error {
	switch {
	case id == "":
		return kafkaerr.New(kerr.InvalidGroupID, "The configured groupId is invalid.")
	case b.c.coordinatorFor(id) != b.id:
		return kafkaerr.New(kerr.NotCoordinator, "%s", kerr.NotCoordinator.Description)
	}
	return nil
}

// topLevelMessage is the ErrorMessage of a share-group offset RPC failed as a whole: err's own
// message, else its code's default one, as Kafka always sends one there.
func topLevelMessage(err error) *string {
	if m := messageOf(err); m != nil {
		return m
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &ke.Description
	}
	return nil
}

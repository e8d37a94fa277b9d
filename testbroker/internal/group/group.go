package group

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// Type is a group's type, as Kafka's Group.GroupType names it.
type Type int8

// The group types. A group keeps its type for its whole life: Kafka does not convert share
// groups to or from the other types.
const (
	TypeClassic Type = iota
	TypeConsumer
	TypeShare
	TypeStreams
)

// String returns the type's lowercase name, as ListGroups reports it ("share").
func (t Type) String() string {
	switch t {
	case TypeClassic:
		return "classic"
	case TypeConsumer:
		return "consumer"
	case TypeShare:
		return "share"
	case TypeStreams:
		return "streams"
	}
	return "unknown"
}

// ParseType parses a type name case-insensitively, as Group.GroupType.parse does; ok is false
// for a name that is none of classic, consumer, share and streams.
func ParseType(s string) (t Type, ok bool) {
	for _, t := range []Type{TypeClassic, TypeConsumer, TypeShare, TypeStreams} {
		if strings.EqualFold(s, t.String()) {
			return t, true
		}
	}
	return 0, false
}

// Group is one group of the cluster: its id, its type and the state of that type. One group
// id names one group of one type, whichever protocol touches it.
type Group struct {
	id   string
	typ  Type
	kind kind
	// share is kind as a share group, set for TypeShare.
	share *shareGroup
	// offsets are the group's committed offsets; they outlive its members and a change of kind.
	offsets offsetStore
	// pendingTxn are offsets committed by transactions that have not ended, by producer id.
	pendingTxn map[int64]*offsetStore
	// consumer is kind as a consumer group, set for TypeConsumer.
	consumer *consumerGroup
}

// kind is what every group type implements for the operations common to all groups
// (ListGroups, DeleteGroups, the offset RPCs, closing the coordinator).
type kind interface {
	// state is the group's state as ListGroups and the describe RPCs name it ("Empty",
	// "Stable", "PreparingRebalance", ...).
	state() string
	// protocolType is ListGroups' ProtocolType: "consumer" or "share", or a classic group's
	// own protocol type ("" for a group that only commits offsets).
	protocolType() string
	// memberCount is the number of members; DeleteGroups refuses a group that has any.
	memberCount() int
	// stop stops the group's timers, for Close and DeleteGroups.
	stop()
}

// notTypeError is Kafka's answer to an RPC of one group type on a group of another:
// GROUP_ID_NOT_FOUND "Group <id> is not a <type> group.".
func notTypeError(id string, want Type) error {
	return kafkaerr.New(kerr.GroupIDNotFound, "Group %s is not a %s group.", id, want)
}

// TopicMeta is what the coordinator needs to know about a topic: its name, id and partition
// count.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics is the cluster's topic metadata, read at every heartbeat. Implementations must not
// call back into the Coordinator.
type Topics interface {
	// TopicByName returns a topic's metadata; ok is false if the topic does not exist.
	TopicByName(name string) (TopicMeta, bool)
	// TopicName returns the name of the topic with this id; ok is false if it does not exist.
	TopicName(id [16]byte) (string, bool)
}

// ShareConfig is the configuration one share group runs with, read at every heartbeat.
type ShareConfig struct {
	// HeartbeatInterval is share.heartbeat.interval.ms (group), else
	// group.share.heartbeat.interval.ms (broker).
	HeartbeatInterval time.Duration
	// SessionTimeout is share.session.timeout.ms (group), else group.share.session.timeout.ms.
	SessionTimeout time.Duration
	// MaxSize is group.share.max.size: the most members the group accepts.
	MaxSize int
}

// Config is what a Coordinator runs with.
type Config struct {
	// Clock runs the session timeouts.
	Clock clock.Clock
	// Topics resolves subscribed topic names to ids and partition counts.
	Topics Topics
	// ShareConfig returns a share group's configuration. It must not call back into the
	// Coordinator.
	ShareConfig func(group string) ShareConfig
	// ClassicConfig returns the classic groups' configuration; nil means Kafka's defaults. It
	// must not call back into the Coordinator.
	ClassicConfig func() ClassicConfig
	// ConsumerConfig returns a consumer group's configuration. It must not call back into the
	// Coordinator.
	ConsumerConfig func(group string) ConsumerConfig
}

// Coordinator holds every group of the cluster. It is safe for concurrent use.
type Coordinator struct {
	cfg Config

	mu     sync.Mutex
	groups map[string]*Group
	closed bool
}

// NewCoordinator returns a coordinator with no groups.
func NewCoordinator(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, groups: make(map[string]*Group)}
}

// Close stops every session timer. Heartbeats after Close fail with COORDINATOR_NOT_AVAILABLE,
// as Kafka's coordinator answers once it is no longer active; describing still works.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, g := range c.groups {
		g.kind.stop()
	}
}

// Listing is a group as ListGroups reports it.
type Listing struct {
	ID    string
	Type  Type
	State string
	// ProtocolType is "consumer", "share", or a classic group's protocol type.
	ProtocolType string
}

// Groups returns every group, sorted by id.
func (c *Coordinator) Groups() []Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Listing, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, Listing{ID: g.id, Type: g.typ, State: g.kind.state(), ProtocolType: g.kind.protocolType()})
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.ID, b.ID) })
	return out
}

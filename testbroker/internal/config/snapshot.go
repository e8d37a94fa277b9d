package config

import (
	"time"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/replica"
	"github.com/kshare/kshare/testbroker/internal/share"
	"github.com/kshare/kshare/testbroker/internal/sslprincipal"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

// Snapshot is the typed view of the cluster-wide configs (per-broker dynamic configs aside) at
// one moment, parsed once when a config changes so that hot paths (fetches, heartbeats, log
// creation) read fields instead of parsing strings. A Snapshot and everything it points to is
// never modified; callers must not modify it either.
type Snapshot struct {
	AutoCreateTopics         bool  // auto.create.topics.enable
	DeleteTopicEnable        bool  // delete.topic.enable
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	// OffsetsTopicPartitions is offsets.topic.num.partitions, over which groups are spread
	// to their coordinators.
	OffsetsTopicPartitions int32
	// ShareStatePartitions is share.coordinator.state.topic.num.partitions, over which share
	// partitions' states are spread to their share coordinators.
	ShareStatePartitions int32
	// TxnStatePartitions is transaction.state.log.num.partitions, over which transactional
	// ids are spread to their transaction coordinators.
	TxnStatePartitions int32
	// InternalReplication are the replication factors of the internal topics.
	InternalReplication InternalReplication
	// Txn are the transaction coordinator's settings.
	Txn txn.Settings
	// MaxShareSessions is group.share.max.share.sessions, the share sessions a broker holds.
	MaxShareSessions int
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// ConsumerGroupAssignors is group.consumer.assignors, the default first.
	ConsumerGroupAssignors []string
	// ClassicGroup bounds the classic groups.
	ClassicGroup ClassicGroup
	// Log is what a new partition's log gets from the broker configs (Store.LogConfig).
	Log log.Config
	// Replica are the replication settings.
	Replica replica.Settings
	// ReplicaSelector is replica.selector.class: RackAwareReplicaSelector, or "" (Kafka's
	// null) for none, so that consumers always read from the leader.
	ReplicaSelector string
	// Connections are the limits on client connections.
	Connections Connections
	// Authorizer are the authorizer's settings.
	Authorizer Authorizer

	groups   map[string]*Group // groups with configs of their own
	defaults *Group            // every other group
}

// InternalReplication are the replication factors Kafka gives its internal topics when it
// creates them.
type InternalReplication struct {
	Offsets    int16 // offsets.topic.replication.factor, for __consumer_offsets
	ShareState int16 // share.coordinator.state.topic.replication.factor, for __share_group_state
	TxnState   int16 // transaction.state.log.replication.factor, for __transaction_state
}

// Authorizer are the settings of the authorizer (StandardAuthorizer's configs).
type Authorizer struct {
	// Enabled is authorizer.class.name set to StandardAuthorizer.
	Enabled bool
	// SuperUsers is super.users, split at semicolons.
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

// ClassicGroup are the settings of the classic group protocol (GroupCoordinatorConfig's
// classicGroup*), broker-wide.
type ClassicGroup struct {
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MaxSize               int           // group.max.size
}

// Connections are the socket server's limits on connections (SocketServerConfigs), with
// testbroker's own read timeout.
type Connections struct {
	// MaxIdle is connections.max.idle.ms: a connection with no I/O for this long is closed.
	// Negative means never.
	MaxIdle time.Duration
	// RequestReadTimeout is testbroker.request.read.timeout.ms: a connection that has sent part
	// of a request frame and not the rest within this long is closed.
	RequestReadTimeout time.Duration
	// MaxReauth is connections.max.reauth.ms: when positive, the longest a SASL session lasts
	// before the client must re-authenticate on its connection (KIP-368).
	MaxReauth time.Duration
	// MaxPerIP is max.connections.per.ip, the connections a broker accepts from one address
	// unless MaxPerIPOverrides names it.
	MaxPerIP int
	// MaxPerIPOverrides is max.connections.per.ip.overrides, by host as written.
	MaxPerIPOverrides map[string]int
	// SSLClientAuth is ssl.client.auth: "required", "requested" or "none".
	SSLClientAuth string
	// SSLPrincipalMapper is ssl.principal.mapping.rules, read.
	SSLPrincipalMapper *sslprincipal.Mapper
}

// MaxFrom returns how many connections a broker accepts from host.
func (c *Connections) MaxFrom(host string) int {
	if n, ok := c.MaxPerIPOverrides[host]; ok {
		return n
	}
	return c.MaxPerIP
}

// Group are one group's effective settings: each group config the group sets, else the broker
// config that is its default.
type Group struct {
	Consumer ConsumerGroup
	Share    ShareGroup
}

// ConsumerGroup are a consumer group's (KIP-848) settings.
type ConsumerGroup struct {
	// HeartbeatInterval is consumer.heartbeat.interval.ms, else
	// group.consumer.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// SessionTimeout is consumer.session.timeout.ms, else group.consumer.session.timeout.ms.
	SessionTimeout time.Duration
	// MaxSize is group.consumer.max.size.
	MaxSize int
}

// ShareGroup are a share group's settings.
type ShareGroup struct {
	// HeartbeatInterval is share.heartbeat.interval.ms, else group.share.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// SessionTimeout is share.session.timeout.ms, else group.share.session.timeout.ms.
	SessionTimeout time.Duration
	// MaxSize is group.share.max.size.
	MaxSize int
	// Partition is what the group's share partitions run with.
	Partition share.Settings
}

// Group returns a group's effective settings. The group need not exist.
func (s *Snapshot) Group(id string) *Group {
	if g, ok := s.groups[id]; ok {
		return g
	}
	return s.defaults
}

// publishLocked builds the Snapshot of the current configs and makes it the one Snapshot
// returns; s.mu is held for writing, or s is not shared yet.
func (s *Store) publishLocked() {
	ms := func(name string) time.Duration { return time.Duration(s.intLocked(name)) * time.Millisecond }
	snap := &Snapshot{
		AutoCreateTopics:         s.parsedLocked("auto.create.topics.enable").(bool),
		DeleteTopicEnable:        s.parsedLocked("delete.topic.enable").(bool),
		NumPartitions:            int32(s.intLocked("num.partitions")),
		DefaultReplicationFactor: int16(s.intLocked("default.replication.factor")),
		OffsetsTopicPartitions:   int32(s.intLocked("offsets.topic.num.partitions")),
		ShareStatePartitions:     int32(s.intLocked("share.coordinator.state.topic.num.partitions")),
		TxnStatePartitions:       int32(s.intLocked("transaction.state.log.num.partitions")),
		MaxShareSessions:         s.intLocked("group.share.max.share.sessions"),
		OffsetsRetention:         time.Duration(s.intLocked("offsets.retention.minutes")) * time.Minute,
		ConsumerGroupAssignors:   s.parsedLocked("group.consumer.assignors").([]string),
		InternalReplication: InternalReplication{
			Offsets:    int16(s.intLocked("offsets.topic.replication.factor")),
			ShareState: int16(s.intLocked("share.coordinator.state.topic.replication.factor")),
			TxnState:   int16(s.intLocked("transaction.state.log.replication.factor")),
		},
		ClassicGroup: ClassicGroup{
			MinSessionTimeout:     ms("group.min.session.timeout.ms"),
			MaxSessionTimeout:     ms("group.max.session.timeout.ms"),
			InitialRebalanceDelay: ms("group.initial.rebalance.delay.ms"),
			MaxSize:               s.intLocked("group.max.size"),
		},
		Replica: replica.Settings{
			LagTimeMax:            ms("replica.lag.time.max.ms"),
			FetchWaitMax:          ms("replica.fetch.wait.max.ms"),
			FetchMinBytes:         int32(s.intLocked("replica.fetch.min.bytes")),
			FetchMaxBytes:         int32(s.intLocked("replica.fetch.max.bytes")),
			FetchResponseMaxBytes: int32(s.intLocked("replica.fetch.response.max.bytes")),
			FetchBackoff:          ms("replica.fetch.backoff.ms"),
			KIP1166:               s.parsedLocked("testbroker.kip1166.enable").(bool),
		},
		ReplicaSelector: s.nullableLocked("replica.selector.class"),
		Authorizer: Authorizer{
			Enabled:              s.parsedLocked("authorizer.class.name") == StandardAuthorizer,
			SuperUsers:           acl.ParseSuperUsers(s.parsedLocked("super.users").(string)),
			AllowEveryoneIfNoACL: s.parsedLocked("allow.everyone.if.no.acl.found").(bool),
		},
		Connections: Connections{
			MaxIdle:            ms("connections.max.idle.ms"),
			RequestReadTimeout: ms("testbroker.request.read.timeout.ms"),
			MaxReauth:          ms("connections.max.reauth.ms"),
			MaxPerIP:           s.intLocked("max.connections.per.ip"),
			MaxPerIPOverrides:  s.perIPOverridesLocked(),
			SSLClientAuth:      s.parsedLocked("ssl.client.auth").(string),
			SSLPrincipalMapper: s.mappingRulesLocked(),
		},
		Log: log.Config{
			LogAppendTime:   s.topicValueLocked(nil, -1, "message.timestamp.type") == "LogAppendTime",
			MaxMessageBytes: s.intLocked("message.max.bytes"),
		},
		Txn: txn.Settings{
			MaxTimeout:    ms("transaction.max.timeout.ms"),
			AbortInterval: ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		},
		groups:   make(map[string]*Group, len(s.groups)),
		defaults: s.groupLocked(nil),
	}
	for id, m := range s.groups {
		snap.groups[id] = s.groupLocked(m)
	}
	s.snap.Store(snap)
}

// perIPOverridesLocked returns max.connections.per.ip.overrides, parsed.
func (s *Store) perIPOverridesLocked() map[string]int {
	m, err := ParsePerIPOverrides(s.valueLocked("max.connections.per.ip.overrides"))
	if err != nil {
		panic("config: stored broker config is invalid: " + err.Error())
	}
	return m
}

// mappingRulesLocked returns ssl.principal.mapping.rules read; the value was checked when set.
func (s *Store) mappingRulesLocked() *sslprincipal.Mapper {
	m, err := sslprincipal.Parse(s.valueLocked("ssl.principal.mapping.rules"))
	if err != nil {
		panic("config: stored broker config is invalid: " + err.Error())
	}
	return m
}

// nullableLocked returns a STRING or CLASS broker config's cluster-wide value, parsed, or ""
// while it is null.
func (s *Store) nullableLocked(name string) string {
	raw, _, ok := s.lookupLocked(-1, name)
	if !ok {
		return ""
	}
	v, err := brokerDefs[name].parse(raw)
	if err != nil {
		panic("config: stored broker config is invalid: " + err.Error())
	}
	return v.(string)
}

// groupLocked returns the effective settings of a group with the given (validated) configs.
func (s *Store) groupLocked(m map[string]string) *Group {
	value := func(key string) any {
		d := groupDefsByName[key]
		raw, ok := m[key]
		if !ok {
			raw = s.groupDefaultLocked(d)
		}
		v, err := d.parse(raw)
		if err != nil {
			panic("config: stored group config is invalid: " + err.Error())
		}
		return v
	}
	ms := func(key string) time.Duration { return time.Duration(value(key).(int64)) * time.Millisecond }
	return &Group{
		Consumer: ConsumerGroup{
			HeartbeatInterval: ms("consumer.heartbeat.interval.ms"),
			SessionTimeout:    ms("consumer.session.timeout.ms"),
			MaxSize:           s.intLocked("group.consumer.max.size"),
		},
		Share: ShareGroup{
			HeartbeatInterval: ms("share.heartbeat.interval.ms"),
			SessionTimeout:    ms("share.session.timeout.ms"),
			MaxSize:           s.intLocked("group.share.max.size"),
			Partition: share.Settings{
				LockDuration:       ms("share.record.lock.duration.ms"),
				DeliveryCountLimit: int16(value("share.delivery.count.limit").(int64)),
				MaxRecordLocks:     int(value("share.partition.max.record.locks").(int64)),
				RenewEnabled:       value("share.renew.acknowledge.enable").(bool),
				AutoOffsetReset:    value("share.auto.offset.reset").(string),
				ReadCommitted:      value("share.isolation.level") == "read_committed",
			},
		},
	}
}

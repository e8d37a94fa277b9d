package config

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/share"
	"github.com/kshare/kshare/testbroker/internal/sslprincipal"
)

// configDef is one config Kafka defines (a ConfigDef key): its type, its default and the
// validator Kafka runs on a parsed value.
type configDef struct {
	name      string
	typ       kmsg.ConfigType
	def       string // Kafka's default, canonical; unused when null
	null      bool   // Kafka's default is null: the config has no value until one is set
	check     func(name string, v any) error
	dynamic   bool            // broker configs only: in DynamicBrokerConfig.AllDynamicConfigs
	synonyms  []brokerSynonym // topic configs only: the broker configs that set the default
	brokerKey string          // group configs only: the broker config that sets the default
}

// brokerSynonym is a broker config that sets a topic config's default, in the topic config's
// unit once multiplied by toTopic (log.retention.hours sets retention.ms times 3600000).
type brokerSynonym struct {
	name    string
	toTopic int64
}

func def(name string, typ kmsg.ConfigType, dflt string, check func(string, any) error) configDef {
	return configDef{name: name, typ: typ, def: dflt, check: check}
}

func nullDef(name string, typ kmsg.ConfigType) configDef {
	return configDef{name: name, typ: typ, null: true}
}

// dyn marks a broker config that IncrementalAlterConfigs may change.
func (d configDef) dyn() configDef { d.dynamic = true; return d }

// from sets the broker synonyms of a topic config, most preferred first, each converting 1:1.
func (d configDef) from(names ...string) configDef {
	for _, n := range names {
		d.synonyms = append(d.synonyms, brokerSynonym{name: n, toTopic: 1})
	}
	return d
}

// fromScaled adds a broker synonym whose value is multiplied by factor (hours or minutes to ms).
func (d configDef) fromScaled(name string, factor int64) configDef {
	d.synonyms = append(d.synonyms, brokerSynonym{name: name, toTopic: factor})
	return d
}

// StandardAuthorizer is the authorizer.class.name that turns ACLs on.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// checkAuthorizerClass accepts no authorizer or StandardAuthorizer; Kafka fails to start with
// any class it cannot load.
func checkAuthorizerClass(name string, v any) error {
	if s := v.(string); s != "" && s != StandardAuthorizer {
		return invalidValue(name, v, "Class "+s+" could not be found.")
	}
	return nil
}

// checkMappingRules refuses ssl.principal.mapping.rules that SslPrincipalMapper cannot read,
// with its message. Kafka has no validator for the config: its broker fails to start when
// SslChannelBuilder reads the rules, with a KafkaException wrapping that message.
func checkMappingRules(name string, v any) error {
	if _, err := sslprincipal.Parse(v.(string)); err != nil {
		return invalidValue(name, v, err.Error())
	}
	return nil
}

// knownClasses limits a CLASS config to the classes the cluster implements: any other name is
// refused as Kafka refuses a class that is not on its classpath.
func (d configDef) knownClasses(names ...string) configDef {
	d.check = func(name string, v any) error {
		if !slices.Contains(names, v.(string)) {
			return invalidValue(name, v, "Class "+v.(string)+" could not be found.")
		}
		return nil
	}
	return d
}

// defaultsFrom sets the broker config whose value is a group config's default.
func (d configDef) defaultsFrom(brokerKey string) configDef { d.brokerKey = brokerKey; return d }

const (
	typeBool   = kmsg.ConfigTypeBoolean
	typeString = kmsg.ConfigTypeString
	typeShort  = kmsg.ConfigTypeShort
	typeInt    = kmsg.ConfigTypeInt
	typeLong   = kmsg.ConfigTypeLong
	typeDouble = kmsg.ConfigTypeDouble
	typeList   = kmsg.ConfigTypeList

	maxLong = "9223372036854775807"
	maxInt  = "2147483647"

	hourMs   = int64(time.Hour / time.Millisecond)
	minuteMs = int64(time.Minute / time.Millisecond)
)

// RackAwareReplicaSelector is the replica.selector.class that sends a consumer to a replica
// in its rack (KIP-392), the one selector the cluster implements.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// brokerDefs are the broker configs the cluster knows, with Kafka 4.x's defaults, validators
// and dynamic flags (KafkaConfig, ServerLogConfigs, GroupCoordinatorConfig, ShareGroupConfig).
var brokerDefs = defsByName(
	def("auto.create.topics.enable", typeBool, "true", nil),
	def("num.partitions", typeInt, "1", atLeast(1)),
	def("default.replication.factor", typeInt, "1", nil),
	def("delete.topic.enable", typeBool, "true", nil),
	def("offsets.topic.num.partitions", typeInt, "50", atLeast(1)),
	def("share.coordinator.state.topic.num.partitions", typeInt, "50", atLeast(1)),
	def("transaction.state.log.num.partitions", typeInt, "50", atLeast(1)),
	// Kafka's default replication factor of the internal topics is 3; testbroker's is 1, as
	// Kafka's test harness sets offsets.topic.replication.factor, so that a cluster's internal
	// topics add no followers (and no follower fetches) unless a test asks for them.
	def("offsets.topic.replication.factor", typeShort, "1", atLeast(1)),
	def("share.coordinator.state.topic.replication.factor", typeShort, "1", atLeast(1)),
	def("transaction.state.log.replication.factor", typeShort, "1", atLeast(1)),
	def("transaction.max.timeout.ms", typeInt, "900000", atLeast(1)),
	def("transaction.abort.timed.out.transaction.cleanup.interval.ms", typeInt, "10000", atLeast(1)),
	def("replica.lag.time.max.ms", typeLong, "30000", nil),
	def("replica.fetch.wait.max.ms", typeInt, "500", nil),
	def("replica.fetch.min.bytes", typeInt, "1", nil),
	def("replica.fetch.max.bytes", typeInt, "1048576", atLeast(0)),
	def("replica.fetch.response.max.bytes", typeInt, "10485760", atLeast(0)),
	def("replica.fetch.backoff.ms", typeInt, "1000", atLeast(0)),
	nullDef("replica.selector.class", kmsg.ConfigTypeClass).knownClasses(RackAwareReplicaSelector),
	// The authorizer (ServerConfigs, StandardAuthorizer's own keys): StandardAuthorizer is the
	// one class the cluster implements.
	def("authorizer.class.name", typeString, "", checkAuthorizerClass),
	def("super.users", typeString, "", nil),
	def("allow.everyone.if.no.acl.found", typeBool, "false", nil),
	// testbroker's own: whether leaders apply KIP-1166 to follower fetches (package replica).
	def("testbroker.kip1166.enable", typeBool, "true", nil),

	// Socket server (SocketServerConfigs): a negative connections.max.idle.ms never closes an
	// idle connection; the per-ip limits are dynamic, as in SocketServer.ReconfigurableConfigs.
	def("connections.max.idle.ms", typeLong, "600000", nil),
	// BrokerSecurityConfigs: a positive value is the longest a SASL session lasts before the
	// client must re-authenticate (KIP-368); 0 (or less) leaves only a credential's own lifetime.
	def("connections.max.reauth.ms", typeLong, "0", nil),
	def("max.connections.per.ip", typeInt, maxInt, atLeast(0)).dyn(),
	def("max.connections.per.ip.overrides", typeString, "", checkPerIPOverrides).dyn(),
	// testbroker's own: how long a request frame may take to arrive once its first byte has.
	def("testbroker.request.read.timeout.ms", typeLong, "30000", atLeast(1)),
	// TLS client authentication (BrokerSecurityConfigs), read at every handshake.
	def("ssl.client.auth", typeString, "none", oneOf("required", "requested", "none")),
	def("ssl.principal.mapping.rules", typeString, "DEFAULT", checkMappingRules),

	// The broker side of the topic configs: every one is dynamic but the hour and minute
	// synonyms (DynamicLogConfig.ReconfigurableConfigs).
	def("compression.type", typeString, "producer", oneOf(compressionTypes...)).dyn(),
	def("log.cleaner.delete.retention.ms", typeLong, "86400000", atLeast(0)).dyn(),
	def("log.cleaner.max.compaction.lag.ms", typeLong, maxLong, atLeast(1)).dyn(),
	def("log.cleaner.min.cleanable.ratio", typeDouble, "0.5", between(0, 1)).dyn(),
	def("log.cleaner.min.compaction.lag.ms", typeLong, "0", atLeast(0)).dyn(),
	def("log.cleanup.policy", typeList, "delete", listOf("compact", "delete")).dyn(),
	def("log.flush.interval.messages", typeLong, maxLong, atLeast(1)).dyn(),
	nullDef("log.flush.interval.ms", typeLong).dyn(),
	def("log.flush.scheduler.interval.ms", typeLong, maxLong, nil),
	def("log.index.interval.bytes", typeInt, "4096", atLeast(0)).dyn(),
	def("log.index.size.max.bytes", typeInt, "10485760", atLeast(4)).dyn(),
	def("log.local.retention.bytes", typeLong, "-2", atLeast(-2)).dyn(),
	def("log.local.retention.ms", typeLong, "-2", atLeast(-2)).dyn(),
	def("log.message.timestamp.after.max.ms", typeLong, "3600000", atLeast(0)).dyn(),
	def("log.message.timestamp.before.max.ms", typeLong, maxLong, atLeast(0)).dyn(),
	def("log.message.timestamp.type", typeString, "CreateTime", oneOf("CreateTime", "LogAppendTime")).dyn(),
	def("log.preallocate", typeBool, "false", nil).dyn(),
	def("log.retention.bytes", typeLong, "-1", nil).dyn(),
	def("log.retention.check.interval.ms", typeLong, "300000", atLeast(1)),
	def("log.retention.hours", typeInt, "168", nil),
	nullDef("log.retention.minutes", typeInt),
	nullDef("log.retention.ms", typeLong).dyn(),
	def("log.roll.hours", typeInt, "168", atLeast(1)),
	def("log.roll.jitter.hours", typeInt, "0", atLeast(0)),
	nullDef("log.roll.jitter.ms", typeLong).dyn(),
	nullDef("log.roll.ms", typeLong).dyn(),
	def("log.segment.bytes", typeInt, "1073741824", atLeast(1<<20)).dyn(),
	def("log.segment.delete.delay.ms", typeLong, "60000", atLeast(0)).dyn(),
	def("message.max.bytes", typeInt, strconv.Itoa(log.DefaultMaxMessageBytes), atLeast(0)).dyn(),
	def("min.insync.replicas", typeInt, "1", atLeast(1)).dyn(),
	def("unclean.leader.election.enable", typeBool, "false", nil).dyn(),

	// Group coordinator: the classic group protocol, then the defaults and bounds of the
	// group configs.
	// Kafka's default is 3000; testbroker's is 0, as Kafka's test harness sets it
	// (TestUtils.createBrokerConfig), so that a test's first rebalance does not wait 3 s.
	def("group.initial.rebalance.delay.ms", typeInt, "0", nil),
	def("group.max.session.timeout.ms", typeInt, "1800000", nil),
	def("group.max.size", typeInt, maxInt, atLeast(1)),
	def("group.min.session.timeout.ms", typeInt, "6000", nil),
	def("offsets.retention.minutes", typeInt, "10080", atLeast(1)),
	def("group.consumer.assignors", typeList, "uniform,range", nil),
	def("group.consumer.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.consumer.max.heartbeat.interval.ms", typeInt, "15000", atLeast(1)),
	def("group.consumer.max.session.timeout.ms", typeInt, "60000", atLeast(1)),
	def("group.consumer.max.size", typeInt, maxInt, atLeast(1)),
	def("group.consumer.min.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.consumer.min.session.timeout.ms", typeInt, "45000", atLeast(1)),
	def("group.consumer.session.timeout.ms", typeInt, "45000", atLeast(1)),
	def("group.share.delivery.count.limit", typeInt, "5", between(2, 10)),
	def("group.share.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.share.max.delivery.count.limit", typeInt, "10", between(5, 25)),
	def("group.share.max.heartbeat.interval.ms", typeInt, "15000", atLeast(1)),
	def("group.share.max.partition.max.record.locks", typeInt, "4000", between(2000, 10000)),
	def("group.share.max.record.lock.duration.ms", typeInt, "60000", between(30000, 3600000)),
	def("group.share.max.session.timeout.ms", typeInt, "60000", atLeast(1)),
	def("group.share.max.share.sessions", typeInt, "2000", atLeast(1)),
	def("group.share.max.size", typeInt, "200", between(1, 1000)),
	def("group.share.min.delivery.count.limit", typeInt, "2", between(2, 5)),
	def("group.share.min.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.share.min.partition.max.record.locks", typeInt, "100", between(100, 2000)),
	def("group.share.min.record.lock.duration.ms", typeInt, "15000", between(1000, 30000)),
	def("group.share.min.session.timeout.ms", typeInt, "45000", atLeast(1)),
	def("group.share.partition.max.record.locks", typeInt, "2000", between(100, 10000)),
	def("group.share.record.lock.duration.ms", typeInt, "30000", between(1000, 3600000)),
	def("group.share.session.timeout.ms", typeInt, "45000", atLeast(1)),
	def("group.streams.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.streams.initial.rebalance.delay.ms", typeInt, "3000", atLeast(0)),
	def("group.streams.max.heartbeat.interval.ms", typeInt, "15000", atLeast(1)),
	def("group.streams.max.session.timeout.ms", typeInt, "60000", atLeast(1)),
	def("group.streams.max.standby.replicas", typeInt, "2", atLeast(0)),
	def("group.streams.min.heartbeat.interval.ms", typeInt, "5000", atLeast(1)),
	def("group.streams.min.session.timeout.ms", typeInt, "45000", atLeast(1)),
	def("group.streams.num.standby.replicas", typeInt, "0", atLeast(0)),
	def("group.streams.session.timeout.ms", typeInt, "45000", atLeast(1)),
)

// topicDefs are the topic configs the cluster knows (LogConfig), with their broker synonyms
// (ServerTopicConfigSynonyms).
var topicDefs = defsByName(
	def("cleanup.policy", typeList, "delete", listOf("compact", "delete")).from("log.cleanup.policy"),
	def("compression.type", typeString, "producer", oneOf(compressionTypes...)).from("compression.type"),
	def("delete.retention.ms", typeLong, "86400000", atLeast(0)).from("log.cleaner.delete.retention.ms"),
	def("file.delete.delay.ms", typeLong, "60000", atLeast(0)).from("log.segment.delete.delay.ms"),
	def("flush.messages", typeLong, maxLong, atLeast(1)).from("log.flush.interval.messages"),
	def("flush.ms", typeLong, maxLong, atLeast(0)).from("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
	def("index.interval.bytes", typeInt, "4096", atLeast(0)).from("log.index.interval.bytes"),
	def("local.retention.bytes", typeLong, "-2", atLeast(-2)).from("log.local.retention.bytes"),
	def("local.retention.ms", typeLong, "-2", atLeast(-2)).from("log.local.retention.ms"),
	def("max.compaction.lag.ms", typeLong, maxLong, atLeast(1)).from("log.cleaner.max.compaction.lag.ms"),
	def("max.message.bytes", typeInt, strconv.Itoa(log.DefaultMaxMessageBytes), atLeast(0)).from("message.max.bytes"),
	def("message.timestamp.after.max.ms", typeLong, "3600000", atLeast(0)).from("log.message.timestamp.after.max.ms"),
	def("message.timestamp.before.max.ms", typeLong, maxLong, atLeast(0)).from("log.message.timestamp.before.max.ms"),
	def("message.timestamp.type", typeString, "CreateTime", oneOf("CreateTime", "LogAppendTime")).from("log.message.timestamp.type"),
	def("min.cleanable.dirty.ratio", typeDouble, "0.5", between(0, 1)).from("log.cleaner.min.cleanable.ratio"),
	def("min.compaction.lag.ms", typeLong, "0", atLeast(0)).from("log.cleaner.min.compaction.lag.ms"),
	def("min.insync.replicas", typeInt, "1", atLeast(1)).from("min.insync.replicas"),
	def("preallocate", typeBool, "false", nil).from("log.preallocate"),
	def("remote.log.copy.disable", typeBool, "false", nil),
	def("remote.log.delete.on.disable", typeBool, "false", nil),
	def("remote.storage.enable", typeBool, "false", nil),
	def("retention.bytes", typeLong, "-1", nil).from("log.retention.bytes"),
	def("retention.ms", typeLong, "604800000", atLeast(-1)).from("log.retention.ms").
		fromScaled("log.retention.minutes", minuteMs).fromScaled("log.retention.hours", hourMs),
	def("segment.bytes", typeInt, "1073741824", atLeast(1<<20)).from("log.segment.bytes"),
	def("segment.index.bytes", typeInt, "10485760", atLeast(4)).from("log.index.size.max.bytes"),
	def("segment.jitter.ms", typeLong, "0", atLeast(0)).from("log.roll.jitter.ms").fromScaled("log.roll.jitter.hours", hourMs),
	def("segment.ms", typeLong, "604800000", atLeast(1)).from("log.roll.ms").fromScaled("log.roll.hours", hourMs),
	def("unclean.leader.election.enable", typeBool, "false", nil).from("unclean.leader.election.enable"),
)

// groupDefs are the group configs (GroupConfig), in Kafka's definition order, each defaulting
// to its broker config.
var groupDefs = []configDef{
	def("consumer.session.timeout.ms", typeInt, "", atLeast(1)).defaultsFrom("group.consumer.session.timeout.ms"),
	def("consumer.heartbeat.interval.ms", typeInt, "", atLeast(1)).defaultsFrom("group.consumer.heartbeat.interval.ms"),
	def("share.session.timeout.ms", typeInt, "", atLeast(1)).defaultsFrom("group.share.session.timeout.ms"),
	def("share.heartbeat.interval.ms", typeInt, "", atLeast(1)).defaultsFrom("group.share.heartbeat.interval.ms"),
	def("share.record.lock.duration.ms", typeInt, "", atLeast(1000)).defaultsFrom("group.share.record.lock.duration.ms"),
	def("share.delivery.count.limit", typeInt, "", atLeast(2)).defaultsFrom("group.share.delivery.count.limit"),
	def("share.partition.max.record.locks", typeInt, "", atLeast(100)).defaultsFrom("group.share.partition.max.record.locks"),
	def("share.auto.offset.reset", typeString, "latest", checkAutoOffsetReset),
	def("share.isolation.level", typeString, "read_uncommitted", oneOf("read_committed", "read_uncommitted")),
	def("share.renew.acknowledge.enable", typeBool, "true", nil),
	def("streams.session.timeout.ms", typeInt, "", atLeast(1)).defaultsFrom("group.streams.session.timeout.ms"),
	def("streams.heartbeat.interval.ms", typeInt, "", atLeast(1)).defaultsFrom("group.streams.heartbeat.interval.ms"),
	def("streams.num.standby.replicas", typeInt, "", atLeast(0)).defaultsFrom("group.streams.num.standby.replicas"),
	def("streams.initial.rebalance.delay.ms", typeInt, "", atLeast(0)).defaultsFrom("group.streams.initial.rebalance.delay.ms"),
}

var groupDefsByName = defsByName(groupDefs...)

// groupBounds are the broker configs that bound group configs, in the order GroupConfig
// checks them; an empty min means no lower bound.
var groupBounds = []struct{ key, min, max string }{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{"share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{"share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas"},
}

// sessionOverHeartbeat pairs the session timeout and heartbeat interval configs whose session
// must exceed the heartbeat, for groups and (with the "group." prefix) for the broker.
var sessionOverHeartbeat = []struct{ session, heartbeat string }{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

func defsByName(defs ...configDef) map[string]*configDef {
	m := make(map[string]*configDef, len(defs))
	for i := range defs {
		m[defs[i].name] = &defs[i]
	}
	return m
}

// Validators, with the reasons Kafka's ConfigDef validators give.

func atLeast(min int64) func(string, any) error {
	return func(name string, v any) error {
		if toFloat(v) < float64(min) {
			return invalidValue(name, v, fmt.Sprintf("Value must be at least %d", min))
		}
		return nil
	}
}

func between(min, max int64) func(string, any) error {
	return func(name string, v any) error {
		if err := atLeast(min)(name, v); err != nil {
			return err
		}
		if toFloat(v) > float64(max) {
			return invalidValue(name, v, fmt.Sprintf("Value must be no more than %d", max))
		}
		return nil
	}
}

func oneOf(valid ...string) func(string, any) error {
	return func(name string, v any) error {
		if !slices.Contains(valid, v.(string)) {
			return invalidValue(name, v, "String must be one of: "+strings.Join(valid, ", "))
		}
		return nil
	}
}

func listOf(valid ...string) func(string, any) error {
	check := oneOf(valid...)
	return func(name string, v any) error {
		for _, s := range v.([]string) {
			if err := check(name, s); err != nil {
				return err
			}
		}
		return nil
	}
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// invalidValue is the text of Kafka's ConfigException(name, value, message).
func invalidValue(name string, value any, reason string) error {
	return fmt.Errorf("Invalid value %s for configuration %s: %s", javaString(value), name, reason)
}

// javaString prints a parsed value the way Java's toString does.
func javaString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e7 {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	}
	return fmt.Sprint(v)
}

var listSplit = regexp.MustCompile(`\s*,\s*`)

// parse reads a raw value as ConfigDef.parseType does (trimmed, typed) and runs the validator.
func (d *configDef) parse(raw string) (any, error) {
	s := strings.TrimSpace(raw)
	var v any
	switch d.typ {
	case typeBool:
		switch {
		case strings.EqualFold(s, "true"):
			v = true
		case strings.EqualFold(s, "false"):
			v = false
		default:
			return nil, invalidValue(d.name, raw, "Expected value to be either true or false")
		}
	case typeShort, typeInt, typeLong:
		bits, typeName := 32, "INT"
		switch d.typ {
		case typeShort:
			bits, typeName = 16, "SHORT"
		case typeLong:
			bits, typeName = 64, "LONG"
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, invalidValue(d.name, raw, "Not a number of type "+typeName)
		}
		v = n
	case typeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, invalidValue(d.name, raw, "Not a number of type DOUBLE")
		}
		v = f
	case typeList:
		list := []string{}
		if s != "" {
			list = listSplit.Split(s, -1)
		}
		v = list
	default:
		v = s
	}
	if d.check != nil {
		if err := d.check(d.name, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// canonical is a valid raw value as Kafka prints the parsed value (ConfigDef.convertToString).
func (d *configDef) canonical(raw string) string {
	v, err := d.parse(raw)
	if err != nil {
		return raw
	}
	if list, ok := v.([]string); ok {
		return strings.Join(list, ",")
	}
	if f, ok := v.(float64); ok {
		return javaString(f)
	}
	return fmt.Sprint(v)
}

func checkAutoOffsetReset(name string, v any) error {
	s := v.(string)
	if !share.ValidOffsetReset(s) {
		return invalidValue(name, v, "Invalid value `"+s+"` for configuration "+name+
			". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
	}
	return nil
}

// ParsePerIPOverrides reads max.connections.per.ip.overrides as Kafka does (Csv.parseCsvMap,
// then an int per host): "host:count" pairs separated by commas, split at each pair's last
// colon so that IPv6 addresses work.
func ParsePerIPOverrides(s string) (map[string]int, error) {
	m := map[string]int{}
	if s == "" {
		return m, nil
	}
	for _, pair := range listSplit.Split(s, -1) {
		i := strings.LastIndex(pair, ":")
		if i < 0 {
			return nil, fmt.Errorf("Error parsing configuration property 'max.connections.per.ip.overrides': %q is not host:count", pair)
		}
		host, count := strings.TrimSpace(pair[:i]), strings.TrimSpace(pair[i+1:])
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("For input string: \"%s\"", count)
		}
		m[host] = int(n)
	}
	var invalid []string
	for _, host := range sortedKeys(m) {
		if !validHostPattern.MatchString(host) {
			invalid = append(invalid, host)
		}
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("max.connections.per.ip.overrides contains invalid addresses : %s", strings.Join(invalid, ","))
	}
	return m, nil
}

// validHostPattern is Utils.validHostPattern's set of characters.
var validHostPattern = regexp.MustCompile(`^[0-9a-zA-Z\-%._:]*$`)

func checkPerIPOverrides(_ string, v any) error {
	_, err := ParsePerIPOverrides(v.(string))
	return err
}

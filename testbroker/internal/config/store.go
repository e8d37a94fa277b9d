package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// Store holds every config of the cluster but the topic configs, which live on their topics:
// the broker configs it started with, those set later with IncrementalAlterConfigs
// (cluster-wide and per broker), and group configs. Every change publishes a new Snapshot.
type Store struct {
	static map[string]string // validated at start; never changes

	mu         sync.RWMutex
	dynDefault map[string]string            // resource "": every broker's dynamic configs
	dynBroker  map[int32]map[string]string  // resource "<id>": one broker's dynamic configs
	groups     map[string]map[string]string // group id -> its group configs

	snap atomic.Pointer[Snapshot]
}

// Op is one operation of an IncrementalAlterConfigs resource.
type Op = kmsg.IncrementalAlterConfigsRequestResourceConfig

// New validates the broker configs a cluster starts with: every key must be one the cluster
// knows (an unknown key is an error naming it, where Kafka would only log it), each value must
// parse and pass Kafka's validator, and the group bounds must hold together as
// GroupCoordinatorConfig and ShareGroupConfig require.
func New(static map[string]string) (*Store, error) {
	s := &Store{
		static:     make(map[string]string, len(static)),
		dynDefault: make(map[string]string),
		dynBroker:  make(map[int32]map[string]string),
		groups:     make(map[string]map[string]string),
	}
	for _, k := range sortedKeys(static) {
		d := brokerDefs[k]
		if d == nil {
			return nil, fmt.Errorf("unknown broker config %q", k)
		}
		if _, err := d.parse(static[k]); err != nil {
			return nil, fmt.Errorf("broker config: %w", err)
		}
		s.static[k] = static[k]
	}
	if err := s.checkGroupBounds(); err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	s.publishLocked()
	return s, nil
}

// Snapshot returns the typed view of the current configs. It never changes: a config change
// publishes a new one.
func (s *Store) Snapshot() *Snapshot { return s.snap.Load() }

// checkGroupBounds applies the broker-level requirements on the group configs' defaults and
// bounds: min <= default <= max, and the session timeout above the heartbeat interval.
func (s *Store) checkGroupBounds() error {
	for _, bound := range groupBounds {
		dflt := groupDefsByName[bound.key].brokerKey
		if bound.min != "" {
			if s.intLocked(bound.max) < s.intLocked(bound.min) {
				return fmt.Errorf("%s must be greater than or equal to %s", bound.max, bound.min)
			}
			if s.intLocked(dflt) < s.intLocked(bound.min) {
				return fmt.Errorf("%s must be greater than or equal to %s", dflt, bound.min)
			}
		}
		if s.intLocked(dflt) > s.intLocked(bound.max) {
			return fmt.Errorf("%s must be less than or equal to %s", dflt, bound.max)
		}
	}
	for _, p := range sessionOverHeartbeat {
		session, heartbeat := "group."+p.session, "group."+p.heartbeat
		if s.intLocked(heartbeat) >= s.intLocked(session) {
			return fmt.Errorf("%s must be less than %s", heartbeat, session)
		}
	}
	if s.intLocked("group.share.max.share.sessions") < s.intLocked("group.share.max.size") {
		return fmt.Errorf("group.share.max.share.sessions must be greater than or equal to group.share.max.size")
	}
	if s.intLocked("max.connections.per.ip") == 0 && s.valueLocked("max.connections.per.ip.overrides") == "" {
		return fmt.Errorf("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	return nil
}

// lookupLocked returns broker config name's value for broker id and where it comes from:
// that broker's dynamic configs, the cluster-wide dynamic configs, the static configs, then
// Kafka's default. A negative id skips per-broker configs. ok is false for a null value.
func (s *Store) lookupLocked(id int32, name string) (value string, source kmsg.ConfigSource, ok bool) {
	if v, found := s.dynBroker[id][name]; found && id >= 0 {
		return v, kmsg.ConfigSourceDynamicBrokerConfig, true
	}
	if v, found := s.dynDefault[name]; found {
		return v, kmsg.ConfigSourceDynamicDefaultBrokerConfig, true
	}
	if v, found := s.static[name]; found {
		return v, kmsg.ConfigSourceStaticBrokerConfig, true
	}
	if d := brokerDefs[name]; d != nil && !d.null {
		return d.def, kmsg.ConfigSourceDefaultConfig, true
	}
	return "", kmsg.ConfigSourceDefaultConfig, false
}

// valueLocked returns the cluster-wide value of a known broker config (per-broker dynamic
// configs aside). It panics on a config the cluster does not define or whose value is null:
// callers name configs from brokerDefs.
func (s *Store) valueLocked(name string) string {
	v, _, ok := s.lookupLocked(-1, name)
	if !ok {
		panic("config: broker config " + name + " has no value")
	}
	return v
}

// parsedLocked returns a known broker config's cluster-wide value, parsed.
func (s *Store) parsedLocked(name string) any {
	v, err := brokerDefs[name].parse(s.valueLocked(name))
	if err != nil {
		panic("config: stored broker config is invalid: " + err.Error())
	}
	return v
}

// intLocked returns an INT or LONG broker config's cluster-wide value.
func (s *Store) intLocked(name string) int { return int(s.parsedLocked(name).(int64)) }

// topicValueLocked returns topic config name's value for a topic with the given configs: the
// topic's own value, else the first broker synonym with a value (for broker id, or
// cluster-wide when id is negative) in the topic config's unit, else Kafka's default.
func (s *Store) topicValueLocked(configs map[string]string, id int32, name string) string {
	d := topicDefs[name]
	if v, ok := configs[name]; ok {
		return d.canonical(v)
	}
	for _, syn := range d.synonyms {
		v, _, ok := s.lookupLocked(id, syn.name)
		if !ok {
			continue
		}
		if syn.toTopic == 1 {
			return d.canonical(v)
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return strconv.FormatInt(n*syn.toTopic, 10)
	}
	return d.def
}

// groupDefaultLocked is a group config's default: its broker config's cluster-wide value, or
// Kafka's GroupConfig default for the few without one.
func (s *Store) groupDefaultLocked(d *configDef) string {
	if d.brokerKey != "" {
		return brokerDefs[d.brokerKey].canonical(s.valueLocked(d.brokerKey))
	}
	return d.def
}

// ValidateTopic checks a topic's explicit configs as LogConfig.validate does and returns a
// copy to store: an unknown name, a value that does not parse or fails its validator, or
// min.compaction.lag.ms above max.compaction.lag.ms is INVALID_CONFIG with Kafka's message.
func (s *Store) ValidateTopic(m map[string]string) (map[string]string, error) {
	keys := sortedKeys(m)
	for _, k := range keys {
		if topicDefs[k] == nil {
			return nil, kafkaerr.New(kerr.InvalidConfig, "Unknown topic config name: %s", k)
		}
	}
	for _, k := range keys {
		if _, err := topicDefs[k].parse(m[k]); err != nil {
			return nil, kafkaerr.New(kerr.InvalidConfig, "%s", err.Error())
		}
	}
	s.mu.RLock()
	minLag, _ := strconv.ParseInt(s.topicValueLocked(m, -1, "min.compaction.lag.ms"), 10, 64)
	maxLag, _ := strconv.ParseInt(s.topicValueLocked(m, -1, "max.compaction.lag.ms"), 10, 64)
	s.mu.RUnlock()
	if minLag > maxLag {
		return nil, kafkaerr.New(kerr.InvalidConfig, "conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	return cloneConfigs(m), nil
}

// LogConfig returns the settings of a new partition's log for a topic with the given explicit
// (validated) configs: message.timestamp.type and max.message.bytes come from the topic, else
// from the broker configs (log.message.timestamp.type, message.max.bytes). The log keeps them
// for its lifetime: a later change of either config applies to partitions created after it.
func (s *Store) LogConfig(topicConfigs map[string]string) log.Config {
	cfg := s.Snapshot().Log
	if v, ok := topicConfigs["message.timestamp.type"]; ok {
		cfg.LogAppendTime = strings.TrimSpace(v) == "LogAppendTime"
	}
	if v, ok := topicConfigs["max.message.bytes"]; ok {
		cfg.MaxMessageBytes, _ = strconv.Atoi(strings.TrimSpace(v))
	}
	return cfg
}

// MinInSyncReplicas returns a topic's min.insync.replicas: its own, else the broker's.
func (s *Store) MinInSyncReplicas(topicConfigs map[string]string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, _ := strconv.Atoi(s.topicValueLocked(topicConfigs, -1, "min.insync.replicas"))
	return n
}

// AlterBroker changes the dynamic configs of broker id, or of every broker for a negative id,
// as ConfigAdminManager and DynamicBrokerConfig validate them: APPEND and SUBTRACT need a
// known LIST config (INVALID_CONFIG), a config Kafka cannot change at runtime is
// INVALID_REQUEST "Cannot update these configs dynamically: Set(...)", and so is a value that
// does not parse. Broker configs the cluster does not know are stored as Kafka stores them.
func (s *Store) AlterBroker(id int32, ops []Op, validateOnly bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.dynDefault
	if id >= 0 {
		current = s.dynBroker[id]
	}
	next := cloneConfigs(current)
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		default:
			d := brokerDefs[op.Name]
			verb := "append"
			if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if d == nil {
				return kafkaerr.New(kerr.InvalidConfig, "Unknown config name: %s", op.Name)
			}
			if d.typ != typeList {
				return kafkaerr.New(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, op.Name)
			}
			old, ok := next[op.Name]
			if !ok {
				old = d.def
			}
			next[op.Name] = strings.Join(applyListOp(splitList(old), op), ",")
		}
	}
	var static []string
	for _, k := range sortedKeys(next) {
		if d := brokerDefs[k]; d != nil && !d.dynamic {
			static = append(static, k)
		}
	}
	if len(static) > 0 {
		return kafkaerr.New(kerr.InvalidRequest, "Cannot update these configs dynamically: Set(%s)", strings.Join(static, ", "))
	}
	for _, k := range sortedKeys(next) {
		if d := brokerDefs[k]; d != nil {
			if _, err := d.parse(next[k]); err != nil {
				return kafkaerr.New(kerr.InvalidRequest, "%s", err.Error())
			}
		}
	}
	if validateOnly {
		return nil
	}
	if id >= 0 {
		s.dynBroker[id] = next
	} else {
		s.dynDefault = next
	}
	s.publishLocked()
	return nil
}

// ApplyTopicOps applies operations to a copy of a topic's explicit configs as Kafka's
// controller does (applyControllerOps); the result is for ValidateTopic.
func ApplyTopicOps(current map[string]string, ops []Op) (map[string]string, error) {
	return applyControllerOps(current, ops, topicDefs)
}

// AlterGroup changes a group's configs, validated as GroupConfig.validate does
// (validateGroupLocked). An empty group name is INVALID_REQUEST. The group need not exist:
// Kafka lets configs be set beforehand.
func (s *Store) AlterGroup(group string, ops []Op, validateOnly bool) error {
	if group == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Default group resources are not allowed.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := applyControllerOps(s.groups[group], ops, groupDefsByName)
	if err != nil {
		return err
	}
	if err := s.validateGroupLocked(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if len(next) == 0 {
		delete(s.groups, group)
	} else {
		s.groups[group] = next
	}
	s.publishLocked()
	return nil
}

// validateGroupLocked checks a group's configs as GroupConfig.validate does, with the broker's
// values standing in for unset ones: an unknown name, a value that does not parse or fails its
// validator, a value outside the broker's bounds or a session timeout not above its heartbeat
// interval is INVALID_CONFIG with Kafka's message.
func (s *Store) validateGroupLocked(m map[string]string) error {
	for _, k := range sortedKeys(m) {
		if groupDefsByName[k] == nil {
			return kafkaerr.New(kerr.InvalidConfig, "Unknown group config name: %s", k)
		}
	}
	values := make(map[string]int64, len(groupDefs))
	for i := range groupDefs {
		d := &groupDefs[i]
		raw, ok := m[d.name]
		if !ok {
			raw = s.groupDefaultLocked(d)
		}
		v, err := d.parse(raw)
		if err != nil {
			return kafkaerr.New(kerr.InvalidConfig, "%s", err.Error())
		}
		if n, isInt := v.(int64); isInt {
			values[d.name] = n
		}
	}
	for _, g := range groupBounds {
		if g.min != "" && values[g.key] < int64(s.intLocked(g.min)) {
			return kafkaerr.New(kerr.InvalidConfig, "%s must be greater than or equal to %s", g.key, g.min)
		}
		if values[g.key] > int64(s.intLocked(g.max)) {
			return kafkaerr.New(kerr.InvalidConfig, "%s must be less than or equal to %s", g.key, g.max)
		}
	}
	for _, p := range sessionOverHeartbeat {
		if values[p.session] <= values[p.heartbeat] {
			return kafkaerr.New(kerr.InvalidConfig, "%s must be greater than %s", p.session, p.heartbeat)
		}
	}
	return nil
}

// applyControllerOps applies operations to a copy of current as ConfigurationControlManager
// does: APPEND and SUBTRACT work on LIST configs only, starting from the config's default
// when it is not set.
func applyControllerOps(current map[string]string, ops []Op, defs map[string]*configDef) (map[string]string, error) {
	next := cloneConfigs(current)
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		default:
			d := defs[op.Name]
			if d == nil || d.typ != typeList {
				verb := "APPEND"
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "SUBTRACT"
				}
				return nil, kafkaerr.New(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", verb, op.Name)
			}
			old, ok := next[op.Name]
			if !ok {
				old = d.def
			}
			next[op.Name] = strings.Join(applyListOp(splitList(old), op), ",")
		}
	}
	return next, nil
}

// applyListOp appends the op's comma-separated values missing from list, or removes them.
func applyListOp(list []string, op Op) []string {
	for _, v := range strings.Split(*op.Value, ",") {
		i := slices.Index(list, v)
		switch {
		case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
			list = append(list, v)
		case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
			list = slices.Delete(list, i, i+1)
		}
	}
	return list
}

// splitList splits a LIST value on commas, dropping empty parts.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func cloneConfigs(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

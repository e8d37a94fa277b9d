package server

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type configEntry = kmsg.DescribeConfigsResponseResourceConfig

type configSynonym = kmsg.DescribeConfigsResponseResourceConfigConfigSynonym

// handleDescribeConfigs describes TOPIC, BROKER and GROUP resources as Kafka's ConfigHelper
// does, each entry with its effective value, source, read-only and sensitive flags, type (v3+)
// and, when asked, its synonyms; documentation is never sent. ConfigNames, when not empty,
// limits the entries to those names.
//
//   - TOPIC: every topic config the cluster knows. Source DYNAMIC_TOPIC_CONFIG for one set on
//     the topic, else that of its broker synonym (STATIC_BROKER_CONFIG for one set at start,
//     DYNAMIC_*_BROKER_CONFIG for one altered, DEFAULT_CONFIG). An unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION, an illegal name INVALID_TOPIC_EXCEPTION.
//   - BROKER: this broker's id lists every broker config it knows plus any set dynamically,
//     read-only unless Kafka can change it dynamically; "" lists the cluster-wide dynamic
//     configs; another id is INVALID_REQUEST.
//   - GROUP: every group config, GROUP_CONFIG when set for the group, else DEFAULT_CONFIG with
//     the broker's value. The group need not exist.
//   - BROKER_LOGGER and CLIENT_METRICS resources are valid but hold no configs here.
func (b *Broker) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
		entries, err := b.describeResource(r.ResourceType, r.ResourceName, req.IncludeSynonyms)
		if err != nil {
			res.ErrorCode = codeOf(err)
			res.ErrorMessage = messageOf(err)
		} else {
			for _, e := range entries {
				if len(r.ConfigNames) == 0 || slices.Contains(r.ConfigNames, e.Name) {
					res.Configs = append(res.Configs, e)
				}
			}
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (b *Broker) describeResource(typ kmsg.ConfigResourceType, name string, synonyms bool) ([]configEntry, error) {
	c := b.c
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := validateTopicName(name); err != nil {
			return nil, err
		}
		t := c.topic(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		return c.topicConfigEntries(c.topicConfigs(t), b.id, synonyms), nil
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return c.brokerConfigEntries(-1, synonyms), nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return nil, errorf(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
		}
		if int32(id) != b.id {
			return nil, errorf(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", b.id, name)
		}
		return c.brokerConfigEntries(b.id, synonyms), nil
	case kmsg.ConfigResourceTypeGroupConfig:
		if name == "" {
			return nil, errorf(kerr.InvalidRequest, "Group name must not be empty")
		}
		return c.groupConfigEntries(name, synonyms), nil
	case kmsg.ConfigResourceTypeBrokerLogger:
		if name == "" {
			return nil, errorf(kerr.InvalidRequest, "Broker id must not be empty")
		}
		if id, err := strconv.ParseInt(name, 10, 32); err != nil {
			return nil, errorf(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
		} else if int32(id) != b.id {
			return nil, errorf(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", b.id, name)
		}
		return nil, nil
	case kmsg.ConfigResourceTypeClientMetrics:
		if name == "" {
			return nil, errorf(kerr.InvalidRequest, "Client metrics subscription name must not be empty")
		}
		return nil, nil
	}
	return nil, errorf(kerr.InvalidRequest, "Unsupported resource type: %s", typ)
}

// topicConfigEntries lists every topic config for a topic with the given explicit configs, as
// broker id sees them (a negative id: cluster-wide), sorted by name.
func (c *Cluster) topicConfigEntries(configs map[string]string, id int32, withSynonyms bool) []configEntry {
	b := c.configs
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]configEntry, 0, len(topicDefs))
	for _, name := range sortedKeys(topicDefs) {
		d := topicDefs[name]
		var syns []configSynonym
		value := b.topicValueLocked(configs, id, name)
		if _, set := configs[name]; set {
			syns = append(syns, synonym(name, &value, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if len(d.synonyms) > 0 {
			names := make([]string, len(d.synonyms))
			for i, s := range d.synonyms {
				names[i] = s.name
			}
			syns = append(syns, b.configSynonymsLocked(id, names, names[0])...)
		}
		out = append(out, entry(name, &value, d.typ, false, syns, withSynonyms))
	}
	return out
}

// brokerConfigEntries lists broker id's configs: every known broker config and every one set
// dynamically; for a negative id, the cluster-wide dynamic configs only.
func (c *Cluster) brokerConfigEntries(id int32, withSynonyms bool) []configEntry {
	b := c.configs
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make(map[string]bool)
	for name := range b.dynDefault {
		names[name] = true
	}
	if id >= 0 {
		for name := range brokerDefs {
			names[name] = true
		}
		for name := range b.dynBroker[id] {
			names[name] = true
		}
	}
	out := make([]configEntry, 0, len(names))
	for _, name := range sortedKeys(names) {
		d := brokerDefs[name]
		typ, readOnly := kmsg.ConfigTypeUnknown, true
		if d != nil {
			typ, readOnly = d.typ, !d.dynamic
		}
		// The broker's own resource shows parsed values, as KafkaConfig holds them; the
		// cluster-wide one shows them as they were set.
		var value *string
		if v, _, ok := b.lookupLocked(id, name); ok {
			if d != nil && id >= 0 {
				v = d.canonical(v)
			}
			value = &v
		}
		syns := b.configSynonymsLocked(id, brokerSynonymNames(name), name)
		if id < 0 {
			syns = slices.DeleteFunc(syns, func(s configSynonym) bool {
				return s.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig
			})
		}
		out = append(out, entry(name, value, typ, readOnly, syns, withSynonyms))
	}
	return out
}

// groupConfigEntries lists every group config of a group with its effective value.
func (c *Cluster) groupConfigEntries(group string, withSynonyms bool) []configEntry {
	b := c.configs
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]configEntry, 0, len(groupDefs))
	for _, name := range sortedKeys(groupDefsByName) {
		d := groupDefsByName[name]
		value, source := b.groupDefaultLocked(d), kmsg.ConfigSourceDefaultConfig
		if v, ok := b.groups[group][name]; ok {
			value, source = d.canonical(v), kmsg.ConfigSourceGroupConfig
		}
		syns := []configSynonym{synonym(name, &value, source)}
		out = append(out, entry(name, &value, d.typ, false, syns, withSynonyms))
	}
	return out
}

// configSynonymsLocked lists where the broker configs names have values for broker id, in
// Kafka's order (ConfigHelper.configSynonyms): every name's per-broker dynamic value, then the
// cluster-wide dynamic ones, the static ones and Kafka's defaults; entries before the first
// one for first are dropped.
func (b *brokerConfigs) configSynonymsLocked(id int32, names []string, first string) []configSynonym {
	defaults := make(map[string]string)
	for _, n := range names {
		if d := brokerDefs[n]; d != nil && !d.null {
			defaults[n] = d.def
		}
	}
	type level struct {
		values map[string]string
		source kmsg.ConfigSource
	}
	var levels []level
	if id >= 0 {
		levels = append(levels, level{b.dynBroker[id], kmsg.ConfigSourceDynamicBrokerConfig})
	}
	levels = append(levels,
		level{b.dynDefault, kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		level{b.static, kmsg.ConfigSourceStaticBrokerConfig},
		level{defaults, kmsg.ConfigSourceDefaultConfig},
	)
	var out []configSynonym
	for _, level := range levels {
		for _, n := range names {
			if v, ok := level.values[n]; ok {
				out = append(out, synonym(n, &v, level.source))
			}
		}
	}
	for len(out) > 0 && out[0].Name != first {
		out = out[1:]
	}
	return out
}

// brokerSynonymNames is Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the broker configs
// that set the same thing as name, most preferred first.
func brokerSynonymNames(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

func synonym(name string, value *string, source kmsg.ConfigSource) configSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	v := *value
	s.Name, s.Value, s.Source = name, &v, source
	return s
}

// entry builds a config entry whose source is that of its first synonym (DEFAULT_CONFIG with
// none); the synonyms are sent only when asked for.
func entry(name string, value *string, typ kmsg.ConfigType, readOnly bool, syns []configSynonym, withSynonyms bool) configEntry {
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value, e.ConfigType, e.ReadOnly = name, value, typ, readOnly
	e.Source = kmsg.ConfigSourceDefaultConfig
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	if withSynonyms {
		e.ConfigSynonyms = syns
	}
	return e
}

// handleIncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT operations to TOPIC,
// BROKER and GROUP resources as Kafka does (ConfigAdminManager on the broker, then
// ConfigurationControlManager on the controller), resource by resource, each with its own
// error code and message:
//
//   - INVALID_REQUEST: a resource listed twice ("Each resource must appear at most once."), a
//     config listed twice in one resource, a null value for anything but DELETE, an unknown
//     operation, an empty topic or group name, a broker id other than the receiving broker's,
//     a broker config Kafka cannot change at runtime ("Cannot update these configs
//     dynamically: Set(...)") or a broker value that does not parse.
//   - INVALID_CONFIG: APPEND or SUBTRACT on a config that is not a list, an unknown topic or
//     group config, a value that fails Kafka's validation (group configs within the broker's
//     bounds, e.g. "share.record.lock.duration.ms must be greater than or equal to
//     group.share.min.record.lock.duration.ms").
//   - UNKNOWN_TOPIC_OR_PARTITION: a topic that does not exist, checked after its configs.
//
// Broker configs the cluster does not know are stored as Kafka stores them. Group configs may
// be set for a group that does not exist yet. ValidateOnly runs every check and changes
// nothing. A topic's new message.timestamp.type or max.message.bytes applies to partitions
// created afterwards: a partition's log keeps the settings it was created with.
func (b *Broker) handleIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	type resourceKey struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	count := make(map[resourceKey]int, len(req.Resources))
	for _, r := range req.Resources {
		count[resourceKey{r.ResourceType, r.ResourceName}]++
	}
	for i := range req.Resources {
		r := &req.Resources[i]
		err := errorf(kerr.InvalidRequest, "Each resource must appear at most once.")
		if count[resourceKey{r.ResourceType, r.ResourceName}] == 1 {
			err = b.alterResource(r, req.ValidateOnly)
		}
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
		res.ErrorCode = codeOf(err)
		res.ErrorMessage = messageOf(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (b *Broker) alterResource(r *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	seen := make(map[string]bool, len(r.Configs))
	var nulls []string
	for _, cfg := range r.Configs {
		if seen[cfg.Name] {
			return errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cfg.Name] = true
		if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
	}
	if len(nulls) > 0 {
		return errorf(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	for _, cfg := range r.Configs {
		if cfg.Op < kmsg.IncrementalAlterConfigOpSet || cfg.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return errorf(kerr.InvalidRequest, "Unknown operations type %d", cfg.Op)
		}
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBrokerConfigs(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
		return b.c.alterTopicConfigs(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.c.alterGroupConfigs(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return errorf(kerr.InvalidRequest, "testbroker does not support altering %s configs", r.ResourceType)
	}
	return errorf(kerr.InvalidRequest, "Unknown resource type %d", r.ResourceType)
}

// alterBrokerConfigs changes the dynamic configs of this broker (name "<id>") or of every
// broker (name ""), as ConfigAdminManager and DynamicBrokerConfig validate them.
func (b *Broker) alterBrokerConfigs(name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	id := int32(-1)
	if name != "" {
		n, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return errorf(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", name)
		}
		if int32(n) != b.id {
			return errorf(kerr.InvalidRequest, "Unexpected broker id, expected %d, but received %s", b.id, name)
		}
		id = b.id
	}
	cfgs := b.c.configs
	cfgs.mu.Lock()
	defer cfgs.mu.Unlock()
	current := cfgs.dynDefault
	if id >= 0 {
		current = cfgs.dynBroker[id]
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
				return errorf(kerr.InvalidConfig, "Unknown config name: %s", op.Name)
			}
			if d.typ != typeList {
				return errorf(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, op.Name)
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
		return errorf(kerr.InvalidRequest, "Cannot update these configs dynamically: Set(%s)", strings.Join(static, ", "))
	}
	for _, k := range sortedKeys(next) {
		if d := brokerDefs[k]; d != nil {
			if _, err := d.parse(next[k]); err != nil {
				return errorf(kerr.InvalidRequest, "%s", err.Error())
			}
		}
	}
	if validateOnly {
		return nil
	}
	if id >= 0 {
		cfgs.dynBroker[id] = next
	} else {
		cfgs.dynDefault = next
	}
	return nil
}

// alterTopicConfigs changes a topic's configs as Kafka's controller does: the operations are
// applied, the result validated, then the topic's existence checked.
func (c *Cluster) alterTopicConfigs(name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if name == "" {
		return errorf(kerr.InvalidRequest, "Default topic resources are not allowed.")
	}
	if err := validateTopicName(name); err != nil {
		return err
	}
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	t := c.topics[name]
	var current map[string]string
	if t != nil {
		current = t.configs
	}
	next, err := applyControllerOps(current, ops, func(key string) *configDef { return topicDefs[key] })
	if err != nil {
		return err
	}
	validated, err := c.configs.validateTopicConfigs(next)
	if err != nil {
		return err
	}
	if t == nil {
		return errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	}
	if !validateOnly {
		t.configs = validated
	}
	return nil
}

// alterGroupConfigs changes a group's configs, validated as GroupConfig.validate does.
func (c *Cluster) alterGroupConfigs(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if group == "" {
		return errorf(kerr.InvalidRequest, "Default group resources are not allowed.")
	}
	b := c.configs
	b.mu.Lock()
	defer b.mu.Unlock()
	next, err := applyControllerOps(b.groups[group], ops, func(key string) *configDef { return groupDefsByName[key] })
	if err != nil {
		return err
	}
	if err := b.validateGroupConfigsLocked(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if len(next) == 0 {
		delete(b.groups, group)
	} else {
		b.groups[group] = next
	}
	return nil
}

// applyControllerOps applies operations to a copy of current as ConfigurationControlManager
// does: APPEND and SUBTRACT work on LIST configs only, starting from the config's default
// when it is not set.
func applyControllerOps(current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, defOf func(string) *configDef) (map[string]string, error) {
	next := cloneConfigs(current)
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		default:
			d := defOf(op.Name)
			if d == nil || d.typ != typeList {
				verb := "APPEND"
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "SUBTRACT"
				}
				return nil, errorf(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", verb, op.Name)
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
func applyListOp(list []string, op kmsg.IncrementalAlterConfigsRequestResourceConfig) []string {
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

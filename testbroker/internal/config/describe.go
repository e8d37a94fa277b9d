package config

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entry is one config of a DescribeConfigs resource.
type Entry = kmsg.DescribeConfigsResponseResourceConfig

type configSynonym = kmsg.DescribeConfigsResponseResourceConfigConfigSynonym

// TopicEntries lists every topic config for a topic with the given explicit configs, as broker
// id sees them (a negative id: cluster-wide), sorted by name: source DYNAMIC_TOPIC_CONFIG for
// one set on the topic, else that of its broker synonym.
func (s *Store) TopicEntries(configs map[string]string, id int32, withSynonyms bool) []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Entry, 0, len(topicDefs))
	for _, name := range sortedKeys(topicDefs) {
		d := topicDefs[name]
		var syns []configSynonym
		value := s.topicValueLocked(configs, id, name)
		if _, set := configs[name]; set {
			syns = append(syns, synonym(name, &value, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if len(d.synonyms) > 0 {
			names := make([]string, len(d.synonyms))
			for i, s := range d.synonyms {
				names[i] = s.name
			}
			syns = append(syns, s.configSynonymsLocked(id, names, names[0])...)
		}
		out = append(out, entry(name, &value, d.typ, false, syns, withSynonyms))
	}
	return out
}

// BrokerEntries lists broker id's configs: every known broker config and every one set
// dynamically, read-only unless Kafka can change it dynamically; for a negative id, the
// cluster-wide dynamic configs only.
func (s *Store) BrokerEntries(id int32, withSynonyms bool) []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make(map[string]bool)
	for name := range s.dynDefault {
		names[name] = true
	}
	if id >= 0 {
		for name := range brokerDefs {
			names[name] = true
		}
		for name := range s.dynBroker[id] {
			names[name] = true
		}
	}
	out := make([]Entry, 0, len(names))
	for _, name := range sortedKeys(names) {
		d := brokerDefs[name]
		typ, readOnly := kmsg.ConfigTypeUnknown, true
		if d != nil {
			typ, readOnly = d.typ, !d.dynamic
		}
		// The broker's own resource shows parsed values, as KafkaConfig holds them; the
		// cluster-wide one shows them as they were set.
		var value *string
		if v, _, ok := s.lookupLocked(id, name); ok {
			if d != nil && id >= 0 {
				v = d.canonical(v)
			}
			value = &v
		}
		syns := s.configSynonymsLocked(id, brokerSynonymNames(name), name)
		if id < 0 {
			syns = slices.DeleteFunc(syns, func(s configSynonym) bool {
				return s.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig
			})
		}
		out = append(out, entry(name, value, typ, readOnly, syns, withSynonyms))
	}
	return out
}

// GroupEntries lists every group config of a group with its effective value: GROUP_CONFIG
// when set for the group, else DEFAULT_CONFIG with the broker's value.
func (s *Store) GroupEntries(group string, withSynonyms bool) []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Entry, 0, len(groupDefs))
	for _, name := range sortedKeys(groupDefsByName) {
		d := groupDefsByName[name]
		value, source := s.groupDefaultLocked(d), kmsg.ConfigSourceDefaultConfig
		if v, ok := s.groups[group][name]; ok {
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
func (s *Store) configSynonymsLocked(id int32, names []string, first string) []configSynonym {
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
		levels = append(levels, level{s.dynBroker[id], kmsg.ConfigSourceDynamicBrokerConfig})
	}
	levels = append(levels,
		level{s.dynDefault, kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		level{s.static, kmsg.ConfigSourceStaticBrokerConfig},
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
func entry(name string, value *string, typ kmsg.ConfigType, readOnly bool, syns []configSynonym, withSynonyms bool) Entry {
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

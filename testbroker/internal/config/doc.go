// Package config is the cluster's configuration, as Kafka's KafkaConfig, LogConfig,
// GroupConfig, GroupCoordinatorConfig and ShareGroupConfig define it: the broker, topic and
// group configs the cluster knows, with Kafka's types, defaults, validators and messages; the
// values set at start and with IncrementalAlterConfigs (Store), with their sources and
// synonyms for DescribeConfigs; and a typed view of them (Snapshot), rebuilt on every change,
// that hot paths read instead of parsing strings.
//
// Topic configs are stored on their topics: Store validates them (ValidateTopic), resolves
// their defaults through broker synonyms (TopicEntries) and turns them into a log's settings
// (LogConfig). Group configs may be set for a group that does not exist yet.
package config

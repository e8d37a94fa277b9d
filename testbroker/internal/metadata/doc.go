// Package metadata is the fake cluster's topic registry, in the role of Kafka's KRaft
// controller and its metadata image: the topics by name and id, Kafka's name rules
// (ValidateTopicName), topic creation with the controller's checks in its order and its
// messages (Create), replica placement (round-robin leaders over the running brokers, or a
// manual assignment), partition growth (GrowTopic), topic config changes (AlterTopicConfigs),
// deletion, leader moves (MoveLeader) and the inspection snapshots (TopicInfo, PartitionInfo,
// ReplicaInfo) that package testbroker exposes as its own.
//
// It decides where partitions live; package replica runs them (logs, ISR, high watermark,
// leader elections when brokers stop). Refusals are kafkaerr.Errors with Kafka's code and
// message, ready for the server to answer with.
package metadata

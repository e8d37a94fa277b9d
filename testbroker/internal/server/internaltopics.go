package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// Kafka's internal topics (Topic.INTERNAL_TOPICS).
const (
	consumerOffsetsTopic  = "__consumer_offsets"
	transactionStateTopic = "__transaction_state"
	shareGroupStateTopic  = "__share_group_state"
)

// internalSegmentBytes is the segment.bytes Kafka gives each internal topic (the default of
// offsets.topic.segment.bytes, transaction.state.log.segment.bytes and
// share.coordinator.state.topic.segment.bytes).
const internalSegmentBytes = 104857600

// isInternalTopic reports whether name is one of Kafka's internal topics, which Kafka flags by
// name (Topic.isInternal): Metadata marks them IsInternal; Produce refuses them with
// INVALID_TOPIC_EXCEPTION "Cannot append to internal topic <name>", and DeleteRecords with
// INVALID_TOPIC_EXCEPTION "Cannot delete records of internal topic <name>".
func isInternalTopic(name string) bool {
	switch name {
	case consumerOffsetsTopic, transactionStateTopic, shareGroupStateTopic:
		return true
	}
	return false
}

// errInternalTopicAppend is Produce's answer for a partition of an internal topic
// (ReplicaManager.appendToLocalLog), which only the broker's own coordinators write.
func errInternalTopicAppend(topic string) error {
	return kafkaerr.New(kerr.InvalidTopicException, "Cannot append to internal topic %s", topic)
}

// internalTopicShape returns the partition count, replication factor and configs an internal
// topic is created with: the counts from the cluster's configs, the replication factor capped
// at the number of brokers, and the topic configs Kafka's coordinators give it
// (GroupCoordinatorService.groupMetadataTopicConfigs,
// TransactionStateManager.transactionTopicConfigs,
// ShareCoordinatorService.shareGroupStateTopicConfigs) but __transaction_state's
// min.insync.replicas, which testbroker leaves at the broker's value since nothing writes it.
func (c *Cluster) internalTopicShape(name string) (partitions int32, rf int16, configs map[string]string) {
	cfg := c.configs.Snapshot()
	segment := strconv.Itoa(internalSegmentBytes)
	switch name {
	case consumerOffsetsTopic:
		partitions, rf = cfg.OffsetsTopicPartitions, cfg.InternalReplication.Offsets
		configs = map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": segment}
	case transactionStateTopic:
		partitions, rf = cfg.TxnStatePartitions, cfg.InternalReplication.TxnState
		configs = map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": segment, "unclean.leader.election.enable": "false"}
	default:
		partitions, rf = cfg.ShareStatePartitions, cfg.InternalReplication.ShareState
		configs = map[string]string{"cleanup.policy": "delete", "compression.type": "producer", "segment.bytes": segment}
	}
	return partitions, int16(min(int(rf), c.NumBrokers())), configs
}

// ensureInternalTopic creates internal topic name unless it exists, as Kafka creates each on
// first use (the first authorized FindCoordinator for a group or a transactional id, the first read or
// write of share-group state). Partition p's replicas are brokers p, p+1, ... mod N, so that
// it is led by broker p mod N, the coordinator internalPartitionLeader names for its keys,
// and, with a replication factor above 1, next by the broker internalPartitionLeader turns to
// when that one stops. (With testbroker's default of 1, a stopped broker's internal partitions
// go offline in Metadata while its coordinators move on, where Kafka's would be unavailable.)
// Internal topics do not count as created topics for the placement of later topics.
func (c *Cluster) ensureInternalTopic(name string) {
	if c.meta.Topic(name) != nil {
		return
	}
	n, rf, configs := c.internalTopicShape(name)
	configs, err := c.configs.ValidateTopic(configs)
	if err != nil {
		panic("server: internal topic configs are invalid: " + err.Error())
	}
	brokers := int32(c.NumBrokers())
	replicas := make([][]int32, n)
	for p := range n {
		for i := range int32(rf) {
			replicas[p] = append(replicas[p], (p+i)%brokers)
		}
	}

	c.meta.CreateInternalTopic(name, replicas, configs)
}

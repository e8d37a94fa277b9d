package metadata

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// GrowTopic raises a topic's partition count to count, as CreatePartitions does: an unknown
// topic is UNKNOWN_TOPIC_OR_PARTITION, a count that is not an increase INVALID_PARTITIONS, and
// assignments, when given, must place every new partition (INVALID_REPLICA_ASSIGNMENT, checked
// as CreateTopics checks them); without them the new partitions continue the topic's
// round-robin placement. With validateOnly it checks and changes nothing.
func (c *Controller) GrowTopic(name string, count int32, assignments [][]int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.topics[name]
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	have := int32(len(t.partitions))
	switch {
	case count == have:
		return kafkaerr.New(kerr.InvalidPartitions, "Topic already has %d partition(s).", have)
	case count < have:
		return kafkaerr.New(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", name, have, count)
	}
	additional := count - have
	if err := checkBatchSize(additional); err != nil {
		return err
	}
	rf := len(t.partitions[0].State().Replicas)
	if assignments != nil {
		if len(assignments) != int(additional) {
			return kafkaerr.New(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(assignments))
		}
		for i, r := range assignments {
			if err := c.validateManualAssignment(have+int32(i), r, rf); err != nil {
				return err
			}
		}
	} else {
		assignments = c.placeReplicas(int(t.partitions[0].State().Replicas[0]), int(have), additional, int16(rf))
	}
	if !validateOnly {
		cloned := make([][]int32, len(assignments))
		for i, r := range assignments {
			cloned[i] = slices.Clone(r)
		}
		c.addPartitionsLocked(t, cloned)
	}
	return nil
}

// AlterTopicConfigs changes a topic's configs as Kafka's controller does: the operations are
// applied, the result validated, then the topic's existence checked.
func (c *Controller) AlterTopicConfigs(name string, ops []config.Op, validateOnly bool) error {
	if name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Default topic resources are not allowed.")
	}
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.topics[name]
	var current map[string]string
	if t != nil {
		current = t.configs
	}
	next, err := config.ApplyTopicOps(current, ops)
	if err != nil {
		return err
	}
	validated, err := c.configs.ValidateTopic(next)
	if err != nil {
		return err
	}
	if t == nil {
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	}
	if !validateOnly {
		t.configs = validated
	}
	return nil
}

package metadata

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// Creation is one topic to create, in CreateTopics' terms.
type Creation struct {
	Name              string
	Partitions        int32 // -1 means num.partitions
	ReplicationFactor int16 // -1 means default.replication.factor
	Configs           map[string]string
	NullConfigs       []string // configs given without a value, which Kafka refuses
	// Assignments place partitions by hand, each led by its first replica; Partitions and
	// ReplicationFactor must then be -1.
	Assignments  []ManualAssignment
	ValidateOnly bool // check everything, create nothing
}

// ManualAssignment is the replicas given for one partition.
type ManualAssignment struct {
	Partition int32
	Replicas  []int32
}

// CreateTopic creates a topic from a TopicSpec, whose zero ReplicationFactor means
// default.replication.factor. Errors are those of Create.
func (c *Controller) CreateTopic(spec TopicSpec) (*Topic, error) {
	rf := spec.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	return c.Create(Creation{Name: spec.Name, Partitions: spec.Partitions, ReplicationFactor: rf, Configs: spec.Configs})
}

// Create creates a topic with the checks of Kafka's controller, in its order, each
// error carrying Kafka's code and message: the name (INVALID_TOPIC_EXCEPTION, also for a name
// that collides with an existing one once '.' and '_' count as the same character), existence
// (TOPIC_ALREADY_EXISTS), the configs (INVALID_CONFIG, also for a config without a value),
// then the placement: a manual assignment (INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT), or
// the partition count (INVALID_PARTITIONS) and replication factor
// (INVALID_REPLICATION_FACTOR). Without a manual assignment, partition p of the cluster's k-th
// topic is led by broker (k+p) mod N, its other replicas on the brokers after it. With
// validateOnly it returns the topic it would create, with partitions but no logs, and
// registers nothing.
func (c *Controller) Create(tc Creation) (*Topic, error) {
	if err := ValidateTopicName(tc.Name); err != nil {
		return nil, err
	}
	c.mu.RLock()
	err := c.checkNewNameLocked(tc.Name)
	c.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if len(tc.NullConfigs) > 0 {
		return nil, kafkaerr.New(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(tc.NullConfigs, ","))
	}
	configs, err := c.configs.ValidateTopic(tc.Configs)
	if err != nil {
		return nil, err
	}
	n, rf, replicas, err := c.topicShape(tc)
	if err != nil {
		return nil, err
	}
	if err := checkBatchSize(n); err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkNewNameLocked(tc.Name); err != nil {
		return nil, err
	}
	if replicas == nil {
		replicas = c.placeReplicas(c.topicCount, 0, n, rf)
	}
	t := &Topic{Name: tc.Name, ID: c.newTopicIDLocked(), configs: configs}
	if tc.ValidateOnly {
		t.planned = replicas
		return t, nil
	}
	c.topicCount++
	c.addPartitionsLocked(t, replicas)
	c.topics[t.Name] = t
	c.topicIDs[t.ID] = t
	return t, nil
}

// maxRecordsPerBatch is Kafka's controller limit on the metadata records one operation may
// write (QuorumController.MAX_RECORDS_PER_BATCH); each new partition is one record, and the
// topic itself one more. Without it one request could ask for billions of partitions.
const maxRecordsPerBatch = 10000

// checkBatchSize refuses creating n partitions in one operation when Kafka's controller would.
func checkBatchSize(n int32) error {
	if int64(n)+1 > maxRecordsPerBatch {
		return kafkaerr.New(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
	}
	return nil
}

// topicShape resolves a creation's partition count and replication factor, applying the
// broker defaults for -1, or validates its manual assignment and returns the replicas of each
// partition.
func (c *Controller) topicShape(tc Creation) (n int32, rf int16, replicas [][]int32, err error) {
	if len(tc.Assignments) > 0 {
		if tc.ReplicationFactor != -1 {
			return 0, 0, nil, kafkaerr.New(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if tc.Partitions != -1 {
			return 0, 0, nil, kafkaerr.New(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		byIndex := make(map[int32][]int32, len(tc.Assignments))
		want := -1
		for _, a := range tc.Assignments {
			if _, dup := byIndex[a.Partition]; dup {
				return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			if err := c.validateManualAssignment(a.Partition, a.Replicas, want); err != nil {
				return 0, 0, nil, err
			}
			want = len(a.Replicas)
			byIndex[a.Partition] = slices.Clone(a.Replicas)
		}
		replicas = make([][]int32, len(byIndex))
		for i := range replicas {
			r, ok := byIndex[int32(i)]
			if !ok {
				return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			replicas[i] = r
		}
		return int32(len(replicas)), int16(want), replicas, nil
	}
	if tc.ReplicationFactor < -1 || tc.ReplicationFactor == 0 {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if tc.Partitions < -1 || tc.Partitions == 0 {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	n, rf = tc.Partitions, tc.ReplicationFactor
	cfg := c.configs.Snapshot()
	if n == -1 {
		n = cfg.NumPartitions
	}
	if rf == -1 {
		rf = cfg.DefaultReplicationFactor
	}
	if rf <= 0 {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): Invalid replication factor %d: the replication factor must be positive.", rf, rf)
	}
	if int(rf) > c.brokers {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, c.brokers)
	}
	return n, rf, nil, nil
}

// validateManualAssignment checks one partition's replicas as Kafka's controller does: not
// empty, every broker registered and listed once, when rf is not negative rf replicas, and at
// least one of them running.
func (c *Controller) validateManualAssignment(partition int32, replicas []int32, rf int) error {
	if len(replicas) == 0 {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if id < 0 || int(id) >= c.brokers {
			return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	if !slices.ContainsFunc(replicas, c.replicas.Alive) {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", partition)
	}
	return nil
}

// placeReplicas returns the replicas of n partitions from index start: partition p is led by
// the running broker (first+p) mod N counts to, the way Kafka spreads leaders round-robin over
// unfenced brokers, and its other rf-1 replicas are the running brokers after the leader, then,
// when too few run, stopped ones (Kafka places on fenced brokers only when it must).
func (c *Controller) placeReplicas(first, start int, n int32, rf int16) [][]int32 {
	var running, stopped []int32
	for id := range int32(c.brokers) {
		if c.replicas.Alive(id) {
			running = append(running, id)
		} else {
			stopped = append(stopped, id)
		}
	}
	out := make([][]int32, n)
	for i := range out {
		leader := (first + start + i) % len(running)
		replicas := make([]int32, 0, rf)
		for r := 0; r < len(running) && len(replicas) < int(rf); r++ {
			replicas = append(replicas, running[(leader+r)%len(running)])
		}
		replicas = append(replicas, stopped[:int(rf)-len(replicas)]...)
		out[i] = replicas
	}
	return out
}

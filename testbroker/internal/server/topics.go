package server

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/replica"
)

// Topic is one topic of the cluster. Name and ID never change; partitions may be added.
type Topic struct {
	Name    string
	ID      [16]byte
	configs map[string]string // guarded by Cluster.topicsMu
	// planned is the placement of a topic that validateOnly checked but did not create.
	planned [][]int32

	partitions []*replica.Partition // guarded by Cluster.topicsMu; only ever grows
}

// maxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
const maxTopicNameLength = 249

// validateTopicName applies Kafka's topic name rules (Topic.validate) with its messages.
func validateTopicName(name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == "." || name == "..":
		reason = "'" + name + "' is not allowed"
	case len(name) > maxTopicNameLength:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, maxTopicNameLength)
	case strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0:
		reason = "'" + name + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
	default:
		return nil
	}
	return kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: %s", reason)
}

// topicCreation is one topic to create, in CreateTopics' terms.
type topicCreation struct {
	name              string
	partitions        int32 // -1 means num.partitions
	replicationFactor int16 // -1 means default.replication.factor
	configs           map[string]string
	nullConfigs       []string // configs given without a value, which Kafka refuses
	// assignments place partitions by hand, each led by its first replica; partitions and
	// replicationFactor must then be -1.
	assignments  []manualAssignment
	validateOnly bool // check everything, create nothing
}

// manualAssignment is the replicas given for one partition.
type manualAssignment struct {
	partition int32
	replicas  []int32
}

// createTopic creates a topic from a TopicSpec, whose zero ReplicationFactor means
// default.replication.factor. Errors are those of createTopicFrom.
func (c *Cluster) createTopic(spec TopicSpec) (*Topic, error) {
	rf := spec.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	return c.createTopicFrom(topicCreation{name: spec.Name, partitions: spec.Partitions, replicationFactor: rf, configs: spec.Configs})
}

// createTopicFrom creates a topic with the checks of Kafka's controller, in its order, each
// error carrying Kafka's code and message: the name (INVALID_TOPIC_EXCEPTION, also for a name
// that collides with an existing one once '.' and '_' count as the same character), existence
// (TOPIC_ALREADY_EXISTS), the configs (INVALID_CONFIG, also for a config without a value),
// then the placement: a manual assignment (INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT), or
// the partition count (INVALID_PARTITIONS) and replication factor
// (INVALID_REPLICATION_FACTOR). Without a manual assignment, partition p of the cluster's k-th
// topic is led by broker (k+p) mod N, its other replicas on the brokers after it. With
// validateOnly it returns the topic it would create, with partitions but no logs, and
// registers nothing.
func (c *Cluster) createTopicFrom(tc topicCreation) (*Topic, error) {
	if err := validateTopicName(tc.name); err != nil {
		return nil, err
	}
	c.topicsMu.RLock()
	err := c.checkNewNameLocked(tc.name)
	c.topicsMu.RUnlock()
	if err != nil {
		return nil, err
	}
	if len(tc.nullConfigs) > 0 {
		return nil, kafkaerr.New(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(tc.nullConfigs, ","))
	}
	configs, err := c.configs.ValidateTopic(tc.configs)
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

	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	if err := c.checkNewNameLocked(tc.name); err != nil {
		return nil, err
	}
	if replicas == nil {
		replicas = c.placeReplicas(c.topicCount, 0, n, rf)
	}
	t := &Topic{Name: tc.name, configs: configs}
	for {
		_, _ = rand.Read(t.ID[:])
		if _, taken := c.topicIDs[t.ID]; !taken && t.ID != ([16]byte{}) {
			break
		}
	}
	if tc.validateOnly {
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

// checkNewNameLocked refuses a topic name that exists, or that collides with an existing one.
func (c *Cluster) checkNewNameLocked(name string) error {
	if _, ok := c.topics[name]; ok {
		return kafkaerr.New(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	unified := strings.ReplaceAll(name, ".", "_")
	for existing := range c.topics {
		if strings.ReplaceAll(existing, ".", "_") == unified {
			return kafkaerr.New(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, existing)
		}
	}
	return nil
}

// topicShape resolves a creation's partition count and replication factor, applying the
// broker defaults for -1, or validates its manual assignment and returns the replicas of each
// partition.
func (c *Cluster) topicShape(tc topicCreation) (n int32, rf int16, replicas [][]int32, err error) {
	if len(tc.assignments) > 0 {
		if tc.replicationFactor != -1 {
			return 0, 0, nil, kafkaerr.New(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if tc.partitions != -1 {
			return 0, 0, nil, kafkaerr.New(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		byIndex := make(map[int32][]int32, len(tc.assignments))
		want := -1
		for _, a := range tc.assignments {
			if _, dup := byIndex[a.partition]; dup {
				return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.partition)
			}
			if err := c.validateManualAssignment(a.partition, a.replicas, want); err != nil {
				return 0, 0, nil, err
			}
			want = len(a.replicas)
			byIndex[a.partition] = slices.Clone(a.replicas)
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
	if tc.replicationFactor < -1 || tc.replicationFactor == 0 {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if tc.partitions < -1 || tc.partitions == 0 {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	n, rf = tc.partitions, tc.replicationFactor
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
	if int(rf) > c.NumBrokers() {
		return 0, 0, nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, c.NumBrokers())
	}
	return n, rf, nil, nil
}

// validateManualAssignment checks one partition's replicas as Kafka's controller does: not
// empty, every broker registered and listed once, when rf is not negative rf replicas, and at
// least one of them running.
func (c *Cluster) validateManualAssignment(partition int32, replicas []int32, rf int) error {
	if len(replicas) == 0 {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if id < 0 || int(id) >= c.NumBrokers() {
			return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	if !slices.ContainsFunc(replicas, c.alive) {
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", partition)
	}
	return nil
}

// placeReplicas returns the replicas of n partitions from index start: partition p is led by
// the running broker (first+p) mod N counts to, the way Kafka spreads leaders round-robin over
// unfenced brokers, and its other rf-1 replicas are the running brokers after the leader, then,
// when too few run, stopped ones (Kafka places on fenced brokers only when it must).
func (c *Cluster) placeReplicas(first, start int, n int32, rf int16) [][]int32 {
	var running, stopped []int32
	for id := range int32(c.NumBrokers()) {
		if c.alive(id) {
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

// addPartitionsLocked appends one partition per replica list, led by its first replica, each
// replica with a new log made from the topic's current configs.
func (c *Cluster) addPartitionsLocked(t *Topic, replicas [][]int32) {
	for _, r := range replicas {
		idx := int32(len(t.partitions))
		t.partitions = append(t.partitions, c.replicas.NewPartition(t.ID, t.Name, idx, r, c.configs.LogConfig(t.configs)))
	}
}

// topicShapeOf returns a topic's partition count and replication factor, also for a topic
// that validateOnly planned.
func (c *Cluster) topicShapeOf(t *Topic) (partitions int32, rf int16) {
	if t.planned != nil {
		return int32(len(t.planned)), int16(len(t.planned[0]))
	}
	parts := c.partitions(t)
	return int32(len(parts)), int16(len(parts[0].State().Replicas))
}

// deleteTopic removes a topic by name; UNKNOWN_TOPIC_OR_PARTITION if it does not exist.
func (c *Cluster) deleteTopic(name string) (*Topic, error) {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	t, ok := c.topics[name]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	delete(c.topics, name)
	delete(c.topicIDs, t.ID)
	return t, nil
}

// deleteTopicByID removes a topic by id and returns it, or nil if it does not exist.
func (c *Cluster) deleteTopicByID(id [16]byte) *Topic {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	t, ok := c.topicIDs[id]
	if !ok {
		return nil
	}
	delete(c.topics, t.Name)
	delete(c.topicIDs, id)
	return t
}

// topic returns the topic by name.
func (c *Cluster) topic(name string) *Topic {
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	return c.topics[name]
}

// topicByID returns the topic by id.
func (c *Cluster) topicByID(id [16]byte) *Topic {
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	return c.topicIDs[id]
}

// partition returns partition idx of the topic, or nil.
func (c *Cluster) partition(t *Topic, idx int32) *replica.Partition {
	if t == nil {
		return nil
	}
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	if idx < 0 || int(idx) >= len(t.partitions) {
		return nil
	}
	return t.partitions[idx]
}

// partitions returns a snapshot of the topic's partitions.
func (c *Cluster) partitions(t *Topic) []*replica.Partition {
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	return slices.Clone(t.partitions)
}

// topicConfigs returns a copy of the topic's explicitly set configs.
func (c *Cluster) topicConfigs(t *Topic) map[string]string {
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	out := make(map[string]string, len(t.configs))
	for k, v := range t.configs {
		out[k] = v
	}
	return out
}

// sortedTopics returns every topic, sorted by name.
func (c *Cluster) sortedTopics() []*Topic {
	c.topicsMu.RLock()
	defer c.topicsMu.RUnlock()
	out := make([]*Topic, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

package metadata

import (
	"crypto/rand"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/replica"
)

// Topic is one topic of the cluster. Name and ID never change; partitions may be added.
type Topic struct {
	Name    string
	ID      [16]byte
	configs map[string]string // guarded by Controller.mu
	// planned is the placement of a topic that validateOnly checked but did not create.
	planned [][]int32

	partitions []*replica.Partition // guarded by Controller.mu; only ever grows
}

// Controller is the cluster's topic registry, in the role of Kafka's KRaft controller and its
// metadata image: it creates, grows, reconfigures and deletes topics with Kafka's checks and
// messages, places their replicas, and moves partition leaders. Every partition's replication
// is the replica manager's; the controller decides which brokers hold it.
type Controller struct {
	brokers  int
	configs  *config.Store
	replicas *replica.Manager

	mu         sync.RWMutex
	topics     map[string]*Topic
	topicIDs   map[[16]byte]*Topic
	topicCount int // topics ever created; spreads the first leader of each new topic
}

// New returns a controller without topics for a cluster of brokers brokers.
func New(brokers int, configs *config.Store, replicas *replica.Manager) *Controller {
	return &Controller{brokers: brokers, configs: configs, replicas: replicas,
		topics: make(map[string]*Topic), topicIDs: make(map[[16]byte]*Topic)}
}

// newTopicIDLocked returns a random topic id that no topic has, never the zero id.
func (c *Controller) newTopicIDLocked() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if _, taken := c.topicIDs[id]; !taken && id != ([16]byte{}) {
			return id
		}
	}
}

// addPartitionsLocked appends one partition per replica list, led by its first replica, each
// replica with a new log made from the topic's current configs.
func (c *Controller) addPartitionsLocked(t *Topic, replicas [][]int32) {
	for _, r := range replicas {
		idx := int32(len(t.partitions))
		t.partitions = append(t.partitions, c.replicas.NewPartition(t.ID, t.Name, idx, r, c.configs.LogConfig(t.configs)))
	}
}

// ShapeOf returns a topic's partition count and replication factor, also for a topic
// that validateOnly planned.
func (c *Controller) ShapeOf(t *Topic) (partitions int32, rf int16) {
	if t.planned != nil {
		return int32(len(t.planned)), int16(len(t.planned[0]))
	}
	parts := c.Partitions(t)
	return int32(len(parts)), int16(len(parts[0].State().Replicas))
}

// Delete removes a topic by name; UNKNOWN_TOPIC_OR_PARTITION if it does not exist.
func (c *Controller) Delete(name string) (*Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topics[name]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	delete(c.topics, name)
	delete(c.topicIDs, t.ID)
	return t, nil
}

// DeleteByID removes a topic by id and returns it, or nil if it does not exist.
func (c *Controller) DeleteByID(id [16]byte) *Topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topicIDs[id]
	if !ok {
		return nil
	}
	delete(c.topics, t.Name)
	delete(c.topicIDs, id)
	return t
}

// Topic returns the topic by name.
func (c *Controller) Topic(name string) *Topic {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.topics[name]
}

// TopicByID returns the topic by id.
func (c *Controller) TopicByID(id [16]byte) *Topic {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.topicIDs[id]
}

// Partition returns partition idx of the topic, or nil.
func (c *Controller) Partition(t *Topic, idx int32) *replica.Partition {
	if t == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if idx < 0 || int(idx) >= len(t.partitions) {
		return nil
	}
	return t.partitions[idx]
}

// Partitions returns a snapshot of the topic's partitions.
func (c *Controller) Partitions(t *Topic) []*replica.Partition {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(t.partitions)
}

// TopicConfigs returns a copy of the topic's explicitly set configs.
func (c *Controller) TopicConfigs(t *Topic) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]string, len(t.configs))
	for k, v := range t.configs {
		out[k] = v
	}
	return out
}

// SortedTopics returns every topic, sorted by name.
func (c *Controller) SortedTopics() []*Topic {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Topic, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

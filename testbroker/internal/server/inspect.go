package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

// Metadata returns the cluster's topic registry, for inspection.
func (c *Cluster) Metadata() *metadata.Controller { return c.meta }

// CreateTopic creates a topic as CreateTopics would.
func (c *Cluster) CreateTopic(spec metadata.TopicSpec) error {
	_, err := c.meta.CreateTopic(spec)
	return err
}

// DropConnections closes every client connection of one broker, or of all brokers when
// broker is negative.
func (c *Cluster) DropConnections(broker int32) {
	for _, b := range c.brokers {
		if broker < 0 || b.id == broker {
			b.dropConnections()
		}
	}
}

// SetGroupConfig sets one group config as IncrementalAlterConfigs SET on a GROUP resource
// would, with the same validation and errors.
func (c *Cluster) SetGroupConfig(group, key, value string) error {
	return c.configs.AlterGroup(group, []config.Op{{
		Name: key, Op: kmsg.IncrementalAlterConfigOpSet, Value: &value,
	}}, false)
}

package server

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

func init() {
	register(44, 0, 1, (*Broker).handleIncrementalAlterConfigs, failedIncrementalAlterConfigs, incrementalAlterConfigsScope)
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
func (b *Broker) handleIncrementalAlterConfigs(cn *conn, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
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
		err := kafkaerr.New(kerr.InvalidRequest, "Each resource must appear at most once.")
		if count[resourceKey{r.ResourceType, r.ResourceName}] == 1 {
			if err = cn.configResourceDenied(acl.OpAlterConfigs, r.ResourceType, r.ResourceName); err == nil {
				err = b.alterResource(r, req.ValidateOnly)
			}
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
			return kafkaerr.New(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cfg.Name] = true
		if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
	}
	if len(nulls) > 0 {
		return kafkaerr.New(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	for _, cfg := range r.Configs {
		if cfg.Op < kmsg.IncrementalAlterConfigOpSet || cfg.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return kafkaerr.New(kerr.InvalidRequest, "Unknown operations type %d", cfg.Op)
		}
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBrokerConfigs(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
		return b.c.meta.AlterTopicConfigs(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.c.configs.AlterGroup(r.ResourceName, r.Configs, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return kafkaerr.New(kerr.InvalidRequest, "testbroker does not support altering %s configs", r.ResourceType)
	}
	return kafkaerr.New(kerr.InvalidRequest, "Unknown resource type %d", r.ResourceType)
}

// alterBrokerConfigs changes the dynamic configs of this broker (name "<id>") or of every
// broker (name ""); config.Store.AlterBroker validates them.
func (b *Broker) alterBrokerConfigs(name string, ops []config.Op, validateOnly bool) error {
	id := int32(-1)
	if name != "" {
		n, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return kafkaerr.New(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", name)
		}
		if int32(n) != b.id {
			return kafkaerr.New(kerr.InvalidRequest, "Unexpected broker id, expected %d, but received %s", b.id, name)
		}
		id = b.id
	}
	return b.c.configs.AlterBroker(id, ops, validateOnly)
}

func failedIncrementalAlterConfigs(r *kmsg.IncrementalAlterConfigsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, rr := range r.Resources {
		resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource{
			ErrorCode: code, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
		})
	}
	return resp
}

func incrementalAlterConfigsScope(c *Cluster, r *kmsg.IncrementalAlterConfigsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, rr := range r.Resources {
		s.configResource(rr.ResourceType, rr.ResourceName)
	}
	return s.result()
}

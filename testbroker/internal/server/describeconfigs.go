package server

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(32, 1, 4, (*Broker).handleDescribeConfigs, failedDescribeConfigs, describeConfigsScope)
}

// handleDescribeConfigs describes TOPIC, BROKER and GROUP resources as Kafka's ConfigHelper
// does, each entry with its effective value, source, read-only and sensitive flags, type (v3+)
// and, when asked, its synonyms; documentation is never sent. ConfigNames, when not empty,
// limits the entries to those names.
//
//   - TOPIC: every topic config the cluster knows. Source DYNAMIC_TOPIC_CONFIG for one set on
//     the topic, else that of its broker synonym (STATIC_BROKER_CONFIG for one set at start,
//     DYNAMIC_*_BROKER_CONFIG for one altered, DEFAULT_CONFIG). An unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION, an illegal name INVALID_TOPIC_EXCEPTION.
//   - BROKER: this broker's id lists every broker config it knows plus any set dynamically,
//     read-only unless Kafka can change it dynamically; "" lists the cluster-wide dynamic
//     configs; another id is INVALID_REQUEST.
//   - GROUP: every group config, GROUP_CONFIG when set for the group, else DEFAULT_CONFIG with
//     the broker's value. The group need not exist.
//   - BROKER_LOGGER and CLIENT_METRICS resources are valid but hold no configs here.
func (b *Broker) handleDescribeConfigs(cn *conn, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
		entries, err := b.describeResource(r.ResourceType, r.ResourceName, req.IncludeSynonyms)
		if denied := cn.configResourceDenied(acl.OpDescribeConfigs, r.ResourceType, r.ResourceName); denied != nil {
			err = denied
		}
		if err != nil {
			res.ErrorCode = codeOf(err)
			res.ErrorMessage = messageOf(err)
		} else {
			for _, e := range entries {
				if len(r.ConfigNames) == 0 || slices.Contains(r.ConfigNames, e.Name) {
					res.Configs = append(res.Configs, e)
				}
			}
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (b *Broker) describeResource(typ kmsg.ConfigResourceType, name string, synonyms bool) ([]config.Entry, error) {
	c := b.c
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := metadata.ValidateTopicName(name); err != nil {
			return nil, err
		}
		t := c.meta.Topic(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		return c.configs.TopicEntries(c.meta.TopicConfigs(t), b.id, synonyms), nil
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return c.configs.BrokerEntries(-1, synonyms), nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
		}
		if int32(id) != b.id {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", b.id, name)
		}
		return c.configs.BrokerEntries(b.id, synonyms), nil
	case kmsg.ConfigResourceTypeGroupConfig:
		if name == "" {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Group name must not be empty")
		}
		return c.configs.GroupEntries(name, synonyms), nil
	case kmsg.ConfigResourceTypeBrokerLogger:
		if name == "" {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Broker id must not be empty")
		}
		if id, err := strconv.ParseInt(name, 10, 32); err != nil {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
		} else if int32(id) != b.id {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", b.id, name)
		}
		return nil, nil
	case kmsg.ConfigResourceTypeClientMetrics:
		if name == "" {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Client metrics subscription name must not be empty")
		}
		return nil, nil
	}
	return nil, kafkaerr.New(kerr.InvalidRequest, "Unsupported resource type: %s", typ)
}

func failedDescribeConfigs(r *kmsg.DescribeConfigsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range r.Resources {
		resp.Resources = append(resp.Resources, kmsg.DescribeConfigsResponseResource{
			ErrorCode: code, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
		})
	}
	return resp
}

func describeConfigsScope(c *Cluster, r *kmsg.DescribeConfigsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, rr := range r.Resources {
		s.configResource(rr.ResourceType, rr.ResourceName)
	}
	return s.result()
}

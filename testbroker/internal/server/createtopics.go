package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(19, 2, 7, (*Broker).handleCreateTopics, failedCreateTopics, createTopicsScope)
}

// handleCreateTopics creates topics as Kafka's controller does (createTopicFrom has the checks
// and their order). A name listed twice gets one INVALID_REQUEST "Duplicate topic name." and is
// not created. NumPartitions and ReplicationFactor of -1 take num.partitions and
// default.replication.factor; manual Assignments are honoured, each partition led by its first
// replica. ValidateOnly runs every check and creates nothing. A created (or validated) topic's
// result carries, from v5, its partition count, replication factor and every topic config with
// its effective value and source, and from v7 its id. The request's timeout is not used:
// creation completes before the response.
func (b *Broker) handleCreateTopics(cn *conn, req *kmsg.CreateTopicsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 {
			continue
		}
		if !cn.mayCreateTopic(rt.Topic) {
			resp.Topics = append(resp.Topics, createTopicsError(rt.Topic, kafkaerr.New(kerr.TopicAuthorizationFailed, "Authorization failed.")))
			continue
		}
		t, err := c.meta.Create(creationFromRequest(&rt, req.ValidateOnly))
		if err == nil {
			resp.Topics = append(resp.Topics, c.createdTopicResult(t))
			continue
		}
		resp.Topics = append(resp.Topics, createTopicsError(rt.Topic, err))
	}
	var dups []string
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 && !slices.Contains(dups, rt.Topic) {
			dups = append(dups, rt.Topic)
			resp.Topics = append(resp.Topics, createTopicsError(rt.Topic, kafkaerr.New(kerr.InvalidRequest, "Duplicate topic name.")))
		}
	}
	return resp
}

// creationFromRequest turns one CreateTopics entry into a topicCreation. A config with a null
// value is kept as an error, reported as Kafka reports it once the name checks pass.
func creationFromRequest(rt *kmsg.CreateTopicsRequestTopic, validateOnly bool) metadata.Creation {
	tc := metadata.Creation{
		Name:              rt.Topic,
		Partitions:        rt.NumPartitions,
		ReplicationFactor: rt.ReplicationFactor,
		Configs:           make(map[string]string, len(rt.Configs)),
		ValidateOnly:      validateOnly,
	}
	for _, a := range rt.ReplicaAssignment {
		tc.Assignments = append(tc.Assignments, metadata.ManualAssignment{Partition: a.Partition, Replicas: a.Replicas})
	}
	for _, cfg := range rt.Configs {
		if cfg.Value == nil {
			tc.NullConfigs = append(tc.NullConfigs, cfg.Name)
			continue
		}
		tc.Configs[cfg.Name] = *cfg.Value
	}
	return tc
}

func createTopicsError(name string, err error) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = name
	rt.ErrorCode = codeOf(err)
	rt.ErrorMessage = messageOf(err)
	rt.NumPartitions = -1
	rt.ReplicationFactor = -1
	return rt
}

// createdTopicResult is the result of a topic created or validated: its id, shape and configs.
func (c *Cluster) createdTopicResult(t *metadata.Topic) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = t.Name
	rt.TopicID = t.ID
	rt.NumPartitions, rt.ReplicationFactor = c.meta.ShapeOf(t)
	for _, e := range c.configs.TopicEntries(c.meta.TopicConfigs(t), -1, false) {
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name = e.Name
		rc.Value = e.Value
		rc.ReadOnly = e.ReadOnly
		rc.Source = int8(e.Source)
		rc.IsSensitive = e.IsSensitive
		rt.Configs = append(rt.Configs, rc)
	}
	return rt
}

func failedCreateTopics(r *kmsg.CreateTopicsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ConfigErrorCode = t.Topic, code, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func createTopicsScope(c *Cluster, r *kmsg.CreateTopicsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.topic(t.Topic)
	}
	return s.result()
}

package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

func init() {
	register(37, 0, 3, (*Broker).handleCreatePartitions, failedCreatePartitions, createPartitionsScope)
}

// handleCreatePartitions grows topics as Kafka's controller does: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a count equal to the current one is INVALID_PARTITIONS "Topic
// already has N partition(s).", a smaller one INVALID_PARTITIONS "The topic T currently has N
// partition(s); M would not be an increase."; manual Assignments must give one replica list
// per new partition (INVALID_REPLICA_ASSIGNMENT otherwise) with the topic's replication
// factor. New partitions are placed like the topic's first ones and get logs made from the
// topic's current configs. A topic listed twice is INVALID_REQUEST "Duplicate topic name.";
// ValidateOnly checks without adding.
func (b *Broker) handleCreatePartitions(cn *conn, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	add := func(name string, err error) {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = name
		rt.ErrorCode = codeOf(err)
		rt.ErrorMessage = messageOf(err)
		resp.Topics = append(resp.Topics, rt)
	}
	var dups []string
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 {
			if !slices.Contains(dups, rt.Topic) {
				dups = append(dups, rt.Topic)
				add(rt.Topic, kafkaerr.New(kerr.InvalidRequest, "Duplicate topic name."))
			}
			continue
		}
		if !cn.authorizeCluster(acl.OpAlter) && !cn.authorizeTopic(acl.OpAlter, rt.Topic) {
			add(rt.Topic, kerr.TopicAuthorizationFailed)
			continue
		}
		var assignments [][]int32
		if rt.Assignment != nil {
			assignments = make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				assignments[i] = a.Replicas
			}
		}
		add(rt.Topic, c.meta.GrowTopic(rt.Topic, rt.Count, assignments, req.ValidateOnly))
	}
	return resp
}

func failedCreatePartitions(r *kmsg.CreatePartitionsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	for _, t := range r.Topics {
		resp.Topics = append(resp.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: code})
	}
	return resp
}

func createPartitionsScope(c *Cluster, r *kmsg.CreatePartitionsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.topic(t.Topic)
	}
	return s.result()
}

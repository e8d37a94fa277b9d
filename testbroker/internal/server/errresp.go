package server

import (
	"encoding/base64"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorResponse builds the response to req that fails it as a whole: every error-code field
// carries code, and the request's topics and partitions, config resources, groups and
// coordinator keys are echoed so that a client can match each entry to what it asked for
// (franz-go looks up produce and fetch partitions by topic and index). Offsets, epochs and
// leader ids are -1, as in Kafka's error responses. The response has the request's version.
//
// Kafka's own error responses (getErrorResponse) are leaner, and only options (injected
// faults, version caps) reach this function, so it errs on the side of telling the client
// everywhere: Kafka sends Fetch v13+, ShareFetch and ShareAcknowledge errors in the top-level
// code alone, where this also echoes every partition with the code; it fills Metadata's v13
// top-level code and CreateTopics' ConfigErrorCode too; and it leaves error messages empty
// where Kafka repeats the code's default description.
//
// A Produce with acks=0 gets no response (nil): Kafka closes the connection instead. A request
// type not listed here gets its response type with the top-level ErrorCode set, if it has one.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		if r.Acks == 0 {
			return nil
		}
		resp = failedProduce(r, code)
	case *kmsg.FetchRequest:
		resp = failedFetch(r, code)
	case *kmsg.ListOffsetsRequest:
		resp = failedListOffsets(r, code)
	case *kmsg.MetadataRequest:
		resp = failedMetadata(r, code)
	case *kmsg.FindCoordinatorRequest:
		resp = failedFindCoordinator(r, code)
	case *kmsg.CreateTopicsRequest:
		resp = failedCreateTopics(r, code)
	case *kmsg.DeleteTopicsRequest:
		resp = failedDeleteTopics(r, code)
	case *kmsg.InitProducerIDRequest:
		p := kmsg.NewPtrInitProducerIDResponse()
		p.ErrorCode = code
		p.ProducerEpoch = -1
		resp = p
	case *kmsg.DescribeConfigsRequest:
		p := kmsg.NewPtrDescribeConfigsResponse()
		for _, rr := range r.Resources {
			p.Resources = append(p.Resources, kmsg.DescribeConfigsResponseResource{
				ErrorCode: code, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
			})
		}
		resp = p
	case *kmsg.CreatePartitionsRequest:
		p := kmsg.NewPtrCreatePartitionsResponse()
		for _, t := range r.Topics {
			p.Topics = append(p.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: code})
		}
		resp = p
	case *kmsg.IncrementalAlterConfigsRequest:
		p := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for _, rr := range r.Resources {
			p.Resources = append(p.Resources, kmsg.IncrementalAlterConfigsResponseResource{
				ErrorCode: code, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
			})
		}
		resp = p
	case *kmsg.ShareFetchRequest:
		resp = failedShareFetch(r, code)
	case *kmsg.ShareAcknowledgeRequest:
		resp = failedShareAcknowledge(r, code)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		resp = failedDescribeShareGroupOffsets(r, code)
	case *kmsg.ShareGroupDescribeRequest:
		p := kmsg.NewPtrShareGroupDescribeResponse()
		for _, g := range r.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, code
			p.Groups = append(p.Groups, dg)
		}
		resp = p
	case *kmsg.ConsumerGroupDescribeRequest:
		p := kmsg.NewPtrConsumerGroupDescribeResponse()
		for _, g := range r.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			p.Groups = append(p.Groups, dg)
		}
		resp = p
	case *kmsg.DescribeGroupsRequest:
		p := kmsg.NewPtrDescribeGroupsResponse()
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			p.Groups = append(p.Groups, dg)
		}
		resp = p
	default:
		// ApiVersions, DescribeCluster, ListGroups and the group heartbeats have a single
		// top-level error code and nothing to echo; so has any API not listed, if it has a code.
		resp = req.ResponseKind()
		if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
			f.SetInt(int64(code))
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp
}

func failedProduce(r *kmsg.ProduceRequest, code int16) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	for _, t := range r.Topics {
		rt := kmsg.ProduceResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func failedFetch(r *kmsg.FetchRequest, code int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.ErrorCode = code
	resp.SessionID = r.SessionID
	for _, t := range r.Topics {
		rt := kmsg.FetchResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func failedListOffsets(r *kmsg.ListOffsetsRequest, code int16) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, t := range r.Topics {
		rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failedMetadata echoes each requested topic, by name and id, with no partitions. A request for
// every topic has nothing to echo; from v13 the top-level error code still tells the client.
func failedMetadata(r *kmsg.MetadataRequest, code int16) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ErrorCode = code
	for _, t := range r.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID, mt.ErrorCode = &name, t.TopicID, code
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// failedFindCoordinator fills the v0-v3 single coordinator and, from v4, one entry per key;
// the coordinator is "no node" (-1, "", -1) either way.
func failedFindCoordinator(r *kmsg.FindCoordinatorRequest, code int16) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
	for _, k := range r.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{
			Key: k, NodeID: -1, Port: -1, ErrorCode: code,
		})
	}
	return resp
}

func failedCreateTopics(r *kmsg.CreateTopicsRequest, code int16) *kmsg.CreateTopicsResponse {
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ConfigErrorCode = t.Topic, code, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failedDeleteTopics echoes names (v0-v5 TopicNames) or name-or-id entries (v6+ Topics).
func failedDeleteTopics(r *kmsg.DeleteTopicsRequest, code int16) *kmsg.DeleteTopicsResponse {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	for _, name := range r.TopicNames {
		resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: &name, ErrorCode: code})
	}
	for _, t := range r.Topics {
		resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID, ErrorCode: code})
	}
	return resp
}

// failedShareFetch sets the fetch and acknowledgement error of every partition, with the leader
// unknown (-1) so that a client does not mistake node 0 for the new leader.
func failedShareFetch(r *kmsg.ShareFetchRequest, code int16) *kmsg.ShareFetchResponse {
	resp := kmsg.NewPtrShareFetchResponse()
	resp.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.ShareFetchResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.AcknowledgeErrorCode = p.Partition, code, code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func failedShareAcknowledge(r *kmsg.ShareAcknowledgeRequest, code int16) *kmsg.ShareAcknowledgeResponse {
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.ShareAcknowledgeResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func failedDescribeShareGroupOffsets(r *kmsg.DescribeShareGroupOffsetsRequest, code int16) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	for _, g := range r.Groups {
		rg := kmsg.DescribeShareGroupOffsetsResponseGroup{GroupID: g.GroupID, ErrorCode: code}
		for _, t := range g.Topics {
			rt := kmsg.DescribeShareGroupOffsetsResponseGroupTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// requestScope returns the topic names and group ids req names, for matching fault rules.
// Topic ids resolve to names through the cluster's topics; an unknown id names nothing. A share
// coordinator key ("group:topicId:partition") names its group and its topic.
func (c *Cluster) requestScope(req kmsg.Request) (topics, groups []string) {
	byID := func(id [16]byte) {
		if t := c.topicByID(id); t != nil {
			topics = append(topics, t.Name)
		}
	}
	// nameOrID adds a topic a request names by name before some version and by id after:
	// whichever is set.
	nameOrID := func(name string, id [16]byte) {
		if name != "" {
			topics = append(topics, name)
		} else {
			byID(id)
		}
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range r.Topics {
			nameOrID(t.Topic, t.TopicID)
		}
	case *kmsg.FetchRequest:
		for _, t := range r.Topics {
			nameOrID(t.Topic, t.TopicID)
		}
		for _, t := range r.ForgottenTopics {
			nameOrID(t.Topic, t.TopicID)
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range r.Topics {
			topics = append(topics, t.Topic)
		}
	case *kmsg.MetadataRequest:
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			nameOrID(name, t.TopicID)
		}
	case *kmsg.FindCoordinatorRequest:
		keys := r.CoordinatorKeys
		if r.Version < 4 {
			keys = []string{r.CoordinatorKey}
		}
		for _, k := range keys {
			switch r.CoordinatorType {
			case 0: // group
				groups = append(groups, k)
			case 2: // share: group:topicId:partition, and the group id may itself hold colons
				rest, _, ok := cutLastSep(k, ":")
				if !ok {
					continue
				}
				group, topicID, ok := cutLastSep(rest, ":")
				if !ok {
					continue
				}
				groups = append(groups, group)
				var id [16]byte
				if n, err := base64.RawURLEncoding.Decode(id[:], []byte(topicID)); err == nil && n == len(id) {
					byID(id)
				}
			}
		}
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			topics = append(topics, t.Topic)
		}
	case *kmsg.DeleteTopicsRequest:
		topics = append(topics, r.TopicNames...)
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			nameOrID(name, t.TopicID)
		}
	case *kmsg.DescribeConfigsRequest:
		for _, rr := range r.Resources {
			topics, groups = scopeOfConfigResource(rr.ResourceType, rr.ResourceName, topics, groups)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			topics, groups = scopeOfConfigResource(rr.ResourceType, rr.ResourceName, topics, groups)
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			topics = append(topics, t.Topic)
		}
	case *kmsg.ShareGroupHeartbeatRequest:
		groups = append(groups, r.GroupID)
		topics = append(topics, r.SubscribedTopicNames...)
	case *kmsg.ShareGroupDescribeRequest:
		groups = append(groups, r.GroupIDs...)
	case *kmsg.ShareFetchRequest:
		if r.GroupID != nil {
			groups = append(groups, *r.GroupID)
		}
		for _, t := range r.Topics {
			byID(t.TopicID)
		}
		for _, t := range r.ForgottenTopicsData {
			byID(t.TopicID)
		}
	case *kmsg.ShareAcknowledgeRequest:
		if r.GroupID != nil {
			groups = append(groups, *r.GroupID)
		}
		for _, t := range r.Topics {
			byID(t.TopicID)
		}
	case *kmsg.DescribeShareGroupOffsetsRequest:
		for _, g := range r.Groups {
			groups = append(groups, g.GroupID)
			for _, t := range g.Topics {
				topics = append(topics, t.Topic)
			}
		}
	case *kmsg.DescribeGroupsRequest:
		groups = append(groups, r.Groups...)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		groups = append(groups, r.Group)
		topics = append(topics, r.SubscribedTopicNames...)
		for _, t := range r.Topics {
			byID(t.TopicID)
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		groups = append(groups, r.Groups...)
	}
	return topics, groups
}

// scopeOfConfigResource adds a config resource that is a topic or a group.
func scopeOfConfigResource(typ kmsg.ConfigResourceType, name string, topics, groups []string) ([]string, []string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		topics = append(topics, name)
	case kmsg.ConfigResourceTypeGroupConfig:
		groups = append(groups, name)
	}
	return topics, groups
}

// cutLastSep splits s around the last sep.
func cutLastSep(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

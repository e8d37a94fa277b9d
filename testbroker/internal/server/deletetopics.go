package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

func init() {
	register(20, 1, 6, (*Broker).handleDeleteTopics, failedDeleteTopics, deleteTopicsScope)
}

// handleDeleteTopics deletes topics by name (v1-5) or by name or id (v6), as Kafka's
// controller does: an entry with neither or both is INVALID_REQUEST, a name or id listed twice
// is INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id.", an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID, both with Kafka's default
// message. With delete.topic.enable=false every entry fails: INVALID_REQUEST before v3,
// TOPIC_DELETION_DISABLED from v3. A fetch in flight on a deleted topic finishes with what it
// read; the next one sees the topic gone.
func (b *Broker) handleDeleteTopics(cn *conn, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type entry struct {
		name *string
		id   [16]byte
	}
	var entries []entry
	if req.Version >= 6 {
		for _, t := range req.Topics {
			entries = append(entries, entry{t.Topic, t.TopicID})
		}
	} else {
		for _, name := range req.TopicNames {
			entries = append(entries, entry{name: &name})
		}
	}
	add := func(name *string, id [16]byte, err error) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = name, id
		rt.ErrorCode = codeOf(err)
		rt.ErrorMessage = messageOf(err)
		resp.Topics = append(resp.Topics, rt)
	}
	if !c.configs.Snapshot().DeleteTopicEnable {
		err := error(kerr.TopicDeletionDisabled)
		if req.Version < 3 {
			err = kafkaerr.New(kerr.InvalidRequest, "Topic deletion is disabled.")
		}
		for _, e := range entries {
			add(e.name, e.id, err)
		}
		return resp
	}
	names := make(map[string]int)
	ids := make(map[[16]byte]int)
	for _, e := range entries {
		if e.name != nil && e.id == ([16]byte{}) {
			names[*e.name]++
		} else if e.name == nil && e.id != ([16]byte{}) {
			ids[e.id]++
		}
	}
	reported := make(map[any]bool)
	clusterDelete := cn.authorizeCluster(acl.OpDelete)
	// Malformed entries are answered before authorization, as Kafka validates the request
	// first: a duplicate or nameless entry says so even to a principal that may not delete.
	denied := func(e entry) bool {
		deniedName, denied := cn.topicDeletionDenied(clusterDelete, e.name, e.id)
		if denied {
			add(deniedName, e.id, kafkaerr.New(kerr.TopicAuthorizationFailed, "%s", msgTopicAuthorizationFailed))
		}
		return denied
	}
	for _, e := range entries {
		switch {
		case e.name == nil && e.id == ([16]byte{}):
			add(nil, e.id, kafkaerr.New(kerr.InvalidRequest, "Neither topic name nor id were specified."))
		case e.name != nil && e.id != ([16]byte{}):
			add(e.name, e.id, kafkaerr.New(kerr.InvalidRequest, "You may not specify both topic name and topic id."))
		case e.name != nil && names[*e.name] > 1:
			if !reported[*e.name] {
				reported[*e.name] = true
				add(e.name, [16]byte{}, kafkaerr.New(kerr.InvalidRequest, "Duplicate topic name."))
			}
		case e.name == nil && ids[e.id] > 1:
			if !reported[e.id] {
				reported[e.id] = true
				add(nil, e.id, kafkaerr.New(kerr.InvalidRequest, "Duplicate topic id."))
			}
		case denied(e):
		case e.name != nil:
			t, err := c.meta.Delete(*e.name)
			if err != nil {
				add(e.name, [16]byte{}, kafkaerr.New(kerr.UnknownTopicOrPartition, "%s", kerr.UnknownTopicOrPartition.Description))
				continue
			}
			c.topicDeleted(t)
			add(e.name, t.ID, nil)
		default:
			t := c.meta.DeleteByID(e.id)
			if t == nil {
				add(nil, e.id, kafkaerr.New(kerr.UnknownTopicID, "%s", kerr.UnknownTopicID.Description))
				continue
			}
			c.topicDeleted(t)
			name := t.Name
			add(&name, e.id, nil)
		}
	}
	return resp
}

// failedDeleteTopics echoes names (v0-v5 TopicNames) or name-or-id entries (v6+ Topics).
func failedDeleteTopics(r *kmsg.DeleteTopicsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	for _, name := range r.TopicNames {
		resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: &name, ErrorCode: code})
	}
	for _, t := range r.Topics {
		resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID, ErrorCode: code})
	}
	return resp
}

func deleteTopicsScope(c *Cluster, r *kmsg.DeleteTopicsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, name := range r.TopicNames {
		s.topic(name)
	}
	for _, t := range r.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		s.nameOrID(name, t.TopicID)
	}
	return s.result()
}

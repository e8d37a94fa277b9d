package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/metadata"
)

func init() {
	register(3, 0, 13, (*Broker).handleMetadata, failedMetadata, metadataScope)
}

// controllerID returns the node reported as controller: KRaft clusters report a running
// broker here (clients send controller requests to it, and it forwards them); this cluster
// reports the lowest running one.
func (c *Cluster) controllerID() int32 {
	for _, b := range c.brokers {
		if c.alive(b.id) {
			return b.id
		}
	}
	return 0
}

func (b *Broker) handleMetadata(cn *conn, req *kmsg.MetadataRequest) kmsg.Response {
	c := b.c
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	resp.Brokers = c.metadataBrokers()
	resp.ClusterID = &c.clusterID
	resp.ControllerID = c.controllerID()
	if req.IncludeClusterAuthorizedOperations { // only v8-10 carry the field
		resp.AuthorizedOperations = cn.clusterAuthorizedOperations()
	}
	// withOps sets a topic's authorized operations when the request asks for them.
	withOps := func(mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
		if req.IncludeTopicAuthorizedOperations {
			mt.AuthorizedOperations = cn.authorizedOperations(acl.ResourceTopic, *mt.Topic)
		}
		return mt
	}

	// v0 sends an empty list for "all topics"; v1+ sends null for all and empty for none.
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range c.meta.SortedTopics() {
			if cn.authorizeTopic(acl.OpDescribe, t.Name) {
				resp.Topics = append(resp.Topics, withOps(c.metadataTopic(t)))
			}
		}
		return resp
	}
	cfg := c.configs.Snapshot()
	autoCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && cfg.AutoCreateTopics
	for _, rt := range req.Topics {
		var t *metadata.Topic
		switch {
		case rt.Topic != nil && *rt.Topic != "":
			// Kafka does not disclose whether a topic the principal may not describe exists.
			if !cn.authorizeTopic(acl.OpDescribe, *rt.Topic) {
				resp.Topics = append(resp.Topics, deniedMetadataTopic(rt.Topic, [16]byte{}, false))
				continue
			}
			t = c.meta.Topic(*rt.Topic)
			if t == nil && autoCreate && !cn.mayCreateTopic(*rt.Topic) {
				resp.Topics = append(resp.Topics, deniedMetadataTopic(rt.Topic, [16]byte{}, isInternalTopic(*rt.Topic)))
				continue
			}
			if t == nil && autoCreate && isInternalTopic(*rt.Topic) {
				c.ensureInternalTopic(*rt.Topic)
				t = c.meta.Topic(*rt.Topic)
			}
			if t == nil && autoCreate {
				created, err := c.meta.CreateTopic(metadata.TopicSpec{Name: *rt.Topic, Partitions: cfg.NumPartitions, ReplicationFactor: cfg.DefaultReplicationFactor})
				switch {
				case err == nil:
					t = created
				case errors.Is(err, kerr.TopicAlreadyExists):
					t = c.meta.Topic(*rt.Topic)
				default:
					resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{Topic: rt.Topic, ErrorCode: codeOf(err)})
					continue
				}
			}
			if t == nil {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{Topic: rt.Topic, ErrorCode: kerr.UnknownTopicOrPartition.Code})
				continue
			}
		default:
			t = c.meta.TopicByID(rt.TopicID)
			if t == nil {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{TopicID: rt.TopicID, ErrorCode: kerr.UnknownTopicID.Code})
				continue
			}
			if !cn.authorizeTopic(acl.OpDescribe, t.Name) {
				resp.Topics = append(resp.Topics, deniedMetadataTopic(nil, t.ID, false))
				continue
			}
		}
		resp.Topics = append(resp.Topics, withOps(c.metadataTopic(t)))
	}
	return resp
}

// deniedMetadataTopic is a topic the principal may not describe (or create), as KafkaApis
// answers it: TOPIC_AUTHORIZATION_FAILED with the name it was asked by, or with the id for one
// asked by id, and no partitions.
func deniedMetadataTopic(name *string, id [16]byte, internal bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID, mt.IsInternal, mt.ErrorCode = name, id, internal, kerr.TopicAuthorizationFailed.Code
	return mt
}

// metadataBrokers lists the running brokers: a stopped one is not registered, as a fenced
// Kafka broker is not.
func (c *Cluster) metadataBrokers() []kmsg.MetadataResponseBroker {
	out := make([]kmsg.MetadataResponseBroker, 0, len(c.brokers))
	for _, b := range c.brokers {
		if c.replicas.Alive(b.id) {
			out = append(out, kmsg.MetadataResponseBroker{NodeID: b.id, Host: b.host, Port: b.port, Rack: c.rack(b.id)})
		}
	}
	return out
}

// metadataTopic describes a topic's partitions as Kafka's metadata cache does: the replicas,
// the ISR, the replicas on stopped brokers as offline, and LEADER_NOT_AVAILABLE with leader -1
// for a partition no running ISR member can lead.
func (c *Cluster) metadataTopic(t *metadata.Topic) kmsg.MetadataResponseTopic {
	name := t.Name
	mt := kmsg.MetadataResponseTopic{Topic: &name, TopicID: t.ID, IsInternal: isInternalTopic(name), AuthorizedOperations: -2147483648}
	for _, p := range c.meta.Partitions(t) {
		st := p.State()
		mp := kmsg.MetadataResponseTopicPartition{
			Partition:   p.Index,
			Leader:      st.Leader,
			LeaderEpoch: st.LeaderEpoch,
			Replicas:    st.Replicas,
			ISR:         st.ISR,
		}
		for _, r := range st.Replicas {
			if !c.replicas.Alive(r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if st.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// failedMetadata echoes each requested topic, by name and id, with no partitions. A request for
// every topic has nothing to echo; from v13 the top-level error code still tells the client.
func failedMetadata(r *kmsg.MetadataRequest, code int16) kmsg.Response {
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

// metadataScope names the requested topics; a request for every topic names none.
func metadataScope(c *Cluster, r *kmsg.MetadataRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		s.nameOrID(name, t.TopicID)
	}
	return s.result()
}

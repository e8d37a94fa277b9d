package server

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreateTopics creates topics as Kafka's controller does (createTopicFrom has the checks
// and their order). A name listed twice gets one INVALID_REQUEST "Duplicate topic name." and is
// not created. NumPartitions and ReplicationFactor of -1 take num.partitions and
// default.replication.factor; manual Assignments are honoured, each partition led by its first
// replica. ValidateOnly runs every check and creates nothing. A created (or validated) topic's
// result carries, from v5, its partition count, replication factor and every topic config with
// its effective value and source, and from v7 its id. The request's timeout is not used:
// creation completes before the response.
func (b *Broker) handleCreateTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
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
		t, err := c.createTopicFrom(creationFromRequest(&rt, req.ValidateOnly))
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
			resp.Topics = append(resp.Topics, createTopicsError(rt.Topic, errorf(kerr.InvalidRequest, "Duplicate topic name.")))
		}
	}
	return resp
}

// creationFromRequest turns one CreateTopics entry into a topicCreation. A config with a null
// value is kept as an error, reported as Kafka reports it once the name checks pass.
func creationFromRequest(rt *kmsg.CreateTopicsRequestTopic, validateOnly bool) topicCreation {
	tc := topicCreation{
		name:              rt.Topic,
		partitions:        rt.NumPartitions,
		replicationFactor: rt.ReplicationFactor,
		configs:           make(map[string]string, len(rt.Configs)),
		validateOnly:      validateOnly,
	}
	for _, a := range rt.ReplicaAssignment {
		tc.assignments = append(tc.assignments, manualAssignment{partition: a.Partition, replicas: a.Replicas})
	}
	for _, cfg := range rt.Configs {
		if cfg.Value == nil {
			tc.nullConfigs = append(tc.nullConfigs, cfg.Name)
			continue
		}
		tc.configs[cfg.Name] = *cfg.Value
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
func (c *Cluster) createdTopicResult(t *Topic) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = t.Name
	rt.TopicID = t.ID
	parts := c.partitions(t)
	rt.NumPartitions = int32(len(parts))
	rt.ReplicationFactor = int16(len(parts[0].Replicas))
	for _, e := range c.configs.TopicEntries(c.topicConfigs(t), -1, false) {
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

// handleDeleteTopics deletes topics by name (v1-5) or by name or id (v6), as Kafka's
// controller does: an entry with neither or both is INVALID_REQUEST, a name or id listed twice
// is INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id.", an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID, both with Kafka's default
// message. With delete.topic.enable=false every entry fails: INVALID_REQUEST before v3,
// TOPIC_DELETION_DISABLED from v3. A fetch in flight on a deleted topic finishes with what it
// read; the next one sees the topic gone.
func (b *Broker) handleDeleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
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
			err = errorf(kerr.InvalidRequest, "Topic deletion is disabled.")
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
	for _, e := range entries {
		switch {
		case e.name == nil && e.id == ([16]byte{}):
			add(nil, e.id, errorf(kerr.InvalidRequest, "Neither topic name nor id were specified."))
		case e.name != nil && e.id != ([16]byte{}):
			add(e.name, e.id, errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id."))
		case e.name != nil && names[*e.name] > 1:
			if !reported[*e.name] {
				reported[*e.name] = true
				add(e.name, [16]byte{}, errorf(kerr.InvalidRequest, "Duplicate topic name."))
			}
		case e.name == nil && ids[e.id] > 1:
			if !reported[e.id] {
				reported[e.id] = true
				add(nil, e.id, errorf(kerr.InvalidRequest, "Duplicate topic id."))
			}
		case e.name != nil:
			t, err := c.deleteTopic(*e.name)
			if err != nil {
				add(e.name, [16]byte{}, errorf(kerr.UnknownTopicOrPartition, "%s", kerr.UnknownTopicOrPartition.Description))
				continue
			}
			c.shares.TopicDeleted(t.ID)
			add(e.name, t.ID, nil)
		default:
			t := c.deleteTopicByID(e.id)
			if t == nil {
				add(nil, e.id, errorf(kerr.UnknownTopicID, "%s", kerr.UnknownTopicID.Description))
				continue
			}
			c.shares.TopicDeleted(t.ID)
			name := t.Name
			add(&name, e.id, nil)
		}
	}
	return resp
}

// handleCreatePartitions grows topics as Kafka's controller does: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a count equal to the current one is INVALID_PARTITIONS "Topic
// already has N partition(s).", a smaller one INVALID_PARTITIONS "The topic T currently has N
// partition(s); M would not be an increase."; manual Assignments must give one replica list
// per new partition (INVALID_REPLICA_ASSIGNMENT otherwise) with the topic's replication
// factor. New partitions are placed like the topic's first ones and get logs made from the
// topic's current configs. A topic listed twice is INVALID_REQUEST "Duplicate topic name.";
// ValidateOnly checks without adding.
func (b *Broker) handleCreatePartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
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
				add(rt.Topic, errorf(kerr.InvalidRequest, "Duplicate topic name."))
			}
			continue
		}
		var assignments [][]int32
		if rt.Assignment != nil {
			assignments = make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				assignments[i] = a.Replicas
			}
		}
		add(rt.Topic, c.growTopic(rt.Topic, rt.Count, assignments, req.ValidateOnly))
	}
	return resp
}

// growTopic raises a topic's partition count to count (handleCreatePartitions has the rules).
func (c *Cluster) growTopic(name string, count int32, assignments [][]int32, validateOnly bool) error {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	t := c.topics[name]
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	have := int32(len(t.partitions))
	switch {
	case count == have:
		return errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", have)
	case count < have:
		return errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", name, have, count)
	}
	additional := count - have
	if err := checkBatchSize(additional); err != nil {
		return err
	}
	rf := len(t.partitions[0].Replicas)
	if assignments != nil {
		if len(assignments) != int(additional) {
			return errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(assignments))
		}
		for _, r := range assignments {
			if err := c.validateManualAssignment(r, rf); err != nil {
				return err
			}
		}
	} else {
		assignments = c.placeReplicas(int(t.partitions[0].Leader), int(have), additional, int16(rf))
	}
	if !validateOnly {
		cloned := make([][]int32, len(assignments))
		for i, r := range assignments {
			cloned[i] = slices.Clone(r)
		}
		c.addPartitionsLocked(t, cloned)
	}
	return nil
}

// handleDescribeCluster describes the cluster to an admin client: every broker (none is ever
// fenced), the controller and the cluster id. From v1 the request names the endpoint type it
// expects: brokers (1) are served, controllers (2) get MISMATCHED_ENDPOINT_TYPE and anything
// else UNSUPPORTED_ENDPOINT_TYPE, with Kafka's messages. Authorized operations are not
// computed (the schema's "not requested" value is returned).
func (b *Broker) handleDescribeCluster(req *kmsg.DescribeClusterRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		code, msg := kerr.UnsupportedEndpointType, "Unsupported endpoint type "+strconv.Itoa(int(req.EndpointType))
		if req.EndpointType == 2 {
			code, msg = kerr.MismatchedEndpointType, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		resp.ErrorCode = code.Code
		resp.ErrorMessage = &msg
		return resp
	}
	resp.ClusterID = c.clusterID
	resp.ControllerID = controllerID
	for _, br := range c.brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.id, br.host, br.port
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}

// Coordinator key types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

// handleFindCoordinator answers where a group's coordinator is (key type 0, used for classic,
// consumer and share groups alike) and where a share partition's state lives (key type 2,
// "groupId:topicId:partition", v6+, used by brokers), one key before v4 and a batch from v4.
// The cluster has no transaction coordinator: key type 1 is answered with INVALID_REQUEST and
// a message saying so, an error franz-go and the Java client treat as final, so that a
// transactional producer fails at once instead of retrying. A malformed share key, or one sent
// below v6, is INVALID_REQUEST as in Kafka.
func (b *Broker) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (node int32, err error) {
		switch req.CoordinatorType {
		case coordinatorGroup:
			return c.coordinatorFor(key), nil
		case coordinatorTransaction:
			return -1, errorf(kerr.InvalidRequest, "testbroker does not support transactions: it has no transaction coordinator")
		case coordinatorShare:
			if req.Version < 6 {
				return -1, kerr.InvalidRequest
			}
			if !validShareKey(key) {
				return -1, errorf(kerr.InvalidRequest, "Invalid key format: %s, should be of the form groupId:topicId:partition", key)
			}
			return c.shareCoordinatorFor(key), nil
		}
		return -1, errorf(kerr.InvalidRequest, "Unknown coordinator type received: %d", req.CoordinatorType)
	}
	if req.Version < 4 {
		node, err := find(req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if err != nil {
			resp.ErrorCode = codeOf(err)
			resp.ErrorMessage = coordinatorErrorMessage(err)
			return resp
		}
		br := c.broker(node)
		resp.NodeID, resp.Host, resp.Port = br.id, br.host, br.port
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		node, err := find(key)
		rc.NodeID, rc.Host, rc.Port = -1, "", -1
		if err != nil {
			rc.ErrorCode = codeOf(err)
			rc.ErrorMessage = coordinatorErrorMessage(err)
		} else {
			br := c.broker(node)
			rc.NodeID, rc.Host, rc.Port = br.id, br.host, br.port
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp
}

// coordinatorErrorMessage is the message Kafka sends with a FindCoordinator error: the
// exception's message, which for a bare code is the code's description.
func coordinatorErrorMessage(err error) *string {
	if m := messageOf(err); m != nil {
		return m
	}
	if ke, ok := err.(*kerr.Error); ok {
		return &ke.Description
	}
	return nil
}

// coordinatorFor returns the node that coordinates a group, the way Kafka picks it: the group
// maps to partition abs(javaHashCode(group)) mod offsets.topic.num.partitions of
// __consumer_offsets, and that partition's leader coordinates it. The cluster does not create
// __consumer_offsets; the leader is the one the cluster's placement gives partition p of the
// first topic, broker p mod N. The same group always gets the same node.
func (c *Cluster) coordinatorFor(group string) int32 {
	return c.internalPartitionLeader(group, c.configs.Snapshot().OffsetsTopicPartitions)
}

// shareCoordinatorFor returns the node that holds a share partition's state (key
// "groupId:topicId:partition"), picked as coordinatorFor picks a group's, over
// share.coordinator.state.topic.num.partitions partitions of __share_group_state.
func (c *Cluster) shareCoordinatorFor(key string) int32 {
	return c.internalPartitionLeader(key, c.configs.Snapshot().ShareStatePartitions)
}

func (c *Cluster) internalPartitionLeader(key string, partitions int32) int32 {
	p := javaAbs(javaHashCode(key)) % partitions
	return p % int32(c.NumBrokers())
}

// javaHashCode is Java's String.hashCode: 31*h + c over the UTF-16 code units.
func javaHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaAbs is Kafka's Utils.abs: the absolute value, with MinInt32 mapped to 0.
func javaAbs(n int32) int32 {
	switch {
	case n == -2147483648:
		return 0
	case n < 0:
		return -n
	}
	return n
}

// validShareKey reports whether key has SharePartitionKey's form groupId:topicId:partition,
// with a base64 topic id and a numeric partition.
func validShareKey(key string) bool {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" {
		return false
	}
	if id, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || len(id) != 16 {
		return false
	}
	_, err := strconv.ParseInt(parts[2], 10, 32)
	return err == nil
}

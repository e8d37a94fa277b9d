package server

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

func init() {
	register(10, 0, 6, (*Broker).handleFindCoordinator, failedFindCoordinator, findCoordinatorScope)
}

// Coordinator key types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

// handleFindCoordinator answers where a group's coordinator is (key type 0, used for classic,
// consumer and share groups alike), where a transactional id's is (key type 1,
// txnCoordinatorFor) and where a share partition's state lives (key type 2,
// "groupId:topicId:partition", v6+, used by brokers), one key before v4 and a batch from v4.
// A malformed share key, or one sent below v6, is INVALID_REQUEST as in Kafka. A key the
// principal may not look up (DESCRIBE on the group or transactional id, CLUSTER_ACTION for a
// share key) fails without creating the internal topic its coordinator lives on.
func (b *Broker) handleFindCoordinator(cn *conn, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	// Each key is checked before its internal topic is created, as KafkaApis.getCoordinator
	// does, so that a denied lookup creates nothing.
	find := func(key string) (node int32, err error) {
		switch req.CoordinatorType {
		case coordinatorGroup:
			if !cn.authorizeGroup(acl.OpDescribe, key) {
				return -1, kafkaerr.New(kerr.GroupAuthorizationFailed, "%s", msgGroupAuthorizationFailed)
			}
			c.ensureInternalTopic(consumerOffsetsTopic)
			return c.coordinatorFor(key), nil
		case coordinatorTransaction:
			if !cn.authorize(acl.OpDescribe, acl.ResourceTransactionalID, key) {
				return -1, kafkaerr.New(kerr.TransactionalIDAuthorizationFailed, "%s", msgTxnIDAuthorizationFailed)
			}
			c.ensureInternalTopic(transactionStateTopic)
			return c.txnCoordinatorFor(key), nil
		case coordinatorShare:
			if req.Version < 6 {
				return -1, kerr.InvalidRequest
			}
			if !cn.authorizeCluster(acl.OpClusterAction) {
				return -1, kafkaerr.New(kerr.ClusterAuthorizationFailed, "%s", msgClusterAuthorizationFailed)
			}
			if !validShareKey(key) {
				return -1, kafkaerr.New(kerr.InvalidRequest, "Invalid key format: %s, should be of the form groupId:topicId:partition", key)
			}
			c.ensureInternalTopic(shareGroupStateTopic)
			return c.shareCoordinatorFor(key), nil
		}
		return -1, kafkaerr.New(kerr.InvalidRequest, "Unknown coordinator type received: %d", req.CoordinatorType)
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
// __consumer_offsets, and that partition's leader coordinates it: broker p mod N, where
// ensureInternalTopic places partition p's leader. The same group always gets the same node.
func (c *Cluster) coordinatorFor(group string) int32 {
	return c.internalPartitionLeader(group, c.configs.Snapshot().OffsetsTopicPartitions)
}

// txnCoordinatorFor returns the node that coordinates a transactional id, picked as
// coordinatorFor picks a group's, over transaction.state.log.num.partitions partitions of
// __transaction_state (TransactionStateManager.partitionFor): the leader of that partition
// once the topic exists (ensureInternalTopic places it there).
func (c *Cluster) txnCoordinatorFor(id string) int32 {
	return c.internalPartitionLeader(id, c.configs.Snapshot().TxnStatePartitions)
}

// shareCoordinatorFor returns the node that holds a share partition's state (key
// "groupId:topicId:partition"), picked as coordinatorFor picks a group's, over
// share.coordinator.state.topic.num.partitions partitions of __share_group_state.
func (c *Cluster) shareCoordinatorFor(key string) int32 {
	return c.internalPartitionLeader(key, c.configs.Snapshot().ShareStatePartitions)
}

// internalPartitionLeader returns the broker that leads the internal topic partition of key:
// partition p is led by broker p mod N, or, while that broker is stopped, by the next running
// one, as the partition's leadership would move.
func (c *Cluster) internalPartitionLeader(key string, partitions int32) int32 {
	p := javaAbs(javaHashCode(key)) % partitions
	n := int32(c.NumBrokers())
	for i := range n {
		if b := (p + i) % n; c.alive(b) {
			return b
		}
	}
	return p % n
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

// failedFindCoordinator fills the v0-v3 single coordinator and, from v4, one entry per key;
// the coordinator is "no node" (-1, "", -1) either way.
func failedFindCoordinator(r *kmsg.FindCoordinatorRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
	for _, k := range r.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{
			Key: k, NodeID: -1, Port: -1, ErrorCode: code,
		})
	}
	return resp
}

// findCoordinatorScope names a group key's group, and a share coordinator key's
// ("group:topicId:partition") group and topic.
func findCoordinatorScope(c *Cluster, r *kmsg.FindCoordinatorRequest) (topics, groups []string) {
	s := scope{c: c}
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, k := range keys {
		switch r.CoordinatorType {
		case coordinatorGroup:
			s.group(k)
		case coordinatorShare: // the group id may itself hold colons
			rest, _, ok := cutLastSep(k, ":")
			if !ok {
				continue
			}
			group, topicID, ok := cutLastSep(rest, ":")
			if !ok {
				continue
			}
			s.group(group)
			var id [16]byte
			if n, err := base64.RawURLEncoding.Decode(id[:], []byte(topicID)); err == nil && n == len(id) {
				s.topicID(id)
			}
		}
	}
	return s.result()
}

// cutLastSep splits s around the last sep.
func cutLastSep(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

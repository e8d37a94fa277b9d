package server

import (
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/sasl"
)

// Kafka's messages of the authorization errors (the Errors enum's), which it sends where a
// response carries an error message.
var (
	msgTopicAuthorizationFailed   = "Topic authorization failed."
	msgGroupAuthorizationFailed   = "Group authorization failed."
	msgClusterAuthorizationFailed = "Cluster authorization failed."
	msgTxnIDAuthorizationFailed   = "Transactional Id authorization failed."
)

// anonymous is the principal of a connection that has not authenticated, as Kafka's
// KafkaPrincipal.ANONYMOUS.
const anonymous = "User:ANONYMOUS"

// newAuthorizer returns the cluster's authorizer, or nil when authorizer.class.name is unset.
// On a cluster with SASL or TLS the replica fetchers' user is a super user, as a Kafka cluster's
// inter-broker principal must be.
func (c *Cluster) newAuthorizer() *acl.Authorizer {
	settings := c.configs.Snapshot().Authorizer
	if !settings.Enabled {
		return nil
	}
	supers := settings.SuperUsers
	if c.cfg.SASL != nil || c.cfg.TLS != nil {
		supers = append(supers[:len(supers):len(supers)], "User:"+sasl.InterBrokerUser)
	}
	return acl.New(supers, settings.AllowEveryoneIfNoACL)
}

// authorize reports whether the connection's principal, from its address, may perform op on
// the resource; every request is authorized on a cluster without an authorizer.
func (cn *conn) authorize(op acl.Operation, rt acl.ResourceType, name string) bool {
	a := cn.b.c.authz
	return a == nil || a.Authorize(cn.aclPrincipal(), cn.host(), op, rt, name)
}

// authorizeTopic is authorize on a topic.
func (cn *conn) authorizeTopic(op acl.Operation, topic string) bool {
	return cn.authorize(op, acl.ResourceTopic, topic)
}

// authorizeGroup is authorize on a group.
func (cn *conn) authorizeGroup(op acl.Operation, group string) bool {
	return cn.authorize(op, acl.ResourceGroup, group)
}

// authorizeCluster is authorize on the cluster.
func (cn *conn) authorizeCluster(op acl.Operation) bool {
	return cn.authorize(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOperations is the authorized-operations bit field of a resource for the
// connection's principal: every supported operation without an authorizer.
func (cn *conn) authorizedOperations(rt acl.ResourceType, name string) int32 {
	a := cn.b.c.authz
	if a == nil {
		return acl.Supported(rt)
	}
	return a.AuthorizedOperations(cn.aclPrincipal(), cn.host(), rt, name)
}

// aclPrincipal is the principal ACLs are matched against: the SASL one, else the TLS
// handshake's (see sslPrincipal), else User:ANONYMOUS.
func (cn *conn) aclPrincipal() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	switch {
	case cn.principal != "":
		return cn.principal
	case cn.sslPrincipalName != "":
		return cn.sslPrincipalName
	}
	return anonymous
}

// host is the client's address as ACLs match it (hostAddress).
func (cn *conn) host() string { return hostAddress(cn.nc.RemoteAddr()) }

// hostAddress writes a client address as Kafka's InetAddress.getHostAddress does, the form a
// host in an ACL must take: dotted IPv4, or IPv6 as eight groups of hex without "::". An
// address that is not an IP (an in-memory network's) is its host part.
func hostAddress(addr net.Addr) string {
	var ip net.IP
	if tcp, ok := addr.(*net.TCPAddr); ok {
		ip = tcp.IP
	} else if h, _, err := net.SplitHostPort(addr.String()); err == nil {
		ip = net.ParseIP(h)
		if ip == nil {
			return h
		}
	} else {
		return addr.String()
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(ip[2*i])<<8|uint64(ip[2*i+1]), 16)
	}
	return strings.Join(groups, ":")
}

// splitTopics splits a request's topics into those the connection's principal may perform op
// on and those it may not, in request order; name gives a topic's name, "" for one the
// cluster does not know, which is kept for the handler to answer as it would without ACLs.
func splitTopics[T any](cn *conn, op acl.Operation, topics []T, name func(*T) string) (allowed, denied []T) {
	if cn.b.c.authz == nil {
		return topics, nil
	}
	allowed = topics[:0:0]
	for i := range topics {
		if n := name(&topics[i]); n != "" && !cn.authorizeTopic(op, n) {
			denied = append(denied, topics[i])
			continue
		}
		allowed = append(allowed, topics[i])
	}
	return allowed, denied
}

// topicName returns the name of the topic with id, "" when the cluster has none.
func (c *Cluster) topicName(id [16]byte) string {
	if t := c.meta.TopicByID(id); t != nil {
		return t.Name
	}
	return ""
}

// mayCreateTopic reports whether the principal may create the topic: CREATE on the cluster or
// on the topic, as Metadata's auto-creation and CreateTopics ask.
func (cn *conn) mayCreateTopic(name string) bool {
	return cn.authorizeCluster(acl.OpCreate) || cn.authorizeTopic(acl.OpCreate, name)
}

// groupHeartbeatDenied is the error code of a ConsumerGroupHeartbeat or ShareGroupHeartbeat
// the principal may not send, or 0: READ on the group, then DESCRIBE on every subscribed topic
// name, as KafkaApis checks them before the group coordinator sees the request.
func (cn *conn) groupHeartbeatDenied(group string, subscribed []string) int16 {
	if !cn.authorizeGroup(acl.OpRead, group) {
		return kerr.GroupAuthorizationFailed.Code
	}
	for _, t := range subscribed {
		if !cn.authorizeTopic(acl.OpDescribe, t) {
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	return 0
}

// authorizeFetchedOffsets applies DESCRIBE on each topic to an OffsetFetch's result, as
// KafkaApis does: a topic the principal may not describe is left out of an all-topics fetch
// and, when named, has every partition TOPIC_AUTHORIZATION_FAILED with no offset.
func (cn *conn) authorizeFetchedOffsets(fetched []group.FetchedTopic, all bool) []group.FetchedTopic {
	if cn.b.c.authz == nil {
		return fetched
	}
	out := fetched[:0:0]
	for _, t := range fetched {
		if !cn.authorizeTopic(acl.OpDescribe, t.Name) {
			if all {
				continue
			}
			denied := group.FetchedTopic{Name: t.Name}
			for _, p := range t.Partitions {
				denied.Partitions = append(denied.Partitions, group.FetchedOffset{Partition: p.Partition, CommittedOffset: group.CommittedOffset{Offset: -1, LeaderEpoch: -1}, Err: kerr.TopicAuthorizationFailed})
			}
			t = denied
		}
		out = append(out, t)
	}
	return out
}

// splitFetchTopics splits a Fetch's topics as KafkaApis.handleFetchRequest authorizes them: a
// follower's fetch needs CLUSTER_ACTION on the cluster, or every topic is denied; a
// consumer's needs READ on each topic.
func (cn *conn) splitFetchTopics(req *kmsg.FetchRequest) (allowed, denied []kmsg.FetchRequestTopic) {
	c := cn.b.c
	if c.authz == nil {
		return req.Topics, nil
	}
	if (req.Version < 15 && req.ReplicaID >= 0) || (req.Version >= 15 && req.ReplicaState.ID >= 0) {
		if cn.authorizeCluster(acl.OpClusterAction) {
			return req.Topics, nil
		}
		return nil, req.Topics
	}
	return splitTopics(cn, acl.OpRead, req.Topics, func(t *kmsg.FetchRequestTopic) string {
		if req.Version >= 13 {
			return c.topicName(t.TopicID)
		}
		return t.Topic
	})
}

// appendDeniedFetch answers a Fetch's denied topics with TOPIC_AUTHORIZATION_FAILED on every
// partition.
func appendDeniedFetch(resp *kmsg.FetchResponse, denied []kmsg.FetchRequestTopic) {
	for _, t := range denied {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark = p.Partition, kerr.TopicAuthorizationFailed.Code, -1
			rp.RecordBatches = noRecords
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// configResourceDenied is the error of a config resource the principal may not perform op
// (DESCRIBE_CONFIGS or ALTER_CONFIGS) on, nil when it may: a topic needs op on the topic, a
// group on the group, and the brokers, their loggers and client metrics on the cluster
// (ConfigHelper, KafkaApis.configsAuthorizationApiError).
func (cn *conn) configResourceDenied(op acl.Operation, typ kmsg.ConfigResourceType, name string) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !cn.authorizeTopic(op, name) {
			return kafkaerr.New(kerr.TopicAuthorizationFailed, "%s", msgTopicAuthorizationFailed)
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !cn.authorizeGroup(op, name) {
			return kafkaerr.New(kerr.GroupAuthorizationFailed, "%s", msgGroupAuthorizationFailed)
		}
	default:
		if !cn.authorizeCluster(op) {
			return kafkaerr.New(kerr.ClusterAuthorizationFailed, "%s", msgClusterAuthorizationFailed)
		}
	}
	return nil
}

// topicDeletionDenied reports whether the principal may not delete a topic named by name or
// id, and the name to answer with, as the controller does: a topic it may not even describe
// is answered by id alone, so that the name is not disclosed. Unknown topics are left to the
// handler. DELETE on the cluster allows every topic.
func (cn *conn) topicDeletionDenied(clusterDelete bool, name *string, id [16]byte) (*string, bool) {
	c := cn.b.c
	if c.authz == nil || clusterDelete {
		return name, false
	}
	n := c.topicName(id)
	if name != nil {
		n = *name
	}
	if n == "" || cn.authorizeTopic(acl.OpDelete, n) {
		return name, false
	}
	if name == nil && cn.authorizeTopic(acl.OpDescribe, n) {
		return &n, true
	}
	return name, true
}

// mayWriteIdempotently reports whether the principal may get a producer id without a
// transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
// (KafkaApis.handleInitProducerIdRequest).
func (cn *conn) mayWriteIdempotently() bool {
	a := cn.b.c.authz
	return a == nil || cn.authorizeCluster(acl.OpIdempotentWrite) ||
		a.AuthorizeByResourceType(cn.aclPrincipal(), cn.host(), acl.OpWrite, acl.ResourceTopic)
}

// deniedAddPartitionsToTxn answers a client's AddPartitionsToTxn (v0-3) that names a topic
// the principal may not WRITE, as KafkaApis does: those partitions TOPIC_AUTHORIZATION_FAILED,
// every other OPERATION_NOT_ATTEMPTED, and nothing added.
func (cn *conn) deniedAddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, bool) {
	_, denied := splitTopics(cn, acl.OpWrite, req.Topics, func(t *kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic })
	if len(denied) == 0 {
		return nil, false
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Topics {
		code := kerr.OperationNotAttempted.Code
		if !cn.authorizeTopic(acl.OpWrite, t.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, true
}

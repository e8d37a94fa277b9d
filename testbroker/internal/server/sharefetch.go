package server

import (
	"errors"
	"iter"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/share"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

func init() {
	register(78, 1, 2, (*Broker).handleShareFetch, failedShareFetch, shareFetchScope)
}

// noShareRecords is the Records of a partition without records: Kafka's ShareFetchResponse
// turns null records into an empty record set (librdkafka fails a response on a null size). It
// is shared and never written.
var noShareRecords = []byte{}

// handleShareFetch answers ShareFetch v1-2 in Kafka's order (KafkaApis.handleShareFetchRequest):
//
//  1. A null group id, then a member id that is null, empty or longer than 36 characters, are
//     INVALID_REQUEST with Kafka's message. Membership of the group is not checked, as with Kafka.
//  2. Version 2 with IsRenewAck needs MaxBytes, MinBytes, MaxRecords and MaxWaitMs all 0: each
//     that is not adds "<name> must be set to 0, " to the INVALID_REQUEST message, which ends
//     with "if isRenewAck is true.".
//  3. The session rules of share.Sessions.OpenFetch; SHARE_SESSION_LIMIT_REACHED is sent
//     only once MaxWaitMs has passed on the cluster clock, as Kafka's idle timer task does.
//     Every requested partition joins the session, whatever the ACLs say.
//  4. READ on the topic of each partition of the session, asked at every fetch (Fetch.Deny):
//     a denied one is TOPIC_AUTHORIZATION_FAILED, in every response while it stays in the
//     session, and is fetched from by the first fetch after an ACL allows it.
//  5. Piggybacked acknowledgements, applied as share.Manager.Acknowledge says; RENEW needs
//     version 2 and IsRenewAck. Those on a denied topic are TOPIC_AUTHORIZATION_FAILED and not
//     applied. Each partition's result is its AcknowledgeErrorCode and
//     AcknowledgeErrorMessage, in the partition's fetch entry or in one of its own.
//  6. The fetch, skipped for IsRenewAck (a renewed lock must not run out during a long poll)
//     and for epoch -1. MaxRecords or MaxBytes of 0 fetch nothing at once. Otherwise each
//     session partition this broker leads acquires records for the member, and the fetch may
//     wait for MinBytes, as share.Fetch.Poll says; ShareAcquireMode picks batch-optimized (0)
//     or record-limit (1), version 1 always the former, and an unknown mode fails the request
//     with UNKNOWN_SERVER_ERROR. A partition whose leader moves meanwhile
//     (Cluster.MoveLeader) wakes the fetch and is answered NOT_LEADER_OR_FOLLOWER.
//  7. Epoch -1 closes the member's session after the response is built, releasing its records
//     in the session's partitions.
//
// The response lists, as Kafka does: on a new session every partition the fetch looked at;
// afterwards only those with records, with an error, or added to the session since the last
// response; and every partition whose acknowledgements were processed. Partitions with unknown
// topic ids are UNKNOWN_TOPIC_ID, unknown topics or partitions UNKNOWN_TOPIC_OR_PARTITION, and
// partitions led elsewhere NOT_LEADER_OR_FOLLOWER with the leader in CurrentLeader and its
// address in NodeEndpoints; per-partition error messages are left out, as Kafka leaves them.
// AcquisitionLockTimeoutMs is the group's share.record.lock.duration.ms (0 on top-level
// errors). Kafka's own top-level error responses carry no ErrorMessage; this one sends Kafka's
// message text, which clients only display.
//
// A client that closes its connection while the fetch waits is noticed at once: the connection
// closes, which ends the wait and evicts the member's sessions on this connection.
func (b *Broker) handleShareFetch(cn *conn, req *kmsg.ShareFetchRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
		return resp
	}
	if req.GroupID != nil && !cn.authorizeGroup(acl.OpRead, *req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if err := shareIDsError(req.GroupID, req.MemberID); err != nil {
		return fail(err)
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew {
		if msg := renewLimitsMessage(req); msg != "" {
			return fail(kafkaerr.New(kerr.InvalidRequest, "%s", msg))
		}
	}
	group, member := *req.GroupID, *req.MemberID
	acks, hasAcks := shareFetchAcks(req)
	ss := c.shares.Sessions(b.id)
	f, err := ss.OpenFetch(share.FetchRequest{
		Conn: cn, Group: group, Member: member, Epoch: req.ShareSessionEpoch,
		Partitions: shareFetchPartitions(req), Forgotten: shareFetchForgotten(req), HasAcks: hasAcks,
	})
	if errors.Is(err, kerr.ShareSessionLimitReached) {
		b.idle(cn, req.MaxWaitMillis)
		return fail(err)
	}
	if err != nil {
		return fail(err)
	}
	denied := cn.topicReadDenied()
	if denied != nil {
		f.Deny(denied)
	}
	// Share partitions read and write their state in __share_group_state, which Kafka creates
	// on first use.
	c.ensureInternalTopic(shareGroupStateTopic)
	var outcomes []share.AckOutcome
	if hasAcks {
		allowed, refused := splitDeniedAcks(acks, denied, maxAckType(req.Version), renew)
		outcomes = append(c.shares.Acknowledge(b.id, group, member, allowed, maxAckType(req.Version), renew), refused...)
	}

	fetching := !renew && !f.Final
	if fetching && req.Version >= 2 && req.ShareAcquireMode != 0 && req.ShareAcquireMode != 1 {
		return fail(kafkaerr.New(kerr.UnknownServerError, "Unknown share acquire mode id: %d", req.ShareAcquireMode))
	}
	// The fetch reads nothing when asked for nothing (SharePartitionManager.processShareFetch).
	polled := fetching && req.MaxRecords > 0 && req.MaxBytes > 0
	if polled {
		lim := share.FetchLimits{
			MaxBytes: req.MaxBytes, MinBytes: req.MinBytes, MaxRecords: req.MaxRecords, BatchSize: req.BatchSize,
			MaxWait: time.Duration(req.MaxWaitMillis) * time.Millisecond, Epoch: req.ShareSessionEpoch,
			Done: cn.done, Waiting: func() func() { return watchDrop(cn) },
		}
		if req.Version >= 2 {
			lim.Mode = share.AcquireMode(req.ShareAcquireMode)
		}
		f.Poll(lim)
	}
	var records []shareRecords
	if fetching {
		records = b.shareFetchResponse(resp, f, polled)
	}
	mergeAckOutcomes(resp, outcomes)
	if f.Final {
		ss.Release(group, member)
	}
	resp.AcquisitionLockTimeoutMillis = c.shareLockDurationMs(group)
	return withShareRecords(resp, records)
}

// topicReadDenied returns whether the connection's principal may not READ a topic, by id,
// asking the authorizer once per topic; a topic the cluster does not know is not denied but
// answered as without ACLs. It is nil without an authorizer.
func (cn *conn) topicReadDenied() func(topic [16]byte) bool {
	c := cn.b.c
	if c.authz == nil {
		return nil
	}
	seen := make(map[[16]byte]bool)
	return func(id [16]byte) bool {
		d, ok := seen[id]
		if !ok {
			name := c.topicName(id)
			d = name != "" && !cn.authorizeTopic(acl.OpRead, name)
			seen[id] = d
		}
		return d
	}
}

// splitDeniedAcks takes out the acknowledgements on topics the principal may not read (denied,
// nil for none): Kafka answers them TOPIC_AUTHORIZATION_FAILED without applying them, once its
// checks of the topic id and of the batches, which share.Manager.Acknowledge makes, pass.
func splitDeniedAcks(acks []share.AckPartition, denied func([16]byte) bool, maxType int8, renew bool) (allowed []share.AckPartition, refused []share.AckOutcome) {
	if denied == nil {
		return acks, nil
	}
	allowed = acks[:0:0]
	for _, a := range acks {
		if denied(a.Topic) && share.ValidateBatches(a.Batches, maxType, renew) == nil {
			refused = append(refused, share.AckOutcome{TopicPartition: a.TopicPartition, Code: kerr.TopicAuthorizationFailed.Code})
			continue
		}
		allowed = append(allowed, a)
	}
	return allowed, refused
}

// shareFetchPartitions yields the ShareFetch's partitions, in request order.
func shareFetchPartitions(req *kmsg.ShareFetchRequest) iter.Seq[share.TopicPartition] {
	return func(yield func(share.TopicPartition) bool) {
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				if !yield(share.TopicPartition{Topic: t.TopicID, Partition: t.Partitions[j].Partition}) {
					return
				}
			}
		}
	}
}

// shareFetchForgotten yields the partitions the ShareFetch drops from its session.
func shareFetchForgotten(req *kmsg.ShareFetchRequest) iter.Seq[share.TopicPartition] {
	return func(yield func(share.TopicPartition) bool) {
		for _, ft := range req.ForgottenTopicsData {
			for _, p := range ft.Partitions {
				if !yield(share.TopicPartition{Topic: ft.TopicID, Partition: p}) {
					return
				}
			}
		}
	}
}

// renewLimitsMessage is Kafka's INVALID_REQUEST message for a renew-only ShareFetch that asks
// for data, or "" when it asks for none.
func renewLimitsMessage(req *kmsg.ShareFetchRequest) string {
	var sb strings.Builder
	for _, f := range []struct {
		name string
		v    int32
	}{{"maxBytes", req.MaxBytes}, {"minBytes", req.MinBytes}, {"maxRecords", req.MaxRecords}, {"maxWaitMs", req.MaxWaitMillis}} {
		if f.v != 0 {
			sb.WriteString(f.name + " must be set to 0, ")
		}
	}
	if sb.Len() == 0 {
		return ""
	}
	sb.WriteString("if isRenewAck is true.")
	return sb.String()
}

// shareRecords is the record batches of the response's partition Partitions[partition] of
// Topics[topic]. Partitions added later only go after their topic's others, so the position
// holds.
type shareRecords struct {
	topic, partition int
	batches          [][]byte
}

// shareFetchResponse lists the fetch's partitions in the response, as handleShareFetch says,
// and returns their records, which the response is to refer to.
func (b *Broker) shareFetchResponse(resp *kmsg.ShareFetchResponse, f *share.Fetch, polled bool) []shareRecords {
	var records []shareRecords
	for i, include := range f.Answered(polled) {
		if !include {
			continue
		}
		t := &f.Targets[i]
		rp, ti := appendShareFetchPartition(resp, t.Topic, t.Partition)
		if t.Err != nil {
			rp.ErrorCode = t.Err.Code
			if t.Err == kerr.NotLeaderForPartition {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = t.Placement.Leader, t.Placement.LeaderEpoch
				b.c.appendShareNodeEndpoint(resp, t.Placement.Leader)
			}
			continue
		}
		if t.HasRecords() {
			records = append(records, shareRecords{topic: ti, partition: len(resp.Topics[ti].Partitions) - 1, batches: f.Records(t)})
			rp.AcquiredRecords = make([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, len(t.Ranges))
			for j, r := range t.Ranges {
				rp.AcquiredRecords[j] = kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, DeliveryCount: r.DeliveryCount}
			}
		}
	}
	return records
}

// withShareRecords returns resp with the record batches in it, written from the logs' storage
// without a copy (wire.ShareFetchResponse): a record-limit acquisition of 500 records resends
// its whole stored batch, and copying it into the response and then into the frame took
// 16-19% of the broker's CPU samples (docs/benchmarks.md).
func withShareRecords(resp *kmsg.ShareFetchResponse, records []shareRecords) kmsg.Response {
	if len(records) == 0 {
		return resp
	}
	first := make([]int, len(resp.Topics)) // each topic's first partition in response order
	n := 0
	for i := range resp.Topics {
		first[i] = n
		n += len(resp.Topics[i].Partitions)
	}
	out := make([][][]byte, n)
	for _, r := range records {
		out[first[r.topic]+r.partition] = r.batches
	}
	return &wire.ShareFetchResponse{ShareFetchResponse: resp, Records: out}
}

// appendShareFetchPartition adds a partition, with empty records, to its topic in the
// response, adding the topic after the others if it is new, and returns it and its topic's
// index. Topics keep the order they first appear in.
func appendShareFetchPartition(resp *kmsg.ShareFetchResponse, topic [16]byte, partition int32) (*kmsg.ShareFetchResponseTopicPartition, int) {
	i := len(resp.Topics) - 1
	for ; i >= 0 && resp.Topics[i].TopicID != topic; i-- {
	}
	if i < 0 {
		resp.Topics = append(resp.Topics, kmsg.ShareFetchResponseTopic{TopicID: topic})
		i = len(resp.Topics) - 1
	}
	rt := &resp.Topics[i]
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchResponseTopicPartition())
	rp := &rt.Partitions[len(rt.Partitions)-1]
	rp.Partition = partition
	rp.Records = noShareRecords
	return rp, i
}

// mergeAckOutcomes puts each partition's acknowledgement result in its fetch entry, or in an
// entry of its own with no records (Kafka's combineShareFetchAndShareAcknowledgeResponses).
func mergeAckOutcomes(resp *kmsg.ShareFetchResponse, outcomes []share.AckOutcome) {
	for _, o := range outcomes {
		var rp *kmsg.ShareFetchResponseTopicPartition
	find:
		for i := range resp.Topics {
			if resp.Topics[i].TopicID != o.Topic {
				continue
			}
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == o.Partition {
					rp = &resp.Topics[i].Partitions[j]
					break find
				}
			}
		}
		if rp == nil {
			rp, _ = appendShareFetchPartition(resp, o.Topic, o.Partition)
		}
		rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = o.Code, o.Message
	}
}

// appendShareNodeEndpoint adds the address of node id to the response unless it is there.
func (c *Cluster) appendShareNodeEndpoint(resp *kmsg.ShareFetchResponse, id int32) {
	for _, have := range resp.NodeEndpoints {
		if have.NodeID == id {
			return
		}
	}
	if nb := c.broker(id); nb != nil {
		resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: nb.host, Port: nb.port})
	}
}

// idle waits maxWaitMs on the cluster clock, or until the connection or the cluster closes.
func (b *Broker) idle(cn *conn, maxWaitMs int32) {
	if maxWaitMs <= 0 {
		return
	}
	stopWatch := watchDrop(cn)
	defer stopWatch()
	b.sleep(cn, time.Duration(maxWaitMs)*time.Millisecond, func() {})
}

// watchDrop notices a client closing its connection while one of its requests waits, as Kafka's
// network layer does, and closes the connection at once: that wakes the waiting request, and
// the connection's close then evicts its share sessions and releases their records. Requests
// are handled one at a time, so nothing else reads the connection meanwhile; bytes that arrive
// (a pipelined request) stay buffered for the next read. stop ends the watch and returns once
// the watcher is gone.
func watchDrop(cn *conn) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := cn.r.Peek(1); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				cn.close()
			}
		}
	}()
	return func() {
		cn.interruptRead() // Peek returns at once
		<-done
		cn.resumeRead()
	}
}

// failedShareFetch sets the fetch and acknowledgement error of every partition, with the leader
// unknown (-1) so that a client does not mistake node 0 for the new leader.
func failedShareFetch(r *kmsg.ShareFetchRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrShareFetchResponse()
	resp.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.ShareFetchResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.AcknowledgeErrorCode = p.Partition, code, code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rp.Records = noShareRecords
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func shareFetchScope(c *Cluster, r *kmsg.ShareFetchRequest) (topics, groups []string) {
	s := scope{c: c}
	if r.GroupID != nil {
		s.group(*r.GroupID)
	}
	for _, t := range r.Topics {
		s.topicID(t.TopicID)
	}
	for _, t := range r.ForgottenTopicsData {
		s.topicID(t.TopicID)
	}
	return s.result()
}

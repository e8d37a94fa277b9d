package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/replica"
)

func init() {
	register(0, 3, 13, (*Broker).handleProduce, failedProduce, produceScope)
}

// codecZstd is the compression codec of zstd in a batch's attributes.
const codecZstd = 4

// handleProduce answers Produce v3-13. Topics are named by name up to v12 and by id from v13
// (an unknown id is UNKNOWN_TOPIC_ID). Each partition's records go through the checks of
// Kafka's KafkaApis, ReplicaManager and log, in that order:
//
//   - UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the cluster does not have;
//   - UNSUPPORTED_COMPRESSION_TYPE for zstd before v7;
//   - INVALID_REQUIRED_ACKS for every remaining partition when acks is not 0, 1 or -1;
//   - NOT_LEADER_OR_FOLLOWER on a broker that does not lead the partition, with the leader in
//     CurrentLeader and its address in Brokers from v10, so that clients move at once;
//   - for a transactional batch, the transaction check of KIP-890 (txnProduceError);
//   - the log's own refusals (see package log): CORRUPT_MESSAGE, INVALID_RECORD,
//     MESSAGE_TOO_LARGE, INVALID_TIMESTAMP and the idempotent producer's
//     INVALID_PRODUCER_EPOCH and OUT_OF_ORDER_SEQUENCE_NUMBER, and INVALID_TXN_STATE for a
//     non-transactional batch of a producer whose transaction is ongoing. A refused batch
//     appends nothing.
//
// A partition that fails gets BaseOffset -1; ErrorMessage (v8+) is set where Kafka sets one.
// LogStartOffset (v5+) is the partition's log start offset, except where Kafka sends -1: for
// unknown partitions, request-level refusals, corrupt and too large batches. A retried batch of
// an idempotent producer succeeds with the offset it was first appended at.
//
// With acks 0 and 1 the response goes out once the leader has appended; with -1 (all) the
// append needs at least min.insync.replicas in the ISR (NOT_ENOUGH_REPLICAS otherwise, nothing
// appended) and the response waits for the ISR to replicate it (awaitReplication). Consumers
// read only up to the high watermark either way: a single-replica partition's moves at the
// append. With acks 0 there is no response; if any partition failed, the connection is closed
// instead, as Kafka does, so that the producer notices and refreshes its metadata.
func (b *Broker) handleProduce(cn *conn, req *kmsg.ProduceRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TransactionID != nil && !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID) {
		return failedProduce(req, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	var now time.Time // read once, at the first append
	failed := false
	var pending []pendingAck // acks=all appends waiting for the ISR
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *metadata.Topic
		unknownTopic := kerr.UnknownTopicOrPartition
		if req.Version >= 13 {
			t, unknownTopic = c.meta.TopicByID(rt.TopicID), kerr.UnknownTopicID
		} else {
			t = c.meta.Topic(rt.Topic)
		}
		name := rt.Topic
		if t != nil {
			name = t.Name
		}
		denied := (t != nil || req.Version < 13) && !cn.authorizeTopic(acl.OpWrite, name)
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			var p *replica.Partition
			var st *replica.State
			var err error
			if t != nil {
				if p = c.meta.Partition(t, rp.Partition); p != nil {
					st = p.State()
				}
			}
			switch {
			case denied:
				err = kerr.TopicAuthorizationFailed
			case t == nil:
				err = unknownTopic
			case p == nil:
				err = kerr.UnknownTopicOrPartition
			case req.Version < 7 && isZstd(rp.Records):
				err = kerr.UnsupportedCompressionType
			case !acksValid:
				err = kerr.InvalidRequiredAcks
			case isInternalTopic(t.Name):
				err = errInternalTopicAppend(t.Name)
			case b.leaderError(st, -1) != nil:
				err = kerr.NotLeaderForPartition
				if req.Version >= 10 {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
					resp.Brokers = c.appendProduceBroker(resp.Brokers, st.Leader)
				}
			default:
				if req.TransactionID != nil {
					if err = c.txnProduceError(*req.TransactionID, req.Version, t.Name, rp.Partition, rp.Records); err != nil {
						break
					}
				}
				if now.IsZero() {
					now = c.clock.Now()
				}
				minISR := 0 // only acks=all reads min.insync.replicas: no config lookup for the others
				if req.Acks == -1 {
					minISR = c.configs.MinInSyncReplicas(c.meta.TopicConfigs(t))
				}
				var end int64
				if end, err = b.appendProduced(p, st, rp.Records, now, req.Acks, minISR, sp); err == nil && req.Acks == -1 {
					pending = append(pending, pendingAck{p: p, st: st, end: end, minISR: minISR, sp: sp})
				}
			}
			if err != nil {
				failed = true
				sp.ErrorCode = codeOf(err)
				sp.ErrorMessage = messageOf(err)
				if st != nil && keepsLogStartOffset(err) {
					sp.LogStartOffset = st.LeaderLog().LogStartOffset()
				}
			}
		}
	}
	b.awaitReplication(cn, pending, req.TimeoutMillis)
	if req.Acks == 0 {
		if failed {
			c.logger.Info("closing connection: acks=0 produce failed on some partition", "broker", b.id, "remote", cn.nc.RemoteAddr().String())
			cn.nc.Close()
		}
		return nil
	}
	return resp
}

// appendProduced appends one partition's records on its leader (replica.Partition.AppendAsLeader,
// which refuses an acks=all produce while the ISR is below min.insync.replicas), fills the
// partition's response and returns the log end offset after the batch. The records alias the
// request frame, which is never reused, so the log may keep them without a copy.
func (b *Broker) appendProduced(p *replica.Partition, st *replica.State, records []byte, now time.Time, acks int16, minISR int, sp *kmsg.ProduceResponseTopicPartition) (int64, error) {
	res, err := p.AppendAsLeader(st, records, now, acks, minISR)
	if err != nil {
		return 0, err
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = st.LeaderLog().LogStartOffset()
	h, _ := log.ParseHeader(records) // the append parsed it already
	return res.BaseOffset + int64(h.LastOffsetDelta) + 1, nil
}

// pendingAck is an acks=all append waiting for the ISR: Kafka's DelayedProduce status of one
// partition.
type pendingAck struct {
	p      *replica.Partition
	st     *replica.State
	end    int64
	minISR int
	sp     *kmsg.ProduceResponseTopicPartition
}

// awaitReplication holds an acks=all produce until the high watermark of every partition it
// appended to covers its batch, within the request's timeout on the cluster clock, as Kafka's
// DelayedProduce does. A partition that is not covered in time gets REQUEST_TIMED_OUT, one
// whose ISR shrank below min.insync.replicas meanwhile NOT_ENOUGH_REPLICAS_AFTER_APPEND, one
// whose leader changed NOT_LEADER_OR_FOLLOWER; each keeps its BaseOffset, as with Kafka, since
// the records are in the leader's log. A closed connection (a stopped broker) ends the wait.
func (b *Broker) awaitReplication(cn *conn, pending []pendingAck, timeoutMs int32) {
	if len(pending) == 0 {
		return
	}
	expired := make(chan struct{})
	if timeoutMs <= 0 {
		close(expired)
	} else {
		t := b.c.clock.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() { close(expired) })
		defer t.Stop()
	}
	for _, w := range pending {
		if err := w.p.WaitReplicated(w.st, w.end, w.minISR, expired, b.c.closed, cn.done); err != nil {
			w.sp.ErrorCode = codeOf(err)
		}
	}
}

// keepsLogStartOffset reports whether Kafka sends the partition's log start offset with err:
// it does for refusals of the log's validation and of the idempotent producer checks, and
// sends -1 for corrupt and too large batches and for refusals before the log.
func keepsLogStartOffset(err error) bool {
	var ce *log.CorruptError
	return !errors.As(err, &ce) &&
		!errors.Is(err, kerr.MessageTooLarge) && !errors.Is(err, kerr.UnsupportedCompressionType) &&
		!errors.Is(err, kerr.InvalidRequiredAcks) && !errors.Is(err, kerr.NotLeaderForPartition)
}

// isZstd reports whether the first batch of records is zstd-compressed. Records too short to
// tell are left to the log, which refuses them.
func isZstd(records []byte) bool {
	h, err := log.ParseHeader(records)
	return err == nil && h.Magic == 2 && h.Attributes&0x07 == codecZstd
}

// leaderError returns the error a request that must reach the partition's leader gets on this
// broker, or nil. currentEpoch is the leader epoch the client believes in (-1: unknown).
func (b *Broker) leaderError(st *replica.State, currentEpoch int32) *kerr.Error {
	return b.replicaError(st, currentEpoch, true)
}

// replicaError returns the error a request for the partition gets on this broker, or nil. As
// in Kafka's Partition: a broker that holds no replica answers NOT_LEADER_OR_FOLLOWER at once;
// a replica first checks currentEpoch (-1: not checked; older than the partition's:
// FENCED_LEADER_EPOCH; newer: UNKNOWN_LEADER_EPOCH), then, if requireLeader, whether it leads.
func (b *Broker) replicaError(st *replica.State, currentEpoch int32, requireLeader bool) *kerr.Error {
	isLeader := st.Leader == b.id
	if !isLeader && !st.IsReplica(b.id) {
		return kerr.NotLeaderForPartition
	}
	switch {
	case currentEpoch == -1:
	case currentEpoch < st.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case currentEpoch > st.LeaderEpoch:
		return kerr.UnknownLeaderEpoch
	}
	if requireLeader && !isLeader {
		return kerr.NotLeaderForPartition
	}
	return nil
}

// appendProduceBroker adds the address of node id to brokers unless it is there already.
func (c *Cluster) appendProduceBroker(brokers []kmsg.ProduceResponseBroker, id int32) []kmsg.ProduceResponseBroker {
	for _, have := range brokers {
		if have.NodeID == id {
			return brokers
		}
	}
	if nb := c.broker(id); nb != nil {
		brokers = append(brokers, kmsg.ProduceResponseBroker{NodeID: id, Host: nb.host, Port: nb.port})
	}
	return brokers
}

// failedProduce answers every partition with code and BaseOffset -1. A Produce with acks=0
// gets no response (nil): Kafka closes the connection instead.
func failedProduce(r *kmsg.ProduceRequest, code int16) kmsg.Response {
	if r.Acks == 0 {
		return nil
	}
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

func produceScope(c *Cluster, r *kmsg.ProduceRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.nameOrID(t.Topic, t.TopicID)
	}
	return s.result()
}

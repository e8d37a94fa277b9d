package server

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/log"
)

func init() {
	register(0, 3, 13, (*Broker).handleProduce, failedProduce, produceScope)
}

// errTransactionalProduce refuses a produce request that carries a transactional id or a
// transactional or control batch. It has the code the log package refuses transactional batches
// with (INVALID_RECORD: the code Kafka gives clients that write control batches, final for every
// client) and, unlike InitProducerId's refusal, a message the response can carry (v8+).
var errTransactionalProduce = errorf(kerr.InvalidRecord, "testbroker does not implement transactions")

// codecZstd is the compression codec of zstd in a batch's attributes.
const codecZstd = 4

// handleProduce answers Produce v3-13. Topics are named by name up to v12 and by id from v13
// (an unknown id is UNKNOWN_TOPIC_ID). Each partition's records go through the checks of
// Kafka's KafkaApis, ReplicaManager and log, in that order:
//
//   - UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the cluster does not have;
//   - INVALID_RECORD with "testbroker does not implement transactions" when the request has a
//     transactional id (a transactional batch gets the same from the log), and
//     UNSUPPORTED_COMPRESSION_TYPE for zstd before v7;
//   - INVALID_REQUIRED_ACKS for every remaining partition when acks is not 0, 1 or -1;
//   - NOT_LEADER_OR_FOLLOWER on a broker that does not lead the partition, with the leader in
//     CurrentLeader and its address in Brokers from v10, so that clients move at once;
//   - the log's own refusals (see package log): CORRUPT_MESSAGE, INVALID_RECORD,
//     MESSAGE_TOO_LARGE, INVALID_TIMESTAMP and the idempotent producer's
//     INVALID_PRODUCER_EPOCH and OUT_OF_ORDER_SEQUENCE_NUMBER. A refused batch appends nothing.
//
// A partition that fails gets BaseOffset -1; ErrorMessage (v8+) is set where Kafka sets one
// and for the refusal of transactions.
// LogStartOffset (v5+) is the partition's log start offset, except where Kafka sends -1: for
// unknown partitions, request-level refusals, corrupt and too large batches. A retried batch of
// an idempotent producer succeeds with the offset it was first appended at.
//
// Every partition has a single copy, so acks 1 and -1 mean the same: the high watermark moves
// to the log end offset right after the append and the records are readable at once. With acks
// 0 there is no response; if any partition failed, the connection is closed instead, as Kafka
// does, so that the producer notices and refreshes its metadata.
func (b *Broker) handleProduce(cn *conn, req *kmsg.ProduceRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	var now time.Time // read once, at the first append
	failed := false
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *Topic
		unknownTopic := kerr.UnknownTopicOrPartition
		if req.Version >= 13 {
			t, unknownTopic = c.topicByID(rt.TopicID), kerr.UnknownTopicID
		} else {
			t = c.topic(rt.Topic)
		}
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			var p *Partition
			var err error
			if t != nil {
				p = c.partition(t, rp.Partition)
			}
			switch {
			case t == nil:
				err = unknownTopic
			case p == nil:
				err = kerr.UnknownTopicOrPartition
			case req.TransactionID != nil:
				err = errTransactionalProduce
			case req.Version < 7 && isZstd(rp.Records):
				err = kerr.UnsupportedCompressionType
			case !acksValid:
				err = kerr.InvalidRequiredAcks
			case b.leaderError(p, -1) != nil:
				err = kerr.NotLeaderForPartition
				if req.Version >= 10 {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = p.Leader, p.LeaderEpoch
					resp.Brokers = c.appendProduceBroker(resp.Brokers, p.Leader)
				}
			default:
				if now.IsZero() {
					now = c.clock.Now()
				}
				err = b.appendProduced(p, rp.Records, now, sp)
			}
			if err != nil {
				failed = true
				sp.ErrorCode = codeOf(err)
				sp.ErrorMessage = messageOf(err)
				if p != nil && keepsLogStartOffset(err) {
					sp.LogStartOffset = p.Log.LogStartOffset()
				}
			}
		}
	}
	if req.Acks == 0 {
		if failed {
			c.logger.Info("closing connection: acks=0 produce failed on some partition", "broker", b.id, "remote", cn.nc.RemoteAddr().String())
			cn.nc.Close()
		}
		return nil
	}
	return resp
}

// appendProduced appends one partition's records, fills the partition's response and moves
// the high watermark to the log end offset (every partition has a single copy). The records
// alias the request frame, which is never reused, so the log may keep them without a copy.
func (b *Broker) appendProduced(p *Partition, records []byte, now time.Time, sp *kmsg.ProduceResponseTopicPartition) error {
	res, err := p.Log.Append(records, now)
	if err != nil {
		if errors.Is(err, log.ErrTransactionalUnsupported) {
			return errTransactionalProduce
		}
		return err
	}
	// The log clamps the watermark to its end offset under its own lock, so this moves it to
	// the end offset of this moment: a racing append of another producer can only be included,
	// never make the watermark step back.
	p.Log.SetHighWatermark(math.MaxInt64)
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = p.Log.LogStartOffset()
	return nil
}

// keepsLogStartOffset reports whether Kafka sends the partition's log start offset with err:
// it does for refusals of the log's validation and of the idempotent producer checks, and
// sends -1 for corrupt and too large batches and for refusals before the log.
func keepsLogStartOffset(err error) bool {
	var ce *log.CorruptError
	return !errors.As(err, &ce) && err != errTransactionalProduce &&
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
func (b *Broker) leaderError(p *Partition, currentEpoch int32) *kerr.Error {
	return b.replicaError(p, currentEpoch, true)
}

// replicaError returns the error a request for the partition gets on this broker, or nil. As
// in Kafka's Partition: a broker that holds no replica answers NOT_LEADER_OR_FOLLOWER at once;
// a replica first checks currentEpoch (-1: not checked; older than the partition's:
// FENCED_LEADER_EPOCH; newer: UNKNOWN_LEADER_EPOCH), then, if requireLeader, whether it leads.
func (b *Broker) replicaError(p *Partition, currentEpoch int32, requireLeader bool) *kerr.Error {
	isLeader := p.Leader == b.id
	if !isLeader && !slices.Contains(p.Replicas, b.id) {
		return kerr.NotLeaderForPartition
	}
	switch {
	case currentEpoch == -1:
	case currentEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case currentEpoch > p.LeaderEpoch:
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

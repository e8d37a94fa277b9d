package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

func init() {
	register(24, 0, 5, (*Broker).handleAddPartitionsToTxn, failedAddPartitionsToTxn, addPartitionsToTxnScope)
}

// handleAddPartitionsToTxn answers AddPartitionsToTxn: v0-3 is a client's add of partitions to
// its transaction; v4-5 is the brokers' batch form, one entry per transactional id, each an add
// (v5: the implicit add of a TV2 produce) or, with VerifyOnly, KIP-890's check that the
// partitions are in the transaction (TRANSACTION_ABORTABLE for one that is not). As in Kafka's
// KafkaApis, partitions the cluster does not have are UNKNOWN_TOPIC_OR_PARTITION and the
// others of their transaction OPERATION_NOT_ATTEMPTED; otherwise the coordinator's error
// (txn.Coordinator.AddPartitions) is every partition's. A transactional id this broker does
// not coordinate is NOT_COORDINATOR.
func (b *Broker) handleAddPartitionsToTxn(cn *conn, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// From v4 only brokers send it, with CLUSTER_ACTION; before, the producer, with WRITE on
	// its transactional id.
	if (req.Version >= 4 && !cn.authorizeCluster(acl.OpClusterAction)) ||
		(req.Version < 4 && !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID)) {
		code := kerr.ClusterAuthorizationFailed.Code
		if req.Version < 4 {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return failedAddPartitionsToTxn(req, code)
	}
	if req.Version < 4 {
		if resp, denied := cn.deniedAddPartitionsToTxn(req); denied {
			return resp
		}
		topics := make([]kmsg.AddPartitionsToTxnRequestTransactionTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions}
		}
		one := kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Topics: topics}
		for _, t := range b.addPartitionsToTxn(&one, txn.V0) {
			rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	v := txn.V0
	if req.Version >= 5 {
		v = txn.V2
	}
	for i := range req.Transactions {
		rt := &req.Transactions[i]
		resp.Transactions = append(resp.Transactions, kmsg.AddPartitionsToTxnResponseTransaction{
			TransactionalID: rt.TransactionalID, Topics: b.addPartitionsToTxn(rt, v)})
	}
	return resp
}

// addPartitionsToTxn adds (or verifies) one transaction's partitions and returns each
// partition's code.
func (b *Broker) addPartitionsToTxn(rt *kmsg.AddPartitionsToTxnRequestTransaction, v txn.Version) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	c := b.c
	var parts []txn.TopicPartition
	unknown := map[txn.TopicPartition]bool{}
	for _, t := range rt.Topics {
		topic := c.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			if c.meta.Partition(topic, p) == nil {
				unknown[tp] = true
			}
			parts = append(parts, tp)
		}
	}
	codes := make([]error, len(parts))
	var all error
	switch {
	case rt.TransactionalID == "":
		all = kerr.InvalidRequest
	case len(unknown) > 0:
		for i, tp := range parts {
			codes[i] = kerr.OperationNotAttempted
			if unknown[tp] {
				codes[i] = kerr.UnknownTopicOrPartition
			}
		}
	case c.txnCoordinatorFor(rt.TransactionalID) != b.id:
		all = kerr.NotCoordinator
	case rt.VerifyOnly:
		codes, all = c.txns.VerifyPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, parts)
	default:
		all = c.txns.AddPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, parts, v)
	}
	var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
	i := 0
	for _, t := range rt.Topics {
		ot := kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			err := all
			if err == nil {
				err = codes[i]
			}
			ot.Partitions = append(ot.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: codeOf(err)})
			i++
		}
		out = append(out, ot)
	}
	return out
}

func failedAddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, tx := range req.Transactions {
		rtx := kmsg.AddPartitionsToTxnResponseTransaction{TransactionalID: tx.TransactionalID}
		for _, t := range tx.Topics {
			rt := kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: code})
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp
}

func addPartitionsToTxnScope(c *Cluster, req *kmsg.AddPartitionsToTxnRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range req.Topics {
		s.topic(t.Topic)
	}
	for _, tx := range req.Transactions {
		for _, t := range tx.Topics {
			s.topic(t.Topic)
		}
	}
	return s.result()
}

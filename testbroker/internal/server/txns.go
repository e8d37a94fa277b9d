package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

// newTxnCoordinator returns the cluster's transaction coordinator. Like the group coordinator
// it is one for the whole cluster, so that transactions survive the restart of any broker;
// each broker answers only for the transactional ids it coordinates (txnCoordinatorFor) and
// NOT_COORDINATOR for the others, as Kafka's brokers do.
func (c *Cluster) newTxnCoordinator() *txn.Coordinator {
	return txn.NewCoordinator(txn.Config{
		Clock:           c.clock,
		Settings:        func() txn.Settings { return c.configs.Snapshot().Txn },
		NewProducerID:   c.producerIDs.allocate,
		WriteMarker:     c.writeTxnMarker,
		EndGroupOffsets: c.groups.EndTxnOffsets,
		GroupPartition: func(group string) int32 {
			return javaAbs(javaHashCode(group)) % c.configs.Snapshot().OffsetsTopicPartitions
		},
	})
}

// writeTxnMarker writes a transaction's end marker to the partition's leader. In Kafka the
// coordinator sends WriteTxnMarkers to the leaders; here it appends to the leader's log
// directly (WriteTxnMarker, with WriteTxnMarkers' checks: the ISR must hold
// min.insync.replicas, and a TV2 marker must carry an epoch above the producer's, KIP-1228).
// The coordinator keeps a marker that found no leader or too small an ISR pending, and retries
// it after every change of leader and at each timeout check; it drops one refused for good (a
// stale epoch, a deleted partition), as Kafka's coordinator does (txn.Config.WriteMarker).
func (c *Cluster) writeTxnMarker(tp txn.TopicPartition, producerID int64, producerEpoch int16, commit bool, v txn.Version) error {
	_, err := c.WriteTxnMarker(tp.Topic, tp.Partition, producerID, producerEpoch, commit, txnCoordinatorEpoch, int16(v))
	return err
}

// txnCoordinatorEpoch is the coordinator epoch of every marker: the coordinator is one for the
// whole cluster and never moves, so its epoch never changes.
const txnCoordinatorEpoch = 0

// txnVerifyError is the error a produce or TxnOffsetCommit gets when the transaction check
// fails, converted for clients as Kafka's AddPartitionsToTxnManager and ReplicaManager do:
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; a partition not in the transaction is
// TRANSACTION_ABORTABLE for versions that know it and INVALID_TXN_STATE ("Partition was not
// added to the transaction") before; a coordinator busy ending the transaction is
// NOT_ENOUGH_REPLICAS, which every client retries without refreshing its metadata.
func txnVerifyError(err error, abortableSupported bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, kerr.TransactionAbortable) && abortableSupported:
		return err
	case errors.Is(err, kerr.TransactionAbortable), errors.Is(err, kerr.InvalidTxnState):
		return kafkaerr.New(kerr.InvalidTxnState, "Partition was not added to the transaction")
	case errors.Is(err, kerr.ConcurrentTransactions):
		return kafkaerr.New(kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS")
	}
	return err
}

// attrTransactional is the transactional bit of a batch's attributes.
const attrTransactional = 0x10

// txnProduceError checks a transactional batch against its producer's transaction before the
// append, as Kafka 4.x does: from Produce v12 (a TV2 client) the partition joins the
// transaction (txn.Coordinator.AddPartitions); before, it must have been added with
// AddPartitionsToTxn (KIP-890 part 1's verification: INVALID_TXN_STATE, or
// TRANSACTION_ABORTABLE from v11, when it was not). Errors are converted for clients by
// txnVerifyError; an unknown producer is INVALID_PRODUCER_ID_MAPPING. Batches that are not
// transactional, or too short to tell, are left to the log.
func (c *Cluster) txnProduceError(txnID string, version int16, topic string, partition int32, records []byte) error {
	h, err := log.ParseHeader(records)
	if err != nil || h.Magic != 2 || h.Attributes&attrTransactional == 0 {
		return nil
	}
	tp := []txn.TopicPartition{{Topic: topic, Partition: partition}}
	if version >= 12 {
		return txnVerifyError(c.txns.AddPartitions(txnID, h.ProducerID, h.ProducerEpoch, tp, txn.V2), true)
	}
	errs, err := c.txns.VerifyPartitions(txnID, h.ProducerID, h.ProducerEpoch, tp)
	if err == nil {
		err = errs[0]
	}
	return txnVerifyError(err, version >= 11)
}

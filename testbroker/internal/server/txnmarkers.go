package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// WriteTxnMarker writes an end transaction marker (COMMIT when commit is set, ABORT otherwise)
// for producerID at producerEpoch, of a transaction of transactionVersion (WriteTxnMarkers'
// TransactionVersion), into a partition's leader log, as Kafka's WriteTxnMarkers request has a
// partition leader do: the topic's min.insync.replicas applies as to an acks=all
// produce (NOT_ENOUGH_REPLICAS), and the log's checks (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED) refuse a stale marker. An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, a partition without a leader NOT_LEADER_OR_FOLLOWER. It returns
// the marker's offset; the marker is replicated as any batch is, and does not wait for it.
func (c *Cluster) WriteTxnMarker(topic string, partition int32, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, transactionVersion int16) (int64, error) {
	t := c.meta.Topic(topic)
	p := c.meta.Partition(t, partition)
	if p == nil {
		return -1, kerr.UnknownTopicOrPartition
	}
	st := p.State()
	if st.LeaderLog() == nil {
		return -1, kerr.NotLeaderForPartition
	}
	minISR := c.configs.MinInSyncReplicas(c.meta.TopicConfigs(t))
	return p.AppendTxnMarkerAsLeader(st, producerID, producerEpoch, commit, coordinatorEpoch, transactionVersion, minISR)
}

// Package txn is the cluster's transaction coordinator: Kafka's TransactionCoordinator and
// TransactionStateManager. It keeps, per transactional id, the producer id and epoch, the
// transaction's state, the partitions and groups it wrote to, its timeout and the transaction
// version the client speaks (classic, or KIP-890's TV2 with an epoch bump per transaction), and
// it runs InitProducerId, AddPartitionsToTxn (adding and verifying), AddOffsetsToTxn, EndTxn,
// the abort of timed-out transactions and DescribeTransactions/ListTransactions.
//
// Kafka's coordinator persists every transition in __transaction_state and sends the end
// markers to the partitions' leaders with WriteTxnMarkers. Here the state is in memory, for the
// whole cluster, so it survives the restart of any broker; markers are written through
// Config.WriteMarker as soon as a transaction ends, and a marker whose partition has no leader
// stays pending (the transaction stays in PrepareCommit or PrepareAbort) until RetryMarkers
// writes it.
package txn

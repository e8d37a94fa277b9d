// Package log stores the log of one Kafka partition for the test broker.
//
// Record batches are kept exactly as the producer encoded them: the package reads the 61-byte
// header of each v2 batch and never decodes, decompresses or re-encodes the records behind it.
// Appending a batch stores its bytes, copying a small batch into shared storage and keeping a
// large one where the caller had it, and writes the offsets the log assigns into the
// BaseOffset field and the partition's leader epoch into the PartitionLeaderEpoch field; both
// lie before the CRC-covered part of the batch, so the producer's CRC stays valid. Only a topic
// whose message.timestamp.type is LogAppendTime makes the log rewrite covered bytes (the
// timestamp type and MaxTimestamp), and then it recomputes the CRC, as Kafka does.
//
// A fetch reads whole stored batches: it starts with the batch that holds the fetch offset, so
// a consumer may receive records before the offset it asked for and skips them, exactly as it
// does with Kafka.
//
// # Replication
//
// Each broker keeps its own Partition per replica. The leader's log appends with Append in the
// epoch StartLeaderEpoch (or SetLeaderEpoch) set; a follower's log appends with
// AppendReplicated the records field of the leader's fetch response, byte for byte: the batches
// keep the leader's BaseOffset and PartitionLeaderEpoch, so the follower's storage, offsets and
// epochs are the leader's, and the follower's AppendSpans serve the same bytes once it leads.
// AppendReplicated copies what it keeps, ignores a partial batch at the end of the records,
// checks each batch's frame and CRC and refuses all of them if one fails, and requires the
// batches to continue the log exactly (see AppendReplicated for the one exception, a log whose
// start fell inside a batch). The high watermark stays the caller's in both roles.
//
// Both paths keep a leader epoch cache, Kafka's LeaderEpochFileCache: the (epoch, start offset)
// of each epoch the log's batches were written in. EndOffsetForEpoch answers OffsetForLeaderEpoch
// with Kafka's rules, DivergingEpoch applies a fetch's LastFetchedEpoch check, and
// LogEndOffsetAndEpoch gives a follower its next FetchOffset and LastFetchedEpoch. Both paths
// also keep the idempotent producers' state, so that a follower that becomes leader dedups a
// retry and checks sequences as the old leader did.
//
// # Transactions
//
// A transactional batch (attribute bit 0x10) of a producer with no ongoing transaction here
// starts one at its base offset; the transaction coordinator ends it with AppendTxnMarker, which
// appends a control batch (COMMIT or ABORT) like any other batch, so that followers replicate
// it. The log keeps Kafka's transaction state per producer (ProducerStateEntry's current
// transaction and coordinator epoch) and per partition: the ongoing transactions, the aborted
// transaction index (TxnIndex) that AbortedTransactions reads, and the completed transactions
// whose marker is not below the high watermark yet. LastStableOffset is the first offset of the
// earliest of those, capped at the high watermark: read_committed readers read below it. A
// follower rebuilds all of it from the batches it replicates, and a truncation replays the
// batches that remain, so after a leader move the new leader knows the ongoing transactions.
//
// A follower whose log diverged truncates with TruncateTo, which cuts at a batch boundary and
// trims the epoch cache, the producer states, the timestamp index and the high watermark to
// what is left; one below the leader's log start offset starts again with
// TruncateFullyAndStartAt. Removed bytes are forgotten, never reused, so slices handed to readers
// stay valid.
//
// # Errors
//
// Every refusal wraps the *kerr.Error whose code the broker sends back, so that
// errors.Is(err, kerr.CorruptMessage) holds and errors.As(err, &ke) with ke a *kerr.Error gives
// the code; Error() is a message fit for a response's error message field. Produce-side
// refusals follow Kafka 4.x (ProduceRequest.validateRecords, UnifiedLog and LogValidator):
//
//   - CORRUPT_MESSAGE (2), as *CorruptError: a batch frame that does not fit the bytes, a magic
//     byte outside 0..2, a CRC mismatch, an unknown compression codec.
//   - INVALID_RECORD (87): no batch at all, a magic byte of 0 or 1, more than one batch in one
//     produce, a non-zero BaseOffset, a record count that disagrees with LastOffsetDelta, an
//     idempotent batch with a negative sequence, and control batches: only AppendTxnMarker
//     writes those.
//   - MESSAGE_TOO_LARGE (10): a batch larger than the topic's max.message.bytes.
//   - INVALID_TIMESTAMP (32): a producer that set the LogAppendTime timestamp type itself on a
//     LogAppendTime topic.
//   - INVALID_PRODUCER_EPOCH (47) and OUT_OF_ORDER_SEQUENCE_NUMBER (45): idempotent producer
//     checks (see Partition.Append); INVALID_PRODUCER_EPOCH also for a marker of an older
//     epoch (see Partition.AppendTxnMarker).
//   - INVALID_TXN_STATE (48): a non-transactional batch of a producer whose transaction is
//     ongoing.
//   - TRANSACTION_COORDINATOR_FENCED (52): a marker whose coordinator epoch is older than the
//     one of the producer's previous marker.
//   - OFFSET_OUT_OF_RANGE (1): a read outside the log; a DivergingEpoch check whose epoch the
//     log cannot place or whose offset is below the log start offset.
//
// Replication refusals, which no client sees but which carry a code all the same: AppendReplicated
// refuses damaged batches with CORRUPT_MESSAGE and unsupported ones with INVALID_RECORD as above,
// and offsets that do not continue the log with *UnexpectedOffsetError, UNKNOWN_SERVER_ERROR (-1),
// as Kafka's exceptions for them have no code; truncating to a negative offset is
// UNKNOWN_SERVER_ERROR too.
package log

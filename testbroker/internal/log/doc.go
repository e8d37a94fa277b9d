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
//     idempotent batch with a negative sequence, and transactional or control batches
//     (ErrTransactionalUnsupported).
//   - MESSAGE_TOO_LARGE (10): a batch larger than the topic's max.message.bytes.
//   - INVALID_TIMESTAMP (32): a producer that set the LogAppendTime timestamp type itself on a
//     LogAppendTime topic.
//   - INVALID_PRODUCER_EPOCH (47) and OUT_OF_ORDER_SEQUENCE_NUMBER (45): idempotent producer
//     checks (see Partition.Append).
//   - OFFSET_OUT_OF_RANGE (1): a read outside the log.
package log

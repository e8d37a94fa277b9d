// Package errors holds every error of the kshare SDK: the sentinels and error types that
// shareconsumer and the other packages return, in one place.
//
// The package shadows the standard library's name on purpose and stands in for it: call sites
// read as errors.ErrClosed or errors.LockLostError, and Is, As, New, Join and Unwrap are the
// standard library's, so a file that handles kshare errors imports this package, as errors, and
// not the standard library's. (This package itself imports the standard library's as
// stderrors.)
//
// There are five kinds of error:
//
//   - sentinels (ErrClosed, ErrUnacknowledgedRecords, ...) for conditions: test them with Is;
//     they may arrive wrapped with details;
//   - result structs for what Kafka refused: AckError for the acknowledgements of one partition,
//     FatalError for a member the group coordinator will not keep (GROUP_AUTHORIZATION_FAILED
//     among others), PartitionError and BrokerError for a fetch a broker refused,
//     TopicAuthorizationError for topics the consumer may not read; get them with As;
//   - AuthenticationError for a broker that refused the consumer's credentials (SASL) or TLS
//     handshake, wrapping kgo's cause;
//   - KafkaError, from FromKafka, for any error code Kafka sent, keeping its message;
//   - the consumer's own error types: CorruptBatchError for a record batch it could not decode,
//     PollTimeoutError for a Poll that ended without records, and, from shareconsumer's Process,
//     LockLostError for a lost acquisition lock and PanicError for a handler that panicked.
//     Reject marks a handler's error as a rejection, DeadLetter as a poison record's (sent to the
//     dead-letter topic), and DeadLetterError reports a copy that could not be produced there.
//
// Wherever Kafka sent an error code, the chain ends at franz-go's kerr value for that code, so
// Is(err, kerr.InvalidRecordState) works through every wrapper, and As with a *kerr.Error
// returns the code's name and description.
package errors

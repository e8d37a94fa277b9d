// Package errors holds the typed errors of the kshare SDK.
//
// The package shadows the standard library's name on purpose: call sites read as
// errors.ErrClosed or errors.AckError, and Is and As forward to the standard library, so a file
// that handles kshare errors needs only this import. A file that needs more of the standard
// package imports it under another name, as this package does (stderrors).
//
// There are three kinds of error:
//
//   - sentinels (ErrClosed, ErrUnacknowledgedRecords, ...) for conditions: test them with Is;
//     they may arrive wrapped with details;
//   - result structs for what Kafka refused: AckError for the acknowledgements of one partition,
//     FatalError for a member the group coordinator will not keep; get them with As;
//   - KafkaError, from FromKafka, for any error code Kafka sent, keeping its message.
//
// Wherever Kafka sent an error code, the chain ends at franz-go's kerr value for that code, so
// Is(err, kerr.InvalidRecordState) works through every wrapper, and As with a *kerr.Error
// returns the code's name and description.
package errors

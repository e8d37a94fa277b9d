package errors

import (
	stderrors "errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/internal/offsetfmt"
)

// ErrRecordLimitUnsupported: shareconsumer.RecordLimitAcquire is set and a partition leader does
// not take the record-limit acquire mode (ShareFetch v2, Kafka 4.2). shareconsumer's Poll returns
// it, wrapped with the broker's id, and fetches nothing from that leader; drop the option or
// upgrade the broker.
var ErrRecordLimitUnsupported = stderrors.New("the record-limit acquire mode needs ShareFetch v2 (Kafka 4.2) on the partition leader")

// ErrTooManyAcquired: a ShareFetch answer acquired more than 1048576 offsets of one partition,
// more than any Kafka broker hands out at once (it keeps at most
// group.share.partition.max.record.locks, 10000 at the most, in flight). shareconsumer's Poll
// returns it in a *PartitionError, once; the consumer takes nothing of that answer for the
// partition and acknowledges none of it, so the broker releases the offsets when their locks
// expire.
var ErrTooManyAcquired = stderrors.New("the broker acquired more than 1048576 offsets of the partition in one answer")

// CorruptBatchError is returned by shareconsumer's Poll, once, for a record batch the consumer
// could not decode (CRC mismatch, unknown compression, malformed records). As Kafka's client
// does, the consumer rejects every acquired offset of the batch on its own, so that the broker
// never delivers it again; the application may acknowledge any of Offsets otherwise with
// AcknowledgeOffset (in explicit mode) before the next Poll or commit sends the
// acknowledgements. The records around the batch are returned by the Polls before and after
// this one.
//
// errors.Is(err, kerr.CorruptMessage) reports true for it.
type CorruptBatchError struct {
	Topic     string
	Partition int32
	Offsets   []int64 // the acquired offsets of the batch, in order
	Err       error   // why the batch could not be decoded
}

// Error returns, for example, "shareconsumer: corrupt record batch in orders-3 (offsets 10-19,
// rejected unless acknowledged otherwise): record batch at offsets 10-19 fails its CRC check
// (...)".
func (e *CorruptBatchError) Error() string {
	return "shareconsumer: corrupt record batch in " + e.Topic + "-" + strconv.Itoa(int(e.Partition)) +
		" (" + offsetfmt.Describe(e.Offsets) + ", rejected unless acknowledged otherwise): " + e.Err.Error()
}

// Unwrap returns kerr.CorruptMessage and the cause.
func (e *CorruptBatchError) Unwrap() []error { return []error{kerr.CorruptMessage, e.Err} }

// PartitionError is returned by shareconsumer's Poll, once, when a broker refused to fetch a
// partition for a reason the consumer cannot fix on its own. The consumer keeps fetching the
// partition's leader, with a pause between attempts. Err wraps the code Kafka sent (a
// *KafkaError), is a *TopicAuthorizationError for TOPIC_AUTHORIZATION_FAILED (returned once
// when the topic becomes refused, not at every fetch), or is ErrTooManyAcquired for an answer
// the consumer refused.
type PartitionError struct {
	Topic     string
	Partition int32
	Err       error
}

// Error returns, for example, "shareconsumer: fetching orders-3: INVALID_RECORD_STATE: ...".
func (e *PartitionError) Error() string {
	return "shareconsumer: fetching " + e.Topic + "-" + strconv.Itoa(int(e.Partition)) + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *PartitionError) Unwrap() error { return e.Err }

// BrokerError is returned by shareconsumer's Poll, once, when a broker refused a whole
// ShareFetch with an error the consumer cannot fix on its own (INVALID_REQUEST, for one). Err
// wraps the code Kafka sent (a *KafkaError). GROUP_AUTHORIZATION_FAILED is not one: the
// consumer fails with a *FatalError for it.
type BrokerError struct {
	Broker int32
	Err    error
}

// Error returns, for example, "shareconsumer: broker 2: INVALID_REQUEST: ...".
func (e *BrokerError) Error() string {
	return "shareconsumer: broker " + strconv.Itoa(int(e.Broker)) + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *BrokerError) Unwrap() error { return e.Err }

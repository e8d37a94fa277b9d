package errors

import (
	stderrors "errors"
	"strconv"
	"strings"
)

// ErrDeadLetter: a shareconsumer Process handler returned an error for which
// errors.Is(err, ErrDeadLetter) holds (see DeadLetter): the record goes to the dead-letter topic at
// once, whatever its delivery count.
var ErrDeadLetter = stderrors.New("record sent to the dead-letter topic by the handler")

// ErrNoDeadLetterTopic: shareconsumer's Consumer.DeadLetter was called on a consumer created
// without the DeadLetterTopic option. Nothing was produced or acknowledged.
var ErrNoDeadLetterTopic = stderrors.New("no dead-letter topic is configured: use shareconsumer.DeadLetterTopic")

// DeadLetter wraps err so that a shareconsumer Process handler returning it sends the record to
// the dead-letter topic at once (a poison record), whatever its delivery count, instead of
// releasing it. errors.Is(DeadLetter(err), err) holds, and so does
// errors.Is(DeadLetter(err), ErrDeadLetter); the dead-letter record's error header carries
// err's text. DeadLetter(nil) works too. Without a dead-letter topic the record is rejected, as
// with Reject.
func DeadLetter(err error) error { return markedError{ErrDeadLetter, err} }

// DeadLetterError reports that a record could not be produced to the dead-letter topic: the
// record was not acknowledged for it (Process releases it; Consumer.DeadLetter leaves it to the
// caller in explicit mode and releases it in implicit mode). With Copied, the copy was produced
// but the record could no longer be acknowledged ACCEPT (Err is ErrCannotAcknowledge: its
// acknowledgement was sent, a RELEASE in implicit mode, by a commit while the copy was on its
// way): the record comes back, and its next dead-lettering makes a second copy.
type DeadLetterError struct {
	// DeadLetterTopic is the topic the copy was for.
	DeadLetterTopic string
	// Topic, Partition and Offset name the record.
	Topic     string
	Partition int32
	Offset    int64
	// Err is the produce's failure: a *kerr.Error where Kafka sent a code (TOPIC_AUTHORIZATION_FAILED,
	// UNKNOWN_TOPIC_OR_PARTITION, ...), a context error, or kgo's; Unwrap returns it.
	Err error
	// Copied says the copy is in the dead-letter topic though the record was not accepted.
	Copied bool
}

// Error returns, for example, "dead-lettering orders-3@42 to orders.dlq: TOPIC_AUTHORIZATION_FAILED: ...",
// or with Copied "dead-lettering orders-3@42 to orders.dlq: copied, but not accepted: <Err>".
func (e *DeadLetterError) Error() string {
	var b strings.Builder
	b.WriteString("dead-lettering ")
	b.WriteString(e.Topic)
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(int(e.Partition)))
	b.WriteByte('@')
	b.WriteString(strconv.FormatInt(e.Offset, 10))
	b.WriteString(" to ")
	b.WriteString(e.DeadLetterTopic)
	if e.Copied {
		b.WriteString(": copied, but not accepted")
	}
	b.WriteString(": ")
	b.WriteString(cause(e.Err, ""))
	return b.String()
}

// Unwrap returns e.Err.
func (e *DeadLetterError) Unwrap() error { return e.Err }

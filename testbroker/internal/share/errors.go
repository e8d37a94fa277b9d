package share

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a refused acknowledgement: the Kafka error code to answer with, and the message
// Kafka sends with it (empty when Kafka sends none). errors.Is(err, kerr.InvalidRecordState)
// holds through it; the server copies Message into the response's error message field.
type Error struct {
	Code    *kerr.Error
	Message string
}

// Error returns the code's name and description, then the message.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.Error()
	}
	return e.Code.Error() + ": " + e.Message
}

// Unwrap returns the Kafka error code.
func (e *Error) Unwrap() error { return e.Code }

// Kafka's messages (SharePartition.acknowledge and its helpers, KIP-1222).
const (
	msgNotOwnerOfBatch    = "Member is not the owner of batch record"
	msgNotOwnerOfOffset   = "Member is not the owner of offset"
	msgBatchNotAcquired   = "The batch cannot be acknowledged. The batch is not in the acquired state."
	msgOffsetNotAcquired  = "The offset cannot be acknowledged. The offset is not acquired."
	msgSubsetNotAcquired  = "The batch cannot be acknowledged. The subset batch is not in the acquired state."
	msgNotInCache         = "Batch record not found. The request batch offsets are not found in the cache."
	msgFirstPastAcquired  = "Batch record not found. The first offset in request is past acquired records."
	msgLastPastAcquired   = "Batch record not found. The last offset in request is past acquired records."
	msgRenewNotEnabled    = "Renewing acquisition locks is not enabled for the group."
	msgInvalidAckTypeHead = "Invalid acknowledge type: "
)

func invalidState(msg string) error { return &Error{Code: kerr.InvalidRecordState, Message: msg} }

func invalidRequest(msg string) error { return &Error{Code: kerr.InvalidRequest, Message: msg} }

// invalidAckType words an unknown type as Kafka does, with the types as a Java list prints them.
func invalidAckType(types []int8) error {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprint(t)
	}
	return invalidRequest(msgInvalidAckTypeHead + "[" + strings.Join(parts, ", ") + "]")
}

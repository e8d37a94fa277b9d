package share

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

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

func invalidState(msg string) error {
	return &kafkaerr.Error{Code: kerr.InvalidRecordState, Message: msg}
}

func invalidRequest(msg string) error {
	return &kafkaerr.Error{Code: kerr.InvalidRequest, Message: msg}
}

// invalidAckType words an unknown type as Kafka does, with the types as a Java list prints them.
func invalidAckType(types []int8) error {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprint(t)
	}
	return invalidRequest(msgInvalidAckTypeHead + "[" + strings.Join(parts, ", ") + "]")
}

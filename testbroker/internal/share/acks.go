package share

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// AckPartition is one partition's acknowledgement batches of a ShareFetch or ShareAcknowledge.
type AckPartition struct {
	TopicPartition
	Batches []AckBatch
}

// AckOutcome is what one partition's acknowledgements came to: an error code (0 for none) and
// the message Kafka sends with it, if any.
type AckOutcome struct {
	TopicPartition
	Code    int16
	Message *string
}

// Acknowledge applies a request's acknowledgements for member at broker as Kafka's
// KafkaApis.handleAcknowledgements and SharePartitionManager.acknowledge do, partition by
// partition in request order:
//
//   - an unknown topic id is UNKNOWN_TOPIC_ID;
//   - batches that break ValidateBatches (maxType, isRenewAck) are INVALID_REQUEST;
//   - a partition index the topic lacks is UNKNOWN_TOPIC_OR_PARTITION;
//   - no batches is success;
//   - a partition without a share partition of the group on this broker (never fetched here,
//     or led by another broker, also since a leader move) is UNKNOWN_TOPIC_OR_PARTITION with
//     Kafka's default message: Kafka's old leader drops its share partitions when it becomes a
//     follower, and answers acknowledgements for them so;
//   - otherwise Partition.Acknowledge decides, all or nothing for the partition, and its
//     refusal's code and message are the partition's (NOT_LEADER_OR_FOLLOWER if the leader
//     moved while the request was processed).
//
// The first three carry no message. When no partition gets as far as Acknowledge, only the
// failed partitions are reported, as with Kafka; otherwise every partition is.
func (m *Manager) Acknowledge(broker int32, group, member string, parts []AckPartition, maxType int8, isRenewAck bool) []AckOutcome {
	meta := m.cfg.Metadata
	out := make([]AckOutcome, len(parts))
	reported := make([]bool, len(parts))
	anyApplied := false
	for i := range parts {
		ap := &parts[i]
		o := &out[i]
		o.TopicPartition = ap.TopicPartition
		switch {
		case !meta.TopicExists(ap.Topic):
			o.Code, reported[i] = kerr.UnknownTopicID.Code, true
			continue
		case ValidateBatches(ap.Batches, maxType, isRenewAck) != nil:
			o.Code, reported[i] = kerr.InvalidRequest.Code, true
			continue
		}
		if _, ok := meta.Placement(ap.TopicPartition); !ok {
			o.Code, reported[i] = kerr.UnknownTopicOrPartition.Code, true
			continue
		}
		if len(ap.Batches) == 0 {
			continue
		}
		anyApplied = true
		sp := m.Led(group, ap.TopicPartition, broker)
		if sp == nil {
			o.Code, o.Message = kerr.UnknownTopicOrPartition.Code, &kerr.UnknownTopicOrPartition.Description
			continue
		}
		if err := sp.Acknowledge(member, ap.Batches); err != nil {
			o.Code = kerrOf(err).Code
			var se *kafkaerr.Error
			if errors.As(err, &se) && se.Message != "" {
				o.Message = &se.Message
			}
		}
	}
	if anyApplied {
		return out
	}
	kept := out[:0]
	for i := range out {
		if reported[i] {
			kept = append(kept, out[i])
		}
	}
	return kept
}

package wire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetchResponse is a ShareFetch response whose record batches are written from where they
// lie (the log's storage) instead of being copied into the frame. It encodes exactly as kmsg
// encodes the ShareFetchResponse it wraps, every version of which is flexible, with the
// records of partition i, counting partitions topic by topic through the response, given by
// Records[i] when that is non-nil: the concatenation of its slices. Partitions without such an
// entry have their Records field (nil: null, as kmsg writes it; Kafka never sends null
// records, so the broker gives every partition without data an empty Records).
type ShareFetchResponse struct {
	*kmsg.ShareFetchResponse
	Records [][][]byte
}

// AppendTo appends the response body to dst, copying the records.
func (r *ShareFetchResponse) AppendTo(dst []byte) []byte {
	f := Frame{B: dst, flat: true}
	r.AppendFrame(&f)
	return f.B
}

// AppendFrame appends the response body to f, field by field as kmsg's
// ShareFetchResponse.AppendTo, with the records referred to rather than copied.
func (r *ShareFetchResponse) AppendFrame(f *Frame) {
	v := r.ShareFetchResponse
	b := f.B
	b = kbin.AppendInt32(b, v.ThrottleMillis)
	b = kbin.AppendInt16(b, v.ErrorCode)
	b = kbin.AppendCompactNullableString(b, v.ErrorMessage)
	if v.Version >= 1 {
		b = kbin.AppendInt32(b, v.AcquisitionLockTimeoutMillis)
	}
	b = kbin.AppendCompactArrayLen(b, len(v.Topics))
	i := 0 // the partition's index in the response, for Records
	for ti := range v.Topics {
		t := &v.Topics[ti]
		b = kbin.AppendUuid(b, t.TopicID)
		b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = kbin.AppendInt32(b, p.Partition)
			b = kbin.AppendInt16(b, p.ErrorCode)
			b = kbin.AppendCompactNullableString(b, p.ErrorMessage)
			b = kbin.AppendInt16(b, p.AcknowledgeErrorCode)
			b = kbin.AppendCompactNullableString(b, p.AcknowledgeErrorMessage)
			b = kbin.AppendInt32(b, p.CurrentLeader.LeaderID)
			b = kbin.AppendInt32(b, p.CurrentLeader.LeaderEpoch)
			b = appendTagsWithCount(b, &p.CurrentLeader.UnknownTags)
			if i < len(r.Records) && r.Records[i] != nil {
				b = f.appendRecordRefs(b, r.Records[i], true)
			} else {
				b = kbin.AppendCompactNullableBytes(b, p.Records)
			}
			i++
			b = kbin.AppendCompactArrayLen(b, len(p.AcquiredRecords))
			for ai := range p.AcquiredRecords {
				a := &p.AcquiredRecords[ai]
				b = kbin.AppendInt64(b, a.FirstOffset)
				b = kbin.AppendInt64(b, a.LastOffset)
				b = kbin.AppendInt16(b, a.DeliveryCount)
				b = appendTagsWithCount(b, &a.UnknownTags)
			}
			b = appendTagsWithCount(b, &p.UnknownTags)
		}
		b = appendTagsWithCount(b, &t.UnknownTags)
	}
	b = kbin.AppendCompactArrayLen(b, len(v.NodeEndpoints))
	for ni := range v.NodeEndpoints {
		e := &v.NodeEndpoints[ni]
		b = kbin.AppendInt32(b, e.NodeID)
		b = kbin.AppendCompactString(b, e.Host)
		b = kbin.AppendInt32(b, e.Port)
		b = kbin.AppendCompactNullableString(b, e.Rack)
		b = appendTagsWithCount(b, &e.UnknownTags)
	}
	f.B = appendTagsWithCount(b, &v.UnknownTags)
}

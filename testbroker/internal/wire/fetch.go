package wire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchResponse is a Fetch response whose record batches are written from where they lie (the
// log's storage) instead of being copied into the frame. It encodes exactly as kmsg encodes
// the FetchResponse it wraps, with the records of partition i, counting partitions topic by
// topic through the response, given by Records[i] when that is non-nil: the concatenation of
// its slices. Partitions without such an entry have their RecordBatches field (nil: null, as
// kmsg writes it; Kafka never sends null records, so the broker gives every partition without
// data an empty RecordBatches).
type FetchResponse struct {
	*kmsg.FetchResponse
	Records [][][]byte
}

// AppendTo appends the response body to dst, copying the records.
func (r *FetchResponse) AppendTo(dst []byte) []byte {
	f := Frame{B: dst, flat: true}
	r.AppendFrame(&f)
	return f.B
}

// AppendFrame appends the response body to f, field by field as kmsg's
// FetchResponse.AppendTo, with the records referred to rather than copied.
func (r *FetchResponse) AppendFrame(f *Frame) {
	v := r.FetchResponse
	version := v.Version
	flex := version >= 12
	b := f.B
	if version >= 1 {
		b = kbin.AppendInt32(b, v.ThrottleMillis)
	}
	if version >= 7 {
		b = kbin.AppendInt16(b, v.ErrorCode)
		b = kbin.AppendInt32(b, v.SessionID)
	}
	b = appendArrayLen(b, len(v.Topics), flex)
	i := 0 // the partition's index in the response, for Records
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			b = appendString(b, t.Topic, flex)
		}
		if version >= 13 {
			b = kbin.AppendUuid(b, t.TopicID)
		}
		b = appendArrayLen(b, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = kbin.AppendInt32(b, p.Partition)
			b = kbin.AppendInt16(b, p.ErrorCode)
			b = kbin.AppendInt64(b, p.HighWatermark)
			if version >= 4 {
				b = kbin.AppendInt64(b, p.LastStableOffset)
			}
			if version >= 5 {
				b = kbin.AppendInt64(b, p.LogStartOffset)
			}
			if version >= 4 {
				aborted := p.AbortedTransactions
				if flex {
					b = kbin.AppendCompactNullableArrayLen(b, len(aborted), aborted == nil)
				} else {
					b = kbin.AppendNullableArrayLen(b, len(aborted), aborted == nil)
				}
				for ai := range aborted {
					a := &aborted[ai]
					b = kbin.AppendInt64(b, a.ProducerID)
					b = kbin.AppendInt64(b, a.FirstOffset)
					if flex {
						b = appendTagsWithCount(b, &a.UnknownTags)
					}
				}
			}
			if version >= 11 {
				b = kbin.AppendInt32(b, p.PreferredReadReplica)
			}
			if i < len(r.Records) && r.Records[i] != nil {
				b = f.appendRecordRefs(b, r.Records[i], flex)
			} else if flex {
				b = kbin.AppendCompactNullableBytes(b, p.RecordBatches)
			} else {
				b = kbin.AppendNullableBytes(b, p.RecordBatches)
			}
			i++
			if flex {
				b = f.appendPartitionTags(b, p)
			}
		}
		if flex {
			b = appendTagsWithCount(b, &t.UnknownTags)
		}
	}
	if flex {
		n := v.UnknownTags.Len()
		if len(v.Brokers) > 0 {
			n++
		}
		b = kbin.AppendUvarint(b, uint32(n))
		if len(v.Brokers) > 0 {
			tmp := kbin.AppendCompactArrayLen(f.tmp[:0], len(v.Brokers))
			for bi := range v.Brokers {
				br := &v.Brokers[bi]
				tmp = kbin.AppendInt32(tmp, br.NodeID)
				tmp = kbin.AppendCompactString(tmp, br.Host)
				tmp = kbin.AppendInt32(tmp, br.Port)
				tmp = kbin.AppendCompactNullableString(tmp, br.Rack)
				tmp = appendTagsWithCount(tmp, &br.UnknownTags)
			}
			b = f.appendTag(b, 0, tmp)
		}
		b = v.UnknownTags.AppendEach(b)
	}
	f.B = b
}

// appendPartitionTags appends a flexible partition's tag section: DivergingEpoch (0),
// CurrentLeader (1) and SnapshotID (2) where they differ from their defaults, then unknown tags.
func (f *Frame) appendPartitionTags(b []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	d, l, s := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
	hasD := d.Epoch != -1 || d.EndOffset != -1 || d.UnknownTags.Len() > 0
	hasL := l.LeaderID != -1 || l.LeaderEpoch != -1 || l.UnknownTags.Len() > 0
	hasS := s.EndOffset != -1 || s.Epoch != -1 || s.UnknownTags.Len() > 0
	n := p.UnknownTags.Len()
	for _, has := range []bool{hasD, hasL, hasS} {
		if has {
			n++
		}
	}
	b = kbin.AppendUvarint(b, uint32(n))
	if hasD {
		tmp := kbin.AppendInt32(f.tmp[:0], d.Epoch)
		tmp = kbin.AppendInt64(tmp, d.EndOffset)
		b = f.appendTag(b, 0, appendTagsWithCount(tmp, &d.UnknownTags))
	}
	if hasL {
		tmp := kbin.AppendInt32(f.tmp[:0], l.LeaderID)
		tmp = kbin.AppendInt32(tmp, l.LeaderEpoch)
		b = f.appendTag(b, 1, appendTagsWithCount(tmp, &l.UnknownTags))
	}
	if hasS {
		tmp := kbin.AppendInt64(f.tmp[:0], s.EndOffset)
		tmp = kbin.AppendInt32(tmp, s.Epoch)
		b = f.appendTag(b, 2, appendTagsWithCount(tmp, &s.UnknownTags))
	}
	return p.UnknownTags.AppendEach(b)
}

// appendTag appends a tagged field whose value was encoded into tmp (f.tmp's storage), and
// keeps that storage for the next one.
func (f *Frame) appendTag(b []byte, tag uint32, tmp []byte) []byte {
	f.tmp = tmp
	b = kbin.AppendUvarint(b, tag)
	b = kbin.AppendUvarint(b, uint32(len(tmp)))
	return append(b, tmp...)
}

// appendTagsWithCount appends the tag section of a struct that has only unknown tags.
func appendTagsWithCount(b []byte, tags *kmsg.Tags) []byte {
	b = kbin.AppendUvarint(b, uint32(tags.Len()))
	return tags.AppendEach(b)
}

func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(b, n)
	}
	return kbin.AppendArrayLen(b, n)
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(b, s)
	}
	return kbin.AppendString(b, s)
}

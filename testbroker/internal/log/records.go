package log

import (
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The log stores batches as their producers encoded them. Only timestamp lookups (ListOffsets)
// look inside one: they need the offset and timestamp of each record of the batch the time
// index points to, as Kafka's FileRecords.searchForTimestamp and offsetOfMaxTimestamp iterate
// a batch's records.

// decompressor inflates the records of compressed batches; it pools its codecs' state.
var decompressor = kgo.DefaultDecompressor()

var errBadRecords = errors.New("the records of the batch cannot be decoded")

// recordTime is the offset and timestamp of one record.
type recordTime struct {
	offset, timestamp int64
}

// eachRecordTime calls f with the offset and timestamp of each record of the stored v2 batch
// data, in order, until f returns false. A record's timestamp is the batch's MaxTimestamp when
// the batch has the LogAppendTime type, else its BaseTimestamp plus the record's delta, as
// Kafka's DefaultRecord reads it. Records that cannot be decoded end the walk with
// errBadRecords; nothing panics on bytes a producer wrote, since the log checks only a batch's
// header and CRC.
func eachRecordTime(data []byte, f func(recordTime) bool) error {
	h := parseHeader(data)
	body := data[HeaderSize:]
	if codec := h.Attributes & attrCodecMask; codec != 0 {
		var err error
		if body, err = decompressor.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
			return errBadRecords
		}
	}
	logAppendTime := h.Attributes&attrLogAppendTime != 0
	for range h.NumRecords {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || length > int64(len(body)-n) {
			return errBadRecords
		}
		rec := body[n : n+int(length)]
		body = body[n+int(length):]
		if len(rec) < 1 {
			return errBadRecords
		}
		tsDelta, n1 := binary.Varint(rec[1:]) // after the attributes byte
		if n1 <= 0 {
			return errBadRecords
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			return errBadRecords
		}
		rt := recordTime{offset: h.BaseOffset + offDelta, timestamp: h.BaseTimestamp + tsDelta}
		if logAppendTime {
			rt.timestamp = h.MaxTimestamp
		}
		if !f(rt) {
			return nil
		}
	}
	return nil
}

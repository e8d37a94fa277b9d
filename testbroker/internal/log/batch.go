package log

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// HeaderSize is the size of a v2 record batch header, from BaseOffset through NumRecords.
const HeaderSize = 61

// Byte positions in a v2 batch. The CRC covers everything from the attributes to the end of
// the batch, so BaseOffset, BatchLength and PartitionLeaderEpoch may change without touching it.
const (
	posBatchLength  = 8
	posLeaderEpoch  = 12
	posMagic        = 16
	posCRC          = 17
	posAttributes   = 21
	posMaxTimestamp = 35
	posProducerID   = 43

	// frameOverhead is the part of a batch that BatchLength does not count: BaseOffset and
	// BatchLength itself.
	frameOverhead = 12
	// minBatchLength is the smallest BatchLength of a v2 batch: its header without the overhead.
	minBatchLength = HeaderSize - frameOverhead
)

// Attribute bits of a v2 batch.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20

	// maxCodec is the highest compression codec Kafka knows (zstd).
	maxCodec = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed 61-byte header of a v2 record batch, fields in wire order.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32 // bytes after this field: the whole batch is BatchLength+12 bytes
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32 // CRC-32C of everything from Attributes to the end of the batch
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// ParseHeader reads the header at the start of b. It checks only that b holds HeaderSize bytes
// (a *CorruptError otherwise); the fields mean what BatchHeader says only when Magic is 2.
func ParseHeader(b []byte) (BatchHeader, error) {
	if len(b) < HeaderSize {
		return BatchHeader{}, corruptf(0, "%d bytes are too few for a %d-byte batch header", len(b), HeaderSize)
	}
	return parseHeader(b), nil
}

// parseHeader reads a header from b, which must hold at least HeaderSize bytes.
func parseHeader(b []byte) BatchHeader {
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[0:])),
		BatchLength:          int32(be.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  be.Uint32(b[17:]),
		Attributes:           int16(be.Uint16(b[21:])),
		LastOffsetDelta:      int32(be.Uint32(b[23:])),
		BaseTimestamp:        int64(be.Uint64(b[27:])),
		MaxTimestamp:         int64(be.Uint64(b[35:])),
		ProducerID:           int64(be.Uint64(b[43:])),
		ProducerEpoch:        int16(be.Uint16(b[51:])),
		BaseSequence:         int32(be.Uint32(b[53:])),
		NumRecords:           int32(be.Uint32(b[57:])),
	}
}

// Batch is one record batch of a records field.
type Batch struct {
	Header BatchHeader
	Bytes  []byte // the whole batch, header included; it aliases the bytes it was split from
}

// SplitBatches validates a records field and returns its batches, which alias records. Every
// byte must belong to a whole batch, and every batch must be a v2 batch whose CRC matches, whose
// compression codec is known and whose NumRecords is LastOffsetDelta+1 and positive. The
// records themselves are not decoded, so a batch whose records contradict its header passes.
//
// An empty records field fails with kerr.InvalidRecord, as a produce without batches does with
// Kafka. A frame that does not fit the bytes, a magic byte outside 0..2 and a CRC mismatch fail
// with a *CorruptError; a batch of magic 0 or 1 and inconsistent record counts fail with
// kerr.InvalidRecord. The first bad batch decides the error.
func SplitBatches(records []byte) ([]Batch, error) {
	if len(records) == 0 {
		return nil, errNoBatch
	}
	var batches []Batch
	for pos := 0; pos < len(records); {
		b, err := nextBatch(records, pos)
		if err != nil {
			return nil, err
		}
		batches = append(batches, b)
		pos += len(b.Bytes)
	}
	return batches, nil
}

var errNoBatch = kafkaerr.Detailed(kerr.InvalidRecord, "the records hold no record batch")

// nextBatch validates the batch that starts at records[pos:].
func nextBatch(records []byte, pos int) (Batch, error) {
	n, err := frame(records[pos:], pos)
	if err != nil {
		return Batch{}, err
	}
	raw := records[pos : pos+n : pos+n]
	h := parseHeader(raw)
	if err := checkBatch(&h, raw, pos); err != nil {
		return Batch{}, err
	}
	return Batch{Header: h, Bytes: raw}, nil
}

// frame returns the size of the v2 batch at the start of b, which lies at pos in the records.
// The magic byte is judged before the length because batches of magic 0 and 1 have shorter
// headers: they deserve the "wrong magic" answer, not a "too short" one.
func frame(b []byte, pos int) (int, error) {
	if len(b) <= posMagic {
		return 0, corruptf(pos, "%d trailing bytes are too few for a batch header", len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[posBatchLength:]))
	switch magic := int8(b[posMagic]); {
	case magic < 0 || magic > 2:
		return 0, corruptf(pos, "invalid magic byte %d", magic)
	case magic != 2:
		return 0, kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d has magic %d: only magic 2 batches are accepted", pos, magic)
	case length < minBatchLength:
		return 0, corruptf(pos, "batch length %d is below the %d bytes of a v2 header", length, minBatchLength)
	case int64(length) > int64(len(b)-frameOverhead):
		return 0, corruptf(pos, "batch length %d runs past the end of the records (%d bytes after the length field)", length, len(b)-frameOverhead)
	}
	return frameOverhead + int(length), nil
}

// checkBatch checks what the header of a framed batch promises: the CRC first, because nothing
// else in a batch whose bytes are damaged can be trusted, then the codec and the record count.
func checkBatch(h *BatchHeader, raw []byte, pos int) error {
	if crc := crc32.Checksum(raw[posAttributes:], castagnoli); crc != h.CRC {
		return corruptf(pos, "CRC mismatch: the header says %#08x, the bytes give %#08x", h.CRC, crc)
	}
	if codec := h.Attributes & attrCodecMask; codec > maxCodec {
		return corruptf(pos, "unknown compression codec %d", codec)
	}
	switch {
	case h.LastOffsetDelta < 0:
		return kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d has a negative last offset delta %d", pos, h.LastOffsetDelta)
	case h.NumRecords <= 0:
		return kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d declares %d records", pos, h.NumRecords)
	case int64(h.NumRecords) != int64(h.LastOffsetDelta)+1:
		return kafkaerr.Detailed(kerr.InvalidRecord, "the batch at byte %d declares %d records but spans %d offsets", pos, h.NumRecords, int64(h.LastOffsetDelta)+1)
	}
	return nil
}

// setMaxTimestamp writes the timestamp type and MaxTimestamp of the batch b and recomputes its
// CRC, which covers both.
func setMaxTimestamp(b []byte, logAppendTime bool, ts int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[posAttributes:])
	if logAppendTime {
		attrs |= attrLogAppendTime
	} else {
		attrs &^= attrLogAppendTime
	}
	be.PutUint16(b[posAttributes:], attrs)
	be.PutUint64(b[posMaxTimestamp:], uint64(ts))
	be.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
}

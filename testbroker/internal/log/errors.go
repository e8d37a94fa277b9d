package log

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CorruptError reports records that fail an integrity check: a batch frame that does not fit
// the bytes, a magic byte outside 0..2, a CRC mismatch or an unknown compression codec. Unwrap
// returns kerr.CorruptMessage (code 2).
type CorruptError struct {
	Pos    int    // byte position, in the records given, of the batch at fault
	Reason string // what is wrong with it
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt record batch at byte %d: %s", e.Pos, e.Reason)
}

// Unwrap returns kerr.CorruptMessage.
func (e *CorruptError) Unwrap() error { return kerr.CorruptMessage }

func corruptf(pos int, format string, args ...any) error {
	return &CorruptError{Pos: pos, Reason: fmt.Sprintf(format, args...)}
}

// UnexpectedOffsetError refuses replicated batches that do not continue the log: the first
// batch does not start at the log end offset, or a batch does not start right after the one
// before it. Kafka refuses the first case with UnexpectedAppendOffsetException and batches out
// of order with OffsetsOutOfOrderException; neither has a code of its own, so Unwrap returns
// kerr.UnknownServerError, which is what Kafka would send for them.
type UnexpectedOffsetError struct {
	FirstOffset, LastOffset int64 // the offsets of the batch at fault
	NextOffset              int64 // the offset it had to start at
}

func (e *UnexpectedOffsetError) Error() string {
	return fmt.Sprintf("unexpected offset in append: the batch of offsets %d to %d does not start at the next offset %d", e.FirstOffset, e.LastOffset, e.NextOffset)
}

// Unwrap returns kerr.UnknownServerError.
func (e *UnexpectedOffsetError) Unwrap() error { return kerr.UnknownServerError }

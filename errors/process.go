package errors

import "fmt"

// PanicError is shareconsumer's RecordOutcome.Err of a Process handler that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprint("shareconsumer: handler panicked: ", e.Value) }

// markedError marks a handler's error with the sentinel mark (ErrReject, ErrDeadLetter) that
// tells Process what to do with the record; errors.Is finds both.
type markedError struct{ mark, err error }

func (e markedError) Error() string {
	if e.err == nil {
		return e.mark.Error()
	}
	return e.err.Error()
}

func (e markedError) Unwrap() []error {
	if e.err == nil {
		return []error{e.mark}
	}
	return []error{e.mark, e.err}
}

// Reject wraps err so that a shareconsumer Process handler returning it rejects the record
// (acktype.Reject: never delivered again) instead of releasing it. errors.Is(Reject(err), err)
// holds, and so does errors.Is(Reject(err), ErrReject). Reject(nil) rejects too.
func Reject(err error) error { return markedError{ErrReject, err} }

package errors

import "fmt"

// PanicError is shareconsumer's RecordOutcome.Err of a Process handler that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprint("shareconsumer: handler panicked: ", e.Value) }

// rejectError marks a handler's error as a rejection.
type rejectError struct{ err error }

func (e rejectError) Error() string {
	if e.err == nil {
		return ErrReject.Error()
	}
	return e.err.Error()
}

func (e rejectError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrReject}
	}
	return []error{ErrReject, e.err}
}

// Reject wraps err so that a shareconsumer Process handler returning it rejects the record
// (acktype.Reject: never delivered again) instead of releasing it. errors.Is(Reject(err), err)
// holds, and so does errors.Is(Reject(err), ErrReject). Reject(nil) rejects too.
func Reject(err error) error { return rejectError{err} }

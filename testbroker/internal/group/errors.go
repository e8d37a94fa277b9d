package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a failure the coordinator answers a request with: Kafka's error code and the message
// Kafka sends with it.
type Error struct {
	Code    *kerr.Error
	Message string
}

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the code's name and the message, as "CODE: message".
func (e *Error) Error() string { return e.Code.Error() + ": " + e.Message }

// Unwrap returns the Kafka error code, so that errors.Is(err, kerr.X) works.
func (e *Error) Unwrap() error { return e.Code }

package config

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a refused config change: the Kafka error code to answer with and the message Kafka
// sends with it. errors.Is(err, kerr.InvalidConfig) holds through it.
type Error struct {
	Code    *kerr.Error
	Message string
}

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the code's name and the message, as "CODE: message".
func (e *Error) Error() string { return e.Code.Message + ": " + e.Message }

// Unwrap returns the Kafka error code.
func (e *Error) Unwrap() error { return e.Code }

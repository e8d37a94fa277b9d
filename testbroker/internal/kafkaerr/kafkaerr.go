// Package kafkaerr is the fake cluster's one error type for a refusal Kafka answers with an
// error code: the code, and the message Kafka sends beside it. Every internal package returns
// it, and the server copies Message into a response's error message field, so what goes on the
// wire is decided where the refusal is made.
package kafkaerr

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a refusal: the Kafka error code to answer with, the message Kafka sends with it, and,
// where Kafka sends no message, a detail saying what was wrong for Go callers and test failures.
// Unwrap returns the code, so errors.Is(err, kerr.X) holds through it.
type Error struct {
	Code    *kerr.Error
	Message string // Kafka's error message, sent on the wire; empty when Kafka sends none
	Detail  string // what was wrong, never sent on the wire; set only when Message is empty
}

// New returns an Error whose formatted message is sent on the wire.
func New(code *kerr.Error, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Code returns an Error with a code and no message, as Kafka answers most refusals.
func Code(code *kerr.Error) *Error { return &Error{Code: code} }

// Detailed returns an Error with no message on the wire, and a formatted detail for Go
// callers: for refusals where Kafka sends only the code.
func Detailed(code *kerr.Error, format string, args ...any) error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Error returns the code's name, then the message or the detail, as "CODE: text".
func (e *Error) Error() string {
	text := e.Message
	if text == "" {
		text = e.Detail
	}
	if text == "" {
		return e.Code.Message
	}
	return e.Code.Message + ": " + text
}

// Unwrap returns the Kafka error code.
func (e *Error) Unwrap() error { return e.Code }

// CodeOf returns the Kafka error code err carries, 0 for nil, or UNKNOWN_SERVER_ERROR for an
// error that carries none.
func CodeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// MessageOf returns the message to put in a response's error message field for err, or nil for
// none. An error that carries no Kafka code at all is the cluster's own failure, answered as
// UNKNOWN_SERVER_ERROR with its text, as Kafka sends an unexpected exception's message.
func MessageOf(err error) *string {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" {
			return nil
		}
		return &e.Message
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return nil
	}
	s := err.Error()
	return &s
}

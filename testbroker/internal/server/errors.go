package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/config"
)

// kafkaError is an error the cluster answers with: a Kafka error code and the message Kafka
// sends with it (empty when Kafka sends none).
type kafkaError struct {
	code    *kerr.Error
	message string
}

// errorf returns a kafkaError with a formatted message.
func errorf(code *kerr.Error, format string, args ...any) error {
	return &kafkaError{code: code, message: fmt.Sprintf(format, args...)}
}

func (e *kafkaError) Error() string {
	if e.message == "" {
		return e.code.Message
	}
	return e.code.Message + ": " + e.message
}

func (e *kafkaError) Unwrap() error { return e.code }

// codeOf returns the Kafka error code an error carries, or UNKNOWN_SERVER_ERROR for an error
// that carries none.
func codeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// messageOf returns the message to put in an ErrorMessage field for err, or nil for none.
// Errors from other packages that wrap a *kerr.Error with fmt.Errorf("%w: text") give "text".
func messageOf(err error) *string {
	if err == nil {
		return nil
	}
	var kaf *kafkaError
	if errors.As(err, &kaf) {
		if kaf.message == "" {
			return nil
		}
		return &kaf.message
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return &ce.Message
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if rest, ok := strings.CutPrefix(err.Error(), ke.Error()+": "); ok {
			return &rest
		}
		return nil
	}
	s := err.Error()
	return &s
}

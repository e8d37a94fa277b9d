package errors

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// KafkaError is an error code Kafka sent, with the message it sent alongside (ErrorMessage in
// most responses). Unwrap returns franz-go's kerr value for the code, so Is(err, kerr.X) works.
type KafkaError struct {
	Code    int16
	Message string // Kafka's message; empty when it sent none
}

// FromKafka returns nil for code 0, and otherwise a *KafkaError for code that keeps message
// (nil or empty when Kafka sent none).
func FromKafka(code int16, message *string) error {
	if code == 0 {
		return nil
	}
	e := &KafkaError{Code: code}
	if message != nil {
		e.Message = *message
	}
	return e
}

// Error returns "NAME: message", or kerr's "NAME: description" when Kafka sent no message. A code
// kerr does not know is named "UNKNOWN_ERROR_CODE_n".
func (e *KafkaError) Error() string {
	if e.Message == "" {
		if ke, ok := e.Unwrap().(*kerr.Error); ok && ke.Code == e.Code {
			return ke.Error()
		}
	}
	return codeName(e.Code) + ": " + e.Message
}

// Unwrap returns kerr.ErrorForCode(e.Code): kerr.UnknownServerError for a code kerr does not know.
func (e *KafkaError) Unwrap() error { return kerr.ErrorForCode(e.Code) }

func codeName(code int16) string {
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && ke.Code == code {
		return ke.Message
	}
	return "UNKNOWN_ERROR_CODE_" + strconv.Itoa(int(code))
}

package errors

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AuthenticationError is what shareconsumer's Poll (and Process) returns when a broker refused
// the consumer's credentials: a SASL authentication that failed (SASL_AUTHENTICATION_FAILED, a
// mechanism the broker does not enable, ILLEGAL_SASL_STATE) or a TLS handshake that did (a
// certificate the client or the broker does not trust, a listener that does not speak TLS).
// Err is the cause kgo met, so errors.Is(err, kerr.SaslAuthenticationFailed) holds for a wrong
// password, and Kafka's message is in its text.
//
// It is not fatal, as Kafka's clients treat AuthenticationException: the call that met it
// fails, and the consumer keeps trying to connect (credentials and ACLs can be fixed while it
// runs), so a later Poll may succeed.
type AuthenticationError struct {
	Broker string // the broker's address, host:port
	Err    error
}

// Error returns, for example, "authentication failed with broker 127.0.0.1:9092:
// SASL_AUTHENTICATION_FAILED: ...".
func (e *AuthenticationError) Error() string {
	return "authentication failed with broker " + e.Broker + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *AuthenticationError) Unwrap() error { return e.Err }

// TopicAuthorizationError reports topics the consumer may not read or describe
// (TOPIC_AUTHORIZATION_FAILED): Kafka's TopicAuthorizationException, which names them. Err is
// the code Kafka sent (a *KafkaError, keeping Kafka's message), so errors.Is(err,
// kerr.TopicAuthorizationFailed) holds. It is about those topics only: the consumer goes on
// with the others.
type TopicAuthorizationError struct {
	Topics []string // sorted; empty when the broker did not say which (a heartbeat's answer)
	Err    error
}

// Error returns, for example, "Not authorized to access topics: [orders, payments]:
// TOPIC_AUTHORIZATION_FAILED: ...", the first part in the words of Kafka's
// TopicAuthorizationException.
func (e *TopicAuthorizationError) Error() string {
	head := "Not authorized to access topics: [" + strings.Join(e.Topics, ", ") + "]"
	if e.Err == nil {
		return head
	}
	return head + ": " + e.Err.Error()
}

// Unwrap returns e.Err, or kerr.TopicAuthorizationFailed when it is nil.
func (e *TopicAuthorizationError) Unwrap() error {
	if e.Err == nil {
		return kerr.TopicAuthorizationFailed
	}
	return e.Err
}

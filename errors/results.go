package errors

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/internal/offsetfmt"
)

// AckError reports acknowledgements that failed for one partition: the records at Offsets were
// not acknowledged as asked. A record whose Renew failed is not returned again.
type AckError struct {
	Topic     string
	Partition int32
	Offsets   []int64
	Err       error  // a *kerr.Error where Kafka sent a code; Unwrap returns it
	Message   string // Kafka's error message, when it sent one
}

// Error returns, for example, "acknowledging orders-3 offsets 10-19: INVALID_RECORD_STATE:
// <Kafka's message>". Offsets that do not form one range are given as a count and their span.
func (e *AckError) Error() string {
	var b strings.Builder
	b.WriteString("acknowledging ")
	b.WriteString(e.Topic)
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(int(e.Partition)))
	if len(e.Offsets) > 0 {
		b.WriteByte(' ')
		b.WriteString(offsetfmt.Describe(e.Offsets))
	}
	b.WriteString(": ")
	b.WriteString(cause(e.Err, e.Message))
	return b.String()
}

// Unwrap returns e.Err.
func (e *AckError) Unwrap() error { return e.Err }

// FatalError reports that a share group's coordinator refused the member for good; the consumer
// cannot go on and must be closed. Err is the *kerr.Error of the code Kafka sent; the fatal codes
// are those for which IsFatalHeartbeatCode is true. GROUP_AUTHORIZATION_FAILED (the principal
// may not read the group) is fatal from any broker: in answer to a ShareGroupHeartbeat, as in
// Kafka's client, and to a ShareFetch or ShareAcknowledge too, where Kafka's client waits for
// the next heartbeat to say it.
type FatalError struct {
	Group   string
	Err     error  // a *kerr.Error; Unwrap returns it
	Message string // Kafka's error message, when it sent one
	// InconsistentGroupType is set when the group exists with another type (see
	// IsInconsistentGroupType); errors.Is(e, ErrInconsistentGroupType) then holds too.
	InconsistentGroupType bool
}

// Error returns, for example, `share group "g": GROUP_AUTHORIZATION_FAILED: <Kafka's message>`.
// For a group of another type whose broker sent no message it says so in ErrInconsistentGroupType's
// words.
func (e *FatalError) Error() string {
	msg := e.Message
	if e.InconsistentGroupType && msg == "" {
		msg = ErrInconsistentGroupType.Error()
	}
	return "share group " + strconv.Quote(e.Group) + ": " + cause(e.Err, msg)
}

// Is reports whether target is ErrInconsistentGroupType and e is about a group of another type.
// The Kafka code matches through Unwrap.
func (e *FatalError) Is(target error) bool {
	return target == ErrInconsistentGroupType && e.InconsistentGroupType
}

// IsInconsistentGroupType reports whether a ShareGroupHeartbeat's error says that the group exists
// with another type. Kafka sends GROUP_ID_NOT_FOUND with "Group <id> is not a share group." for
// that. A joining heartbeat (epoch 0) creates a missing share group, so GROUP_ID_NOT_FOUND in
// answer to one means the same even from a broker that sends no message (kfake).
func IsInconsistentGroupType(code int16, message string, memberEpoch int32) bool {
	if code != kerr.GroupIDNotFound.Code {
		return false
	}
	return memberEpoch == 0 || strings.HasSuffix(message, " is not a share group.")
}

// Unwrap returns e.Err.
func (e *FatalError) Unwrap() error { return e.Err }

// IsFatalHeartbeatCode reports whether a ShareGroupHeartbeat error code ends the membership for
// good, as Kafka's client treats it: GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST,
// GROUP_MAX_SIZE_REACHED and GROUP_ID_NOT_FOUND. Kafka ignores GROUP_ID_NOT_FOUND in answer to the
// heartbeat that leaves the group; that choice is the caller's.
func IsFatalHeartbeatCode(code int16) bool {
	switch code {
	case kerr.GroupAuthorizationFailed.Code, kerr.InvalidRequest.Code,
		kerr.GroupMaxSizeReached.Code, kerr.GroupIDNotFound.Code:
		return true
	}
	return false
}

// cause words err with Kafka's message: "NAME: message" for a *kerr.Error, err's own text
// followed by the message otherwise.
func cause(err error, message string) string {
	switch {
	case err == nil && message == "":
		return "unknown error"
	case err == nil:
		return message
	case message == "":
		return err.Error()
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message + ": " + message
	}
	return err.Error() + ": " + message
}

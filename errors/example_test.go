package errors_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func ExampleFromKafka() {
	message := "Member has not joined the share group."
	err := fmt.Errorf("share fetch: %w", errors.FromKafka(kerr.UnknownMemberID.Code, &message))

	fmt.Println(err)
	fmt.Println(errors.Is(err, kerr.UnknownMemberID))
	var ke *kerr.Error
	if errors.As(err, &ke) {
		fmt.Println(ke.Code, ke.Retriable)
	}
	fmt.Println(errors.FromKafka(0, nil))
	// Output:
	// share fetch: UNKNOWN_MEMBER_ID: Member has not joined the share group.
	// true
	// 25 false
	// <nil>
}

func ExampleAckError() {
	var err error = &errors.AckError{
		Topic: "orders", Partition: 3, Offsets: []int64{10, 11, 12},
		Err: kerr.InvalidRecordState, Message: "The record state is invalid.",
	}

	var ackErr *errors.AckError
	if errors.As(err, &ackErr) {
		fmt.Println(ackErr.Topic, ackErr.Partition, ackErr.Offsets)
	}
	fmt.Println(errors.Is(err, kerr.InvalidRecordState))
	fmt.Println(err)
	// Output:
	// orders 3 [10 11 12]
	// true
	// acknowledging orders-3 offsets 10-12: INVALID_RECORD_STATE: The record state is invalid.
}

func ExampleFatalError() {
	code := kerr.GroupAuthorizationFailed.Code
	if errors.IsFatalHeartbeatCode(code) {
		err := &errors.FatalError{Group: "billing", Err: kerr.ErrorForCode(code)}
		fmt.Println(errors.Is(err, kerr.GroupAuthorizationFailed))
		fmt.Println(err)
	}
	// Output:
	// true
	// share group "billing": GROUP_AUTHORIZATION_FAILED: Not authorized to access group: Group authorization failed.
}

func Example_sentinels() {
	err := fmt.Errorf("poll: %w", errors.ErrUnacknowledgedRecords)
	switch {
	case errors.Is(err, errors.ErrClosed):
		fmt.Println("closed")
	case errors.Is(err, errors.ErrUnacknowledgedRecords):
		fmt.Println("acknowledge every record, then poll again:", err)
	}
	// Output:
	// acknowledge every record, then poll again: poll: All records must be acknowledged in explicit acknowledgement mode.
}

func ExampleAuthenticationError() {
	// kgo's error for a password the broker refused, as Poll returns it.
	cause := fmt.Errorf("%w: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256", kerr.SaslAuthenticationFailed)
	var err error = &errors.AuthenticationError{Broker: "127.0.0.1:9092", Err: cause}

	var ae *errors.AuthenticationError
	if errors.As(err, &ae) {
		fmt.Println("check the credentials for", ae.Broker)
	}
	fmt.Println(errors.Is(err, kerr.SaslAuthenticationFailed))
	// Output:
	// check the credentials for 127.0.0.1:9092
	// true
}

func ExampleTopicAuthorizationError() {
	var err error = &errors.PartitionError{Topic: "payments", Partition: 0, Err: &errors.TopicAuthorizationError{
		Topics: []string{"payments"}, Err: errors.FromKafka(kerr.TopicAuthorizationFailed.Code, nil),
	}}

	var tae *errors.TopicAuthorizationError
	if errors.As(err, &tae) {
		fmt.Println("may not read", tae.Topics)
	}
	fmt.Println(errors.Is(err, kerr.TopicAuthorizationFailed))
	fmt.Println(err)
	// Output:
	// may not read [payments]
	// true
	// shareconsumer: fetching payments-0: Not authorized to access topics: [payments]: TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]
}

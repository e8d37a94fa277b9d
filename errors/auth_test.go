package errors_test

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func TestAuthenticationError(t *testing.T) {
	t.Parallel()
	// As kgo words a refused SASL authentication.
	sasl := fmt.Errorf("%w: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256", kerr.SaslAuthenticationFailed)
	var err error = fmt.Errorf("poll: %w", &errors.AuthenticationError{Broker: "127.0.0.1:9092", Err: sasl})
	assert.EqualError(t, err, "poll: authentication failed with broker 127.0.0.1:9092: "+sasl.Error())
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	var ae *errors.AuthenticationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "127.0.0.1:9092", ae.Broker)

	handshake := &errors.AuthenticationError{Broker: "b:9093", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}
	var rh tls.RecordHeaderError
	assert.ErrorAs(t, handshake, &rh, "the TLS cause is kept")
	assert.NotErrorIs(t, handshake, kerr.SaslAuthenticationFailed)
}

func TestTopicAuthorizationError(t *testing.T) {
	t.Parallel()
	msg := "denied by ACL"
	for _, tc := range []struct {
		name string
		err  *errors.TopicAuthorizationError
		want string
	}{
		{
			name: "topics and Kafka's message",
			err:  &errors.TopicAuthorizationError{Topics: []string{"orders", "payments"}, Err: errors.FromKafka(kerr.TopicAuthorizationFailed.Code, &msg)},
			want: "Not authorized to access topics: [orders, payments]: TOPIC_AUTHORIZATION_FAILED: denied by ACL",
		},
		{
			name: "no topics named",
			err:  &errors.TopicAuthorizationError{Err: errors.FromKafka(kerr.TopicAuthorizationFailed.Code, nil)},
			want: "Not authorized to access topics: []: " + kerr.TopicAuthorizationFailed.Error(),
		},
		{
			name: "no cause",
			err:  &errors.TopicAuthorizationError{Topics: []string{"orders"}},
			want: "Not authorized to access topics: [orders]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error = &errors.PartitionError{Topic: "orders", Partition: 0, Err: tc.err}
			assert.EqualError(t, tc.err, tc.want)
			assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
			var tae *errors.TopicAuthorizationError
			require.ErrorAs(t, err, &tae)
			assert.Equal(t, tc.err.Topics, tae.Topics)
		})
	}
}

func TestAuthReasons(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "authentication failed", errors.ReasonAuthentication.String())
	assert.Equal(t, "not authorized for a topic", errors.ReasonTopicAuthorization.String())
	assert.Equal(t, "left the group: max.poll.interval.ms passed without a Poll", errors.ReasonLeftGroup.String(), "the values before stay")
}

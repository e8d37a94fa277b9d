package main

import (
	stderrors "errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

// TestJavaString names the exception Kafka's admin client makes of an error code as Java's
// Throwable.toString prints it, with the broker's message when it sent one and Kafka's
// default one otherwise; an error that says more than its code is kept whole.
func TestJavaString(t *testing.T) {
	t.Parallel()
	msg := "Group g not found."
	for err, want := range map[error]string{
		kerr.GroupIDNotFound:         "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.",
		kerr.NonEmptyGroup:           "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
		kerr.UnknownTopicOrPartition: "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.",
		kerr.CoordinatorNotAvailable: "org.apache.kafka.common.errors.CoordinatorNotAvailableException: The coordinator is not available.",
		fmt.Errorf("wrapped: %w", &errors.KafkaError{Code: kerr.GroupIDNotFound.Code, Message: "Group g not found."}): "org.apache.kafka.common.errors.GroupIdNotFoundException: Group g not found.",
		errors.FromKafka(kerr.GroupIDNotFound.Code, &msg):                                                             "org.apache.kafka.common.errors.GroupIdNotFoundException: Group g not found.",
		errors.FromKafka(kerr.NonEmptyGroup.Code, nil):                                                                "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
		fmt.Errorf("%w: bad password", kerr.SaslAuthenticationFailed):                                                 "SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: bad password",
		stderrors.New("broken pipe"):                                                                                  "broken pipe",
	} {
		assert.Equal(t, want, javaString(err))
	}
}

// TestJavaException: the irregular class names of Kafka's Errors.java, the regular rule, and
// no panic on any code kerr knows or on odd names.
func TestJavaException(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		"UNKNOWN_SERVER_ERROR":         "org.apache.kafka.common.errors.UnknownServerException",
		"CLUSTER_AUTHORIZATION_FAILED": "org.apache.kafka.common.errors.ClusterAuthorizationException",
		"SASL_AUTHENTICATION_FAILED":   "org.apache.kafka.common.errors.SaslAuthenticationException",
		"GROUP_AUTHORIZATION_FAILED":   "org.apache.kafka.common.errors.GroupAuthorizationException",
		"TOPIC_AUTHORIZATION_FAILED":   "org.apache.kafka.common.errors.TopicAuthorizationException",
		"REQUEST_TIMED_OUT":            "org.apache.kafka.common.errors.TimeoutException",
		"INVALID_CONFIG":               "org.apache.kafka.common.errors.InvalidConfigurationException",
		"INVALID_RECORD":               "org.apache.kafka.common.InvalidRecordException",
		"GROUP_ID_NOT_FOUND":           "org.apache.kafka.common.errors.GroupIdNotFoundException",
		"GROUP_SUBSCRIBED_TO_TOPIC":    "org.apache.kafka.common.errors.GroupSubscribedToTopicException",
		"":                             "org.apache.kafka.common.errors.Exception",
		"__A__B_":                      "org.apache.kafka.common.errors.ABException",
	} {
		assert.Equal(t, want, javaException(code), code)
	}
	for code := int16(-1); code < 1000; code++ {
		typed := kerr.TypedErrorForCode(code)
		if typed == nil {
			continue
		}
		assert.NotPanics(t, func() {
			s := javaString(typed)
			assert.True(t, strings.HasPrefix(s, "org.apache.kafka.common."), s)
			assert.NotEmpty(t, javaString(&errors.KafkaError{Code: code}))
		}, "code %d", code)
	}
}

// TestToolOf: consumer and classic groups (any case, any protocol) follow the consumer tool,
// as does a group a broker before ListGroups v5 lists without a type (unless its protocol is
// "share"); share and streams groups, and groups nobody lists, the share tool, unless a
// consumer-only option was given for an unlisted group.
func TestToolOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		g            kadm.ListedGroup
		listed, only bool
		want         groupTool
	}{
		{kadm.ListedGroup{GroupType: "consumer"}, true, false, consumerTool},
		{kadm.ListedGroup{GroupType: "Consumer"}, true, false, consumerTool},
		{kadm.ListedGroup{GroupType: "CLASSIC", ProtocolType: "connect"}, true, false, consumerTool},
		{kadm.ListedGroup{ProtocolType: "consumer"}, true, false, consumerTool},
		{kadm.ListedGroup{ProtocolType: "share"}, true, false, shareTool},
		{kadm.ListedGroup{GroupType: "share"}, true, true, shareTool},
		{kadm.ListedGroup{GroupType: "Share"}, true, false, shareTool},
		{kadm.ListedGroup{GroupType: "streams"}, true, false, shareTool},
		{kadm.ListedGroup{}, false, false, shareTool},
		{kadm.ListedGroup{}, false, true, consumerTool},
	} {
		assert.Equal(t, tc.want, toolOf(tc.g, tc.listed, tc.only), "%+v listed %v", tc.g, tc.listed)
	}
}

// TestIsConsumerGroup: the groups Kafka's admin client lists as consumer groups.
func TestIsConsumerGroup(t *testing.T) {
	t.Parallel()
	assert.True(t, isConsumerGroup(kadm.ListedGroup{GroupType: "consumer", ProtocolType: "consumer"}))
	assert.True(t, isConsumerGroup(kadm.ListedGroup{GroupType: "Classic", ProtocolType: "consumer"}))
	assert.True(t, isConsumerGroup(kadm.ListedGroup{GroupType: "classic"}))
	assert.True(t, isConsumerGroup(kadm.ListedGroup{ProtocolType: "consumer"}), "a broker before ListGroups v5")
	assert.False(t, isConsumerGroup(kadm.ListedGroup{GroupType: "classic", ProtocolType: "connect"}))
	assert.False(t, isConsumerGroup(kadm.ListedGroup{GroupType: "share", ProtocolType: "share"}))
	assert.False(t, isConsumerGroup(kadm.ListedGroup{GroupType: "streams", ProtocolType: "streams"}))
}

package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

// TestJavaString names the exception Kafka's admin client makes of an error code as Java's
// Throwable.toString prints it, with the broker's message when it sent one.
func TestJavaString(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		kerr.GroupIDNotFound:         "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.",
		kerr.NonEmptyGroup:           "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
		kerr.UnknownTopicOrPartition: "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.",
		fmt.Errorf("wrapped: %w", &errors.KafkaError{Code: kerr.GroupIDNotFound.Code, Message: "Group g not found."}): "org.apache.kafka.common.errors.GroupIdNotFoundException: Group g not found.",
	} {
		assert.Equal(t, want, javaString(err))
	}
}

// TestToolFor: consumer and classic groups follow the consumer tool; share groups, groups of
// other types and groups nobody lists the share tool, unless a consumer-only option was given.
func TestToolFor(t *testing.T) {
	t.Parallel()
	assert.Equal(t, consumerTool, toolFor(kadm.ListedGroup{GroupType: "consumer"}, true, false))
	assert.Equal(t, consumerTool, toolFor(kadm.ListedGroup{GroupType: "classic", ProtocolType: "connect"}, true, false))
	assert.Equal(t, shareTool, toolFor(kadm.ListedGroup{GroupType: "share"}, true, true))
	assert.Equal(t, shareTool, toolFor(kadm.ListedGroup{GroupType: "streams"}, true, false))
	assert.Equal(t, shareTool, toolFor(kadm.ListedGroup{}, false, false))
	assert.Equal(t, consumerTool, toolFor(kadm.ListedGroup{}, false, true))
}

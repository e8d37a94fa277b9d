package main

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

// groupTool is the Kafka tool whose behaviour --reset-offsets, --delete-offsets and --delete
// follow for a group: kafka-consumer-groups.sh for consumer and classic groups,
// kafka-share-groups.sh for every other group.
type groupTool int

const (
	shareTool groupTool = iota
	consumerTool
)

// name is the tool's word for its groups, as in "Executing share group command failed".
func (t groupTool) name() string {
	if t == consumerTool {
		return "consumer"
	}
	return "share"
}

// toolFor picks the tool for a group ListGroups listed (found) or did not. A group nobody
// listed follows the share tool unless the command line has an option only the consumer tool
// has (consumerOnly).
func toolFor(g kadm.ListedGroup, found, consumerOnly bool) groupTool {
	switch {
	case found && (g.GroupType == "consumer" || g.GroupType == "classic"):
		return consumerTool
	case !found && consumerOnly:
		return consumerTool
	}
	return shareTool
}

// lookupGroup lists the groups of every broker (ListGroups) and returns group's listing, with
// its type and state, and whether it was listed.
func lookupGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.ListedGroup, bool, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return kadm.ListedGroup{}, false, err
	}
	g, ok := listed[group]
	return g, ok, nil
}

// illegalArgument is an error Kafka's tools raise as an IllegalArgumentException: the share
// tool writes its message on stderr, the consumer tool the message and the usage; both exit 1.
type illegalArgument interface {
	error
	illegalArgument()
}

// illegalArgumentError is an illegalArgument with a message.
type illegalArgumentError struct{ msg string }

func (e illegalArgumentError) Error() string  { return e.msg }
func (illegalArgumentError) illegalArgument() {}

// fail writes err as t writes a failure of its command and returns the exit code: an
// illegalArgumentError on stderr (exit 1), anything else as "Error: Executing <t> group command
// failed due to <message>" on stdout, exit 1 for the share tool and 0 for the consumer tool
// (kafka-consumer-groups.sh prints the error and returns normally).
func (t groupTool) fail(stdout, stderr io.Writer, err error) int {
	var ia illegalArgument
	if stderrors.As(err, &ia) {
		fmt.Fprintln(stderr, ia.Error())
		if t == consumerTool {
			fmt.Fprint(stderr, usage())
		}
		return 1
	}
	printError(stdout, "Executing "+t.name()+" group command failed due to "+kafkaMessage(err))
	if t == consumerTool {
		return 0
	}
	return 1
}

// kafkaMessage is the message of the exception Kafka's admin client makes of err: the message
// the broker sent, or the code's own description when it sent none.
func kafkaMessage(err error) string {
	var ke *errors.KafkaError
	if stderrors.As(err, &ke) && ke.Message != "" {
		return ke.Message
	}
	var code *kerr.Error
	if stderrors.As(err, &code) {
		return code.Description
	}
	return err.Error()
}

// javaExceptions are the Java classes of Kafka's error codes whose name does not follow from
// the code's name.
var javaExceptions = map[int16]string{
	kerr.NonEmptyGroup.Code:            "org.apache.kafka.common.errors.GroupNotEmptyException",
	kerr.GroupAuthorizationFailed.Code: "org.apache.kafka.common.errors.GroupAuthorizationException",
	kerr.TopicAuthorizationFailed.Code: "org.apache.kafka.common.errors.TopicAuthorizationException",
	kerr.UnknownServerError.Code:       "org.apache.kafka.common.errors.UnknownServerException",
}

// javaString is err as Java's Throwable.toString prints the exception Kafka's admin client makes
// of it: "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.".
func javaString(err error) string {
	var code *kerr.Error
	if !stderrors.As(err, &code) {
		return err.Error()
	}
	class, ok := javaExceptions[code.Code]
	if !ok {
		var b strings.Builder
		for word := range strings.SplitSeq(strings.ToLower(code.Message), "_") {
			if word == "id" {
				b.WriteString("Id")
				continue
			}
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		}
		class = "org.apache.kafka.common.errors." + b.String() + "Exception"
	}
	return class + ": " + kafkaMessage(err)
}

// errorCode is the Kafka error code of err, UNKNOWN_SERVER_ERROR's for an error without one.
func errorCode(err error) int16 {
	var code *kerr.Error
	if stderrors.As(err, &code) {
		return code.Code
	}
	return kerr.UnknownServerError.Code
}

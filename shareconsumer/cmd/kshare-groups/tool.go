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

// groupTool is the Kafka tool whose behaviour the tool follows for a group:
// kafka-consumer-groups.sh for consumer and classic groups, kafka-share-groups.sh for every
// other group.
type groupTool int

const (
	shareTool    groupTool = iota // share groups, and groups the cluster does not list as consumer or classic
	consumerTool                  // consumer (KIP-848) and classic groups
)

// name is the tool's word for its groups, as in "Executing share group command failed".
func (t groupTool) name() string {
	if t == consumerTool {
		return "consumer"
	}
	return "share"
}

// toolOf picks the tool for a group as ListGroups lists it (listed false when it does not):
// the consumer tool for a consumer or classic group, whatever the case of its type, and for a
// group a broker before ListGroups v5 lists without a type unless its protocol type is
// "share"; the share tool for everything else, so that a streams group gets
// kafka-share-groups.sh's answer. A group no broker lists follows the share tool unless the
// command line has an option only the consumer tool has (unlistedTool).
func toolOf(g kadm.ListedGroup, listed, consumerOnly bool) groupTool {
	if !listed {
		return unlistedTool(consumerOnly)
	}
	switch typeName(g.GroupType) {
	case "Consumer", "Classic":
		return consumerTool
	case "":
		if g.ProtocolType != "share" {
			return consumerTool
		}
	}
	return shareTool
}

// unlistedTool is the tool for a group no broker lists: the share tool, unless the command
// line has an option only the consumer tool has (consumerOnly).
func unlistedTool(consumerOnly bool) groupTool {
	if consumerOnly {
		return consumerTool
	}
	return shareTool
}

// isConsumerGroup reports whether Kafka's admin client lists g among the consumer groups
// (listConsumerGroups, which kafka-consumer-groups.sh uses for --list and --all-groups): a
// group of type consumer, or of type classic with protocol type "consumer" or none. A classic
// group of another protocol (Kafka Connect's "connect") is not one.
func isConsumerGroup(g kadm.ListedGroup) bool {
	switch typeName(g.GroupType) {
	case "Consumer":
		return true
	case "Classic", "":
		return g.ProtocolType == "consumer" || g.ProtocolType == ""
	}
	return false
}

// isShareGroup reports whether Kafka's admin client lists g among the share groups.
func isShareGroup(g kadm.ListedGroup) bool { return typeName(g.GroupType) == "Share" }

// listAllGroups lists the groups of every broker (ListGroups), bounded by --timeout.
func listAllGroups(ctx context.Context, adm *kadm.Client, o options) (kadm.ListedGroups, error) {
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	listed, err := adm.ListGroups(rctx)
	return listed, o.timedOut(err)
}

// timedOut is, when err is a request that ran out of --timeout, one error that says so
// (whichever client call it came from, which kadm may word as a failed shard); else err.
func (o options) timedOut(err error) error {
	var named timeoutError
	if stderrors.Is(err, context.DeadlineExceeded) && !stderrors.As(err, &named) {
		return timeoutError{o.timeoutMs}
	}
	return err
}

// timeoutError is a request that had no answer within --timeout.
type timeoutError struct{ ms int64 }

func (e timeoutError) Error() string {
	return fmt.Sprintf("no answer within --timeout %d ms: %v", e.ms, context.DeadlineExceeded)
}

func (timeoutError) Unwrap() error { return context.DeadlineExceeded }

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

// javaError is an exception whose message Kafka's tools print as it is: one Kafka's admin
// client raises itself ("class: message"), or a failed admin call's ExecutionException, whose
// message is its cause as Java prints it (class empty: see thrown). It is not an
// illegalArgument: the tools meet it as the cause of a failed call, not as their own.
type javaError struct{ class, msg string }

func (e javaError) Error() string {
	if e.class == "" {
		return e.msg
	}
	return e.class + ": " + e.msg
}

// thrown is err as the ExecutionException a failed admin call throws, which the tools print
// with its cause's class (javaString); a javaError stays as it is.
func thrown(err error) error {
	var je javaError
	if err == nil || stderrors.As(err, &je) {
		return err
	}
	return javaError{msg: javaString(err)}
}

// printError writes msg as the tools' printError does.
func printError(w io.Writer, msg string) { fmt.Fprintf(w, "\nError: %s\n", msg) }

// fail writes a failure of t's command and returns the exit code, one rule for every action:
// an illegalArgument is refused (refuse); anything else is written as "Error: Executing <t>
// group command failed due to <message>" on stdout, the message being Kafka's message of err
// or, for a javaError, its whole text (Kafka's stack trace on stderr is left
// out), exit 1 for the share tool and 0 for the consumer tool, whose run catches the
// exception, prints it and returns normally (ConsumerGroupCommand.run, Kafka 4.2).
func (t groupTool) fail(stdout, stderr io.Writer, err error) int {
	var ia illegalArgument
	if stderrors.As(err, &ia) {
		return t.refuse(stderr, ia)
	}
	var je javaError
	msg := kafkaMessage(err)
	if stderrors.As(err, &je) {
		msg = je.Error()
	}
	printError(stdout, "Executing "+t.name()+" group command failed due to "+msg)
	if t == consumerTool {
		return 0
	}
	return 1
}

// refuse writes an argument t refuses once it runs (an IllegalArgumentException):
// kafka-share-groups.sh prints the message, kafka-consumer-groups.sh the message and the usage,
// both on stderr. It returns the exit code, 1.
func (t groupTool) refuse(stderr io.Writer, err error) int {
	if t == consumerTool {
		return usageFailure(stderr, err.Error())
	}
	fmt.Fprintln(stderr, err)
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

// javaString is err as Java's Throwable.toString prints the exception Kafka's admin client
// makes of it: for an error code of Kafka, its exception class (javaException) and Kafka's
// message (the code's default one when the broker sent none), as
// "org.apache.kafka.common.errors.GroupIdNotFoundException: Group g not found.". An error that
// says more than its code (a failed SASL handshake carries the broker's message in its text),
// or has none, is kept whole.
func javaString(err error) string {
	var code *kerr.Error
	if !stderrors.As(err, &code) {
		return err.Error()
	}
	var ke *errors.KafkaError
	if stderrors.As(err, &ke) || err == code {
		return javaException(code.Message) + ": " + kafkaMessage(err)
	}
	return err.Error()
}

// irregularExceptions are the exception classes of Kafka's error codes whose name does not
// follow from the code's name (Errors.java, Kafka 4.2).
var irregularExceptions = map[string]string{
	"UNKNOWN_SERVER_ERROR":                  "UnknownServerException",
	"CORRUPT_MESSAGE":                       "CorruptRecordException",
	"REQUEST_TIMED_OUT":                     "TimeoutException",
	"MESSAGE_TOO_LARGE":                     "RecordTooLargeException",
	"STALE_CONTROLLER_EPOCH":                "ControllerMovedException",
	"OFFSET_METADATA_TOO_LARGE":             "OffsetMetadataTooLarge",
	"NETWORK_EXCEPTION":                     "NetworkException",
	"INVALID_TOPIC_EXCEPTION":               "InvalidTopicException",
	"RECORD_LIST_TOO_LARGE":                 "RecordBatchTooLargeException",
	"TOPIC_AUTHORIZATION_FAILED":            "TopicAuthorizationException",
	"GROUP_AUTHORIZATION_FAILED":            "GroupAuthorizationException",
	"CLUSTER_AUTHORIZATION_FAILED":          "ClusterAuthorizationException",
	"TOPIC_ALREADY_EXISTS":                  "TopicExistsException",
	"INVALID_CONFIG":                        "InvalidConfigurationException",
	"OUT_OF_ORDER_SEQUENCE_NUMBER":          "OutOfOrderSequenceException",
	"DUPLICATE_SEQUENCE_NUMBER":             "DuplicateSequenceException",
	"INVALID_PRODUCER_ID_MAPPING":           "InvalidPidMappingException",
	"INVALID_TRANSACTION_TIMEOUT":           "InvalidTxnTimeoutException",
	"TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException",
	"KAFKA_STORAGE_ERROR":                   "KafkaStorageException",
	"SASL_AUTHENTICATION_FAILED":            "SaslAuthenticationException",
	"DELEGATION_TOKEN_AUTH_DISABLED":        "DelegationTokenDisabledException",
	"DELEGATION_TOKEN_REQUEST_NOT_ALLOWED":  "UnsupportedByAuthenticationException",
	"DELEGATION_TOKEN_AUTHORIZATION_FAILED": "DelegationTokenAuthorizationException",
	"NON_EMPTY_GROUP":                       "GroupNotEmptyException",
	"PRINCIPAL_DESERIALIZATION_FAILURE":     "PrincipalDeserializationException",
	"FETCH_SESSION_TOPIC_ID_ERROR":          "FetchSessionTopicIdException",
	"INVALID_REGULAR_EXPRESSION":            "InvalidRegularExpression",
}

// javaException is the fully qualified class of the exception Kafka's Errors gives an error
// code name: an irregular one from irregularExceptions, else the name's words capitalized,
// followed by "Exception" (GROUP_ID_NOT_FOUND is GroupIdNotFoundException). INVALID_RECORD's
// class is the one outside org.apache.kafka.common.errors.
func javaException(code string) string {
	if code == "INVALID_RECORD" {
		return "org.apache.kafka.common.InvalidRecordException"
	}
	class, ok := irregularExceptions[code]
	if !ok {
		var b strings.Builder
		for _, w := range strings.Split(code, "_") {
			if w != "" {
				b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
			}
		}
		class = b.String() + "Exception"
	}
	return "org.apache.kafka.common.errors." + class
}

// errorCode is the Kafka error code of err, UNKNOWN_SERVER_ERROR's for an error without one.
func errorCode(err error) int16 {
	var code *kerr.Error
	if stderrors.As(err, &code) {
		return code.Code
	}
	return kerr.UnknownServerError.Code
}

// errMultipleGroups is joptsimple's error when a tool reads the one value of --group
// (valueOf) and the command line has several: both tools meet it once they run, so it is
// written as a failure of the command.
var errMultipleGroups = stderrors.New("Found multiple arguments for option group, but you asked for only one")

// groupsTool is the tool for the groups of o.groups as listed: the consumer tool when every
// one of them follows it (toolOf), else the share tool.
func groupsTool(listed kadm.ListedGroups, o options) groupTool {
	if len(o.groups) == 0 {
		return shareTool
	}
	for _, id := range o.groups {
		g, ok := listed[id]
		if toolOf(g, ok, o.consumerOnly()) != consumerTool {
			return shareTool
		}
	}
	return consumerTool
}

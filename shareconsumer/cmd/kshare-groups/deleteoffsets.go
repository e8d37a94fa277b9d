package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// deleteOffsets runs --delete-offsets for o.group and each --topic and returns the exit code
// (0 once the request was answered, as Kafka's tools). A share group (or a group no broker
// lists) follows kafka-share-groups.sh: DeleteShareGroupOffsets for the topics, a line for a
// group-level error, then TOPIC STATUS. A consumer or classic group (a Connect group too: as
// kafka-consumer-groups.sh, which does not describe the group first, leaves it to the broker)
// follows kafka-consumer-groups.sh: OffsetDelete for the partitions (topic:0,1 or every
// partition of a topic), a line for the outcome, then TOPIC PARTITION STATUS. Several --group
// are the error both tools meet when they read the one group (errMultipleGroups), under the
// consumer tool when every group follows it.
func deleteOffsets(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options) int {
	adm := kadm.NewClient(cl)
	listed, err := listAllGroups(ctx, adm, o)
	tool := groupsTool(listed, o)
	if err != nil {
		return tool.fail(stdout, stderr, err)
	}
	if len(o.groups) > 1 {
		return tool.fail(stdout, stderr, errMultipleGroups)
	}
	if tool == consumerTool {
		err = deleteConsumerGroupOffsets(ctx, stdout, adm, o)
	} else {
		err = deleteShareGroupOffsets(ctx, stdout, cl, o)
	}
	if err != nil {
		return tool.fail(stdout, stderr, err)
	}
	return 0
}

// deleteShareGroupOffsets deletes the share group's offsets of the topics of --topic and writes the outcome as
// kafka-share-groups.sh does: a group-level error (or else the first topic's) decides the
// line above the table; every topic shows the group's error, or its own.
func deleteShareGroupOffsets(ctx context.Context, w io.Writer, cl *kgo.Client, o options) error {
	topics := slices.Compact(slices.Sorted(slices.Values(o.topics)))
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = o.group
	for _, t := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := o.requestCtx(ctx)
	resp, err := req.RequestWith(rctx, cl)
	cancel()
	if err != nil {
		return o.timedOut(err)
	}
	groupErr := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
	answered := map[string]error{}
	for _, rt := range resp.Topics {
		answered[rt.Topic] = errors.FromKafka(rt.ErrorCode, rt.ErrorMessage)
	}
	results := map[string]error{}
	top := groupErr
	for _, t := range topics {
		err, ok := answered[t]
		switch {
		case groupErr != nil:
			err = groupErr
		case !ok:
			err = illegalArgumentError{`Offset deletion result for topic "` + t + `" was not included in the response`}
		}
		results[t] = err
		if top == nil {
			top = err
		}
	}
	if top != nil {
		switch errorCode(top) {
		case kerr.InvalidGroupID.Code, kerr.GroupIDNotFound.Code, kerr.GroupAuthorizationFailed.Code, kerr.NonEmptyGroup.Code:
			printError(w, kafkaMessage(top))
		case kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicOrPartition.Code:
		default:
			printError(w, "Encounter some unknown error: "+javaString(top))
		}
	}
	if len(results) > 0 {
		topicLen := 15
		for _, t := range topics {
			topicLen = max(topicLen, len(t))
		}
		fmt.Fprintf(w, "\n%-*s %s", topicLen, "TOPIC", "STATUS")
		for _, t := range topics {
			status := "Successful"
			if err := results[t]; err != nil {
				status = "Error: " + kafkaMessage(err)
			}
			fmt.Fprintf(w, "\n%-*s %s", topicLen, t, status)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// deleteConsumerGroupOffsets deletes a consumer group's offsets (OffsetDelete) of the
// partitions --topic names and writes the outcome as kafka-consumer-groups.sh does. A topic
// that does not exist is a row of its own, partition "-".
func deleteConsumerGroupOffsets(ctx context.Context, w io.Writer, adm *kadm.Client, o options) error {
	group := o.group
	results := map[topicPartition]error{}
	tps, _, notFound, err := topicPartitionsOf(ctx, adm, o)
	if err != nil {
		return err
	}
	partitions := kadm.TopicsSet{}
	for _, tp := range tps {
		partitions.Add(tp.topic, tp.partition)
	}
	for _, name := range notFound {
		results[topicPartition{name, -1}] = topicNotFound(name)
	}
	rctx, cancel := o.requestCtx(ctx)
	resp, top := adm.DeleteOffsets(rctx, group, partitions)
	cancel()
	var answer *kerr.Error
	if top != nil && !errors.As(top, &answer) {
		return o.timedOut(top) // the request failed: no answer to print
	}
	for t, ps := range partitions {
		for p := range ps {
			tp := topicPartition{t, p}
			if top != nil {
				results[tp] = top
				continue
			}
			err, ok := resp.Lookup(t, p)
			if !ok {
				err = illegalArgumentError{"Partition " + tp.String() + " was not included in the response"}
			}
			results[tp] = err
		}
	}
	if top == nil {
		top = resp.Error()
	}
	switch code := errorCode(top); {
	case top == nil:
		fmt.Fprintf(w, "Request succeeded for deleting offsets from group %s.\n", group)
	case code == kerr.InvalidGroupID.Code || code == kerr.GroupIDNotFound.Code || code == kerr.GroupAuthorizationFailed.Code || code == kerr.NonEmptyGroup.Code:
		printError(w, kafkaMessage(top))
	case code == kerr.GroupSubscribedToTopic.Code || code == kerr.TopicAuthorizationFailed.Code || code == kerr.UnknownTopicOrPartition.Code:
		printError(w, "Encountered some partition-level error, see the follow-up details.")
	default:
		printError(w, "Encountered some unknown error: "+kerr.TypedErrorForCode(code).Message)
	}
	topicLen := 15
	for tp := range results {
		topicLen = max(topicLen, len(tp.topic))
	}
	rows := slices.SortedFunc(maps.Keys(results), func(a, b topicPartition) int {
		return cmp.Compare(a.topic+strconv.Itoa(int(a.partition)), b.topic+strconv.Itoa(int(b.partition)))
	})
	fmt.Fprintf(w, "\n%-*s %-10s %-15s", topicLen, "TOPIC", "PARTITION", "STATUS")
	for _, tp := range rows {
		partition, status := missing, "Successful"
		if tp.partition >= 0 {
			partition = strconv.Itoa(int(tp.partition))
		}
		if err := results[tp]; err != nil {
			status = "Error: " + javaString(err)
		}
		fmt.Fprintf(w, "\n%-*s %-10s %-15s", topicLen, tp.topic, partition, status)
	}
	fmt.Fprintln(w)
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// missing is what Kafka's group tools print for a value they do not have.
const missing = "-"

// describeGroups writes what --describe asks for (o.members, o.state, else the offsets; o.verbose)
// for each group of o.groups, or with --all-groups each share, consumer and classic group, in
// order of id, each in the format of its tool (toolOf). As the tools do, it describes
// every group before it writes anything, so a group that cannot be described (a missing one:
// "Group g not found.") leaves only the error. It returns the exit code.
func describeGroups(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options) int {
	listed, err := listAllGroups(ctx, kadm.NewClient(cl), o)
	if err != nil {
		return shareTool.fail(stdout, stderr, thrown(err))
	}
	ids := slices.Clone(o.groups)
	if o.allGroups {
		for _, g := range listed.Sorted() {
			if isShareGroup(g) || isConsumerGroup(g) {
				ids = append(ids, g.Group)
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var writers []func()
	for _, id := range ids {
		g, ok := listed[id]
		tool := toolOf(g, ok, false)
		var write func()
		if tool == consumerTool {
			write, err = describeConsumerGroup(ctx, stdout, stderr, cl, o, id)
		} else {
			write, err = describeShareGroup(ctx, stdout, stderr, cl, o, id)
		}
		if err != nil {
			return tool.fail(stdout, stderr, thrown(o.timedOut(err)))
		}
		writers = append(writers, write)
	}
	for _, write := range writers {
		write()
	}
	return 0
}

// describeShareGroup describes the share group group for the view o asks for and returns what
// writes it as kafka-share-groups.sh does.
func describeShareGroup(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options, group string) (func(), error) {
	d, err := shareGroupDescribe(ctx, cl, o, group)
	if err != nil {
		return nil, err
	}
	switch {
	case o.members:
		return func() {
			if printShareGroupState(stdout, stderr, group, d.GroupState, len(d.Members)) {
				writeShareMembers(stdout, group, d.Members, o.verbose)
			}
		}, nil
	case o.state.given:
		coordinator, err := groupCoordinator(ctx, cl, o, group)
		if err != nil {
			return nil, err
		}
		return func() {
			printShareGroupState(stdout, stderr, group, d.GroupState, 1)
			writeShareState(stdout, group, coordinator, d, o.verbose)
		}, nil
	}
	offsets, err := shareOffsets(ctx, cl, o, group)
	if err != nil {
		return nil, err
	}
	return func() { writeShareOffsets(stdout, group, offsets, o.verbose) }, nil
}

// printShareGroupState writes what kafka-share-groups.sh says of a Dead group (an error, on
// stdout) or an Empty one (on stderr), and reports whether a table of rows rows follows.
func printShareGroupState(stdout, stderr io.Writer, group, state string, rows int) bool {
	switch state {
	case "Dead":
		printError(stdout, "Share group '"+group+"' does not exist.")
		return false
	case "Empty":
		fmt.Fprintf(stderr, "\nShare group '%s' has no active members.\n", group)
	}
	return rows > 0
}

// shareGroupDescribe sends ShareGroupDescribe for group and returns its entry, with the error
// code Kafka set in it and its message (which kadm drops) as a *errors.KafkaError.
func shareGroupDescribe(ctx context.Context, cl *kgo.Client, o options, group string) (kmsg.ShareGroupDescribeResponseGroup, error) {
	ctx, cancel := o.requestCtx(ctx)
	defer cancel()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ShareGroupDescribeResponseGroup{}, err
	}
	for _, g := range resp.Groups {
		if g.GroupID == group {
			return g, errors.FromKafka(g.ErrorCode, g.ErrorMessage)
		}
	}
	return kmsg.ShareGroupDescribeResponseGroup{}, fmt.Errorf("ShareGroupDescribe answered without group %s", group)
}

// groupCoordinator is the coordinator of group as the tools print it: "host:port  (id)".
func groupCoordinator(ctx context.Context, cl *kgo.Client, o options, group string) (string, error) {
	ctx, cancel := o.requestCtx(ctx)
	defer cancel()
	c, ok := kadm.NewClient(cl).FindGroupCoordinators(ctx, group)[group]
	switch {
	case !ok:
		return "", fmt.Errorf("FindCoordinator answered without group %s", group)
	case c.Err != nil:
		return "", c.Err
	}
	return fmt.Sprintf("%s:%d  (%d)", c.Host, c.Port, c.NodeID), nil
}

// assignmentString writes partitions as the tools' getAssignmentString does: "topic:p,p" per
// topic, partitions ascending, topics sorted as strings and joined by ";".
func assignmentString(partitions map[string][]int32) string {
	var topics []string
	for topic, ps := range partitions {
		ps = slices.Sorted(slices.Values(ps))
		strs := make([]string, len(ps))
		for i, p := range ps {
			strs[i] = strconv.Itoa(int(p))
		}
		topics = append(topics, topic+":"+strings.Join(strs, ","))
	}
	slices.Sort(topics)
	return strings.Join(topics, ";")
}

// countPartitions is the number of partitions of partitions.
func countPartitions(partitions map[string][]int32) int {
	n := 0
	for _, ps := range partitions {
		n += len(ps)
	}
	return n
}

// writeShareMembers writes the members as kafka-share-groups.sh --describe --members does,
// sorted by member id; verbose adds MEMBER-EPOCH.
func writeShareMembers(w io.Writer, group string, members []kmsg.ShareGroupDescribeResponseGroupMember, verbose bool) {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b kmsg.ShareGroupDescribeResponseGroupMember) int {
		return strings.Compare(a.MemberID, b.MemberID)
	})
	idLen, hostLen, clientLen := 15, 15, 15
	for _, m := range members {
		idLen, hostLen, clientLen = max(idLen, len(m.MemberID)), max(hostLen, len(m.ClientHost)), max(clientLen, len(m.ClientID))
	}
	groupLen := max(15, len(group))
	line := func(g, id, host, client, n, epoch, assignment string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-*s %-*s %-12s ", groupLen, g, idLen, id, hostLen, host, clientLen, client, n)
		if verbose {
			fmt.Fprintf(w, "%-13s ", epoch)
		}
		fmt.Fprint(w, assignment)
	}
	line("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT")
	for _, m := range members {
		partitions := map[string][]int32{}
		for _, tp := range m.Assignment.TopicPartitions {
			partitions[tp.Topic] = append(partitions[tp.Topic], tp.Partitions...)
		}
		line(group, m.MemberID, m.ClientHost, m.ClientID, strconv.Itoa(countPartitions(partitions)),
			strconv.Itoa(int(m.MemberEpoch)), assignmentString(partitions))
	}
	fmt.Fprintln(w)
}

// writeShareState writes the group's state as kafka-share-groups.sh --describe --state does;
// verbose adds GROUP-EPOCH and ASSIGNMENT-EPOCH.
func writeShareState(w io.Writer, group, coordinator string, d kmsg.ShareGroupDescribeResponseGroup, verbose bool) {
	groupLen, coordinatorLen := max(15, len(group)), max(25, len(coordinator))
	line := func(g, c, state, epoch, assignmentEpoch, members string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-15s ", groupLen, g, coordinatorLen, c, state)
		if verbose {
			fmt.Fprintf(w, "%-12s %-17s ", epoch, assignmentEpoch)
		}
		fmt.Fprint(w, members)
	}
	line("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS")
	line(group, coordinator, d.GroupState, strconv.Itoa(int(d.GroupEpoch)), strconv.Itoa(int(d.AssignmentEpoch)), strconv.Itoa(len(d.Members)))
	fmt.Fprintln(w)
}

// shareOffset is one share partition's start offset, leader epoch and lag; -1 for what is not
// known.
type shareOffset struct {
	topic       string
	partition   int32
	startOffset int64
	leaderEpoch int32
	lag         int64
}

// shareStart is one share partition as DescribeShareGroupOffsets answers for it: its start
// offset and leader epoch, its lag (v1; -1 before) and its error, with Kafka's message.
type shareStart struct {
	startOffset int64
	leaderEpoch int32
	lag         int64
	err         error
}

// shareStarts asks for the share-partition start offsets of group, every topic
// (DescribeShareGroupOffsets), by hand rather than with kadm, which drops the broker's error
// messages: the group's error, else each partition's answer.
func shareStarts(ctx context.Context, cl *kgo.Client, o options, group string) (map[topicPartition]shareStart, error) {
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, o.timedOut(err)
	}
	starts := map[topicPartition]shareStart{}
	for _, g := range resp.Groups {
		if err := errors.FromKafka(g.ErrorCode, g.ErrorMessage); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				starts[topicPartition{t.Topic, p.Partition}] = shareStart{p.StartOffset, p.LeaderEpoch, p.Lag, errors.FromKafka(p.ErrorCode, p.ErrorMessage)}
			}
		}
	}
	return starts, nil
}

// shareOffsets asks for the share-partition start offsets of group (shareStarts; a partition
// the broker answers with an error is left out, as Kafka's admin client does) and works out
// each partition's lag: the broker's, when it sends one (DescribeShareGroupOffsets v1), else
// the partition's end offset (ListOffsets) less the start offset.
func shareOffsets(ctx context.Context, cl *kgo.Client, o options, group string) ([]shareOffset, error) {
	starts, err := shareStarts(ctx, cl, o, group)
	if err != nil {
		return nil, err
	}
	var out []shareOffset
	topics := map[string]bool{}
	for tp, s := range starts {
		topics[tp.topic] = true
		if s.err != nil {
			continue
		}
		po := shareOffset{topic: tp.topic, partition: tp.partition, startOffset: -1, leaderEpoch: -1, lag: -1}
		if s.startOffset >= 0 {
			po.startOffset, po.leaderEpoch, po.lag = s.startOffset, s.leaderEpoch, s.lag
		}
		out = append(out, po)
	}
	if len(topics) > 0 {
		lctx, cancel := o.requestCtx(ctx)
		defer cancel()
		// The lag worked out here is beyond Kafka: a partition whose end offset cannot be
		// listed keeps "-" rather than failing the describe.
		ends, _ := kadm.NewClient(cl).ListEndOffsets(lctx, slices.Sorted(maps.Keys(topics))...)
		for i, po := range out {
			if end, ok := ends.Lookup(po.topic, po.partition); ok && end.Err == nil && po.startOffset >= 0 && po.lag < 0 {
				out[i].lag = max(0, end.Offset-po.startOffset)
			}
		}
	}
	slices.SortFunc(out, func(a, b shareOffset) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return out, nil
}

// writeShareOffsets writes the offsets as kafka-share-groups.sh --describe --offsets does;
// verbose adds LEADER-EPOCH.
func writeShareOffsets(w io.Writer, group string, offsets []shareOffset, verbose bool) {
	if len(offsets) == 0 {
		fmt.Fprintf(w, "\nShare group '%s' has no offset information.\n", group)
		return
	}
	groupLen, topicLen := max(15, len(group)), 15
	for _, o := range offsets {
		topicLen = max(topicLen, len(o.topic))
	}
	line := func(g, topic, partition, epoch, start, lag string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s ", groupLen, g, topicLen, topic, partition)
		if verbose {
			fmt.Fprintf(w, "%-13s ", epoch)
		}
		fmt.Fprintf(w, "%-13s %s", start, lag)
	}
	line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG")
	for _, o := range offsets {
		line(group, o.topic, strconv.Itoa(int(o.partition)), orMissing(int64(o.leaderEpoch)), orMissing(o.startOffset), orMissing(o.lag))
	}
	fmt.Fprintln(w)
}

func orMissing(v int64) string {
	if v < 0 {
		return missing
	}
	return strconv.FormatInt(v, 10)
}

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// consumerNoExecuteWarning is what kafka-consumer-groups.sh --reset-offsets writes on stderr
// without --dry-run or --execute, before it does a dry run.
const consumerNoExecuteWarning = "WARN: No action will be performed as the --execute option is missing. " +
	"In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. " +
	"You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting."

// resetOffsets runs --reset-offsets and returns the exit code. A share group (or a group no
// broker lists, unless the command line has a consumer-only option) is reset as
// kafka-share-groups.sh does: one group only, refused with "Share group 'G' is not empty." on
// stderr while it has members, else its share-partition start offsets set with
// AlterShareGroupOffsets. Consumer and classic groups, one or several, are reset as
// kafka-consumer-groups.sh does (resetConsumerGroups). Both print the plan, which --dry-run
// computes without changing anything.
func resetOffsets(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options) int {
	adm := kadm.NewClient(cl)
	if o.allGroups {
		return resetAllConsumerGroups(ctx, stdout, stderr, cl, adm, o)
	}
	listed, err := listAllGroups(ctx, adm, o)
	tool := groupsTool(listed, o)
	if err != nil {
		return tool.fail(stdout, stderr, err)
	}
	if !o.dryRun && !o.execute {
		if tool == shareTool {
			return usageFailure(stderr, "Option [reset-offsets] takes the option: [execute] or [dry-run]")
		}
		fmt.Fprintln(stderr, consumerNoExecuteWarning)
	}
	if tool == consumerTool {
		return resetConsumerGroups(ctx, stdout, stderr, cl, adm, o, o.groups)
	}
	if len(o.groups) > 1 {
		return tool.fail(stdout, stderr, errMultipleGroups)
	}
	if g, found := listed[o.group]; found && g.State != "Empty" && g.State != "Dead" {
		fmt.Fprintf(stderr, "Share group '%s' is not empty.\n", o.group)
		return 1
	}
	plan, err := planGroupReset(ctx, cl, adm, tool, o, o.group, &topicArgPartitions{}, time.Now())
	if err != nil {
		return tool.fail(stdout, stderr, err)
	}
	writeResetNotes(stdout, stderr, plan)
	if o.execute && len(plan.offsets) > 0 {
		if err := alterShareGroupOffsets(ctx, cl, o, o.group, plan.offsets); err != nil {
			return tool.fail(stdout, stderr, err)
		}
	}
	writeResetPlan(stdout, tool, o, map[string][]newOffset{o.group: plan.offsets})
	return 0
}

// resetAllConsumerGroups runs --reset-offsets --all-groups as kafka-consumer-groups.sh does:
// on every group its admin client lists as a consumer group (isConsumerGroup: consumer
// groups, and classic groups of protocol type "consumer" or none), each one in turn as
// resetConsumerGroups resets it, one table or CSV (with the group column) for all. Share
// groups are left out: kafka-share-groups.sh has no --all-groups for reset. A failed listing
// is the consumer tool's RuntimeException around the ExecutionException, exit 0.
func resetAllConsumerGroups(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, adm *kadm.Client, o options) int {
	if !o.dryRun && !o.execute {
		fmt.Fprintln(stderr, consumerNoExecuteWarning)
	}
	listed, err := listAllGroups(ctx, adm, o)
	if err != nil {
		return consumerCallFailure(stdout, stderr, o, err)
	}
	var groups []string
	for _, g := range listed.Sorted() {
		if isConsumerGroup(g) {
			groups = append(groups, g.Group)
		}
	}
	return resetConsumerGroups(ctx, stdout, stderr, cl, adm, o, groups)
}

// consumerCallFailure fails the consumer tool's command on err, the error of an admin call:
// a timeout as such, anything else as the ExecutionException the call throws, its cause's
// class in the message. It returns the exit code.
func consumerCallFailure(stdout, stderr io.Writer, o options, err error) int {
	if errors.Is(err, context.DeadlineExceeded) {
		return consumerTool.fail(stdout, stderr, o.timedOut(err))
	}
	return consumerTool.fail(stdout, stderr, javaError{"java.util.concurrent.ExecutionException", javaString(err)})
}

// resetConsumerGroups resets each consumer or classic group of groups, in order of id, as
// kafka-consumer-groups.sh does: it describes the group first (ConsumerGroupDescribe, then
// DescribeGroups for a classic group), so that a classic group of another protocol (Kafka
// Connect's) fails the command with the admin client's IllegalArgumentException, printed as
// the ExecutionException the tool wraps it in, exit 0, before any plan. A group that is
// neither Empty nor Dead gets an error line and an empty plan; an unknown group is reset as an
// inactive one; the others have their offsets committed with OffsetCommit. One table (or CSV)
// shows every group's plan.
func resetConsumerGroups(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, adm *kadm.Client, o options, groups []string) int {
	plans := map[string][]newOffset{}
	var topics topicArgPartitions
	for _, group := range slices.Compact(slices.Sorted(slices.Values(groups))) {
		d, err := consumerGroupDescribe(ctx, cl, o, group)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
		case err != nil:
			return consumerCallFailure(stdout, stderr, o, err)
		case d.state != "Empty" && d.state != "Dead":
			printError(stdout, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", group, d.state))
			plans[group] = nil
			continue
		}
		plan, err := planGroupReset(ctx, cl, adm, consumerTool, o, group, &topics, time.Now())
		if err != nil {
			return consumerTool.fail(stdout, stderr, err)
		}
		writeResetNotes(stdout, stderr, plan)
		if o.execute && len(plan.offsets) > 0 {
			if err := commitOffsets(ctx, adm, o, group, plan.offsets); err != nil {
				return consumerTool.fail(stdout, stderr, err)
			}
		}
		plans[group] = plan.offsets
	}
	writeResetPlan(stdout, consumerTool, o, plans)
	return 0
}

// writeResetNotes writes what working out plan found to say: notices on stdout, warnings (a
// log WARN in Kafka's tools) on stderr.
func writeResetNotes(stdout, stderr io.Writer, plan resetPlan) {
	for _, n := range plan.notices {
		fmt.Fprintf(stdout, "\n%s\n", n)
	}
	for _, w := range plan.warnings {
		fmt.Fprintf(stderr, "WARN %s\n", w)
	}
}

// scenario is the reset scenario the command line names, with its offset or shift and, for
// --to-datetime and --by-duration, the time in milliseconds.
func (o options) scenario(now time.Time) (resetScenario, int64, int64, error) {
	switch {
	case o.toEarliest:
		return toEarliest, 0, 0, nil
	case o.toLatest:
		return toLatest, 0, 0, nil
	case o.toCurrent:
		return toCurrent, 0, 0, nil
	case o.toOffset != nil:
		return toOffset, *o.toOffset, 0, nil
	case o.shiftBy != nil:
		return shiftBy, *o.shiftBy, 0, nil
	case o.given["to-datetime"]:
		t, err := parseDateTime(o.toDatetime)
		if err != nil {
			// Kafka's tools wrap the ParseException, whose name then leads the message.
			return 0, 0, 0, fmt.Errorf("java.text.ParseException: %w", err)
		}
		return toTimestamp, 0, t.UnixMilli(), nil
	default:
		d, err := parseISODuration(o.byDuration)
		return toTimestamp, 0, now.Add(-d).UnixMilli(), err
	}
}

// planGroupReset works out the reset plan of group: the partitions of --topic or, with
// --all-topics, those the group has offsets for; each checked to exist and have a leader;
// then the scenario applied to their log offsets and the group's current offsets. topics keeps
// the partitions of --topic for the next group.
func planGroupReset(ctx context.Context, cl *kgo.Client, adm *kadm.Client, tool groupTool, o options, group string, topics *topicArgPartitions, now time.Time) (resetPlan, error) {
	if o.given["from-file"] {
		return planFromFile(ctx, cl, adm, o, group)
	}
	scenario, n, millis, err := o.scenario(now)
	if err != nil {
		return resetPlan{}, err
	}
	var (
		partitions []topicPartition
		details    kadm.TopicDetails
		current    map[topicPartition]int64
	)
	if o.allTopics {
		if current, err = currentOffsets(ctx, cl, adm, o, tool, group); err != nil {
			return resetPlan{}, err
		}
		partitions = slices.Collect(maps.Keys(current))
	} else if partitions, details, err = topics.resolve(ctx, adm, o); err != nil {
		return resetPlan{}, err
	}
	if err := checkPartitionsValid(ctx, adm, o, partitions, details); err != nil {
		return resetPlan{}, err
	}
	if current == nil && (scenario == shiftBy || scenario == toCurrent) {
		if current, err = currentOffsets(ctx, cl, adm, o, tool, group); err != nil {
			return resetPlan{}, err
		}
	}
	positions, err := logPositions(ctx, cl, o, partitions, scenario, millis)
	if err != nil {
		return resetPlan{}, err
	}
	for tp, v := range current {
		if p, ok := positions[tp]; ok {
			p.current = v
			positions[tp] = p
		}
	}
	return planReset(scenario, n, partitions, positions)
}

// logPositions is what ListOffsets (listOffsets) tells of partitions that scenario needs, as
// Kafka's OffsetsUtils asks: the log start offset to reset to it or to clamp (toEarliest,
// toOffset, shiftBy), the log end offset for every other scenario, and for toTimestamp the first
// offset at or after millis. What it is not asked or does not tell, and the group's current
// offset, stay unknown.
func logPositions(ctx context.Context, cl *kgo.Client, o options, partitions []topicPartition, scenario resetScenario, millis int64) (map[topicPartition]logPosition, error) {
	positions := make(map[topicPartition]logPosition, len(partitions))
	for _, tp := range partitions {
		positions[tp] = unknownPosition
	}
	if len(partitions) == 0 {
		return positions, nil
	}
	type query struct {
		timestamp int64
		set       func(*logPosition, int64)
	}
	var queries []query
	if scenario == toEarliest || scenario == toOffset || scenario == shiftBy {
		queries = append(queries, query{-2, func(p *logPosition, v int64) { p.logStart = v }})
	}
	if scenario != toEarliest {
		queries = append(queries, query{-1, func(p *logPosition, v int64) { p.logEnd = v }})
	}
	if scenario == toTimestamp {
		queries = append(queries, query{millis, func(p *logPosition, v int64) { p.atTimestamp = v }})
	}
	for _, q := range queries {
		got, err := listOffsets(ctx, cl, o, partitions, q.timestamp)
		if err != nil {
			return nil, err
		}
		for tp, v := range got {
			p := positions[tp]
			q.set(&p, v)
			positions[tp] = p
		}
	}
	return positions, nil
}

// planFromFile works out the reset plan of group from the CSV file --from-file names: each
// partition's offset, clamped to its log as --to-offset is. A file without a line for the group
// is Kafka's "Error: No reset plan for group <g> found." and an empty plan.
func planFromFile(ctx context.Context, cl *kgo.Client, adm *kadm.Client, o options, group string) (resetPlan, error) {
	text, err := os.ReadFile(o.fromFile)
	if err != nil {
		return resetPlan{}, err
	}
	plans, err := parseResetPlanCSV(string(text), group, o.singleGroup())
	if err != nil {
		return resetPlan{}, err
	}
	requested, ok := plans[group]
	if !ok {
		return resetPlan{notices: []string{"Error: No reset plan for group " + group + " found."}}, nil
	}
	partitions := slices.SortedFunc(maps.Keys(requested), compareTopicPartitions)
	if err := checkPartitionsValid(ctx, adm, o, partitions, nil); err != nil {
		return resetPlan{}, err
	}
	positions, err := logPositions(ctx, cl, o, partitions, toOffset, 0)
	if err != nil {
		return resetPlan{}, err
	}
	var plan resetPlan
	for _, tp := range partitions {
		one, err := planReset(toOffset, requested[tp], []topicPartition{tp}, positions)
		if err != nil {
			return resetPlan{}, err
		}
		plan.offsets = append(plan.offsets, one.offsets...)
		plan.warnings = append(plan.warnings, one.warnings...)
	}
	return plan, nil
}

// parseTopicArg reads a --topic of the form topic:0,1,2 as Kafka's tools do.
func parseTopicArg(arg string) ([]topicPartition, error) {
	parts := javaSplit(arg, ":")
	if len(parts) != 2 {
		return nil, illegalArgumentError{"Invalid topic arg '" + arg + "', expected topic name and partitions"}
	}
	ps := javaSplit(parts[1], ",")
	var tps []topicPartition
	for _, p := range ps {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, illegalArgumentError{"Invalid partition '" + p + "' specified in topic arg '" + arg + "''"}
		}
		tps = append(tps, topicPartition{parts[0], int32(n)})
	}
	return tps, nil
}

// resetTopicPartitions is the partitions --topic names (topicPartitionsOf), with the Metadata
// of their topics. A topic that does not exist is Kafka's admin client's
// UNKNOWN_TOPIC_OR_PARTITION "Topic <t> not found.".
func resetTopicPartitions(ctx context.Context, adm *kadm.Client, o options) ([]topicPartition, kadm.TopicDetails, error) {
	tps, details, notFound, err := topicPartitionsOf(ctx, adm, o)
	if err != nil || len(notFound) == 0 {
		return tps, details, err
	}
	name := notFound[0]
	if td, ok := details[name]; ok && td.Err != nil && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, nil, td.Err
	}
	return nil, nil, topicNotFound(name)
}

// topicArgPartitions is the partitions of --topic, with the Metadata of their topics, once
// resolve has looked them up: the groups of one command share them.
type topicArgPartitions struct {
	resolved   bool
	partitions []topicPartition
	details    kadm.TopicDetails
}

// resolve is the partitions of --topic (resetTopicPartitions), looked up on the first call.
func (t *topicArgPartitions) resolve(ctx context.Context, adm *kadm.Client, o options) ([]topicPartition, kadm.TopicDetails, error) {
	if !t.resolved {
		partitions, details, err := resetTopicPartitions(ctx, adm, o)
		if err != nil {
			return nil, nil, err
		}
		t.resolved, t.partitions, t.details = true, partitions, details
	}
	return t.partitions, t.details, nil
}

// topicNotFound is Kafka's admin client's error for a topic that does not exist.
func topicNotFound(name string) error {
	return &errors.KafkaError{Code: kerr.UnknownTopicOrPartition.Code, Message: "Topic " + name + " not found."}
}

// topicPartitionsOf is the partitions --topic names: those of topic:0,1 and every
// partition of a bare topic name (Metadata), with the Metadata of every topic named. notFound
// is the bare names, in order, whose Metadata has no partitions to give: not there, or an error.
func topicPartitionsOf(ctx context.Context, adm *kadm.Client, o options) (tps []topicPartition, details kadm.TopicDetails, notFound []string, err error) {
	var names []string
	topics := map[string]bool{}
	for _, arg := range o.topics {
		if !strings.Contains(arg, ":") {
			names = append(names, arg)
			topics[arg] = true
			continue
		}
		parsed, err := parseTopicArg(arg)
		if err != nil {
			return nil, nil, nil, err
		}
		tps = append(tps, parsed...)
		for _, tp := range parsed {
			topics[tp.topic] = true
		}
	}
	if len(topics) == 0 {
		return tps, nil, nil, nil
	}
	rctx, cancel := o.requestCtx(ctx)
	details, err = adm.ListTopics(rctx, slices.Sorted(maps.Keys(topics))...)
	cancel()
	if err != nil {
		return nil, nil, nil, o.timedOut(err)
	}
	for _, name := range names {
		td, ok := details[name]
		if !ok || td.Err != nil {
			notFound = append(notFound, name)
			continue
		}
		for _, p := range td.Partitions {
			tps = append(tps, topicPartition{name, p.Partition})
		}
	}
	return tps, details, notFound, nil
}

// checkPartitionsValid refuses partitions that do not exist (UNKNOWN_TOPIC_OR_PARTITION) or
// have no leader (LEADER_NOT_AVAILABLE), in the words of Kafka's checkAllTopicPartitionsValid.
// It asks for the Metadata of their topics unless details already holds it.
func checkPartitionsValid(ctx context.Context, adm *kadm.Client, o options, partitions []topicPartition, details kadm.TopicDetails) error {
	if len(partitions) == 0 {
		return nil
	}
	if details == nil {
		topics := map[string]bool{}
		for _, tp := range partitions {
			topics[tp.topic] = true
		}
		rctx, cancel := o.requestCtx(ctx)
		var err error
		details, err = adm.ListTopics(rctx, slices.Sorted(maps.Keys(topics))...)
		cancel()
		if err != nil {
			return o.timedOut(err)
		}
	}
	partitions = slices.SortedFunc(slices.Values(partitions), compareTopicPartitions)
	var missing, leaderless []string
	for _, tp := range partitions {
		pd, ok := details[tp.topic].Partitions[tp.partition]
		switch {
		case details[tp.topic].Err != nil || !ok:
			missing = append(missing, tp.String())
		case pd.Leader < 0:
			leaderless = append(leaderless, tp.String())
		}
	}
	switch {
	case len(missing) > 0:
		return &errors.KafkaError{Code: kerr.UnknownTopicOrPartition.Code, Message: `The partitions "` + strings.Join(missing, ",") + `" do not exist`}
	case len(leaderless) > 0:
		return &errors.KafkaError{Code: kerr.LeaderNotAvailable.Code, Message: `The partitions "` + strings.Join(leaderless, ",") + `" have no leader`}
	}
	return nil
}

// currentOffsets is the group's current offset of each partition it has one for, -1 where it
// has none: a consumer group's committed offsets (OffsetFetch), a share group's
// share-partition start offsets (shareStarts), a partition answered with an error left out.
func currentOffsets(ctx context.Context, cl *kgo.Client, adm *kadm.Client, o options, tool groupTool, group string) (map[topicPartition]int64, error) {
	current := map[topicPartition]int64{}
	if tool == consumerTool {
		rctx, cancel := o.requestCtx(ctx)
		defer cancel()
		fetched, err := adm.FetchOffsets(rctx, group)
		if err != nil {
			return nil, o.timedOut(err)
		}
		for _, ps := range fetched {
			for _, r := range ps {
				if r.Err != nil {
					return nil, r.Err
				}
				current[topicPartition{r.Topic, r.Partition}] = r.At
			}
		}
		return current, nil
	}
	starts, err := shareStarts(ctx, cl, o, group)
	if err != nil {
		return nil, err
	}
	for tp, s := range starts {
		if s.err == nil {
			current[tp] = max(-1, s.startOffset)
		}
	}
	return current, nil
}

// listOffsets asks the partitions' leaders (ListOffsets) for the offset at timestamp: -2 the
// log start, -1 the log end, else the first offset of a record at or after that millisecond
// (-1 when there is none).
func listOffsets(ctx context.Context, cl *kgo.Client, o options, partitions []topicPartition, timestamp int64) (map[topicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string][]int32{}
	for _, tp := range partitions {
		byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range byTopic[topic] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, timestamp, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, o.timedOut(err)
	}
	got := map[topicPartition]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			got[topicPartition{t.Topic, p.Partition}] = p.Offset
		}
	}
	return got, nil
}

// alterShareGroupOffsets sets the share-partition start offsets (AlterShareGroupOffsets): the
// group's error, or the first partition's, with Kafka's message.
func alterShareGroupOffsets(ctx context.Context, cl *kgo.Client, o options, group string, offsets []newOffset) error {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for _, n := range offsets {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != n.topic {
			rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
			rt.Topic = n.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = n.partition, n.offset
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return o.timedOut(err)
	}
	if err := errors.FromKafka(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := errors.FromKafka(p.ErrorCode, p.ErrorMessage); err != nil {
				return err
			}
		}
	}
	return nil
}

// commitOffsets commits the offsets for a consumer or classic group as an admin does
// (OffsetCommit without a member): the first partition's error.
func commitOffsets(ctx context.Context, adm *kadm.Client, o options, group string, offsets []newOffset) error {
	commits := kadm.Offsets{}
	for _, n := range offsets {
		commits.Add(kadm.Offset{Topic: n.topic, Partition: n.partition, At: n.offset, LeaderEpoch: -1})
	}
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	resp, err := adm.CommitOffsets(rctx, group, commits)
	if err != nil {
		return o.timedOut(err)
	}
	return resp.Error()
}

// writeResetPlan writes the plans (group to its new offsets) as Kafka's tools do: with
// --export a CSV line per partition, "topic,partition,offset" for one --group and
// "group,topic,partition,offset" for several or --all-groups (however many groups it finds),
// then an empty line; else the table GROUP TOPIC
// PARTITION NEW-OFFSET, whose header the share tool leaves out for an empty plan and the
// consumer tool does not. Groups and rows are sorted by group, topic and partition (Kafka's
// follow a hash map).
func writeResetPlan(w io.Writer, tool groupTool, o options, plans map[string][]newOffset) {
	groups := slices.Sorted(maps.Keys(plans))
	if o.export {
		for _, g := range groups {
			for _, n := range plans[g] {
				if !o.singleGroup() {
					fmt.Fprintf(w, "%s,", g)
				}
				fmt.Fprintf(w, "%s,%d,%d\n", n.topic, n.partition, n.offset)
			}
		}
		fmt.Fprintln(w)
		return
	}
	groupLen, topicLen, rows := 15, 15, 0
	for _, g := range groups {
		groupLen = max(groupLen, len(g))
		for _, n := range plans[g] {
			topicLen = max(topicLen, len(n.topic))
			rows++
		}
	}
	if rows == 0 && tool == shareTool || len(groups) == 0 {
		fmt.Fprintln(w)
		return
	}
	line := func(cols ...string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s %s", groupLen, cols[0], topicLen, cols[1], cols[2], cols[3])
	}
	line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, g := range groups {
		for _, n := range plans[g] {
			line(g, n.topic, strconv.Itoa(int(n.partition)), strconv.FormatInt(n.offset, 10))
		}
	}
	fmt.Fprintln(w)
}

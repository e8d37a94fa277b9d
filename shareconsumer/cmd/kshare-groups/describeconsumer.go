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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// consumerGroup is a consumer or classic group as Kafka's admin client describes it
// (ConsumerGroupDescription): a classic group has no epochs and no target assignments.
type consumerGroup struct {
	state           string
	assignor        string // the partition assignor; a classic group's protocol
	groupEpoch      *int32
	assignmentEpoch *int32
	members         []consumerMember
}

type consumerMember struct {
	id, instanceID, host, clientID string
	assignment                     map[string][]int32
	target                         map[string][]int32 // nil for a classic member
	epoch                          *int32
	upgraded                       *bool // whether a member of a consumer group uses the consumer protocol; nil when not known
}

// describeConsumerGroup describes the consumer or classic group group for the view o asks for
// and returns what writes it as kafka-consumer-groups.sh does.
func describeConsumerGroup(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options, group string) (func(), error) {
	g, err := consumerGroupDescribe(ctx, cl, o, group)
	if err != nil {
		return nil, err
	}
	switch {
	case o.members:
		return func() { writeConsumerMembers(stdout, stderr, group, g, o.verbose) }, nil
	case o.state.given:
		coordinator, err := groupCoordinator(ctx, cl, o, group)
		if err != nil {
			return nil, err
		}
		return func() {
			if printConsumerGroupState(stdout, stderr, group, g.state, 1) {
				writeConsumerState(stdout, group, coordinator, g, o.verbose)
			}
		}, nil
	}
	rows, err := consumerOffsets(ctx, kadm.NewClient(cl), o, group, g)
	if err != nil {
		return nil, err
	}
	return func() {
		if printConsumerGroupState(stdout, stderr, group, g.state, len(rows)) {
			writeConsumerOffsets(stdout, rows, o.verbose)
		}
	}, nil
}

// consumerGroupDescribe describes group as Kafka's admin client does: with
// ConsumerGroupDescribe, and for a classic group (which ConsumerGroupDescribe answers with
// GROUP_ID_NOT_FOUND) with DescribeGroups. A classic group of a protocol type other than
// "consumer" or "" is refused as the admin client refuses it.
func consumerGroupDescribe(ctx context.Context, cl *kgo.Client, o options, group string) (consumerGroup, error) {
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return consumerGroup{}, err
	}
	for _, d := range resp.Groups {
		if d.Group != group {
			continue
		}
		err := errors.FromKafka(d.ErrorCode, d.ErrorMessage)
		if errors.Is(err, kerr.GroupIDNotFound) {
			return classicGroupDescribe(ctx, cl, o, group, err)
		}
		if err != nil {
			return consumerGroup{}, err
		}
		g := consumerGroup{state: d.State, assignor: d.AssignorName, groupEpoch: &d.Epoch, assignmentEpoch: &d.AssignmentEpoch}
		for _, m := range d.Members {
			cm := consumerMember{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID,
				assignment: assignmentPartitions(m.Assignment), target: assignmentPartitions(m.TargetAssignment), epoch: &m.MemberEpoch}
			if m.InstanceID != nil {
				cm.instanceID = *m.InstanceID
			}
			if m.MemberType != -1 {
				upgraded := m.MemberType == 1
				cm.upgraded = &upgraded
			}
			g.members = append(g.members, cm)
		}
		return g, nil
	}
	return consumerGroup{}, fmt.Errorf("ConsumerGroupDescribe answered without group %s", group)
}

func assignmentPartitions(a kmsg.Assignment) map[string][]int32 {
	partitions := map[string][]int32{}
	for _, tp := range a.TopicPartitions {
		partitions[tp.Topic] = append(partitions[tp.Topic], tp.Partitions...)
	}
	return partitions
}

// classicGroupDescribe describes the classic group group with DescribeGroups; notFound is what
// ConsumerGroupDescribe answered, which Kafka's admin client reports when DescribeGroups does
// not find the group either.
func classicGroupDescribe(ctx context.Context, cl *kgo.Client, o options, group string, notFound error) (consumerGroup, error) {
	rctx, cancel := o.requestCtx(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return consumerGroup{}, err
	}
	for _, d := range resp.Groups {
		if d.Group != group {
			continue
		}
		err := errors.FromKafka(d.ErrorCode, d.ErrorMessage)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			return consumerGroup{}, notFound
		case err != nil:
			return consumerGroup{}, err
		case d.ProtocolType != "consumer" && d.ProtocolType != "":
			return consumerGroup{}, javaError{"java.lang.IllegalArgumentException",
				fmt.Sprintf("GroupId %s is not a consumer group (%s).", group, d.ProtocolType)}
		}
		g := consumerGroup{state: d.State, assignor: d.Protocol}
		for _, m := range d.Members {
			cm := consumerMember{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID, assignment: map[string][]int32{}}
			if m.InstanceID != nil {
				cm.instanceID = *m.InstanceID
			}
			if len(m.MemberAssignment) > 0 {
				var a kmsg.ConsumerMemberAssignment
				if err := a.ReadFrom(m.MemberAssignment); err != nil {
					return consumerGroup{}, fmt.Errorf("member %s of group %s: unreadable assignment: %w", m.MemberID, group, err)
				}
				for _, t := range a.Topics {
					cm.assignment[t.Topic] = append(cm.assignment[t.Topic], t.Partitions...)
				}
			}
			g.members = append(g.members, cm)
		}
		return g, nil
	}
	return consumerGroup{}, fmt.Errorf("DescribeGroups answered without group %s", group)
}

// printConsumerGroupState writes what kafka-consumer-groups.sh says of a group's state (Dead:
// an error on stdout; Empty, or rebalancing: on stderr) and reports whether a table of rows
// rows follows.
func printConsumerGroupState(stdout, stderr io.Writer, group, state string, rows int) bool {
	switch state {
	case "Dead":
		printError(stdout, "Consumer group '"+group+"' does not exist.")
		return false
	case "Empty":
		fmt.Fprintf(stderr, "\nConsumer group '%s' has no active members.\n", group)
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintf(stderr, "\nWarning: Consumer group '%s' is rebalancing.\n", group)
	}
	return rows > 0
}

// consumerOffsetRow is one line of kafka-consumer-groups.sh --describe --offsets; -1 and ""
// for what is not known.
type consumerOffsetRow struct {
	group                      string
	topic                      string
	partition                  int32
	leaderEpoch                int32
	offset, logEndOffset, lag  int64
	consumerID, host, clientID string
}

// consumerOffsets makes the rows of kafka-consumer-groups.sh --describe --offsets: each member
// with partitions (most partitions first) with its partitions sorted, then the partitions with
// a committed offset that no member has, sorted, with "-" as member. The committed offsets
// come from OffsetFetch, the log end offsets from ListOffsets; the lag is their difference
// when both are known.
func consumerOffsets(ctx context.Context, adm *kadm.Client, o options, group string, g consumerGroup) ([]consumerOffsetRow, error) {
	fctx, cancel := o.requestCtx(ctx)
	defer cancel()
	committed, err := adm.FetchOffsets(fctx, group)
	if err != nil {
		return nil, err
	}
	topics := map[string]bool{}
	committed.Each(func(r kadm.OffsetResponse) { topics[r.Topic] = true })
	for _, m := range g.members {
		for t := range m.assignment {
			topics[t] = true
		}
	}
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		lctx, cancel := o.requestCtx(ctx)
		defer cancel()
		// As Kafka's tool, a partition whose end offset is not known (no leader, or a broker
		// that failed) shows "-"; only a listing that got nothing at all fails.
		if ends, err = adm.ListEndOffsets(lctx, slices.Sorted(maps.Keys(topics))...); err != nil && len(ends) == 0 {
			return nil, err
		}
	}
	row := func(topic string, p int32, consumerID, host, clientID string) consumerOffsetRow {
		r := consumerOffsetRow{group: group, topic: topic, partition: p, leaderEpoch: -1, offset: -1, logEndOffset: -1, lag: -1,
			consumerID: consumerID, host: host, clientID: clientID}
		if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
			r.offset, r.leaderEpoch = c.At, c.LeaderEpoch
		}
		if e, ok := ends.Lookup(topic, p); ok && e.Err == nil {
			r.logEndOffset = e.Offset
			if r.offset >= 0 {
				r.lag = e.Offset - r.offset
			}
		}
		return r
	}
	sortRows := func(rows []consumerOffsetRow) {
		slices.SortFunc(rows, func(a, b consumerOffsetRow) int {
			if c := strings.Compare(a.topic, b.topic); c != 0 {
				return c
			}
			return int(a.partition - b.partition)
		})
	}
	members := slices.Clone(g.members)
	slices.SortStableFunc(members, func(a, b consumerMember) int {
		return countPartitions(b.assignment) - countPartitions(a.assignment)
	})
	var rows []consumerOffsetRow
	assigned := map[string]map[int32]bool{}
	for _, m := range members {
		var mine []consumerOffsetRow
		for t, ps := range m.assignment {
			for _, p := range ps {
				mine = append(mine, row(t, p, m.id, m.host, m.clientID))
				if assigned[t] == nil {
					assigned[t] = map[int32]bool{}
				}
				assigned[t][p] = true
			}
		}
		sortRows(mine)
		rows = append(rows, mine...)
	}
	var unassigned []consumerOffsetRow
	committed.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && !assigned[r.Topic][r.Partition] {
			unassigned = append(unassigned, row(r.Topic, r.Partition, missing, missing, missing))
		}
	})
	sortRows(unassigned)
	return append(rows, unassigned...), nil
}

// writeConsumerOffsets writes the rows as kafka-consumer-groups.sh --describe --offsets does;
// verbose adds LEADER-EPOCH.
func writeConsumerOffsets(w io.Writer, rows []consumerOffsetRow, verbose bool) {
	groupLen, topicLen, idLen, hostLen := 15, 15, 15, 15
	for _, r := range rows {
		groupLen, topicLen = max(groupLen, len(r.group)), max(topicLen, len(r.topic))
		idLen, hostLen = max(idLen, len(r.consumerID)), max(hostLen, len(r.host))
	}
	line := func(group, topic, partition, epoch, offset, end, lag, id, host, client string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s ", groupLen, group, topicLen, topic, partition)
		if verbose {
			fmt.Fprintf(w, "%-15s ", epoch)
		}
		fmt.Fprintf(w, "%-15s %-15s %-15s %-*s %-*s %s", offset, end, lag, idLen, id, hostLen, host, client)
	}
	line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, r := range rows {
		line(r.group, r.topic, strconv.Itoa(int(r.partition)), orMissing(int64(r.leaderEpoch)), orMissing(r.offset),
			orMissing(r.logEndOffset), orMissing(r.lag), r.consumerID, r.host, r.clientID)
	}
	fmt.Fprintln(w)
}

// writeConsumerMembers writes the members as kafka-consumer-groups.sh --describe --members
// does, in the order the broker sent them: GROUP-INSTANCE-ID when a member has one; verbose
// adds the current and target epochs and assignments, and UPGRADED while the group has members
// of both protocols. The header is written after the state's message even without members.
func writeConsumerMembers(stdout, stderr io.Writer, group string, g consumerGroup, verbose bool) {
	groupLen, idLen, instanceLen, hostLen, clientLen, currentLen, targetLen := 15, 15, 17, 15, 15, 20, 20
	withInstance, hasClassic, hasConsumer := false, false, false
	current := func(m consumerMember) string { return orMissingString(assignmentString(m.assignment)) }
	target := func(m consumerMember) string { return orMissingString(assignmentString(m.target)) }
	printConsumerGroupState(stdout, stderr, group, g.state, len(g.members))
	for _, m := range g.members {
		groupLen, idLen, instanceLen = max(groupLen, len(group)), max(idLen, len(m.id)), max(instanceLen, len(m.instanceID))
		hostLen, clientLen = max(hostLen, len(m.host)), max(clientLen, len(m.clientID))
		currentLen, targetLen = max(currentLen, len(current(m))), max(targetLen, len(target(m)))
		withInstance = withInstance || m.instanceID != ""
		hasClassic = hasClassic || m.upgraded != nil && !*m.upgraded
		hasConsumer = hasConsumer || m.upgraded != nil && *m.upgraded
	}
	withUpgraded := hasClassic && hasConsumer
	line := func(cols ...string) {
		fmt.Fprintf(stdout, "%-*s %-*s ", groupLen, cols[0], idLen, cols[1])
		if withInstance {
			fmt.Fprintf(stdout, "%-*s ", instanceLen, cols[2])
		}
		fmt.Fprintf(stdout, "%-*s %-*s %-15s ", hostLen, cols[3], clientLen, cols[4], cols[5])
	}
	verboseCols := func(cols ...string) {
		fmt.Fprintf(stdout, "%-15s %-*s %-15s %-*s", cols[0], currentLen, cols[1], cols[2], targetLen, cols[3])
		if withUpgraded {
			fmt.Fprintf(stdout, " %s", cols[4])
		}
	}
	fmt.Fprintln(stdout)
	line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
	if verbose {
		verboseCols("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED")
	}
	fmt.Fprintln(stdout)
	for _, m := range g.members {
		line(group, m.id, m.instanceID, m.host, m.clientID, strconv.Itoa(countPartitions(m.assignment)))
		if verbose {
			upgraded := missing
			if m.upgraded != nil {
				upgraded = strconv.FormatBool(*m.upgraded)
			}
			verboseCols(orMissingInt32(m.epoch), current(m), orMissingInt32(g.assignmentEpoch), target(m), upgraded)
		}
		fmt.Fprintln(stdout)
	}
}

// writeConsumerState writes the group's state as kafka-consumer-groups.sh --describe --state
// does; verbose adds GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH ("-" for a classic group).
func writeConsumerState(w io.Writer, group, coordinator string, g consumerGroup, verbose bool) {
	groupLen, coordinatorLen := max(15, len(group)), max(25, len(coordinator))
	line := func(grp, c, assignor, state, epoch, assignmentEpoch, members string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-20s %-20s ", groupLen, grp, coordinatorLen, c, assignor, state)
		if verbose {
			fmt.Fprintf(w, "%-15s %-25s ", epoch, assignmentEpoch)
		}
		fmt.Fprint(w, members)
	}
	line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")
	line(group, coordinator, orMissingString(g.assignor), g.state, orMissingInt32(g.groupEpoch), orMissingInt32(g.assignmentEpoch),
		strconv.Itoa(len(g.members)))
	fmt.Fprintln(w)
}

func orMissingString(s string) string {
	if s == "" {
		return missing
	}
	return s
}

func orMissingInt32(v *int32) string {
	if v == nil {
		return missing
	}
	return strconv.Itoa(int(*v))
}

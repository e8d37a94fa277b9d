package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// missing is what kafka-share-groups.sh prints for a value it does not have.
const missing = "-"

// describeGroup writes what kafka-share-groups.sh --describe --members and --describe
// --offsets write for group, one after the other: its members (or, on stderr, that it has
// none), then each partition's share-partition start offset and lag. A group of another type
// or none at all is an error line. It reports whether group was described.
func describeGroup(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, group string) bool {
	d, err := describeShareGroup(ctx, cl, group)
	switch {
	case errors.Is(err, errors.ErrInconsistentGroupType):
		printError(stdout, "Group '"+group+"' is not a share group.")
		return false
	case errors.Is(err, kerr.GroupIDNotFound) || err == nil && d.GroupState == "Dead":
		printError(stdout, "Share group '"+group+"' does not exist.")
		return false
	case err != nil:
		printError(stdout, "Executing share group command failed due to "+err.Error())
		return false
	}
	if len(d.Members) == 0 {
		fmt.Fprintf(stderr, "\nShare group '%s' has no active members.\n", group)
	} else {
		writeMembers(stdout, group, d.Members)
	}
	offsets, err := partitionOffsets(ctx, kadm.NewClient(cl), group)
	if err != nil {
		printError(stdout, "Executing share group command failed due to "+err.Error())
		return false
	}
	writeOffsets(stdout, group, offsets)
	return true
}

// printError writes msg as kafka-share-groups.sh's printError does.
func printError(w io.Writer, msg string) { fmt.Fprintf(w, "\nError: %s\n", msg) }

// describeShareGroup sends ShareGroupDescribe for group and returns its entry, with the error
// code Kafka set in it and its message (which kadm drops) as a *errors.KafkaError.
func describeShareGroup(ctx context.Context, cl *kgo.Client, group string) (kmsg.ShareGroupDescribeResponseGroup, error) {
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

// writeMembers writes the members as kafka-share-groups.sh --describe --members does, sorted
// by member id: the assignment as "topic:p,p;topic:p".
func writeMembers(w io.Writer, group string, members []kmsg.ShareGroupDescribeResponseGroupMember) {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b kmsg.ShareGroupDescribeResponseGroupMember) int {
		return strings.Compare(a.MemberID, b.MemberID)
	})
	idLen, hostLen, clientLen := 15, 15, 15
	for _, m := range members {
		idLen, hostLen, clientLen = max(idLen, len(m.MemberID)), max(hostLen, len(m.ClientHost)), max(clientLen, len(m.ClientID))
	}
	groupLen := max(15, len(group))
	line := func(cols ...string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-*s %-*s %-12s %s", groupLen, cols[0], idLen, cols[1], hostLen, cols[2], clientLen, cols[3], cols[4], cols[5])
	}
	line("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
	for _, m := range members {
		n := 0
		var topics []string
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
			ps := slices.Sorted(slices.Values(tp.Partitions))
			strs := make([]string, len(ps))
			for i, p := range ps {
				strs[i] = strconv.Itoa(int(p))
			}
			topics = append(topics, tp.Topic+":"+strings.Join(strs, ","))
		}
		slices.Sort(topics)
		line(group, m.MemberID, m.ClientHost, m.ClientID, strconv.Itoa(n), strings.Join(topics, ";"))
	}
	fmt.Fprintln(w)
}

// partitionOffset is one share partition's start offset and lag; -1 for what is not known.
type partitionOffset struct {
	topic       string
	partition   int32
	startOffset int64
	lag         int64
}

// partitionOffsets asks for the share-partition start offsets of group
// (DescribeShareGroupOffsets) and works out each partition's lag: the broker's, when it sends
// one (DescribeShareGroupOffsets v1), else the partition's end offset (ListOffsets) less the
// start offset.
func partitionOffsets(ctx context.Context, adm *kadm.Client, group string) ([]partitionOffset, error) {
	ds, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return nil, d.Err
	}
	var out []partitionOffset
	var topics []string
	for topic, ps := range d.Offsets {
		topics = append(topics, topic)
		for p, o := range ps {
			po := partitionOffset{topic: topic, partition: p, startOffset: -1, lag: -1}
			if o.Err == nil && o.StartOffset >= 0 {
				po.startOffset, po.lag = o.StartOffset, o.Lag
			}
			out = append(out, po)
		}
	}
	if len(topics) > 0 {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return nil, err
		}
		for i, po := range out {
			if end, ok := ends.Lookup(po.topic, po.partition); ok && end.Err == nil && po.startOffset >= 0 && po.lag < 0 {
				out[i].lag = max(0, end.Offset-po.startOffset)
			}
		}
	}
	slices.SortFunc(out, func(a, b partitionOffset) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return out, nil
}

// writeOffsets writes the offsets as kafka-share-groups.sh --describe --offsets does.
func writeOffsets(w io.Writer, group string, offsets []partitionOffset) {
	if len(offsets) == 0 {
		fmt.Fprintf(w, "\nShare group '%s' has no offset information.\n", group)
		return
	}
	groupLen, topicLen := max(15, len(group)), 15
	for _, o := range offsets {
		topicLen = max(topicLen, len(o.topic))
	}
	line := func(cols ...string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s %-13s %s", groupLen, cols[0], topicLen, cols[1], cols[2], cols[3], cols[4])
	}
	line("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")
	for _, o := range offsets {
		line(group, o.topic, strconv.Itoa(int(o.partition)), orMissing(o.startOffset), orMissing(o.lag))
	}
	fmt.Fprintln(w)
}

func orMissing(v int64) string {
	if v < 0 {
		return missing
	}
	return strconv.FormatInt(v, 10)
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// groupFilter is what kafka-groups.sh --list filters on, client side.
type groupFilter struct {
	groupType string  // lower case; "" for any
	protocol  *string // nil for any
	consumer  bool
	share     bool
	streams   bool
}

// keeps reports whether f keeps g, as GroupsCommand's combinedFilter does: --group-type needs the
// type (and --protocol, when given, the protocol); --protocol alone the protocol; --consumer the
// protocol "consumer" or "" or the type consumer; --share and --streams the type.
func (f groupFilter) keeps(g kadm.ListedGroup) bool {
	typ := strings.ToLower(g.GroupType)
	switch {
	case f.groupType != "":
		return typ == f.groupType && (f.protocol == nil || g.ProtocolType == *f.protocol)
	case f.protocol != nil:
		return g.ProtocolType == *f.protocol
	case f.consumer:
		return g.ProtocolType == "consumer" || g.ProtocolType == "" || typ == "consumer"
	case f.share:
		return typ == "share"
	case f.streams:
		return typ == "streams"
	}
	return true
}

// listGroups lists every group of the cluster (ListGroups with no filter, to every broker) and
// writes those f keeps.
func listGroups(ctx context.Context, w io.Writer, adm *kadm.Client, o options, f groupFilter) error {
	listed, err := listAllGroups(ctx, adm, o)
	if err != nil {
		return err
	}
	writeGroupList(w, listed.Sorted(), f)
	return nil
}

// writeGroupList writes the groups f keeps as kafka-groups.sh does: a header GROUP TYPE
// PROTOCOL and a line per group, every column left-aligned to the widest value (at least 20),
// each line's columns followed by a space and the header's not. The order is groups' (sorted by
// id from listGroups; Kafka's tool prints them as the admin client collected them).
func writeGroupList(w io.Writer, groups []kadm.ListedGroup, f groupFilter) {
	var rows [][3]string
	width := 20
	for _, g := range groups {
		if !f.keeps(g) {
			continue
		}
		row := [3]string{g.Group, typeName(g.GroupType), g.ProtocolType}
		for _, v := range row {
			width = max(width, len(v))
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(w, "%-*s %-*s %-*s\n", width, "GROUP", width, "TYPE", width, "PROTOCOL")
	for _, row := range rows {
		for _, v := range row {
			fmt.Fprintf(w, "%-*s ", width, v)
		}
		fmt.Fprintln(w)
	}
}

// typeName is the name Kafka's admin client gives a ListGroups GroupType (GroupType.toString):
// "Classic", "Consumer", "Share", "Streams"; "Unknown" for another name and "" when the broker
// sent none (ListGroups before v5).
func typeName(t string) string {
	t = strings.ToLower(t)
	switch {
	case t == "":
		return ""
	case slices.Contains(groupTypes, t):
		return strings.ToUpper(t[:1]) + t[1:]
	}
	return "Unknown"
}

// listing is whose --list the command line asks for.
type listing int

const (
	kafkaGroupsListing listing = iota // kafka-groups.sh: GROUP TYPE PROTOCOL
	shareListing                      // kafka-share-groups.sh --list --state
	consumerListing                   // kafka-consumer-groups.sh --list with --type or --state
)

// listing is kafka-consumer-groups.sh's with --type, or --state with --consumer;
// kafka-share-groups.sh's with --state otherwise; kafka-groups.sh's without either.
func (o options) listing() listing {
	switch {
	case o.typ.given || o.state.given && o.consumer:
		return consumerListing
	case o.state.given:
		return shareListing
	}
	return kafkaGroupsListing
}

// tool is the Kafka tool whose listing l is.
func (l listing) tool() groupTool {
	if l == consumerListing {
		return consumerTool
	}
	return shareTool
}

// The group states of Kafka's GroupState, in its order, and those each tool accepts in --state
// (GroupState.groupStatesForType).
var (
	allGroupStates      = []string{"Unknown", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling", "NotReady"}
	shareGroupStates    = []string{"Stable", "Dead", "Empty"}
	consumerGroupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}
	consumerGroupTypes  = []string{"Consumer", "Classic"}
)

// parseList reads a comma separated --state or --type value as Kafka's GroupState.parse and
// GroupType.parse do (trimmed, any case; a name it does not know is "Unknown") and refuses a
// name not in valid with Kafka's message. what is "state" or "types"; "" lists everything.
func parseList(input, what string, known, valid []string) (map[string]bool, error) {
	if input == "" {
		return nil, nil
	}
	set := map[string]bool{}
	for _, s := range strings.Split(input, ",") {
		name := "Unknown"
		for _, k := range known {
			if strings.EqualFold(k, strings.TrimSpace(s)) {
				name = k
			}
		}
		if !slices.Contains(valid, name) {
			return nil, usageError{fmt.Sprintf("Invalid %s list '%s'. Valid %s are: %s", what, input, plural(what), strings.Join(valid, ", "))}
		}
		set[name] = true
	}
	return set, nil
}

func plural(what string) string {
	if what == "state" {
		return "states"
	}
	return what
}

// listGroupStates writes kafka-share-groups.sh's or kafka-consumer-groups.sh's --list with
// --state or --type (o.listing()), and returns the exit code. The groups are listed as the
// tools' admin client lists them (ListGroups forShareGroups: type share; forConsumerGroups:
// type classic or consumer, protocol type "consumer" or empty), sorted by id; --state and
// --type filter them.
func listGroupStates(ctx context.Context, stdout, stderr io.Writer, adm *kadm.Client, o options) int {
	l := o.listing()
	var types map[string]bool
	valid := shareGroupStates
	if l == consumerListing {
		valid = consumerGroupStates
		var err error
		if types, err = parseList(o.typ.value, "types", append([]string{"Unknown"}, consumerGroupTypes...), consumerGroupTypes); err != nil {
			return l.tool().refuse(stderr, err)
		}
	}
	states, err := parseList(o.state.value, "state", allGroupStates, valid)
	if err != nil {
		return l.tool().refuse(stderr, err)
	}
	listed, err := listAllGroups(ctx, adm, o)
	if err != nil {
		return l.tool().fail(stdout, stderr, thrown(err))
	}
	var groups []kadm.ListedGroup
	for _, g := range listed.Sorted() {
		switch {
		case l == shareListing && !isShareGroup(g),
			l == consumerListing && !isConsumerGroup(g),
			types != nil && !types[typeName(g.GroupType)],
			states != nil && !states[stateName(g.State)]:
			continue
		}
		groups = append(groups, g)
	}
	if l == shareListing {
		writeShareGroupStates(stdout, groups)
	} else {
		writeConsumerGroupList(stdout, groups, o.typ.given, o.state.given)
	}
	return 0
}

// writeShareGroupStates writes kafka-share-groups.sh --list --state: GROUP and STATE, the group
// column as wide as the longest id and at least 15.
func writeShareGroupStates(w io.Writer, groups []kadm.ListedGroup) {
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	fmt.Fprintf(w, "%-*s %s\n", width, "GROUP", "STATE")
	for _, g := range groups {
		fmt.Fprintf(w, "%-*s %s\n", width, g.Group, stateName(g.State))
	}
}

// writeConsumerGroupList writes kafka-consumer-groups.sh --list with --type and/or --state: the
// group column 10 wider than the longest id (at least 15, so 25 with no group), then TYPE and
// STATE 20 wide each, every column padded, the last one too.
func writeConsumerGroupList(w io.Writer, groups []kadm.ListedGroup, withType, withState bool) {
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	width += 10
	line := func(group, typ, state string) {
		fmt.Fprintf(w, "%-*s", width, group)
		if withType {
			fmt.Fprintf(w, " %-20s", typ)
		}
		if withState {
			fmt.Fprintf(w, " %-20s", state)
		}
		fmt.Fprintln(w)
	}
	line("GROUP", "TYPE", "STATE")
	for _, g := range groups {
		typ := typeName(g.GroupType)
		if typ == "" {
			typ = "Unknown"
		}
		line(g.Group, typ, stateName(g.State))
	}
}

// stateName is a listed group's state as Kafka's GroupState prints it: "Unknown" when the
// broker sent none.
func stateName(s string) string {
	for _, k := range allGroupStates {
		if strings.EqualFold(k, s) {
			return k
		}
	}
	return "Unknown"
}

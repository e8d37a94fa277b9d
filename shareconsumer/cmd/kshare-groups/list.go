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
func listGroups(ctx context.Context, w io.Writer, adm *kadm.Client, f groupFilter) error {
	listed, err := adm.ListGroups(ctx)
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

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// defaultTimeoutMs is --timeout's default for every group kind: kafka-share-groups.sh and,
// since Kafka 4.1 (PR #16406; 5000 before), kafka-consumer-groups.sh both default to 30000 ms.
const defaultTimeoutMs = 30000

// requestCtx bounds one request to the cluster by --timeout, as Kafka's tools give each admin
// call timeoutMs.
func (o options) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(o.timeoutMs)*time.Millisecond)
}

// optionalArg is an option whose argument may be left out, as joptsimple's withOptionalArg:
// --state alone, --state Stable or --state=Stable,Empty.
type optionalArg struct {
	given bool
	value string // "" when given without a value
}

func (a *optionalArg) String() string { return a.value }

func (a *optionalArg) Set(v string) error {
	a.given, a.value = true, v
	return nil
}

// optionalArgNames are the options that take an optional argument.
var optionalArgNames = []string{"state", "type"}

// joinOptionalArgs rewrites args so that Go's flag package reads an optional argument as
// joptsimple does: "--state X" becomes "--state=X" when X does not look like an option, and a
// bare "--state" becomes "--state=" (given, without a value).
func joinOptionalArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if a == name || !slices.Contains(optionalArgNames, name) {
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a+"=")
	}
	return out
}

// groupsFlag is --group, which may be given more than once (for --describe): every value in
// groups, the last one in group.
type groupsFlag struct {
	group  *string
	groups *[]string
}

func (f groupsFlag) String() string {
	if f.group == nil {
		return ""
	}
	return *f.group
}

func (f groupsFlag) Set(v string) error {
	*f.group, *f.groups = v, append(*f.groups, v)
	return nil
}

// checkAvailable refuses --members, --offsets and --verbose without --describe, --state
// without --describe or --list, and --type without --list, as joptsimple's availableIf does
// while it parses (Kafka prints its message; the names are sorted here).
func checkAvailable(given map[string]bool) error {
	var unavailable []string
	for name, needs := range map[string][]string{
		"members": {"describe"},
		"offsets": {"describe"},
		"verbose": {"describe"},
		"state":   {"describe", "list"},
		"type":    {"list"},
	} {
		if given[name] && count(given, needs...) == 0 {
			unavailable = append(unavailable, name)
		}
	}
	if len(unavailable) == 0 {
		return nil
	}
	slices.Sort(unavailable)
	return usageError{fmt.Sprintf("Option(s) [%s] are unavailable given other options on the command line", strings.Join(unavailable, ", "))}
}

// checkDescribeListArgs checks the options of --describe and --list as ShareGroupCommandOptions
// and ConsumerGroupCommandOptions checkArgs do, in their order and words, with those of the
// offset actions (checkOffsetActions) where Kafka checks them: --describe needs
// --group or --all-groups, takes at most one of --members, --offsets and --state, and --state
// without a value; --group does not go with --all-groups (with --list, kafka-groups.sh's check
// in parseArgs refuses it first). --state and --type
// with --list choose the listing of kafka-share-groups.sh (--state, with or without --share)
// or of kafka-consumer-groups.sh (--type, or --state with --consumer), so they take no other
// kafka-groups.sh filter.
func checkDescribeListArgs(o options) error {
	given := o.given
	if o.describe {
		if !given["group"] && !o.allGroups {
			return usageError{"Option [describe] takes one of these options: [all-groups], [group]"}
		}
		if count(given, "members", "offsets", "state") > 1 {
			return usageError{"Option [describe] takes at most one of these options: [members], [offsets], [state]"}
		}
		if o.state.value != "" {
			return usageError{"Option [describe] does not take a value for [state]"}
		}
	}
	// The checks of --delete, --delete-offsets and --reset-offsets come between Kafka's
	// --describe checks and its general ones.
	if err := checkOffsetActions(o); err != nil {
		return err
	}
	for _, rule := range [][]string{
		{"group", "all-groups"},
		{"all-groups", "create"},
		{"state", "group-type", "protocol", "streams"},
		{"type", "group-type", "protocol", "share", "streams"},
	} {
		if err := checkInvalidArgs(given, rule[0], rule[1:]...); err != nil {
			return err
		}
	}
	return nil
}

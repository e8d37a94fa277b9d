package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// offsetActions are the options of --reset-offsets, --delete-offsets and --delete.
type offsetActions struct {
	resetOffsets  bool
	deleteOffsets bool
	deleteGroups  bool // --delete
	topics        topicArgs
	allTopics     bool
	dryRun        bool
	execute       bool
	export        bool
	toEarliest    bool
	toLatest      bool
	toCurrent     bool
	toOffset      *int64
	shiftBy       *int64
	toDatetime    string
	byDuration    string
	fromFile      string
}

// topicArgs are the values of --topic, which may repeat.
type topicArgs []string

func (t *topicArgs) String() string     { return strings.Join(*t, ",") }
func (t *topicArgs) Set(v string) error { *t = append(*t, v); return nil }

// addOffsetActionFlags defines the options of --reset-offsets, --delete-offsets and --delete,
// named and worded as Kafka's share and consumer group tools name them.
func addOffsetActionFlags(fs *flag.FlagSet, o *offsetActions) {
	fs.BoolVar(&o.resetOffsets, "reset-offsets", false, "Reset the offsets of the group given by --group, which must have no members: the share-partition start offsets "+
		"of a share group, the committed offsets of a consumer or classic group; with --all-groups, of every consumer and classic group "+
		"(not share groups). Needs a scope (--topic or --all-topics), a scenario and --dry-run or --execute.")
	fs.BoolVar(&o.deleteOffsets, "delete-offsets", false, "Delete the offsets of the group given by --group for each --topic.")
	fs.BoolVar(&o.deleteGroups, "delete", false, "Delete the group given by --group, or with --all-groups every share, consumer and classic group.")
	fs.Var(&o.topics, "topic", "With --reset-offsets: a topic, or topic:0,1,2 for some of its partitions; with --delete-offsets: a topic (topic:0,1 for a consumer group). May repeat.")
	fs.BoolVar(&o.allTopics, "all-topics", false, "With --reset-offsets: every partition the group has an offset for.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "With --reset-offsets: print the new offsets, change nothing.")
	fs.BoolVar(&o.execute, "execute", false, "With --reset-offsets: set the new offsets.")
	fs.BoolVar(&o.export, "export", false, "With --reset-offsets: print the new offsets as CSV lines topic,partition,offset.")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "Reset to the log start offset.")
	fs.BoolVar(&o.toLatest, "to-latest", false, "Reset to the log end offset.")
	fs.BoolVar(&o.toCurrent, "to-current", false, "Reset to the current offset (the log end offset where the group has none).")
	fs.Func("to-offset", "Reset to this offset, kept within the log.", int64Flag(&o.toOffset))
	fs.Func("shift-by", "Move the current offset by this many (negative: back), kept within the log (kafka-consumer-groups.sh; beyond Kafka for share groups).", int64Flag(&o.shiftBy))
	fs.StringVar(&o.toDatetime, "to-datetime", "", "Reset to the first offset at or after this time, 'YYYY-MM-DDThh:mm:ss.sss' with an optional zone (UTC without).")
	fs.StringVar(&o.fromFile, "from-file", "", "Reset to the offsets of a CSV file: lines topic,partition,offset (as --export writes them) or group,topic,partition,offset. "+
		"A scope and a scenario in one.")
	fs.StringVar(&o.byDuration, "by-duration", "", "Reset to the first offset at or after this long ago, 'PnDTnHnMnS' (kafka-consumer-groups.sh; beyond Kafka for share groups).")
}

func int64Flag(dst **int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		*dst = &v
		return nil
	}
}

// consumerOnly reports whether the command line has an option kafka-share-groups.sh does not
// have, so that a group no broker lists follows kafka-consumer-groups.sh.
func (o options) consumerOnly() bool { return o.given["shift-by"] || o.given["by-duration"] }

// singleGroup reports whether the command line names one group, --group given once: Kafka's
// isSingleGroupQuery, which picks the CSV format of --export and --from-file without the group
// column. Several --group and --all-groups take the group column.
func (o options) singleGroup() bool { return len(o.groups) == 1 }

// resetScenarios are the scenario options of --reset-offsets, in the order of Kafka's checks;
// by-duration and shift-by come from the consumer tool.
var resetScenarios = []string{"to-offset", "to-datetime", "to-earliest", "to-latest", "to-current", "from-file", "by-duration", "shift-by"}

// checkOffsetActions checks the options of --reset-offsets, --delete-offsets and --delete as
// kafka-share-groups.sh's checkArgs does, with its messages; o.given are the options on the
// command line (an option given an empty value counts, as joptsimple's has). --reset-offsets
// takes --group or --all-groups, as kafka-consumer-groups.sh's checkArgs has it. Without
// --dry-run or --execute it passes: the group decides, when the tool knows its type, whether
// that is an error (share tool) or a dry run (consumer tool). Several --group pass too:
// neither tool's checkArgs refuses them (errMultipleGroups).
func checkOffsetActions(o options) error {
	given := o.given
	if o.deleteGroups {
		switch {
		case !given["group"] && !given["all-groups"]:
			return usageError{"Option [delete] takes the options [group] or [all-groups]."}
		case given["group"] && given["all-groups"]:
			return usageError{"Option [delete] takes either [group] or [all-groups], not both."}
		case given["topic"] || given["all-topics"]:
			return usageError{"Option [delete] does not take the options [topic] or [all-topics]."}
		}
	}
	if o.deleteOffsets && (!given["group"] || !given["topic"]) {
		return usageError{"Option [delete-offsets] takes the following options: [group], [topic]"}
	}
	if o.resetOffsets {
		if given["dry-run"] && given["execute"] {
			return usageError{"Option [reset-offsets] only accepts one of [execute] and [dry-run]"}
		}
		if !given["group"] && !given["all-groups"] {
			// kafka-consumer-groups.sh's message (in the order of its option set): the tool
			// takes --all-groups for reset as that tool does; kafka-share-groups.sh, which has
			// no --all-groups for reset, says "takes the option: [group]".
			return usageError{"Option [reset-offsets] takes one of these options: [group], [all-groups]"}
		}
		if !given["topic"] && !given["all-topics"] && !given["from-file"] {
			return usageError{"Option [reset-offsets] takes one of these options: [all-topics], [from-file], [topic]"}
		}
		for _, rule := range [][]string{{"topic", "all-topics", "from-file"}, {"all-topics", "from-file", "topic"}, {"from-file", "all-topics", "topic"}} {
			if err := checkInvalidArgs(given, rule[0], rule[1:]...); err != nil {
				return err
			}
		}
		if !slices.ContainsFunc(resetScenarios, func(s string) bool { return given[s] }) {
			names := slices.Sorted(slices.Values(resetScenarios))
			for i, n := range names {
				names[i] = "[" + n + "]"
			}
			return usageError{"Option [reset-offsets] takes one of these options: " + strings.Join(names, ", ")}
		}
		for _, s := range resetScenarios {
			others := slices.DeleteFunc(slices.Sorted(slices.Values(resetScenarios)), func(x string) bool { return x == s })
			if err := checkInvalidArgs(given, s, others...); err != nil {
				return err
			}
		}
	}
	for _, action := range []string{"list", "create", "describe"} {
		if given[action] && given["topic"] {
			return usageError{fmt.Sprintf(`Option "[topic]" can't be used with option "[%s]"`, action)}
		}
	}
	return nil
}

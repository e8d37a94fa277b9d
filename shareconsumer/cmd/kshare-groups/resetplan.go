package main

import (
	"cmp"
	stderrors "errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// topicPartition is one partition of a topic.
type topicPartition struct {
	topic     string
	partition int32
}

// String is Kafka's TopicPartition.toString: "topic-partition".
func (tp topicPartition) String() string { return tp.topic + "-" + strconv.Itoa(int(tp.partition)) }

func compareTopicPartitions(a, b topicPartition) int {
	return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// resetScenario is how --reset-offsets works out a partition's new offset.
type resetScenario int

const (
	toEarliest  resetScenario = iota // the log start offset
	toLatest                         // the log end offset
	toTimestamp                      // the first offset at or after a time (--to-datetime, --by-duration)
	toOffset                         // a given offset, clamped to the log
	shiftBy                          // the current offset moved by n, clamped to the log
	toCurrent                        // the current offset, or the log end offset without one
)

// logPosition is what a reset plan needs to know about one partition, -1 for what is not
// known: its log start and end offsets, the first offset at or after the scenario's time
// (ListOffsets by timestamp; toTimestamp only) and the group's current offset (the committed
// offset of a consumer group, the share-partition start offset of a share group).
type logPosition struct {
	logStart, logEnd int64
	atTimestamp      int64
	current          int64
}

// unknownPosition is a partition's logPosition before anything about it is known.
var unknownPosition = logPosition{logStart: -1, logEnd: -1, atTimestamp: -1, current: -1}

// newOffset is one line of a reset plan.
type newOffset struct {
	topicPartition
	offset int64
}

// resetPlan is the new offset of each partition, sorted by topic and partition, with what
// Kafka's tools say about it: notices they print on stdout, warnings they log.
type resetPlan struct {
	offsets  []newOffset
	notices  []string
	warnings []string
}

// noCurrentOffsetError is --shift-by on a partition without a current offset: Kafka's
// IllegalArgumentException, a usage error.
type noCurrentOffsetError struct{ tp topicPartition }

func (noCurrentOffsetError) illegalArgument() {}

func (e noCurrentOffsetError) Error() string {
	return "Cannot shift offset for partition " + e.tp.String() + " since there is no current committed offset"
}

// unknownLogOffsetError is a partition whose log offset ListOffsets did not give.
type unknownLogOffsetError struct {
	what string // "starting", "ending", "offset by timestamp"
	tp   topicPartition
}

func (e unknownLogOffsetError) Error() string {
	if e.what == "offset by timestamp" {
		return "Error getting offset by timestamp of topic partition: " + e.tp.String()
	}
	return "Error getting " + e.what + " offset of topic partition: " + e.tp.String()
}

// planReset works out the new offset of each of partitions as Kafka's GroupOffsetsResetter
// does. n is the offset of toOffset and the shift of shiftBy. toOffset and shiftBy are clamped
// to [log start, log end], each clamp a warning; toTimestamp falls back to the log end offset
// where no record is that recent, each fallback a notice. Kafka's share tool has no shiftBy;
// for a share group it moves the share-partition start offset.
func planReset(scenario resetScenario, n int64, partitions []topicPartition, offsets map[topicPartition]logPosition) (resetPlan, error) {
	partitions = slices.SortedFunc(slices.Values(partitions), compareTopicPartitions)
	partitions = slices.Compact(partitions)
	var plan resetPlan
	for _, tp := range partitions {
		o, ok := offsets[tp]
		if !ok {
			o = unknownPosition
		}
		var (
			offset int64
			err    error
		)
		switch scenario {
		case toEarliest:
			offset, err = known(o.logStart, unknownLogOffsetError{"starting", tp})
		case toLatest:
			offset, err = known(o.logEnd, unknownLogOffsetError{"ending", tp})
		case toTimestamp:
			offset = o.atTimestamp
			if offset < 0 {
				plan.notices = append(plan.notices, fmt.Sprintf("Warn: Partition %d from topic %s is empty. Falling back to latest known offset.", tp.partition, tp.topic))
				offset, err = known(o.logEnd, unknownLogOffsetError{"offset by timestamp", tp})
			}
		case toOffset:
			offset = plan.clamp(tp, n, o)
		case shiftBy:
			if o.current < 0 {
				return resetPlan{}, noCurrentOffsetError{tp}
			}
			offset = plan.clamp(tp, o.current+n, o)
		case toCurrent:
			offset = o.current
			if offset < 0 {
				offset, err = known(o.logEnd, unknownLogOffsetError{"ending", tp})
			}
		}
		if err != nil {
			return resetPlan{}, err
		}
		plan.offsets = append(plan.offsets, newOffset{tp, offset})
	}
	return plan, nil
}

func known(offset int64, err error) (int64, error) {
	if offset < 0 {
		return 0, err
	}
	return offset, nil
}

// clamp keeps offset within the partition's log as Kafka's checkOffsetsRange does: above the
// end it is the end, below the start the start, and a bound that is not known does not clamp.
func (p *resetPlan) clamp(tp topicPartition, offset int64, o logPosition) int64 {
	switch {
	case o.logEnd >= 0 && offset > o.logEnd:
		p.warnings = append(p.warnings, fmt.Sprintf("New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d.", offset, tp, o.logEnd))
		return o.logEnd
	case o.logStart >= 0 && offset < o.logStart:
		p.warnings = append(p.warnings, fmt.Sprintf("New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d.", offset, tp, o.logStart))
		return o.logStart
	}
	return offset
}

// javaSplit splits s around sep as Kafka's tools do with Java's String.split, which drops
// trailing empty strings. Unlike Java's, an empty s gives no strings rather than one.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// parseDateTime reads --to-datetime as Kafka's Utils.getDateTime does: 'YYYY-MM-DDThh:mm:ss.sss'
// with an optional zone (Z, ±hh, ±hhmm or ±hh:mm); without a zone the time is UTC.
func parseDateTime(s string) (time.Time, error) {
	parts := javaSplit(s, "T") // "2020-01-01T" has one part, not two
	if len(parts) < 2 {
		return time.Time{}, stderrors.New("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
	}
	if !strings.ContainsAny(parts[1], "+-Z") {
		s += "Z"
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("Unparseable date: %q", s)
}

// isoDuration is Java's Duration.parse syntax: an optional sign, P, then days and, after T,
// hours, minutes and (fractional) seconds, each signed and optional but one at least.
var isoDuration = regexp.MustCompile(`^([-+]?)[Pp](?:([-+]?[0-9]+)[Dd])?(?:[Tt](?:([-+]?[0-9]+)[Hh])?(?:([-+]?[0-9]+)[Mm])?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?[Ss])?)?$`)

// errNotADuration is Java's DateTimeParseException message for a text Duration.parse refuses.
var errNotADuration = stderrors.New("Text cannot be parsed to a Duration")

// parseISODuration reads --by-duration ('PnDTnHnMnS') as Java's Duration.parse does.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || m[2] == "" && m[3] == "" && m[4] == "" && m[5] == "" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, errNotADuration
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+2] == "" {
			continue
		}
		v, err := strconv.ParseInt(m[i+2], 10, 64)
		if err != nil {
			return 0, errNotADuration
		}
		d += time.Duration(v) * unit
	}
	if frac := m[6]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[5], "-") {
			ns = -ns
		}
		d += time.Duration(ns)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// parseResetPlanCSV reads a --from-file reset plan as Kafka's tools do: for a command line
// with one --group (singleGroup), lines "topic,partition,offset" for group (the format --export
// writes for one group), or lines "group,topic,partition,offset" when the first line is not of
// the first format; for several --group or --all-groups, lines "group,topic,partition,offset"
// only (what --export writes for them). It returns the requested offset of each partition by
// group. Empty lines at the end are ignored, as Java's String.split drops them.
func parseResetPlanCSV(text, group string, singleGroup bool) (map[string]map[topicPartition]int64, error) {
	lines := javaSplit(text, "\n")
	plan := map[string]map[topicPartition]int64{}
	withGroup := !singleGroup || len(lines) > 0 && parseResetPlanLine(lines[0], false, group, plan) != nil
	for i, line := range lines {
		if err := parseResetPlanLine(line, withGroup, group, plan); err != nil {
			return nil, fmt.Errorf("reset plan line %d %q: %w", i+1, line, err)
		}
	}
	return plan, nil
}

func parseResetPlanLine(line string, withGroup bool, group string, plan map[string]map[topicPartition]int64) error {
	fields := strings.Split(line, ",")
	want := 3
	if withGroup {
		want = 4
	}
	if len(fields) != want {
		return fmt.Errorf("%d fields, want %d", len(fields), want)
	}
	if withGroup {
		group, fields = fields[0], fields[1:]
	}
	p, err := strconv.ParseInt(fields[1], 10, 32)
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	offset, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return fmt.Errorf("offset: %w", err)
	}
	if plan[group] == nil {
		plan[group] = map[topicPartition]int64{}
	}
	plan[group][topicPartition{fields[0], int32(p)}] = offset
	return nil
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanReset applies each scenario to two partitions whose logs run from 10 to 20 and from
// 0 to 5, as Kafka's GroupOffsetsResetter does, clamps and fallbacks included.
func TestPlanReset(t *testing.T) {
	t.Parallel()
	a0, b1 := topicPartition{"a", 0}, topicPartition{"b", 1}
	logs := map[topicPartition]logPosition{
		a0: {logStart: 10, logEnd: 20, atTimestamp: 15, current: 12},
		b1: {logStart: 0, logEnd: 5, atTimestamp: -1, current: -1},
	}
	for _, tc := range []struct {
		name     string
		scenario resetScenario
		n        int64
		want     []newOffset
		notices  []string
		warnings []string
	}{
		{"earliest", toEarliest, 0, []newOffset{{a0, 10}, {b1, 0}}, nil, nil},
		{"latest", toLatest, 0, []newOffset{{a0, 20}, {b1, 5}}, nil, nil},
		{"timestamp, falling back to the end where no record is that recent", toTimestamp, 0, []newOffset{{a0, 15}, {b1, 5}},
			[]string{"Warn: Partition 1 from topic b is empty. Falling back to latest known offset."}, nil},
		{"offset within both logs", toOffset, 3, []newOffset{{a0, 10}, {b1, 3}}, nil,
			[]string{"New offset (3) is lower than earliest offset for topic partition a-0. Value will be set to 10."}},
		{"offset above both logs", toOffset, 30, []newOffset{{a0, 20}, {b1, 5}}, nil, []string{
			"New offset (30) is higher than latest offset for topic partition a-0. Value will be set to 20.",
			"New offset (30) is higher than latest offset for topic partition b-1. Value will be set to 5.",
		}},
		{"current, the log end without one", toCurrent, 0, []newOffset{{a0, 12}, {b1, 5}}, nil, nil},
	} {
		plan, err := planReset(tc.scenario, tc.n, []topicPartition{b1, a0, a0}, logs)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, plan.offsets, tc.name)
		assert.Equal(t, tc.notices, plan.notices, tc.name)
		assert.Equal(t, tc.warnings, plan.warnings, tc.name)
	}
}

// TestPlanResetShiftBy moves the current offset, clamped to the log, and refuses a partition
// without one in Kafka's words.
func TestPlanResetShiftBy(t *testing.T) {
	t.Parallel()
	a0 := topicPartition{"a", 0}
	logs := map[topicPartition]logPosition{a0: {logStart: 10, logEnd: 20, atTimestamp: -1, current: 12}}
	for _, tc := range []struct {
		shift   int64
		want    int64
		warning string
	}{
		{5, 17, ""},
		{-2, 10, ""},
		{-5, 10, "New offset (7) is lower than earliest offset for topic partition a-0. Value will be set to 10."},
		{9, 20, "New offset (21) is higher than latest offset for topic partition a-0. Value will be set to 20."},
	} {
		plan, err := planReset(shiftBy, tc.shift, []topicPartition{a0}, logs)
		require.NoError(t, err)
		assert.Equal(t, []newOffset{{a0, tc.want}}, plan.offsets, "shift %d", tc.shift)
		if tc.warning == "" {
			assert.Empty(t, plan.warnings)
		} else {
			assert.Equal(t, []string{tc.warning}, plan.warnings)
		}
	}

	b1 := topicPartition{"b", 1}
	logs[b1] = logPosition{logStart: 0, logEnd: 5, atTimestamp: -1, current: -1}
	_, err := planReset(shiftBy, 1, []topicPartition{a0, b1}, logs)
	assert.EqualError(t, err, "Cannot shift offset for partition b-1 since there is no current committed offset")
	assert.ErrorAs(t, err, &noCurrentOffsetError{})
}

// TestPlanResetUnknownLogOffsets: a bound ListOffsets did not give does not clamp, and a
// scenario that needs it fails with Kafka's message.
func TestPlanResetUnknownLogOffsets(t *testing.T) {
	t.Parallel()
	a0 := topicPartition{"a", 0}
	unknown := map[topicPartition]logPosition{a0: {logStart: -1, logEnd: -1, atTimestamp: -1, current: -1}}
	plan, err := planReset(toOffset, 42, []topicPartition{a0}, unknown)
	require.NoError(t, err)
	assert.Equal(t, []newOffset{{a0, 42}}, plan.offsets)

	for scenario, msg := range map[resetScenario]string{
		toEarliest:  "Error getting starting offset of topic partition: a-0",
		toLatest:    "Error getting ending offset of topic partition: a-0",
		toTimestamp: "Error getting offset by timestamp of topic partition: a-0",
		toCurrent:   "Error getting ending offset of topic partition: a-0",
	} {
		_, err := planReset(scenario, 0, []topicPartition{a0}, unknown)
		assert.EqualError(t, err, msg)
	}
	_, err = planReset(toEarliest, 0, []topicPartition{a0}, nil)
	assert.EqualError(t, err, "Error getting starting offset of topic partition: a-0", "a partition nothing is known of")
}

func TestParseDateTime(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		"2026-12-06T10:20:30.456":       time.Date(2026, 12, 6, 10, 20, 30, 456e6, time.UTC),
		"2026-12-06T10:20:30.456Z":      time.Date(2026, 12, 6, 10, 20, 30, 456e6, time.UTC),
		"2026-12-06T10:20:30.456+02:00": time.Date(2026, 12, 6, 8, 20, 30, 456e6, time.UTC),
		"2026-12-06T10:20:30.456-0130":  time.Date(2026, 12, 6, 11, 50, 30, 456e6, time.UTC),
		"2026-12-06T10:20:30.456+05":    time.Date(2026, 12, 6, 5, 20, 30, 456e6, time.UTC),
	} {
		got, err := parseDateTime(in)
		require.NoError(t, err, in)
		assert.True(t, want.Equal(got), "%s: %s", in, got)
	}
	for _, in := range []string{"2026-12-06 10:20:30", "2020-01-01T", "2020-01-01TT", ""} {
		_, err := parseDateTime(in)
		assert.EqualError(t, err, "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format", "%q: Java's split drops trailing empty parts", in)
	}
	_, err := parseDateTime("2026-12-06T10:20:30")
	assert.EqualError(t, err, `Unparseable date: "2026-12-06T10:20:30Z"`, "the milliseconds are required, as in Kafka")
}

func TestParseISODuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"PT1H":           time.Hour,
		"P2D":            48 * time.Hour,
		"P1DT2H3M4S":     26*time.Hour + 3*time.Minute + 4*time.Second,
		"PT0.5S":         500 * time.Millisecond,
		"PT-1.5S":        -1500 * time.Millisecond,
		"-PT6H3M":        -(6*time.Hour + 3*time.Minute),
		"pt15m":          15 * time.Minute,
		"PT1M-30S":       30 * time.Second,
		"+P0DT0H0M10S":   10 * time.Second,
		"PT0.000000001S": time.Nanosecond,
	} {
		got, err := parseISODuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "P", "PT", "P1DT", "1H", "PT1X", "P1W", "PT1.S1"} {
		_, err := parseISODuration(in)
		assert.EqualError(t, err, "Text cannot be parsed to a Duration", in)
	}
}

func TestParseResetPlanCSV(t *testing.T) {
	t.Parallel()
	orders0, orders1 := topicPartition{"orders", 0}, topicPartition{"orders", 1}
	plan, err := parseResetPlanCSV("orders,0,5\norders,1,7\n\n", "g", true)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[topicPartition]int64{"g": {orders0: 5, orders1: 7}}, plan)

	plan, err = parseResetPlanCSV("g,orders,0,5\nh,orders,1,7", "g", true)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[topicPartition]int64{"g": {orders0: 5}, "h": {orders1: 7}}, plan)

	plan, err = parseResetPlanCSV("", "g", true)
	require.NoError(t, err)
	assert.Empty(t, plan)

	_, err = parseResetPlanCSV("g,orders,0,5\norders,1,7", "g", true)
	assert.EqualError(t, err, `reset plan line 2 "orders,1,7": 3 fields, want 4`)
	_, err = parseResetPlanCSV("g,orders,x,5", "g", true)
	assert.ErrorContains(t, err, `reset plan line 1 "g,orders,x,5": partition: `)

	// Several groups or --all-groups: the group column only.
	plan, err = parseResetPlanCSV("g,orders,0,5\nh,orders,1,7", "", false)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[topicPartition]int64{"g": {orders0: 5}, "h": {orders1: 7}}, plan)
	_, err = parseResetPlanCSV("orders,0,5", "", false)
	assert.EqualError(t, err, `reset plan line 1 "orders,0,5": 3 fields, want 4`)
}

package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The handlers work three lock durations on every record: with renewal the margin Process keeps
// (at least a quarter of the lock) is what the test relies on, not luck with timing. The lock is
// 2 s, not the program's 1 s, so that the margin (500 ms) also holds when the whole suite runs
// under the race detector on two cores, where a renew was seen to come over 250 ms late.
func defaultConfig() config {
	return config{topic: "workerpool", records: 20, workers: 10, lockMs: 2000, deliveryLimit: 3, work: 6 * time.Second, renew: true, compare: true}
}

func TestRun(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	report := runReport(t, cfg)

	assert.Contains(t, report, "produced 20 records to workerpool;")
	off, on := section(t, report, "== run 1 of 2: renewal off"), section(t, report, "== run 2 of 2: automatic renewal")

	without := stats(t, lastLine(off))
	assert.Equal(t, 0, without["accepted"], off)
	assert.Positive(t, without["redeliveries"], off)
	assert.Positive(t, without["locks_lost"], off)
	assert.Equal(t, 0, without["renewed"], off)
	assert.Contains(t, off, "0 of 20 records accepted")

	// The last line of the report is the stats of the run with renewal.
	lines := strings.Split(strings.TrimSpace(report), "\n")
	with := stats(t, lines[len(lines)-1])
	assert.Equal(t, 20, with["delivered"], on)
	assert.Equal(t, 20, with["accepted"], on)
	assert.Equal(t, 0, with["redeliveries"], on)
	assert.Equal(t, 0, with["locks_lost"], on)
	assert.Positive(t, with["renewed"], on)
	assert.Contains(t, on, "20 of 20 records accepted in ")
	assert.Contains(t, on, ", 20 on their first delivery\n")
}

func TestRunWithoutRenewal(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.records, cfg.renew = 5, false
	report := runReport(t, cfg)

	assert.Contains(t, report, "== run 1 of 1: renewal off (NoRenewal)")
	assert.NotContains(t, report, "automatic renewal")
	s := stats(t, lastLine(report))
	assert.Equal(t, 0, s["accepted"], report)
	assert.Equal(t, 15, s["delivered"], report, "each record delivered up to the limit")
	assert.Equal(t, 10, s["redeliveries"], report)
	assert.Equal(t, 15, s["locks_lost"], report)
	assert.Equal(t, 15, s["locks_lost_deadline_passed"], report)
	assert.Contains(t, report, "5 records lost their lock on delivery 3")
}

// Against a Kafka 4.1 leader Process cannot renew: the run with renewal on looks like the one
// with renewal off.
func TestRunKafka41(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.records, cfg.compare, cfg.kafka41 = 5, false, true
	report := runReport(t, cfg)

	assert.Contains(t, report, "(Kafka 4.1)")
	assert.Contains(t, report, "== run 1 of 1: automatic renewal, which a Kafka 4.1 leader cannot do")
	s := stats(t, lastLine(report))
	assert.Equal(t, 0, s["renew_requests"], report)
	assert.Equal(t, 0, s["renewed"], report)
	assert.Equal(t, 0, s["accepted"], report)
	assert.Positive(t, s["redeliveries"], report)
	assert.Positive(t, s["locks_lost"], report)
}

func runReport(t *testing.T, cfg config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, cfg), out.String())
	return out.String()
}

// section returns the report from the line that starts with header to the next blank line.
func section(t *testing.T, report, header string) string {
	t.Helper()
	i := strings.Index(report, header)
	require.GreaterOrEqual(t, i, 0, "%q in\n%s", header, report)
	s := report[i:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// stats parses the counters of a ProcessStats line ("delivered=20 accepted=20 ...").
func stats(t *testing.T, line string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, "%q in %q", kv, line)
		if n, err := strconv.Atoi(v); err == nil {
			m[k] = n
		}
	}
	for _, k := range []string{"delivered", "accepted", "redeliveries", "renewed", "locks_lost"} {
		require.Contains(t, m, k, line)
	}
	return m
}

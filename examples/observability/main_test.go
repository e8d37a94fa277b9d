package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the example on an embedded testbroker, scrapes its /metrics over HTTP while it
// serves them, and checks the figures against what the handler did to the 10 records: job 9
// rejected, jobs 2 and 7 released once then accepted, job 0 worked on past its lock (renewed),
// the rest accepted. It also checks that every process span continues its producer's trace.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := config{
		topic: "observability", group: "observability", records: 10, workers: 4,
		lockMs: 3000, slow: 4500 * time.Millisecond, metricsAddr: "127.0.0.1:0", spans: true,
	}
	// The lock and the work leave headroom for a loaded machine: one late renew would lose
	// job 0's lock and change every figure.
	var out bytes.Buffer
	var series map[string]float64
	require.NoError(t, run(ctx, &out, cfg, func(metricsURL string) error {
		// An acknowledgement's hook runs when its answer came, which may be just after Process
		// returned: scrape until the last acknowledgement shows, as Prometheus would.
		var scrapeErr error
		require.Eventually(t, func() bool {
			var text string
			if text, scrapeErr = scrape(ctx, metricsURL); scrapeErr != nil {
				return true
			}
			if series, scrapeErr = parseExposition(text); scrapeErr != nil {
				return true
			}
			return series[`kshare_acknowledged_records_total{outcome="ok",topic="observability",type="accept"}`]+
				series[`kshare_acknowledged_records_total{outcome="ok",topic="observability",type="reject"}`] == 10
		}, 10*time.Second, 10*time.Millisecond, "every record's final acknowledgement in /metrics")
		return scrapeErr
	}))

	const topic = `topic="observability"`
	for name, want := range map[string]float64{
		`kshare_processed_records_total{outcome="accept",` + topic + `}`:               9,
		`kshare_processed_records_total{outcome="release",` + topic + `}`:              2,
		`kshare_processed_records_total{outcome="reject",` + topic + `}`:               1,
		`kshare_processed_records_total{outcome="lost",` + topic + `}`:                 0,
		`kshare_acknowledged_records_total{outcome="ok",` + topic + `,type="accept"}`:  9,
		`kshare_acknowledged_records_total{outcome="ok",` + topic + `,type="release"}`: 2,
		`kshare_acknowledged_records_total{outcome="ok",` + topic + `,type="reject"}`:  1,
		`kshare_fetch_records_total{partition="0",` + topic + `}`:                      12, // 10, and 2 redelivered
		`kshare_process_duration_seconds_count{` + topic + `}`:                         12,
		`kshare_held_records`:                       0,
		`kshare_member_state{state="stable"}`:       1,
		`kshare_acquisition_lock_timeout_seconds`:   3,
		`kshare_assigned_partitions{` + topic + `}`: 1,
	} {
		got, ok := series[name]
		if assert.True(t, ok, "%s is not in /metrics", name) {
			assert.Equal(t, want, got, name)
		}
	}
	renewed := series[`kshare_renewed_records_total{`+topic+`}`]
	assert.GreaterOrEqual(t, renewed, 1.0, "job 0 works 4.5 s on a 3 s lock: renewed")
	assert.Equal(t, renewed, series[`kshare_acknowledged_records_total{outcome="ok",`+topic+`,type="renew"}`],
		"each renew is one record in one acknowledged RENEW")
	assert.Contains(t, out.String(), "processed: delivered=12 accepted=9 released=2 rejected=1 redeliveries=2")
	assert.Contains(t, out.String(), "the group's lag now: 0 records")

	// The spans: one per producer send, one per delivery, each process span the child of its
	// record's send span.
	type spanJSON struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ TraceID, SpanID string }
		Events      []struct{ Name string }
	}
	sends := map[string]string{} // trace id -> send span id
	var processes []spanJSON
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `{"Name":`) {
			continue
		}
		var s spanJSON
		require.NoError(t, json.Unmarshal([]byte(line), &s), line)
		switch s.Name {
		case "send observability":
			sends[s.SpanContext.TraceID] = s.SpanContext.SpanID
		case "process observability":
			processes = append(processes, s)
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, sends, 10)
	require.Len(t, processes, 12)
	var renewEvents int
	for _, p := range processes {
		assert.Equal(t, p.SpanContext.TraceID, p.Parent.TraceID)
		assert.Equal(t, sends[p.SpanContext.TraceID], p.Parent.SpanID, "the producer's span is the parent")
		for _, e := range p.Events {
			if e.Name == "lock renewed" {
				renewEvents++
			}
		}
	}
	// A renew answered after the handler returned has no span left to mark.
	assert.GreaterOrEqual(t, renewEvents, 1, "the renews while job 0's handler ran are span events")
	assert.LessOrEqual(t, float64(renewEvents), renewed)
}

// parseExposition reads Prometheus's text format into series -> value, keeping each series'
// name and labels as /metrics writes them.
func parseExposition(text string) (map[string]float64, error) {
	series := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		series[line[:i]] = v
	}
	return series, nil
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The work outlasts the shortest lock Kafka allows, so every record needs a renew.
	cfg := config{topic: "renew", records: 5, lockMs: 1000, work: 1200 * time.Millisecond}
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, cfg))
	report := out.String()

	assert.Contains(t, report, "produced 5 records to renew\n")
	assert.Contains(t, report, "lock duration: 1000 ms\n")
	for offset := range cfg.records {
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^offset %d: renews=(\d+), accepted$`, offset)).FindStringSubmatch(report)
		if assert.NotNil(t, m, "offset %d in\n%s", offset, report) {
			assert.GreaterOrEqual(t, atoi(t, m[1]), 1, "renews of offset %d", offset)
		}
	}
	summary := regexp.MustCompile(`(?m)^records=5 accepted=5 renews=(\d+) redeliveries=0$`).FindStringSubmatch(report)
	require.NotNil(t, summary, report)
	assert.GreaterOrEqual(t, atoi(t, summary[1]), cfg.records)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

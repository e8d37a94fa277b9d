package main

import (
	"bytes"
	"context"
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
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, "", "quickstart", 1000))
	report := out.String()

	assert.Contains(t, report, "produced 1000 records to quickstart")
	consumed := regexp.MustCompile(`consumed (\d+) records through share group quickstart in \S+: (\d+), (\d+) and (\d+) per partition`).
		FindStringSubmatch(report)
	require.NotNil(t, consumed, report)
	assert.Equal(t, "1000", consumed[1])
	assert.Equal(t, 1000, atoi(t, consumed[2])+atoi(t, consumed[3])+atoi(t, consumed[4]), "records per partition")

	// The testbroker takes RENEW, so every renewed record comes back and none is refused.
	renewed := regexp.MustCompile(`renewed (\d+) records once; (\d+) came back from a later Poll and were accepted\n`).
		FindStringSubmatch(report)
	require.NotNil(t, renewed, report)
	assert.Positive(t, atoi(t, renewed[1]))
	assert.Equal(t, renewed[1], renewed[2])
	assert.Contains(t, report, "acknowledged every record and left the group\n")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

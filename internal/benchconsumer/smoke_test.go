package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain runs the test binary as a client child when runAll starts one: runAll starts this
// program again (os.Executable), which in a test is the test binary.
func TestMain(m *testing.M) {
	if isClientMode(os.Args[1:]) {
		if err := runClient(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "benchconsumer client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunAllSmoke runs both workloads with every client, 300 records and 20 latency samples,
// against the testbroker program, each client in a child process, as the harness does, and
// checks what each child reported and the report's tables.
func TestRunAllSmoke(t *testing.T) {
	t.Parallel()
	c, err := parseParent([]string{
		"-records", "300", "-partitions", "2", "-value-bytes", "16", "-compression", "none",
		"-samples", "20", "-interval-min", "1ms", "-interval-max", "2ms",
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := runAll(ctx, c)
	require.NoError(t, err)

	require.Len(t, rep.throughput, 4)
	for i, client := range []string{clientFloor, clientKshare, clientKshareWait, clientFranz} {
		r := rep.throughput[i]
		require.Equal(t, client, r.client)
		assert.EqualValues(t, 300, r.batchRecords, "records the producer wrote")
		a := r.accept
		assert.Equal(t, 300, a.Records, client)
		assert.Equal(t, 300, a.Deliveries, "%s: every record delivered once", client)
		assert.Positive(t, a.CPUNs, client)
		assert.Positive(t, a.ConsumeNs, client)
		assert.GreaterOrEqual(t, a.ElapsedNs, a.ConsumeNs, client)
		assert.Positive(t, a.Mallocs, client)
		assert.Positive(t, a.ShareFetchBytes, "%s: fetch bytes", client)
		if client == clientFloor {
			continue
		}
		// Release scenario: every 10th offset of each partition's 150 released once.
		rl := r.release
		assert.Equal(t, 300, rl.Records, client)
		assert.Equal(t, 30, rl.Released, client)
		assert.Equal(t, 330, rl.Deliveries, client)
		assert.EqualValues(t, 30, rl.RedeliveryAcks, "%s: acceptances of redelivered records", client)
		assert.Positive(t, rl.RedeliveryAckBytes, client)
		assert.Positive(t, rl.AckBatchBytes, client)
		assert.Zero(t, rl.BadFrames, client)
	}

	require.Len(t, rep.latency, 4)
	for _, r := range rep.latency {
		l := r.res
		assert.Equal(t, 20, l.Samples, r.client)
		assert.Positive(t, l.P50Ns, r.client)
		assert.LessOrEqual(t, l.P50Ns, l.P99Ns, r.client)
		assert.LessOrEqual(t, l.P99Ns, l.MaxNs, r.client)
		assert.Positive(t, l.AckP50Ns, r.client)
	}

	var out bytes.Buffer
	printReport(&out, c, rep)
	for _, s := range []string{
		"| testbroker | 2 | 16 | none | ", "| 300 | floor | – |", "| 300 | kshare | 500 |", "| 300 | kshare (no FetchAhead) | 500 |", "| 300 | franz-go | 500 |",
		"| testbroker | 2 | 16 | none | kshare | 500 | ", "| testbroker | 2 | 16 | none | kshare (no FetchAhead) | 500 | ",
		"## Latency: produce to Poll on an idle consumer", "| testbroker | 2 | kshare | ",
	} {
		assert.Contains(t, out.String(), s)
	}
}

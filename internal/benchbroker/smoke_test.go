package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/internal/benchkit"
)

// TestWorkloadsSmoke runs every workload of benchbroker, with a few hundred records, against
// the testbroker program run as its own process, as the harness does, and checks that each
// measured what it reports: every record counted, no failure, CPU figures above zero, and the
// report's tables.
func TestWorkloadsSmoke(t *testing.T) {
	t.Parallel()
	c, err := parseFlags([]string{
		"-brokers-to-run", "testbroker", "-partitions", "2",
		"-workloads", "plain,share,lockexpiry,group,replication",
		"-records16", "300", "-records1k", "0", "-records-share", "300", "-records-group", "300",
		"-lock-samples", "2",
		"-repl-samples", "30", "-repl-samples-off", "3", "-repl-records16", "300", "-repl-records1k", "0",
		"-config", "group.initial.rebalance.delay.ms=0", "-stall", "20s",
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := measureAll(ctx, c)
	require.NoError(t, err)
	require.Empty(t, rep.failures)

	if assert.Len(t, rep.plain, 1) {
		r := rep.plain[0]
		assert.Equal(t, workload{size: 16, records: 300, partitions: 2}, r.w)
		assert.Equal(t, 300, r.m.records)
		assert.Positive(t, r.m.produce)
		assert.Positive(t, r.m.consume)
		assert.Positive(t, r.m.brokerBoth)
		assert.Equal(t, r.m.brokerProduce+r.m.brokerConsume, r.m.brokerBoth)
		assert.Positive(t, r.m.client)
	}
	if assert.Len(t, rep.share, 1) {
		m := rep.share[0].m
		assert.Equal(t, 300, m.records)
		assert.Positive(t, m.consume)
		assert.Positive(t, m.brokerConsume)
		assert.Positive(t, m.client)
	}
	if assert.Len(t, rep.lockExpiry, 1) {
		r := rep.lockExpiry[0]
		assert.Len(t, r.late, 2)
		for i, up := range r.upper {
			// The broker's deadline lies after A's request was sent plus the lock, so the upper
			// bound cannot be negative, and the sample ends within -lock-wait of the deadline.
			assert.GreaterOrEqual(t, up, time.Duration(0), "sample %d", i)
			assert.Less(t, r.late[i], c.lockWait, "sample %d", i)
		}
		assert.Positive(t, r.rttMax)
	}
	if assert.Len(t, rep.group, 1) {
		m := rep.group[0].m
		assert.Equal(t, 300, m.records)
		assert.Positive(t, m.brokerConsume)
		var sum time.Duration
		for _, d := range m.phases {
			sum += d
		}
		assert.Equal(t, m.rebalance, sum, "the phases add up to the rebalance")
	}
	repl := rep.replication
	if assert.Len(t, repl.watermarks, 2) {
		on, off := repl.watermarks[0], repl.watermarks[1]
		assert.True(t, on.kip1166)
		assert.Len(t, on.propagation, 30)
		assert.Len(t, off.propagation, 3)
		// Without KIP-1166 the follower learns the watermark only when its parked fetch at the
		// leader returns, after replica.fetch.wait.max.ms (500 ms).
		assert.Greater(t, benchkit.Median(off.propagation), 100*time.Millisecond)
		assert.Less(t, benchkit.Median(on.propagation), benchkit.Median(off.propagation))
	}
	if assert.Len(t, repl.cpu, 2) {
		for i, rf := range []int{1, 3} {
			assert.Equal(t, rf, repl.cpu[i].factor)
			assert.Equal(t, 300, repl.cpu[i].m.records)
			assert.Positive(t, repl.cpu[i].m.brokerProduce)
		}
	}

	var out bytes.Buffer
	rep.print(&out, c)
	for _, s := range []string{
		"| testbroker | 16 B | 2 | 300 |",
		"### Share consume", "| testbroker | 16 B | 2 | 300 |",
		"### Lock expiry on the real clock", "| testbroker | 2 |",
		"### Classic consumer group", "| testbroker | 2 | 300 |",
		"### Replication: watermark propagation", "| on | 30 | 3 |", "| off | 3 | 3 |",
		"### Replication: broker CPU per replicated record", "| testbroker | 3 | 16 B | 300 |",
	} {
		assert.Contains(t, out.String(), s)
	}
	assert.NotContains(t, out.String(), "Not measured")
}

// TestTxnWorkloadSmoke runs the txn workload, with plain beside it, against testbroker and
// kfake: both measure it, every record produced in transactions read back read_committed.
func TestTxnWorkloadSmoke(t *testing.T) {
	t.Parallel()
	c, err := parseFlags([]string{
		"-brokers-to-run", "testbroker,kfake", "-partitions", "2", "-workloads", "plain,txn",
		"-records16", "300", "-records1k", "0", "-records-txn", "300", "-txn-size", "100", "-stall", "20s",
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := measureAll(ctx, c)
	require.NoError(t, err)

	brokers := map[string]measurement{}
	for _, r := range rep.txn {
		assert.Equal(t, workload{size: 16, records: 300, partitions: 2}, r.w)
		brokers[r.broker] = r.m
	}
	assert.Empty(t, rep.failures)
	for _, name := range []string{"testbroker", "kfake"} {
		require.Contains(t, brokers, name)
		m := brokers[name]
		assert.Equal(t, 300, m.records, name)
		assert.Positive(t, m.brokerProduce, name)
		assert.Positive(t, m.brokerConsume, name)
	}

	var out bytes.Buffer
	rep.print(&out, c)
	assert.Contains(t, out.String(), "### Transactions: produce in transactions, consume with read_committed")
	assert.Regexp(t, `\| kfake \| 2 \| 300 \| [0-9,]+ \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| (yes|no) \| - \|`, out.String())
}

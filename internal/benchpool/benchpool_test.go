package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/testbroker"
)

// TestScenariosProduceRows runs every scenario with tiny counts against an embedded testbroker
// and checks that every client finished each with every record accepted once, that client and
// broker CPU were measured (the broker's CPU clock is this process's, where the broker runs),
// and that the report has a row for each. The slow scenario's handler stays under the lock
// here, so that nothing depends on when a lock runs out.
func TestScenariosProduceRows(t *testing.T) {
	t.Parallel()
	const lock = time.Second
	cl := testbroker.StartT(t, testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"))
	c := defaultConfig()
	c.partitions = 2
	c.recordsEmpty, c.workersEmpty = 300, benchkit.Ints{4, 8}
	c.recordsSleep, c.workersSleep = 200, 20
	c.recordsSlow, c.workersSlow, c.lock, c.slowFactor, c.slowTimeout = 20, 20, lock, 0.2, 20*time.Second
	require.NoError(t, c.validate())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results, err := runScenarios(ctx, c, target{broker: "testbroker", seeds: cl.Addrs(), pid: os.Getpid()})
	require.NoError(t, err)

	type key struct {
		scenario string
		workers  int
		client   string
	}
	got := map[key]result{}
	for _, r := range results {
		got[key{r.scenario.name, r.scenario.workers, r.client}] = r
	}
	want := []key{
		{scenarioEmpty, 4, clientKshare}, {scenarioEmpty, 4, clientFranz},
		{scenarioEmpty, 8, clientKshare}, {scenarioEmpty, 8, clientFranz},
		{scenarioSleep, 20, clientKshare}, {scenarioSleep, 20, clientFranz}, {scenarioSleep, 20, clientBaseline},
		{scenarioSlow, 20, clientKshare}, {scenarioSlow, 20, clientFranz},
	}
	require.Len(t, results, len(want))
	for _, k := range want {
		r, ok := got[k]
		require.True(t, ok, "no result for %v", k)
		assert.True(t, r.finished, "%v did not finish", k)
		assert.EqualValues(t, r.scenario.records, r.accepted, "%v: records accepted", k)
		assert.Zero(t, r.acceptedTwice, "%v: records accepted twice", k)
		assert.Zero(t, r.ackErrors, "%v: ack errors: %s", k, r.firstAckErr)
		assert.Zero(t, r.lagLeft, "%v: records left unacknowledged", k)
		assert.Positive(t, r.elapsed, "%v: elapsed", k)
		assert.Positive(t, r.cpu, "%v: client CPU", k)
		if k.client == clientBaseline {
			assert.Equal(t, time.Duration(-1), r.brokerCPU, "%v: no broker", k)
		} else {
			assert.Positive(t, r.brokerCPU, "%v: broker CPU", k)
			assert.Positive(t, r.mallocs, "%v: allocations", k)
		}
	}
	if s := got[key{scenarioSlow, 20, clientKshare}].stats; assert.NotNil(t, s) {
		assert.EqualValues(t, 20, s.Accepted)
		assert.Zero(t, s.LocksLost)
	}
	assert.NotNil(t, got[key{scenarioSlow, 20, clientFranz}].taps, "the slow scenario counts requests")

	var out bytes.Buffer
	printReport(&out, c, results)
	report := out.String()
	for _, s := range []string{
		"### (a) Empty handler", "### (b) Handler of time.Sleep(1ms)", "### (c) Handlers of 200ms",
		"| testbroker | kshare (record) | 4 | 300 |", "| testbroker | franz-go | 4 | 300 |",
		"| testbroker | kshare (record) | 8 | 300 |", "| testbroker | franz-go | 8 | 300 |",
		"| testbroker | 4 | kshare (record) |", "| testbroker | 8 | kshare (record) |", "| testbroker | kshare (record) | ",
		"| testbroker | kshare (record) | 20 | 200 |", "| testbroker | franz-go | 20 | 200 |", "| testbroker | Go pool, no Kafka | 20 | 200 |",
		"| testbroker | kshare (record) | 20 | 20 | yes |", "| testbroker | franz-go | 20 | 20 | yes |",
	} {
		assert.Contains(t, report, s)
	}
}

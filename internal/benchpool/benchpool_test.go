package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/testbroker"
)

// TestScenariosProduceRows runs every scenario with tiny counts against an embedded testbroker,
// twice per client (-count 2), kshare in both acquire modes, and checks that every run finished
// with every record accepted once, that client and broker CPU were measured (the broker's CPU
// clock is this process's, where the broker runs), that each result is one of its runs, and that
// the report has a row for each, the min-max columns and the goal tables. The slow scenario's
// handler stays under the lock here, so that nothing depends on when a lock runs out.
func TestScenariosProduceRows(t *testing.T) {
	t.Parallel()
	const lock = time.Second
	cl := testbroker.StartT(t, testbroker.BrokerConfig("group.share.min.record.lock.duration.ms", "1000"))
	c := defaultConfig()
	c.partitions = 2
	c.count, c.acquire = 2, []string{acquireRecord, acquireBatch}
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
		client   string // the row's label
	}
	got := map[key]result{}
	for _, r := range results {
		got[key{r.scenario.name, r.scenario.workers, r.label()}] = r
	}
	const ksRecord, ksBatch = "kshare (record)", "kshare (batch)"
	var want []key
	for _, w := range []int{4, 8} {
		want = append(want, key{scenarioEmpty, w, ksRecord}, key{scenarioEmpty, w, ksBatch}, key{scenarioEmpty, w, clientFranz})
	}
	want = append(want,
		key{scenarioSleep, 20, ksRecord}, key{scenarioSleep, 20, ksBatch}, key{scenarioSleep, 20, clientFranz}, key{scenarioSleep, 20, clientBaseline},
		key{scenarioSlow, 20, ksRecord}, key{scenarioSlow, 20, ksBatch}, key{scenarioSlow, 20, clientFranz})
	require.Len(t, results, len(want))
	for _, k := range want {
		r, ok := got[k]
		require.True(t, ok, "no result for %v", k)
		require.Len(t, r.runs, 2, "%v: runs", k)
		assert.Contains(t, r.runs, r.withoutRuns(), "%v: the result is one of its runs", k)
		for i, run := range r.runs {
			k := struct {
				key
				run int
			}{k, i + 1}
			assert.True(t, run.finished, "%v did not finish", k)
			assert.EqualValues(t, run.scenario.records, run.accepted, "%v: records accepted", k)
			assert.Zero(t, run.acceptedTwice, "%v: records accepted twice", k)
			assert.Zero(t, run.redelivered, "%v: records redelivered", k)
			assert.Zero(t, run.ackErrors, "%v: ack errors: %s", k, run.firstAckErr)
			assert.Zero(t, run.lagLeft, "%v: records left unacknowledged", k)
			assert.Positive(t, run.elapsed, "%v: elapsed", k)
			assert.Positive(t, run.toLast, "%v: to the last handler", k)
			assert.LessOrEqual(t, run.toLast, run.elapsed, "%v: the last acceptance comes before the end", k)
			assert.Positive(t, run.cpu, "%v: client CPU", k)
			if k.client == clientBaseline {
				assert.Equal(t, time.Duration(-1), run.brokerCPU, "%v: no broker", k)
			} else {
				assert.Positive(t, run.brokerCPU, "%v: broker CPU", k)
				assert.Positive(t, run.mallocs, "%v: allocations", k)
			}
		}
	}
	for _, l := range []string{ksRecord, ksBatch} {
		if s := got[key{scenarioSlow, 20, l}].stats; assert.NotNil(t, s, l) {
			assert.EqualValues(t, 20, s.Accepted, l)
			assert.Zero(t, s.LocksLost, l)
		}
	}
	assert.NotNil(t, got[key{scenarioSlow, 20, clientFranz}].taps, "the slow scenario counts requests")

	var out bytes.Buffer
	printReport(&out, c, results)
	report := out.String()
	for _, s := range []string{
		"- kshare's acquisition (-acquire record,batch): record, \"kshare (record)\"", "; batch, \"kshare (batch)\"",
		"- Every client run 2 times (-count 2)", "| records/s, min-max of 2 runs | CPU µs/rec, min-max of 2 runs |",
		"### (a) Empty handler", "### (b) Handler of time.Sleep(1ms)", "### (c) Handlers of 200ms",
		"| testbroker | kshare (record) | 4 | 300 |", "| testbroker | kshare (batch) | 4 | 300 |", "| testbroker | franz-go | 4 | 300 |",
		"| testbroker | kshare (record) | 8 | 300 |", "| testbroker | kshare (batch) | 8 | 300 |", "| testbroker | franz-go | 8 | 300 |",
		"| testbroker | kshare (record) | 20 | 200 |", "| testbroker | kshare (batch) | 20 | 200 |", "| testbroker | franz-go | 20 | 200 |", "| testbroker | Go pool, no Kafka | 20 | 200 |",
		"| testbroker | kshare (record) | 20 | 20 | yes |", "| testbroker | kshare (batch) | 20 | 20 | yes |", "| testbroker | franz-go | 20 | 20 | yes |",
		"Goals: kshare at least 1.5x the records/s of the franz-go pool",
		"Goal: kshare's CPU per record with 8 workers within 1.3x of that with 4",
		"Goal: kshare at least 95% of what the handler time allows",
		"Goals: no redelivery, no record accepted twice, and at most one renew request per partition leader per renew interval",
		"| testbroker | kshare (record) | yes | yes | yes", "| testbroker | kshare (batch) | yes | yes | yes", "| testbroker | franz-go | yes | yes | yes (none sent) |",
	} {
		assert.Contains(t, report, s)
	}
	// Goal rows: (a) speed and CPU, per pool size and mode; the scale; (b); a "-" where the
	// goal is not franz-go's.
	for _, re := range []string{
		`(?m)^\| testbroker \| 4 \| kshare \(record\) \| [0-9.]+ \| (yes|no) \| [0-9.]+ \| [0-9.]+ \| (yes|no) \|$`,
		`(?m)^\| testbroker \| 8 \| kshare \(batch\) \| [0-9.]+ \| (yes|no) \| [0-9.]+ \| [0-9.]+ \| (yes|no) \|$`,
		`(?m)^\| testbroker \| kshare \(batch\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| (yes|no) \|$`,
		`(?m)^\| testbroker \| franz-go \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| - \|$`,
		`(?m)^\| testbroker \| kshare \(record\) \| [0-9,]+ \| [0-9,]+ \| [0-9.]+% \| (yes|no) \| [0-9.]+% \|$`,
		`(?m)^\| testbroker \| franz-go \| [0-9,]+ \| [0-9,]+ \| [0-9.]+% \| - \| [0-9.]+% \|$`,
	} {
		assert.Regexp(t, regexp.MustCompile(re), report)
	}
	if t.Failed() {
		t.Log(report)
	}
}

// withoutRuns is r without its runs, as it appears among them.
func (r result) withoutRuns() result {
	r.runs = nil
	return r
}

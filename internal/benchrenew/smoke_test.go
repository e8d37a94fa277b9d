package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

// TestMeasureSmoke runs both measurements, 50 round trips per route and 60 records renewed at
// once, against an in-process testbroker of 3 brokers with a leader each, and checks that every
// renew came back, that the renews went one request per leader with every offset renewed, and
// the report's tables.
func TestMeasureSmoke(t *testing.T) {
	t.Parallel()
	const brokers, parts = 3, 3
	cl := testbroker.StartT(t, testbroker.NumBrokers(brokers), testbroker.Topic(bulkTopic, parts))
	c := config{iterations: 50, renews: 60, partitions: []int{parts}, brokers: []int{brokers}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := result{broker: "testbroker", brokers: brokers, partitions: parts}
	require.NoError(t, measure(ctx, c, &r, cl.Addrs()))

	for _, rt := range []roundTrips{r.viaPoll, r.viaCommit} {
		require.Len(t, rt.samples, 50, rt.via)
		for _, d := range rt.samples {
			assert.Positive(t, d, rt.via)
		}
	}
	require.Len(t, r.bulk, 2)
	for i, via := range []string{viaPoll, viaCommit} {
		b := r.bulk[i]
		assert.Equal(t, via, b.via)
		assert.Equal(t, 60, b.renews, via)
		assert.Equal(t, []int32{0, 1, 2}, b.leaders, "%s: a leader on every broker", via)
		assert.EqualValues(t, 60, b.kinds.renewOffsets, "%s: every record renewed", via)
		assert.Zero(t, b.kinds.badFrames, via)
		assert.True(t, b.onePerLeader(), "%s: one renew request per leader, got %s (%+v)", via, b.byNodeString(), b.kinds)
		assert.Positive(t, b.bytes, via)
		assert.Positive(t, b.elapsed, via)
	}

	var out bytes.Buffer
	printReport(&out, c, []result{r})
	for _, s := range []string{
		"| testbroker | 3 | 3 | Poll | ", "| testbroker | 3 | 3 | CommitSync | ",
		// Via Poll a leader whose renew the Poll had not sent yet gets it on CommitSync's
		// ShareAcknowledge: 3 (3 + 0) or 3 (2 + 1).
		"| testbroker | 3 | 3 | 3 | Poll | 3 (", "| testbroker | 3 | 3 | 3 | CommitSync | 3 (0 + 3) |",
		"| 3 | 50.0 | 0: 1, 1: 1, 2: 1 | yes | 60 |",
	} {
		assert.Contains(t, out.String(), s)
	}
}

package testbroker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestRetentionMs advances the manual clock past retention.ms and a retention check, and sees
// the old batch go while the newer stays, then that one too.
func TestRetentionMs(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	c := testbroker.StartT(t, testbroker.WithManualClock(start),
		testbroker.BrokerConfig("log.retention.check.interval.ms", "1000"),
		testbroker.TopicWithConfigs("t", 1, map[string]string{"retention.ms": "60000"}),
		testbroker.TopicWithConfigs("forever", 1, map[string]string{"retention.ms": "-1"}),
		testbroker.Topic("default", 1))
	clk := c.ManualClock()
	rc := dialRaw(t, c.Addrs()[0])
	produceAt := func(topic string) {
		require.Zero(t, produceOne(t, rc, topic, 0, timedBatch(t, clk.Now(), time.Millisecond, 4, kgo.ZstdCompression())).ErrorCode)
	}
	for _, topic := range []string{"t", "forever", "default"} {
		produceAt(topic) // offsets 0-3 at start
	}
	clk.Advance(30 * time.Second)
	produceAt("t") // offsets 4-7 at start+30s

	clk.Advance(30 * time.Second) // start+60s: the first batch's last record is 59.997 s old
	assert.Equal(t, int64(0), listOne(t, rc, "t", -2).Offset, "nothing is older than retention.ms yet")

	clk.Advance(time.Second) // the check at start+61s
	assert.Equal(t, int64(4), listOne(t, rc, "t", -2).Offset, "the first batch went")
	f := request[*kmsg.FetchResponse](t, rc, fetchRequest("t", 0, 0)).Topics[0].Partitions[0]
	assert.Equal(t, kerr.OffsetOutOfRange.Code, f.ErrorCode)
	first := listOne(t, rc, "t", start.UnixMilli())
	assert.Equal(t, []int64{4, start.Add(30 * time.Second).UnixMilli()}, []int64{first.Offset, first.Timestamp}, "a lookup before the start answers the first record left")

	clk.Advance(30 * time.Second)
	info, _ := c.Partition("t", 0)
	assert.Equal(t, []int64{8, 8}, []int64{info.LogStartOffset, info.LogEndOffset}, "every batch went")

	clk.Advance(365 * 24 * time.Hour)
	assert.Equal(t, int64(0), listOne(t, rc, "forever", -2).Offset, "retention.ms -1 keeps everything")
	assert.Equal(t, int64(4), listOne(t, rc, "default", -2).Offset, "the default retention.ms, 7 days, applies")
}

// TestRetentionBytes keeps the newest batches that fit in retention.bytes, and takes the
// broker's log.retention.bytes as the topic's default.
func TestRetentionBytes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	batch := func(i int) []byte { return timedBatch(t, start, time.Millisecond, 10, kgo.NoCompression()) }
	size := len(batch(0))
	c := testbroker.StartT(t, testbroker.WithManualClock(start),
		testbroker.BrokerConfig("log.retention.bytes", itoa(3*size)),
		testbroker.TopicWithConfigs("t", 1, map[string]string{"retention.bytes": itoa(2 * size)}),
		testbroker.Topic("broker-default", 1))
	rc := dialRaw(t, c.Addrs()[0])
	for i := range 5 {
		require.Zero(t, produceOne(t, rc, "t", 0, batch(i)).ErrorCode)
		require.Zero(t, produceOne(t, rc, "broker-default", 0, batch(i)).ErrorCode)
	}
	c.ManualClock().Advance(5 * time.Minute) // the default log.retention.check.interval.ms
	assert.Equal(t, int64(30), listOne(t, rc, "t", -2).Offset, "two batches of 10 records are left")
	assert.Equal(t, int64(20), listOne(t, rc, "broker-default", -2).Offset, "three batches are left")
}

// TestRetentionReplicated checks that retention applies to every replica, and never past the
// high watermark.
func TestRetentionReplicated(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	c := testbroker.StartT(t, testbroker.WithManualClock(start), testbroker.NumBrokers(3),
		testbroker.BrokerConfig("log.retention.ms", "1000"),
		testbroker.BrokerConfig("log.retention.check.interval.ms", "1000"),
		testbroker.ReplicatedTopic("t", 1, 3))
	info, _ := c.Partition("t", 0)
	rc := dialRaw(t, c.Addrs()[info.Leader])
	req := produceRequest("t", 0, timedBatch(t, start, time.Millisecond, 3, kgo.Lz4Compression()))
	req.Acks = 1 // answered before the followers replicate
	require.Zero(t, request[*kmsg.ProduceResponse](t, rc, req).Topics[0].Partitions[0].ErrorCode)

	require.Eventually(t, func() bool {
		info, _ := c.Partition("t", 0)
		for _, r := range info.ReplicaStates {
			if r.HighWatermark != 3 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every replica learns the high watermark")
	c.ManualClock().Advance(2 * time.Second)
	info, _ = c.Partition("t", 0)
	for _, r := range info.ReplicaStates {
		assert.Equal(t, int64(3), r.LogStartOffset, "broker %d applies retention to its replica", r.Broker)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

package testbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// advertised returns the version range ApiVersions v3 advertises for key.
func advertised(t *testing.T, conn *rawKafkaConn, key kmsg.Key) (kmsg.ApiVersionsResponseApiKey, bool) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	resp := conn.roundTrip(req).(*kmsg.ApiVersionsResponse)
	require.Zero(t, resp.ErrorCode)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(key) {
			return k, true
		}
	}
	return kmsg.ApiVersionsResponseApiKey{}, false
}

func TestMaxVersionCapsAdvertisedVersion(t *testing.T) {
	t.Parallel()
	conn := dialRawKafka(t, testbroker.StartT(t, testbroker.MaxVersion(kmsg.Fetch, 11)).Addrs()[0])
	fetch, ok := advertised(t, conn, kmsg.Fetch)
	require.True(t, ok)
	assert.Equal(t, int16(11), fetch.MaxVersion)
	assert.Equal(t, int16(4), fetch.MinVersion)

	produce, ok := advertised(t, conn, kmsg.Produce)
	require.True(t, ok)
	assert.Equal(t, int16(13), produce.MaxVersion, "other APIs are not capped")
}

func TestMaxVersionAboveImplementedChangesNothing(t *testing.T) {
	t.Parallel()
	conn := dialRawKafka(t, testbroker.StartT(t, testbroker.MaxVersion(kmsg.Metadata, 100)).Addrs()[0])
	metadata, ok := advertised(t, conn, kmsg.Metadata)
	require.True(t, ok)
	assert.Equal(t, int16(13), metadata.MaxVersion)
}

func TestRequestAboveCapGetsUnsupportedVersion(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 2), testbroker.MaxVersion(kmsg.Fetch, 11), testbroker.MaxVersion(kmsg.ListOffsets, 5))
	conn := dialRawKafka(t, c.Addrs()[0])

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	fetch.SessionEpoch = -1
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	resp := conn.roundTrip(fetch).(*kmsg.FetchResponse)
	assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, "orders", resp.Topics[0].Topic)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for i, p := range resp.Topics[0].Partitions {
		assert.Equal(t, int32(i), p.Partition)
		assert.Equal(t, kerr.UnsupportedVersion.Code, p.ErrorCode)
		assert.Equal(t, int64(-1), p.HighWatermark)
	}

	listOffsets := listOffsetsRequest("orders", 1)
	listOffsets.Version = 6
	assert.Equal(t, []int16{kerr.UnsupportedVersion.Code}, listOffsetsCodes(conn.roundTrip(listOffsets)))

	conn.requireAlive()
}

// TestMaxVersionBelowMinimumRemovesAPI: an API capped below the lowest version the cluster
// implements is not advertised, and its requests close the connection.
func TestMaxVersionBelowMinimumRemovesAPI(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := testbroker.StartT(t, testbroker.Topic("orders", 1), testbroker.MaxVersion(kmsg.ListOffsets, 0), loggerTo(&logs))
	conn := dialRawKafka(t, c.Addrs()[0])
	_, ok := advertised(t, conn, kmsg.ListOffsets)
	assert.False(t, ok)

	conn.send(listOffsetsRequest("orders", 0))
	conn.requireClosed()
	assert.Contains(t, logs.String(), "API ListOffsets is disabled: MaxVersion caps it below its lowest version")
	dialRawKafka(t, c.Addrs()[0]).requireAlive()
}

// TestApiVersionsAboveSupported: Kafka answers an ApiVersions of a version it does not know
// with a v0 response carrying UNSUPPORTED_VERSION and its own ApiVersions range only (KIP-511),
// whatever the request's body holds.
func TestApiVersionsAboveSupported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []testbroker.Opt
		version int16
		body    []byte
		wantMax int16
	}{
		{name: "v5, known to the protocol", version: 5, wantMax: 4},
		{name: "v127, known to nobody", version: 127, body: []byte{0xde, 0xad}, wantMax: 4},
		{name: "v3 above a cap of 2", opts: []testbroker.Opt{testbroker.MaxVersion(kmsg.ApiVersions, 2)}, version: 3, wantMax: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn := dialRawKafka(t, testbroker.StartT(t, tt.opts...).Addrs()[0])
			payload := header(int16(kmsg.ApiVersions), tt.version)
			if tt.version >= 3 {
				payload = append(payload, 0) // header v2 tag section
			}
			if tt.body == nil {
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = min(tt.version, req.MaxVersion())
				tt.body = req.AppendTo(nil)
			}
			conn.writeBytes(frameOf(append(payload, tt.body...)))

			resp := kmsg.NewPtrApiVersionsResponse() // v0
			conn.receive(1, resp)
			assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
			assert.Equal(t, []kmsg.ApiVersionsResponseApiKey{{ApiKey: int16(kmsg.ApiVersions), MinVersion: 0, MaxVersion: tt.wantMax}}, resp.ApiKeys)
			conn.requireAlive()
		})
	}
}

// TestFranzGoNegotiatesDownToCaps: a franz-go client against a cluster playing an older Kafka
// picks the capped versions (ApiVersions included) and produces and consumes normally.
func TestFranzGoNegotiatesDownToCaps(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t,
		testbroker.Topic("orders", 2),
		testbroker.MaxVersion(kmsg.ApiVersions, 2),
		testbroker.MaxVersion(kmsg.Produce, 7),
		testbroker.MaxVersion(kmsg.Fetch, 11),
		testbroker.MaxVersion(kmsg.Metadata, 9),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	const n = 6
	for i := range n {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte{byte(i)}}).FirstErr())
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	var got []byte
	for len(got) < n {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(got), n)
		for _, e := range fs.Errors() {
			require.NoError(t, e.Err, "topic %s partition %d", e.Topic, e.Partition)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Value...) })
	}
	assert.ElementsMatch(t, []byte{0, 1, 2, 3, 4, 5}, got)
}

package testbroker_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// timedBatch encodes n records whose timestamps are first, first+step, ..., compressed with
// codec, as a produce request's records.
func timedBatch(t testing.TB, first time.Time, step time.Duration, n int, codec kgo.CompressionCodec) []byte {
	t.Helper()
	var records []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i) * step.Milliseconds(), Value: []byte(fmt.Sprintf("v%d", i))}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	var attrs int16
	c, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	if c != nil {
		var buf bytes.Buffer
		compressed, typ := c.Compress(&buf, records)
		records, attrs = append([]byte(nil), compressed...), int16(typ)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       first.UnixMilli(),
		MaxTimestamp:         first.Add(time.Duration(n-1) * step).UnixMilli(),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              records,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// TestListOffsetsByRecordTimestamp is the lookup a client makes to seek by time (sarama's
// GetOffset, kadm's ListOffsetsAfterMilli): the answer is the first record at or after the
// timestamp, inside a compressed batch, not the batch's first offset.
func TestListOffsetsByRecordTimestamp(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	// Three batches of 100 records, 2 ms apart: record i has timestamp t0 + 2i ms.
	codecs := []kgo.CompressionCodec{kgo.Lz4Compression(), kgo.ZstdCompression(), kgo.NoCompression()}
	for k, codec := range codecs {
		resp := produceOne(t, rc, "t", 0, timedBatch(t, t0.Add(time.Duration(200*k)*time.Millisecond), 2*time.Millisecond, 100, codec))
		require.Zero(t, resp.ErrorCode)
	}
	ms := func(i int) int64 { return t0.Add(time.Duration(2*i) * time.Millisecond).UnixMilli() }

	type answer struct {
		code       *kerr.Error
		offset, ts int64
		epoch      int32
	}
	cases := []struct {
		name      string
		timestamp int64
		minV      int16 // the first version that knows a special timestamp
		want      answer
	}{
		{"at record 167", ms(167), 1, answer{nil, 167, ms(167), 0}},
		{"between records 166 and 167", ms(167) - 1, 1, answer{nil, 167, ms(167), 0}},
		{"at the first record", ms(0), 1, answer{nil, 0, ms(0), 0}},
		{"before every record", 0, 1, answer{nil, 0, ms(0), 0}},
		{"in the uncompressed batch", ms(250) + 1, 1, answer{nil, 251, ms(251), 0}},
		{"beyond every record", ms(299) + 1, 1, answer{nil, -1, -1, -1}},
		{"earliest", -2, 1, answer{nil, 0, -1, 0}},
		{"latest", -1, 1, answer{nil, 300, -1, 0}},
		{"max timestamp: the last record", -3, 7, answer{nil, 299, ms(299), 0}},
		{"earliest local", -4, 8, answer{nil, 0, -1, 0}},
		{"latest tiered", -5, 9, answer{nil, -1, -1, -1}},
		{"earliest pending upload", -6, 11, answer{nil, -1, -1, -1}},
		{"no such special timestamp", -7, 99, answer{}},
	}
	for v := int16(1); v <= 11; v++ {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("v%d %s", v, tc.name), func(t *testing.T) {
				want := tc.want
				if v < tc.minV {
					want = answer{kerr.UnsupportedVersion, -1, -1, -1}
				}
				if v < 4 {
					want.epoch = -1 // LeaderEpoch is v4+
				}
				resp := request[*kmsg.ListOffsetsResponse](t, rc, listOffsetsAt(v, "t", tc.timestamp, 0))
				require.Len(t, resp.Topics, 1)
				require.Len(t, resp.Topics[0].Partitions, 1)
				p := resp.Topics[0].Partitions[0]
				var code int16
				if want.code != nil {
					code = want.code.Code
				}
				assert.Equal(t, code, p.ErrorCode, "got %v", kerr.ErrorForCode(p.ErrorCode))
				assert.Equal(t, want.offset, p.Offset, "offset")
				assert.Equal(t, want.ts, p.Timestamp, "timestamp")
				assert.Equal(t, want.epoch, p.LeaderEpoch, "leader epoch")
			})
		}
	}
}

// TestListOffsetsLogAppendTime checks that on a LogAppendTime topic every record of a batch has
// the batch's append time, whatever its producer wrote.
func TestListOffsetsLogAppendTime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testbroker.StartT(t, testbroker.WithManualClock(start),
		testbroker.TopicWithConfigs("t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}))
	rc := dialRaw(t, c.Addrs()[0])
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Zero(t, produceOne(t, rc, "t", 0, timedBatch(t, old, time.Millisecond, 10, kgo.SnappyCompression())).ErrorCode)
	c.ManualClock().Advance(time.Second)
	require.Zero(t, produceOne(t, rc, "t", 0, timedBatch(t, old, time.Millisecond, 10, kgo.NoCompression())).ErrorCode)

	for _, tc := range []struct {
		ts, offset, stamp int64
	}{
		{old.UnixMilli() + 5, 0, start.UnixMilli()},
		{start.UnixMilli() + 1, 10, start.Add(time.Second).UnixMilli()},
		{-3, 10, start.Add(time.Second).UnixMilli()},
	} {
		resp := request[*kmsg.ListOffsetsResponse](t, rc, listOffsetsAt(10, "t", tc.ts, 0))
		p := resp.Topics[0].Partitions[0]
		assert.Equal(t, []int64{tc.offset, tc.stamp}, []int64{p.Offset, p.Timestamp}, "timestamp %d", tc.ts)
	}
}

// TestListOffsetsNotAvailable checks Kafka's refusal while a leader's high watermark lags
// behind the start of its epoch: a client's latest and timestamp lookups are
// OFFSET_NOT_AVAILABLE until the followers catch up; earliest is answered.
func TestListOffsetsNotAvailable(t *testing.T) {
	t.Parallel()
	c, tid := kip1166Cluster(t) // leader 0 holds 3 records, its high watermark is 0
	rc := dialRaw(t, c.Addrs()[0])
	list := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		resp := request[*kmsg.ListOffsetsResponse](t, rc, listOffsetsAt(10, "r", ts, 0))
		return resp.Topics[0].Partitions[0]
	}
	assert.Zero(t, list(-1).ErrorCode, "the epoch started at 0: the watermark is not behind it")

	require.NoError(t, c.MoveLeader("r", 0, 0)) // a new epoch that starts at offset 3
	for _, ts := range []int64{-1, -3, 0} {
		got := list(ts)
		assert.Equal(t, kerr.OffsetNotAvailable.Code, got.ErrorCode, "timestamp %d: got %v", ts, kerr.ErrorForCode(got.ErrorCode))
	}
	assert.Zero(t, list(-2).ErrorCode, "earliest is always answered")

	for _, follower := range []int32{1, 2} {
		resp := request[*kmsg.FetchResponse](t, dialRaw(t, c.Addrs()[0]), followerFetch(tid, follower, 3, -1))
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	got := list(-1)
	assert.Zero(t, got.ErrorCode)
	assert.Equal(t, int64(3), got.Offset, "the followers caught up: the watermark reached the epoch's start")
}

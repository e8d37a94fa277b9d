package testbroker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// offeredVersions returns the versions of key that broker addr offers in ApiVersions.
func offeredVersions(t *testing.T, rc *rawConn, key int16) (lo, hi int16) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kshare-test", "1"
	resp := request[*kmsg.ApiVersionsResponse](t, rc, req)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return k.MinVersion, k.MaxVersion
		}
	}
	t.Fatalf("api key %d not offered", key)
	return 0, 0
}

// TestFetchRecordsNeverNull fetches, at every Fetch version the broker offers, a partition with
// records, one caught up, one that does not exist and one of an unknown topic: every partition
// comes back with records that are empty rather than null (Kafka's MemoryRecords.EMPTY), so that
// librdkafka, which fails a whole answer on a null size, reads them all.
func TestFetchRecordsNeverNull(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 2))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a", "b")).ErrorCode)
	tid := topicIDOf(t, c, "t")

	lo, hi := offeredVersions(t, rc, 1)
	require.Equal(t, [2]int16{4, 18}, [2]int16{lo, hi})
	for version := lo; version <= hi; version++ {
		req := fetchRequest("t", 0, 0)
		req.Version = version
		req.Topics[0].TopicID = tid
		for _, p := range []int32{1, 7} {
			tp := req.Topics[0].Partitions[0]
			tp.Partition = p
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, tp)
		}
		unknown := kmsg.FetchRequestTopic{Topic: "nope", TopicID: [16]byte{9}, Partitions: req.Topics[0].Partitions[:1]}
		req.Topics = append(req.Topics, unknown)

		resp := request[*kmsg.FetchResponse](t, rc, req)
		require.Zero(t, resp.ErrorCode, "v%d", version)
		codes := map[int32]int16{}
		n := 0
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				n++
				assert.NotNil(t, p.RecordBatches, "v%d partition %s/%d: records are empty, not null", version, rt.Topic, p.Partition)
				if rt.Topic == "t" || rt.TopicID == tid {
					codes[p.Partition] = p.ErrorCode
				}
				if p.ErrorCode == 0 && p.Partition == 0 {
					assert.Len(t, fetchedRecords(t, p, 0), 2, "v%d", version)
				} else {
					assert.Empty(t, p.RecordBatches, "v%d partition %d", version, p.Partition)
				}
			}
		}
		assert.Equal(t, 4, n, "v%d", version)
		assert.Equal(t, map[int32]int16{0: 0, 1: 0, 7: kerr.UnknownTopicOrPartition.Code}, codes, "v%d", version)
	}
}

// TestFetchFailedAsWholeHasNoPartitions checks the answer to an incremental fetch of a session
// the broker never made: FETCH_SESSION_ID_NOT_FOUND with no partitions, as Kafka's
// SessionErrorContext answers.
func TestFetchFailedAsWholeHasNoPartitions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	req := fetchRequest("t", 0, 0)
	req.Version, req.SessionID, req.SessionEpoch = 12, 5, 3
	resp := request[*kmsg.FetchResponse](t, rc, req)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)
	assert.Empty(t, resp.Topics)
}

// TestShareFetchRecordsNeverNull checks the same for ShareFetch at every version the broker
// offers: a partition with records, a caught-up one, an unknown partition, and a partition
// that carries only an acknowledgement result all have non-null records.
func TestShareFetchRecordsNeverNull(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 2))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a", "b")).ErrorCode)
	tid := topicIDOf(t, c, "t")
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "sg", "m", 0, "t"))

	lo, hi := offeredVersions(t, rc, 78)
	for version := lo; version <= hi; version++ {
		mrc := dialRaw(t, c.Addrs()[0])
		req := shareFetchRequest(version, "sg", "m", 0)
		for _, p := range []int32{0, 1, 7} {
			withShareFetchPartition(req, tid, p)
		}
		resp := request[*kmsg.ShareFetchResponse](t, mrc, req)
		require.Zero(t, resp.ErrorCode, "v%d: %v", version, kerr.ErrorForCode(resp.ErrorCode))
		n := 0
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				n++
				assert.NotNil(t, p.Records, "v%d partition %d", version, p.Partition)
			}
		}
		assert.Equal(t, 3, n, "v%d: a new session lists every partition", version)

		// Release what was acquired with an acknowledgement alone: the next fetch asks for no
		// records, so t/0 is listed for its acknowledgement result only (t/7 again for its
		// error).
		next := shareFetchRequest(version, "sg", "m", 1)
		next.MaxRecords = 0
		withShareFetchPartition(next, tid, 0, fetchAck(0, 1, ackRelease))
		resp = request[*kmsg.ShareFetchResponse](t, mrc, next)
		require.Zero(t, resp.ErrorCode, "v%d: %v", version, kerr.ErrorForCode(resp.ErrorCode))
		require.Len(t, resp.Topics, 1)
		var acked []kmsg.ShareFetchResponseTopicPartition
		for _, p := range resp.Topics[0].Partitions {
			assert.NotNil(t, p.Records, "v%d partition %d", version, p.Partition)
			if p.Partition == 0 {
				acked = append(acked, p)
			}
		}
		require.Len(t, acked, 1, "v%d", version)
		assert.Zero(t, acked[0].ErrorCode, "v%d", version)
		assert.Zero(t, acked[0].AcknowledgeErrorCode, "v%d", version)
		assert.Empty(t, acked[0].Records, "v%d: an acknowledgement-only partition", version)
	}
}

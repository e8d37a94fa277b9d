package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A target acquired from several times (a fetch waiting for MinBytes) gives each log batch
// once, in offset order, as the log's own storage: the batch that two record-limit
// acquisitions split is not sent twice.
func TestFetchRecordsOfSeveralAcquisitions(t *testing.T) {
	f := newFixture(t, defaults(), 3, 3, 3)
	fe := &Fetch{Targets: []FetchTarget{{sp: f.p}}, fetchable: 1, perPart: 1 << 30, bytesLeft: 1 << 30, mode: RecordLimit}
	target := &fe.Targets[0]
	for _, n := range []int{2, 3, 4} {
		fe.recordsLeft = n
		fe.acquire()
	}
	assert.Equal(t, []AcquiredRange{rng(0, 1, 1), rng(2, 2, 1), rng(3, 4, 1), rng(5, 5, 1), rng(6, 8, 1)}, target.Ranges)
	require.Len(t, fe.batches, 5, "the first batch came with the first two acquisitions, the second with the last two")

	stored, err := f.log.AppendExtents(nil, 0, 1<<30, f.log.HighWatermark(), 8)
	require.NoError(t, err)
	require.Len(t, stored, 3)
	got := fe.Records(target)
	require.Len(t, got, 3)
	for i, b := range got {
		assert.Equal(t, stored[i].Data, b)
		assert.Same(t, &stored[i].Data[0], &b[0], "batch %d is the log's storage", i)
	}
	total := 0
	for _, b := range fe.batches {
		total += len(b)
	}
	assert.Equal(t, total, fe.bytes, "the bytes count every batch each acquisition gave")
}

// One acquisition's batches are returned as they came.
func TestFetchRecordsOfOneAcquisition(t *testing.T) {
	f := newFixture(t, defaults(), 3, 3)
	fe := &Fetch{Targets: []FetchTarget{{sp: f.p}}, fetchable: 1, perPart: 1 << 30, bytesLeft: 1 << 30, recordsLeft: 10}
	fe.acquire()
	target := &fe.Targets[0]
	require.True(t, target.HasRecords())
	assert.Equal(t, []AcquiredRange{rng(0, 5, 1)}, target.Ranges)
	got := fe.Records(target)
	require.Len(t, got, 2)
	assert.Same(t, &fe.batches[0][0], &got[0][0])
	assert.Same(t, &fe.batches[1][0], &got[1][0])
}

// Deny makes every target of a denied topic TOPIC_AUTHORIZATION_FAILED, whatever else it
// resolved to, except UNKNOWN_TOPIC_ID, which Kafka answers before authorizing; a denied target
// is not fetched.
func TestFetchDeny(t *testing.T) {
	f := newFixture(t, defaults(), 3)
	allowed, secret, gone := [16]byte{1}, [16]byte{2}, [16]byte{3}
	fe := &Fetch{Targets: []FetchTarget{
		{TopicPartition: TopicPartition{Topic: allowed}, sp: f.p},
		{TopicPartition: TopicPartition{Topic: secret}, sp: f.p},
		{TopicPartition: TopicPartition{Topic: secret, Partition: 1}, Placement: Placement{Leader: 2}, Err: kerr.NotLeaderForPartition},
		{TopicPartition: TopicPartition{Topic: secret, Partition: 2}, Err: kerr.UnknownTopicOrPartition},
		{TopicPartition: TopicPartition{Topic: gone}, Err: kerr.UnknownTopicID},
	}}
	fe.Deny(func(topic [16]byte) bool { return topic != allowed })
	var errs []*kerr.Error
	for _, tg := range fe.Targets {
		errs = append(errs, tg.Err)
	}
	assert.Equal(t, []*kerr.Error{nil, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.UnknownTopicID}, errs)
	assert.Equal(t, Placement{}, fe.Targets[2].Placement, "no leader is named for a denied partition")
	assert.Nil(t, fe.Targets[1].sp)
}

package testbroker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// shareFetchAnswer is one partition of a ShareFetch response, by topic id.
type shareFetchAnswer struct {
	code, ackCode int16
	acquired      []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
}

// aclShareFetch sends a ShareFetch of partition 0 of each topic (none for an incremental fetch
// that names nothing) that takes what is there at once, and returns the partitions answered.
func aclShareFetch(t *testing.T, ctx context.Context, cl *kgo.Client, member *string, epoch int32, topics ...kmsg.ShareFetchRequestTopic) map[[16]byte]shareFetchAnswer {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), member, epoch
	req.MaxBytes, req.MaxRecords, req.BatchSize = 1<<20, 100, 100
	req.Topics = topics
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode)
	out := map[[16]byte]shareFetchAnswer{}
	for _, rt := range resp.Topics {
		require.Len(t, rt.Partitions, 1)
		rp := rt.Partitions[0]
		out[rt.TopicID] = shareFetchAnswer{code: rp.ErrorCode, ackCode: rp.AcknowledgeErrorCode, acquired: rp.AcquiredRecords}
	}
	return out
}

func shareFetchTopic(id [16]byte, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchRequestTopic {
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = id
	rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}
	return rt
}

// TestACLsShareSessionKeepsDeniedTopic: as Kafka, a partition whose topic the member may not
// read joins the share session all the same; every fetch of the session answers it
// TOPIC_AUTHORIZATION_FAILED, also one that does not name it, acknowledgements on it are not
// applied, and the first fetch after READ is granted acquires its records without the client
// naming it again.
func TestACLsShareSessionKeepsDeniedTopic(t *testing.T) {
	c := aclCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1))
	ctx := aclContext(t)
	adminCl := userClient(t, c, "admin")
	admin := kadm.NewClient(adminCl)
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("g").Operations(kadm.OpRead))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpRead))
	alice := userClient(t, c, "alice")
	hb := aclShareHeartbeat(t, ctx, alice, "g", "t")
	require.Zero(t, hb.ErrorCode)
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	for _, topic := range []string{"t", "t", "secret", "secret"} {
		require.NoError(t, produceCode(t, ctx, adminCl, topic))
	}
	topics, err := admin.ListTopics(ctx, "t", "secret")
	require.NoError(t, err)
	tID, secretID := topics["t"].ID, topics["secret"].ID
	twoRecords := []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 1, DeliveryCount: 1}}
	denied := shareFetchAnswer{code: kerr.TopicAuthorizationFailed.Code}

	got := aclShareFetch(t, ctx, alice, hb.MemberID, 0, shareFetchTopic(tID), shareFetchTopic(secretID))
	assert.Equal(t, map[[16]byte]shareFetchAnswer{tID: {acquired: twoRecords}, secretID: denied}, got)
	sessions := c.ShareSessions(0)
	require.Len(t, sessions, 1)
	var inSession []string
	for _, tp := range sessions[0].Partitions {
		inSession = append(inSession, tp.Topic)
	}
	assert.ElementsMatch(t, []string{"t", "secret"}, inSession, "the denied partition joined the session")

	got = aclShareFetch(t, ctx, alice, hb.MemberID, 1)
	assert.Equal(t, map[[16]byte]shareFetchAnswer{secretID: denied}, got, "an incremental fetch answers the denied partition again")

	reject := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{3}}
	got = aclShareFetch(t, ctx, alice, hb.MemberID, 2, shareFetchTopic(secretID, reject))
	assert.Equal(t, map[[16]byte]shareFetchAnswer{secretID: {code: kerr.TopicAuthorizationFailed.Code, ackCode: kerr.TopicAuthorizationFailed.Code}}, got)
	assert.Nil(t, c.ShareRecords("g", "secret", 0), "nothing was acquired or acknowledged on secret")

	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("secret").Operations(kadm.OpRead))
	got = aclShareFetch(t, ctx, alice, hb.MemberID, 3)
	assert.Equal(t, map[[16]byte]shareFetchAnswer{secretID: {acquired: twoRecords}}, got, "the session's next fetch acquires from secret")

	got = aclShareFetch(t, ctx, alice, hb.MemberID, 4)
	assert.Empty(t, got, "nothing new: neither partition is answered")
}

package testbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// alterTopic is one topic of an AlterShareGroupOffsets: partition, start offset pairs.
func alterTopic(name string, partitionOffsets ...int64) kmsg.AlterShareGroupOffsetsRequestTopic {
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = name
	for i := 0; i+1 < len(partitionOffsets); i += 2 {
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = int32(partitionOffsets[i]), partitionOffsets[i+1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

func alterShareOffsets(t *testing.T, rc *rawConn, group string, topics ...kmsg.AlterShareGroupOffsetsRequestTopic) *kmsg.AlterShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID, req.Topics = group, topics
	return request[*kmsg.AlterShareGroupOffsetsResponse](t, rc, req)
}

func deleteShareOffsets(t *testing.T, rc *rawConn, group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return request[*kmsg.DeleteShareGroupOffsetsResponse](t, rc, req)
}

// requireAltered fails the test unless the alter set t/0 without any error.
func requireAltered(t *testing.T, resp *kmsg.AlterShareGroupOffsetsResponse, tid [16]byte) {
	t.Helper()
	require.Zero(t, resp.ErrorCode, "%v: %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	require.Equal(t, []alterRow{{"t", tid, 0, 0, ""}}, alterRows(resp))
}

// alterRow is one partition of an AlterShareGroupOffsets response.
type alterRow struct {
	topic     string
	id        [16]byte
	partition int32
	code      int16
	message   string
}

func alterRows(resp *kmsg.AlterShareGroupOffsetsResponse) []alterRow {
	var out []alterRow
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, alterRow{rt.Topic, rt.TopicID, rp.Partition, rp.ErrorCode, deref(rp.ErrorMessage)})
		}
	}
	return out
}

// deleteRow is one topic of a DeleteShareGroupOffsets response.
type deleteRow struct {
	topic   string
	id      [16]byte
	code    int16
	message string
}

func deleteRows(resp *kmsg.DeleteShareGroupOffsetsResponse) []deleteRow {
	var out []deleteRow
	for _, rt := range resp.Topics {
		out = append(out, deleteRow{rt.Topic, rt.TopicID, rt.ErrorCode, deref(rt.ErrorMessage)})
	}
	return out
}

// startOffset returns the SPSO of g's share partition of t/0, failing the test without one.
func (st *shareTest) startOffset(t *testing.T) int64 {
	t.Helper()
	start, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok, "g has no share partition of t/0")
	return start
}

// TestAlterShareGroupOffsets resets an empty group's share partition backwards, which delivers
// acknowledged records again with fresh delivery counts, forwards, which skips records, and past
// the log end, which the next fetch moves to the log start offset, as Kafka's share fetch does
// when the log answers OFFSET_OUT_OF_RANGE. The member's share session outlives the resets.
func TestAlterShareGroupOffsets(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "0", "1", "2", "3", "4")
	assert.Equal(t, [][3]int64{{0, 4, 1}}, acquired(m.take(t)))
	m.take(t, fetchAck(0, 4, ackAccept))
	require.Equal(t, int64(5), st.startOffset(t))

	requireAltered(t, alterShareOffsets(t, st.rc, "g", alterTopic("t", 0, 1)), st.tid)
	assert.Equal(t, int64(1), st.startOffset(t))
	assert.Equal(t, [][3]int64{{1, 4, 1}}, acquired(m.take(t)), "acknowledged records come back, as new deliveries")
	m.take(t, fetchAck(1, 4, ackAccept))

	st.produce(t, "5", "6", "7", "8", "9")
	requireAltered(t, alterShareOffsets(t, st.rc, "g", alterTopic("t", 0, 8)), st.tid)
	assert.Equal(t, [][3]int64{{8, 9, 1}}, acquired(m.take(t)), "records before the new start are skipped")
	m.take(t, fetchAck(8, 9, ackAccept))

	requireAltered(t, alterShareOffsets(t, st.rc, "g", alterTopic("t", 0, 100)), st.tid)
	assert.Equal(t, int64(100), st.startOffset(t), "the offset is not checked against the log")
	assert.Equal(t, [][3]int64{{0, 9, 1}}, acquired(m.take(t)), "past the log end: the next fetch starts at the log start")
	assert.Equal(t, int64(0), st.startOffset(t))

	info, ok := st.c.ShareGroup("g")
	require.True(t, ok, "the alter created the group")
	assert.Equal(t, "Empty", info.State)
}

// TestAlterShareGroupOffsetsUninitialized: a start offset of -1 drops the share state, so that
// the next fetch starts where share.auto.offset.reset says; a partition never fetched gets
// share state at the offset given.
func TestAlterShareGroupOffsetsUninitialized(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.Topic("u", 1))
	require.NoError(t, st.c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "0", "1", "2")
	m.take(t)
	m.take(t, fetchAck(0, 2, ackAccept))

	resp := alterShareOffsets(t, st.rc, "g", alterTopic("t", 0, -1), alterTopic("u", 0, 7))
	require.Zero(t, resp.ErrorCode)
	uid := topicIDOf(t, st.c, "u")
	assert.Equal(t, []alterRow{{"t", st.tid, 0, 0, ""}, {"u", uid, 0, 0, ""}}, alterRows(resp))
	_, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	assert.False(t, ok, "-1 leaves no share state")
	start, _, ok := st.c.SharePartitionOffsets("g", "u", 0)
	require.True(t, ok)
	assert.Equal(t, int64(7), start)
	assert.Equal(t, [][3]int64{{0, 2, 1}}, acquired(m.take(t)), "earliest again")
}

// TestDeleteShareGroupOffsets deletes a topic's share state: the next fetch starts afresh from
// share.auto.offset.reset. Deleted topics come first, then the failures in request order.
func TestDeleteShareGroupOffsets(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.Topic("u", 1))
	require.NoError(t, st.c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	requireHeartbeatOK(t, shareHeartbeat(t, st.rc, "g", "m", 0, "t"))
	requireHeartbeatOK(t, shareHeartbeat(t, st.rc, "g", "m", -1))
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "0", "1", "2")
	m.take(t)
	m.take(t, fetchAck(0, 2, ackAccept))
	require.Equal(t, int64(3), st.startOffset(t))

	resp := deleteShareOffsets(t, st.rc, "g", "missing", "u", "t", "t")
	require.Zero(t, resp.ErrorCode)
	assert.Nil(t, resp.ErrorMessage)
	assert.Equal(t, []deleteRow{
		{"t", st.tid, 0, ""},
		{"missing", [16]byte{}, kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition."},
		{"u", [16]byte{}, kerr.UnknownTopicOrPartition.Code, "There is no offset information to delete."},
	}, deleteRows(resp))
	_, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	assert.False(t, ok)
	assert.Equal(t, [][3]int64{{0, 2, 1}}, acquired(m.take(t)), "earliest: from the log start again")

	require.NoError(t, st.c.SetGroupConfig("g", "share.auto.offset.reset", "latest"))
	m.take(t, fetchAck(0, 2, ackAccept))
	assert.Equal(t, []deleteRow{{"t", st.tid, 0, ""}}, deleteRows(deleteShareOffsets(t, st.rc, "g", "t")))
	fetched := m.fetch(t, m.fetchReq())
	require.Zero(t, fetched.ErrorCode)
	for _, rt := range fetched.Topics {
		for _, p := range rt.Partitions {
			assert.Empty(t, p.AcquiredRecords, "latest: only records produced from now on")
		}
	}
	st.produce(t, "3", "4")
	assert.Equal(t, [][3]int64{{3, 4, 1}}, acquired(m.take(t)))
}

// TestShareGroupOffsetsErrors checks the errors of both RPCs, with Kafka's codes and messages:
// those of the group are top-level and come without topics.
func TestShareGroupOffsetsErrors(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	tid := topicIDOf(t, c, "t")
	conns := []*rawConn{dialRaw(t, c.Addrs()[0]), dialRaw(t, c.Addrs()[1])}
	coordinatorOf := func(group string) (coordinator, other *rawConn) {
		i := javaHash(group) % 50 % 2
		if i < 0 {
			i = -i
		}
		return conns[i], conns[1-i]
	}
	rc, other := coordinatorOf("g")

	type topLevel struct {
		code    int16
		message string
		topics  int
	}
	alter := func(rc *rawConn, group string) topLevel {
		resp := alterShareOffsets(t, rc, group, alterTopic("t", 0, 0))
		return topLevel{resp.ErrorCode, deref(resp.ErrorMessage), len(resp.Topics)}
	}
	del := func(rc *rawConn, group string) topLevel {
		resp := deleteShareOffsets(t, rc, group, "t")
		return topLevel{resp.ErrorCode, deref(resp.ErrorMessage), len(resp.Topics)}
	}

	notCoordinator := topLevel{kerr.NotCoordinator.Code, "This is not the correct coordinator.", 0}
	assert.Equal(t, notCoordinator, alter(other, "g"))
	assert.Equal(t, notCoordinator, del(other, "g"))
	invalid := topLevel{kerr.InvalidGroupID.Code, "The configured groupId is invalid.", 0}
	assert.Equal(t, invalid, alter(rc, ""))
	assert.Equal(t, invalid, del(rc, ""))
	assert.Equal(t, topLevel{kerr.GroupIDNotFound.Code, "Group g not found.", 0}, del(rc, "g"), "delete creates no group")

	cg, _ := coordinatorOf("cg")
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "cg", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	require.Zero(t, request[*kmsg.OffsetCommitResponse](t, cg, commit).Topics[0].Partitions[0].ErrorCode)
	classic := topLevel{kerr.GroupIDNotFound.Code, "Group cg is not a share group.", 0}
	assert.Equal(t, classic, alter(cg, "cg"))
	assert.Equal(t, classic, del(cg, "cg"))

	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "m", 0, "t"))
	nonEmpty := topLevel{kerr.NonEmptyGroup.Code, "The group is not empty.", 0}
	assert.Equal(t, nonEmpty, alter(rc, "g"))
	assert.Equal(t, nonEmpty, del(rc, "g"))
	requireHeartbeatOK(t, shareHeartbeat(t, rc, "g", "m", -1))

	resp := alterShareOffsets(t, rc, "g", alterTopic("t", 0, 0, 5, 0, -1, 0), alterTopic("missing", 0, 0, 1, 0))
	require.Zero(t, resp.ErrorCode)
	unknown := "This server does not host this topic-partition."
	assert.Equal(t, []alterRow{
		{"missing", [16]byte{}, 0, kerr.UnknownTopicOrPartition.Code, unknown},
		{"missing", [16]byte{}, 1, kerr.UnknownTopicOrPartition.Code, unknown},
		{"t", tid, 0, 0, ""},
		{"t", tid, 5, kerr.UnknownTopicOrPartition.Code, unknown},
		{"t", tid, -1, kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
	}, alterRows(resp), "topics that do not exist first, as Kafka's broker answers them before its coordinator")

	newGroup, _ := coordinatorOf("new")
	resp = alterShareOffsets(t, newGroup, "new", alterTopic("missing", 0, 0))
	require.Zero(t, resp.ErrorCode)
	_, ok := c.ShareGroup("new")
	assert.False(t, ok, "no topic exists: no group is created")
}

// TestShareGroupOffsetsFaults: an injected error answers every error field of both RPCs.
func TestShareGroupOffsetsFaults(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	injectFault(t, c, testbroker.Fault{APIs: []kmsg.Key{kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets}, Group: "g", Err: kerr.CoordinatorLoadInProgress, Times: 2})
	code := kerr.CoordinatorLoadInProgress.Code

	alter := alterShareOffsets(t, rc, "g", alterTopic("t", 0, 0, 1, 0))
	assert.Equal(t, code, alter.ErrorCode)
	assert.Equal(t, []alterRow{{"t", [16]byte{}, 0, code, ""}, {"t", [16]byte{}, 1, code, ""}}, alterRows(alter))
	del := deleteShareOffsets(t, rc, "g", "t", "u")
	assert.Equal(t, code, del.ErrorCode)
	assert.Equal(t, []deleteRow{{"t", [16]byte{}, code, ""}, {"u", [16]byte{}, code, ""}}, deleteRows(del))

	_, ok := c.ShareGroup("g")
	assert.False(t, ok, "the failed alter did nothing")
	requireAltered(t, alterShareOffsets(t, rc, "g", alterTopic("t", 0, 0)), topicIDOf(t, c, "t"))
}

// kadmShareOffsets is what an operator sees of the share-group offset RPCs through kadm.
type kadmShareOffsets struct {
	altered, unknownTopic     error // the alter of t/0 and of missing/0
	listed                    string
	describedStart            int64
	deleted, deletedAgain     error // DeleteShareGroupOffsets of t, twice
	afterDelete               int   // partitions DescribeShareGroupOffsets lists after the delete
	missingGroup, nonEmpty    error // a delete for a group that does not exist; an alter of one with a member
	nonEmptyDelete, wrongType error // a delete of the group with a member; an alter of a classic group
}

// runKadmShareOffsets resets and deletes share-group offsets with kadm against the brokers at
// addrs, which have topic "t" with one partition.
func runKadmShareOffsets(t *testing.T, addrs []string) kadmShareOffsets {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	for _, v := range []string{"0", "1", "2", "3", "4"} {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr())
	}
	var out kadmShareOffsets

	res, err := adm.AlterShareGroupOffsets(ctx, "g", kadm.Offsets{"t": {0: {Topic: "t", Partition: 0, At: 2}}, "missing": {0: {Topic: "missing", At: 0}}})
	require.NoError(t, err)
	out.altered, out.unknownTopic = res["t"][0], res["missing"][0]
	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	require.NoError(t, err)
	if g, ok := listed["g"]; ok {
		out.listed = g.State
	}
	described, err := adm.DescribeShareGroupOffsets(ctx, "g")
	require.NoError(t, err)
	out.describedStart = described["g"].Offsets["t"][0].StartOffset

	del, err := adm.DeleteShareGroupOffsets(ctx, "g", "t")
	require.NoError(t, err)
	out.deleted = del["t"]
	described, err = adm.DescribeShareGroupOffsets(ctx, "g")
	require.NoError(t, err)
	out.afterDelete = len(described["g"].Offsets["t"])
	if del, err = adm.DeleteShareGroupOffsets(ctx, "g", "t"); err == nil {
		out.deletedAgain = del["t"]
	} else {
		out.deletedAgain = err
	}

	_, out.missingGroup = adm.DeleteShareGroupOffsets(ctx, "nope", "t")
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "busy", "member-1", 0, []string{"t"}
	hbResp, err := hb.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, hbResp.ErrorCode, deref(hbResp.ErrorMessage))
	_, out.nonEmpty = adm.AlterShareGroupOffsets(ctx, "busy", kadm.Offsets{"t": {0: {Topic: "t", At: 0}}})
	_, out.nonEmptyDelete = adm.DeleteShareGroupOffsets(ctx, "busy", "t")

	_, err = adm.CommitOffsets(ctx, "classic", kadm.Offsets{"t": {0: {Topic: "t", At: 1, LeaderEpoch: -1}}})
	require.NoError(t, err)
	_, out.wrongType = adm.AlterShareGroupOffsets(ctx, "classic", kadm.Offsets{"t": {0: {Topic: "t", At: 0}}})
	return out
}

// TestKadmShareGroupOffsets runs kadm's AlterShareGroupOffsets and DeleteShareGroupOffsets
// against testbroker and against kfake. Both reset, create the group, describe the new start
// offset and refuse a group with members or of another type, and a delete for a group that
// does not exist. They differ where kfake differs from Kafka: kfake drops a share group left
// with no members and no share state, so deleting the same topic again finds no group
// (GROUP_ID_NOT_FOUND) where Kafka and testbroker keep the group and answer
// UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete.".
func TestKadmShareGroupOffsets(t *testing.T) {
	t.Parallel()
	want := kadmShareOffsets{
		unknownTopic:   kerr.UnknownTopicOrPartition,
		listed:         "Empty",
		describedStart: 2,
		deletedAgain:   kerr.UnknownTopicOrPartition,
		missingGroup:   kerr.GroupIDNotFound,
		nonEmpty:       kerr.NonEmptyGroup,
		nonEmptyDelete: kerr.NonEmptyGroup,
		wrongType:      kerr.GroupIDNotFound,
	}
	t.Run("testbroker", func(t *testing.T) {
		t.Parallel()
		c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
		assert.Equal(t, want, runKadmShareOffsets(t, c.Addrs()))
	})
	t.Run("kfake", func(t *testing.T) {
		t.Parallel()
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "t"))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		kfakeWant := want
		kfakeWant.deletedAgain = kerr.GroupIDNotFound
		assert.Equal(t, kfakeWant, runKadmShareOffsets(t, c.ListenAddrs()))
	})
}

package testbroker_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// The acknowledgement types on the wire.
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// shareTest is a cluster on the manual clock with topic "t" of one partition, and a raw
// connection to broker 0.
type shareTest struct {
	c   *testbroker.Cluster
	clk *testbroker.ManualClock
	rc  *rawConn
	tid [16]byte
}

func startShareTest(t *testing.T, opts ...testbroker.Opt) *shareTest {
	t.Helper()
	c := testbroker.StartT(t, append([]testbroker.Opt{testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1)}, opts...)...)
	return &shareTest{c: c, clk: c.ManualClock(), rc: dialRaw(t, c.Addrs()[0]), tid: topicIDOf(t, c, "t")}
}

// produce appends one batch of the values to t/0.
func (st *shareTest) produce(t *testing.T, values ...string) {
	t.Helper()
	require.Zero(t, produceOne(t, st.rc, "t", 0, plainBatch(values...)).ErrorCode)
}

// member returns a share member of group "g" fetching t/0 over a connection of its own.
func (st *shareTest) member(t *testing.T, id string, version int16) *shareMember {
	return &shareMember{rc: dialRaw(t, st.c.Addrs()[0]), group: "g", id: id, version: version, tid: st.tid}
}

// shareMember sends ShareFetch and ShareAcknowledge requests of one member for t/0 and tracks
// its share session epoch.
type shareMember struct {
	rc      *rawConn
	group   string
	id      string
	version int16
	epoch   int32
	tid     [16]byte
}

// fetchReq is a ShareFetch of t/0 at the member's epoch carrying acks, asking for up to 500
// records and 1 MiB without waiting.
func (m *shareMember) fetchReq(acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := shareFetchRequest(m.version, m.group, m.id, m.epoch)
	return withShareFetchPartition(req, m.tid, 0, acks...)
}

// fetch sends req and moves the member's epoch on when the session accepted it.
func (m *shareMember) fetch(t *testing.T, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	t.Helper()
	resp := request[*kmsg.ShareFetchResponse](t, m.rc, req)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	return resp
}

// acknowledge sends a ShareAcknowledge of t/0 at the member's epoch.
func (m *shareMember) acknowledge(t *testing.T, renew bool, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeResponse {
	t.Helper()
	req := shareAcknowledgeRequest(m.version, m.group, m.id, m.epoch)
	req.IsRenewAck = renew
	withShareAckPartition(req, m.tid, 0, batches...)
	resp := request[*kmsg.ShareAcknowledgeResponse](t, m.rc, req)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	return resp
}

func (m *shareMember) advance(sent int32, code int16) {
	switch {
	case code != 0 || sent == -1:
	case sent == 0:
		m.epoch = 1
	default:
		m.epoch = sent + 1
	}
}

// open starts the member's share session with an empty fetch.
func (m *shareMember) open(t *testing.T) {
	t.Helper()
	m.epoch = 0
	resp := m.fetch(t, m.fetchReq())
	require.Zero(t, resp.ErrorCode, "%v", kerr.ErrorForCode(resp.ErrorCode))
}

// take fetches and returns t/0's entry, failing the test on any error.
func (m *shareMember) take(t *testing.T, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	resp := m.fetch(t, m.fetchReq(acks...))
	require.Zero(t, resp.ErrorCode, "%v: %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	p := onlySharePartition(t, resp)
	require.Zero(t, p.ErrorCode, "%v", kerr.ErrorForCode(p.ErrorCode))
	require.Zero(t, p.AcknowledgeErrorCode, "%v: %s", kerr.ErrorForCode(p.AcknowledgeErrorCode), deref(p.AcknowledgeErrorMessage))
	return p
}

func shareFetchRequest(version int16, group, member string, epoch int32) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = version
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch = epoch
	req.MaxBytes, req.MaxRecords, req.BatchSize = 1<<20, 500, 500
	return req
}

func withShareFetchPartition(req *kmsg.ShareFetchRequest, tid [16]byte, partition int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	p := kmsg.NewShareFetchRequestTopicPartition()
	p.Partition, p.AcknowledgementBatches = partition, acks
	for i := range req.Topics {
		if req.Topics[i].TopicID == tid {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
			return req
		}
	}
	req.Topics = append(req.Topics, kmsg.ShareFetchRequestTopic{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{p}})
	return req
}

func fetchAck(first, last int64, types ...int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}
}

// onlySharePartition returns the single partition of a ShareFetch response.
func onlySharePartition(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// acquired flattens a partition's AcquiredRecords to [first, last, count] triples.
func acquired(p kmsg.ShareFetchResponseTopicPartition) [][3]int64 {
	out := [][3]int64{}
	for _, r := range p.AcquiredRecords {
		out = append(out, [3]int64{r.FirstOffset, r.LastOffset, int64(r.DeliveryCount)})
	}
	return out
}

// setGroupConfig sets a group config with IncrementalAlterConfigs.
func setGroupConfig(t *testing.T, rc *rawConn, group, key, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = key, kmsg.IncrementalAlterConfigOpSet, &value
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp := request[*kmsg.IncrementalAlterConfigsResponse](t, rc, req)
	require.Len(t, resp.Resources, 1)
	require.Zero(t, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
}

type shareFetchResult struct {
	resp *kmsg.ShareFetchResponse
	err  error
}

// startShareFetch sends a ShareFetch and receives its response in a goroutine of its own.
func startShareFetch(t *testing.T, rc *rawConn, req *kmsg.ShareFetchRequest) <-chan shareFetchResult {
	t.Helper()
	corr := rc.send(t, req)
	got := make(chan shareFetchResult, 1)
	go func() {
		resp, err := receive[*kmsg.ShareFetchResponse](rc, req, corr)
		got <- shareFetchResult{resp, err}
	}()
	return got
}

func awaitShareFetch(t *testing.T, got <-chan shareFetchResult) *kmsg.ShareFetchResponse {
	t.Helper()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r.resp
	case <-time.After(10 * time.Second):
		t.Fatal("no ShareFetch response")
		return nil
	}
}

func requireNoResponse(t *testing.T, got <-chan shareFetchResult) {
	t.Helper()
	select {
	case <-got:
		t.Fatal("the ShareFetch answered early")
	default:
	}
}

// TestShareFetchRequestValidation sends every malformed ShareFetch Kafka refuses before looking
// at sessions, and checks the order of the checks and the exact messages.
func TestShareFetchRequestValidation(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	str := func(s string) *string { return &s }
	valid := func(version int16) *kmsg.ShareFetchRequest {
		return withShareFetchPartition(shareFetchRequest(version, "g", "m", 0), st.tid, 0)
	}
	renew := func(maxBytes, minBytes, maxRecords, maxWait int32) *kmsg.ShareFetchRequest {
		req := valid(2)
		req.IsRenewAck = true
		req.MaxBytes, req.MinBytes, req.MaxRecords, req.MaxWaitMillis = maxBytes, minBytes, maxRecords, maxWait
		return req
	}
	tests := []struct {
		name    string
		req     *kmsg.ShareFetchRequest
		message string
	}{
		{"null group", func() *kmsg.ShareFetchRequest { r := valid(2); r.GroupID = nil; r.MemberID = nil; return r }(), "Invalid group id in the request."},
		{"null member", func() *kmsg.ShareFetchRequest { r := valid(1); r.MemberID = nil; return r }(), "Invalid member id in the request."},
		{"empty member", func() *kmsg.ShareFetchRequest { r := valid(1); r.MemberID = str(""); return r }(), "Invalid member id in the request."},
		{"37-character member", func() *kmsg.ShareFetchRequest {
			r := valid(1)
			r.MemberID = str(strings.Repeat("m", 37))
			return r
		}(), "Invalid member id in the request."},
		{"invalid member before renew limits", func() *kmsg.ShareFetchRequest { r := renew(1, 1, 1, 1); r.MemberID = str(""); return r }(), "Invalid member id in the request."},
		{"renew with every limit", renew(1, 1, 1, 1), "maxBytes must be set to 0, minBytes must be set to 0, maxRecords must be set to 0, maxWaitMs must be set to 0, if isRenewAck is true."},
		{"renew with max bytes", renew(1, 0, 0, 0), "maxBytes must be set to 0, if isRenewAck is true."},
		{"renew with min bytes and max wait", renew(0, 5, 0, 100), "minBytes must be set to 0, maxWaitMs must be set to 0, if isRenewAck is true."},
		{"renew with max records", renew(0, 0, 10, 0), "maxRecords must be set to 0, if isRenewAck is true."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request[*kmsg.ShareFetchResponse](t, st.rc, tt.req)
			assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode)
			assert.Equal(t, tt.message, deref(resp.ErrorMessage))
			assert.Zero(t, resp.AcquisitionLockTimeoutMillis, "error responses carry no lock timeout")
			assert.Empty(t, resp.Topics)
		})
	}
	assert.Empty(t, st.c.ShareSessions(0), "no refused request opens a session")

	resp := request[*kmsg.ShareFetchResponse](t, st.rc, func() *kmsg.ShareFetchRequest {
		r := valid(1)
		r.MemberID = str(strings.Repeat("é", 36)) // 36 Java characters, 72 bytes
		return r
	}())
	assert.Zero(t, resp.ErrorCode, "a member id is measured in characters")
}

// TestShareFetchAcquiresRecords follows records from produce to acquisition: the session's first
// fetch finds nothing (the group starts at the latest offset), the next one acquires the batch
// for the member with delivery count 1 under a lock of the default 30 s.
func TestShareFetchAcquiresRecords(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m1", 2)

	resp := m.fetch(t, m.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(30000), resp.AcquisitionLockTimeoutMillis, "group.share.record.lock.duration.ms")
	p := onlySharePartition(t, resp)
	assert.Empty(t, p.AcquiredRecords)
	assert.NotNil(t, p.Records, "no records is an empty record set, not null")
	assert.Empty(t, p.Records)

	st.produce(t, "a", "b", "c")
	p = m.take(t)
	assert.Equal(t, [][3]int64{{0, 2, 1}}, acquired(p))
	got := fetchedRecords(t, kmsg.FetchResponseTopicPartition{RecordBatches: p.Records}, 0)
	assert.Equal(t, []fetched{{0, "a"}, {1, "b"}, {2, "c"}}, got)

	for _, r := range st.c.ShareRecords("g", "t", 0) {
		assert.Equal(t, testbroker.ShareAcquired, r.State, "offset %d", r.Offset)
		assert.Equal(t, int16(1), r.DeliveryCount)
		assert.Equal(t, "m1", r.Member)
		assert.Equal(t, clockStart.Add(30*time.Second), r.LockDeadline)
	}
	start, end, ok := st.c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, [2]int64{0, 2}, [2]int64{start, end})

	resp = m.fetch(t, m.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Topics, "a subsequent fetch leaves out partitions with nothing new")
}

// TestShareFetchLimits checks MaxRecords (soft in batch-optimized mode, exact in record-limit
// mode), MaxRecords or MaxBytes of 0 (nothing fetched, no partitions listed), and BatchSize.
func TestShareFetchLimits(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.auto.offset.reset", "earliest")
	st.produce(t, "0", "1", "2", "3")
	st.produce(t, "4", "5", "6", "7")
	st.produce(t, "8", "9")

	m := st.member(t, "m1", 2)
	req := m.fetchReq()
	req.MaxRecords = 0
	resp := m.fetch(t, req)
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Topics, "MaxRecords 0 fetches nothing")
	req = m.fetchReq()
	req.MaxBytes = 0
	resp = m.fetch(t, req)
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Topics, "MaxBytes 0 fetches nothing")
	_, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	assert.False(t, ok, "nothing was fetched, so the share partition does not exist yet")

	req = m.fetchReq()
	req.MaxRecords, req.BatchSize = 2, 2
	p := onlySharePartition(t, m.fetch(t, req))
	assert.Equal(t, [][3]int64{{0, 3, 1}}, acquired(p), "batch-optimized rounds up to the end of the log batch")

	req = m.fetchReq()
	req.MaxRecords, req.ShareAcquireMode = 3, 1
	p = onlySharePartition(t, m.fetch(t, req))
	assert.Equal(t, [][3]int64{{4, 6, 1}}, acquired(p), "record-limit stops at MaxRecords")
	r, ok := st.c.ShareRecord("g", "t", 0, 7)
	require.True(t, ok)
	assert.Equal(t, testbroker.ShareAvailable, r.State, "the rest of the batch stays available")

	m2 := st.member(t, "m2", 1)
	req = m2.fetchReq()
	req.MaxRecords, req.ShareAcquireMode = 1, 1 // not on the wire in v1: batch-optimized
	p = onlySharePartition(t, m2.fetch(t, req))
	assert.Equal(t, [][3]int64{{7, 7, 1}}, acquired(p), "the released rest of a split batch, then the limit")
	assert.Equal(t, [][3]int64{{8, 9, 1}}, acquired(m2.take(t)))
}

// TestShareFetchBatchSize checks that BatchSize cuts the AcquiredRecords of new records at log
// batch boundaries.
func TestShareFetchBatchSize(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.auto.offset.reset", "earliest")
	st.produce(t, "0", "1")
	st.produce(t, "2", "3")
	st.produce(t, "4", "5")
	m := st.member(t, "m", 2)
	req := m.fetchReq()
	req.BatchSize = 3
	p := onlySharePartition(t, m.fetch(t, req))
	assert.Equal(t, [][3]int64{{0, 3, 1}, {4, 5, 1}}, acquired(p))
}

// TestShareFetchPiggybackedAcks acknowledges four records with one type each (ACCEPT, RELEASE,
// REJECT and a gap) on the next ShareFetch, which then re-acquires the released one.
func TestShareFetchPiggybackedAcks(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b", "c", "d")
	require.Equal(t, [][3]int64{{0, 3, 1}}, acquired(m.take(t)))

	p := m.take(t, fetchAck(0, 3, ackAccept, ackRelease, ackReject, ackGap))
	assert.Nil(t, p.AcknowledgeErrorMessage)
	assert.Equal(t, [][3]int64{{1, 1, 2}}, acquired(p), "the released record is delivered again")

	states := map[int64]testbroker.ShareRecordState{}
	for _, r := range st.c.ShareRecords("g", "t", 0) {
		states[r.Offset] = r.State
	}
	assert.Equal(t, map[int64]testbroker.ShareRecordState{
		0: testbroker.ShareAcknowledged, 1: testbroker.ShareAcquired, 2: testbroker.ShareArchived, 3: testbroker.ShareArchived,
	}, states)
	start, end, _ := st.c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, [2]int64{1, 3}, [2]int64{start, end}, "the SPSO moves past the accepted record")

	p = m.take(t, fetchAck(1, 1, ackAccept))
	assert.Empty(t, p.AcquiredRecords)
	start, end, _ = st.c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, [2]int64{4, 4}, [2]int64{start, end}, "every record is done with")
}

// TestShareFetchAckValidation sends acknowledgement batches that break Kafka's rules: each
// fails its partition with INVALID_REQUEST and no message, changes nothing, and the fetch still
// runs.
func TestShareFetchAckValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version int16
		renew   bool
		batches []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	}{
		{"first after last", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(2, 1, ackAccept)}},
		{"overlapping batches", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 2, ackAccept), fetchAck(1, 3, ackAccept)}},
		{"no types", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 1)}},
		{"types not one per offset", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 2, ackAccept, ackAccept)}},
		{"unknown type", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 0, 5)}},
		{"negative type", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 0, -1)}},
		{"renew on v1", 1, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 3, ackRenew)}},
		{"renew without IsRenewAck", 2, false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 3, ackRenew)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := startShareTest(t)
			m := st.member(t, "m", tt.version)
			m.open(t)
			st.produce(t, "a", "b", "c", "d")
			m.take(t)
			st.produce(t, "e")

			req := m.fetchReq(tt.batches...)
			req.IsRenewAck = tt.renew
			resp := m.fetch(t, req)
			require.Zero(t, resp.ErrorCode)
			p := onlySharePartition(t, resp)
			assert.Equal(t, kerr.InvalidRequest.Code, p.AcknowledgeErrorCode)
			assert.Nil(t, p.AcknowledgeErrorMessage)
			assert.Zero(t, p.ErrorCode)
			assert.Equal(t, [][3]int64{{4, 4, 1}}, acquired(p), "the fetch still runs")
			for _, r := range st.c.ShareRecords("g", "t", 0)[:4] {
				assert.Equal(t, testbroker.ShareAcquired, r.State, "offset %d", r.Offset)
			}
		})
	}
}

// TestShareFetchAckErrors checks the acknowledgement errors that do not come from batch rules:
// an unknown topic id, a partition the topic lacks, a partition never fetched on this broker,
// and a refusal of the share partition, with its message; partitions without records of their
// own get an entry with the acknowledgement error alone.
func TestShareFetchAckErrors(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.Topic("u", 2))
	uid := topicIDOf(t, st.c, "u")
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "a", "b")
	m.take(t)

	unknown := [16]byte{9, 9, 9}
	req := m.fetchReq(fetchAck(5, 5, ackAccept)) // past what t/0 acquired
	withShareFetchPartition(req, unknown, 0, fetchAck(0, 0, ackAccept))
	withShareFetchPartition(req, uid, 7, fetchAck(0, 0, ackAccept))
	withShareFetchPartition(req, uid, 1, fetchAck(0, 0, ackAccept))
	resp := m.fetch(t, req)
	require.Zero(t, resp.ErrorCode)

	type entry struct {
		code, ackCode int16
		ackMsg        string
	}
	got := map[string]entry{}
	name := map[[16]byte]string{st.tid: "t", uid: "u", unknown: "unknown"}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got[fmt.Sprintf("%s/%d", name[rt.TopicID], p.Partition)] = entry{p.ErrorCode, p.AcknowledgeErrorCode, deref(p.AcknowledgeErrorMessage)}
		}
	}
	assert.Equal(t, map[string]entry{
		"t/0":       {0, kerr.InvalidRequest.Code, "Batch record not found. The first offset in request is past acquired records."},
		"unknown/0": {kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Code, ""},
		"u/7":       {kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, ""},
		"u/1":       {0, kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition."},
	}, got, "u/1 joins the session and is fetched; the others fail both ways")
}

// TestShareFetchNotLeader fetches a partition led by another broker: it is
// NOT_LEADER_OR_FOLLOWER with the leader and its address, while the led partition is served.
func TestShareFetchNotLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 2))
	tid := topicIDOf(t, c, "t")
	rc := dialRaw(t, c.Addrs()[0])
	leader1, ok := c.Partition("t", 1)
	require.True(t, ok)
	require.Equal(t, int32(1), leader1.Leader)

	req := shareFetchRequest(2, "g", "m", 0)
	withShareFetchPartition(req, tid, 0)
	withShareFetchPartition(req, tid, 1)
	resp := request[*kmsg.ShareFetchResponse](t, rc, req)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	parts := resp.Topics[0].Partitions
	require.Len(t, parts, 2)
	assert.Zero(t, parts[0].ErrorCode)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, parts[1].ErrorCode)
	assert.Equal(t, int32(1), parts[1].CurrentLeader.LeaderID)
	require.Len(t, resp.NodeEndpoints, 1)
	addr := c.Addrs()[1]
	assert.Equal(t, int32(1), resp.NodeEndpoints[0].NodeID)
	assert.Equal(t, addr, net.JoinHostPort(resp.NodeEndpoints[0].Host, strconv.Itoa(int(resp.NodeEndpoints[0].Port))))

	_, _, ok = c.SharePartitionOffsets("g", "t", 1)
	assert.False(t, ok, "broker 0 makes no share partition for a partition it does not lead")
}

// TestShareFetchSessionPartitions checks which partitions a session's responses list: a new
// session lists every partition, unknown ones with their error; later fetches list a partition
// only with records, with an error, or once after it joins; forgotten partitions are no longer
// fetched.
func TestShareFetchSessionPartitions(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.Topic("u", 1))
	uid := topicIDOf(t, st.c, "u")
	unknown := [16]byte{1, 2, 3}
	m := st.member(t, "m", 2)

	req := m.fetchReq()
	withShareFetchPartition(req, unknown, 0)
	withShareFetchPartition(req, st.tid, 5)
	resp := m.fetch(t, req)
	require.Zero(t, resp.ErrorCode)
	codes := partitionCodes(resp)
	assert.Equal(t, map[[16]byte]map[int32]int16{
		st.tid:  {0: 0, 5: kerr.UnknownTopicOrPartition.Code},
		unknown: {0: kerr.UnknownTopicID.Code},
	}, codes)

	resp = m.fetch(t, shareFetchRequest(2, "g", "m", m.epoch))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, map[[16]byte]map[int32]int16{
		st.tid:  {5: kerr.UnknownTopicOrPartition.Code},
		unknown: {0: kerr.UnknownTopicID.Code},
	}, partitionCodes(resp), "errors are always listed; t/0 has nothing new")

	req = shareFetchRequest(2, "g", "m", m.epoch)
	withShareFetchPartition(req, uid, 0)
	req.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: unknown, Partitions: []int32{0}}, {TopicID: st.tid, Partitions: []int32{5}}}
	resp = m.fetch(t, req)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, map[[16]byte]map[int32]int16{uid: {0: 0}}, partitionCodes(resp), "a partition that joins is listed once")

	resp = m.fetch(t, shareFetchRequest(2, "g", "m", m.epoch))
	assert.Empty(t, resp.Topics)
	sessions := st.c.ShareSessions(0)
	require.Len(t, sessions, 1)
	assert.Equal(t, []testbroker.TopicPartitions{{TopicID: st.tid, Topic: "t", Partitions: []int32{0}}, {TopicID: uid, Topic: "u", Partitions: []int32{0}}}, sessions[0].Partitions)

	st.produce(t, "x")
	resp = m.fetch(t, shareFetchRequest(2, "g", "m", m.epoch))
	assert.Equal(t, map[[16]byte]map[int32]int16{st.tid: {0: 0}}, partitionCodes(resp), "records are always listed")
}

func partitionCodes(resp *kmsg.ShareFetchResponse) map[[16]byte]map[int32]int16 {
	out := map[[16]byte]map[int32]int16{}
	for _, rt := range resp.Topics {
		if out[rt.TopicID] == nil {
			out[rt.TopicID] = map[int32]int16{}
		}
		for _, p := range rt.Partitions {
			out[rt.TopicID][p.Partition] = p.ErrorCode
		}
	}
	return out
}

// TestShareFetchLongPoll checks the wait for records: a fetch with nothing to take waits
// MaxWaitMs on the cluster clock, is woken by a produce, and with MinBytes not reached keeps
// what it took and answers at the deadline.
func TestShareFetchLongPoll(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)

	req := m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	got := startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 1), "the fetch parks")
	st.clk.Advance(4999 * time.Millisecond)
	requireNoResponse(t, got)
	st.clk.Advance(time.Millisecond)
	resp := awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Empty(t, resp.Topics)
	assert.Zero(t, st.clk.Pending())

	req = m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	got = startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 1))
	st.produce(t, "a")
	resp = awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Equal(t, [][3]int64{{0, 0, 1}}, acquired(onlySharePartition(t, resp)))
	assert.Equal(t, 1, st.clk.Pending(), "the wait's timer is stopped; the lock's remains")

	req = m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 5000, 1<<20
	st.produce(t, "b")
	got = startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 3), "two locks and the wait")
	r, _ := st.c.ShareRecord("g", "t", 0, 1)
	assert.Equal(t, testbroker.ShareAcquired, r.State, "taken at once, kept while waiting for MinBytes")
	requireNoResponse(t, got)
	st.clk.Advance(5 * time.Second)
	resp = awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Equal(t, [][3]int64{{1, 1, 1}}, acquired(onlySharePartition(t, resp)))
}

// TestShareFetchLockExpiryWakesWaiter has one member hold a record while another waits: the
// lock's expiry on the manual clock wakes the waiting fetch, which acquires the record for the
// second delivery.
func TestShareFetchLockExpiryWakesWaiter(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	a, b := st.member(t, "a", 2), st.member(t, "b", 2)
	a.open(t)
	b.open(t)
	st.produce(t, "x")
	require.Equal(t, [][3]int64{{0, 0, 1}}, acquired(a.take(t)))

	req := b.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 60000, 1
	got := startShareFetch(t, b.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 2), "the lock and the wait")
	st.clk.Advance(30 * time.Second)
	resp := awaitShareFetch(t, got)
	assert.Equal(t, [][3]int64{{0, 0, 2}}, acquired(onlySharePartition(t, resp)))
	r, ok := st.c.ShareRecord("g", "t", 0, 0)
	require.True(t, ok)
	assert.Equal(t, "b", r.Member)
	assert.Equal(t, clockStart.Add(60*time.Second), r.LockDeadline)
}

// TestShareFetchAckAfterLockExpiry acknowledges a record whose lock expired: INVALID_RECORD_STATE
// with Kafka's message, and the record stays available.
func TestShareFetchAckAfterLockExpiry(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "x")
	m.take(t)
	st.clk.Advance(30 * time.Second)

	req := m.fetchReq(fetchAck(0, 0, ackAccept))
	req.MaxRecords = 0
	resp := m.fetch(t, req)
	p := onlySharePartition(t, resp)
	assert.Equal(t, kerr.InvalidRecordState.Code, p.AcknowledgeErrorCode)
	assert.Equal(t, "The batch cannot be acknowledged. The batch is not in the acquired state.", deref(p.AcknowledgeErrorMessage))
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAvailable, r.State)
	assert.Equal(t, int16(1), r.DeliveryCount)
}

// TestShareFetchRenew renews a lock with a renew-only ShareFetch v2: no records and no
// AcquiredRecords come back, the lock runs a full duration from the renewal, the delivery count
// stays. Renewing after expiry, or another member's record, fails with Kafka's messages.
func TestShareFetchRenew(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	a, b := st.member(t, "a", 2), st.member(t, "b", 2)
	a.open(t)
	b.open(t)
	st.produce(t, "x", "y")
	a.take(t)
	st.produce(t, "z")

	renew := func(m *shareMember, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		req := m.fetchReq(acks...)
		req.IsRenewAck = true
		req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 0, 0
		resp := m.fetch(t, req)
		require.Zero(t, resp.ErrorCode, deref(resp.ErrorMessage))
		assert.Equal(t, int32(30000), resp.AcquisitionLockTimeoutMillis)
		return onlySharePartition(t, resp)
	}

	st.clk.Advance(20 * time.Second)
	p := renew(a, fetchAck(0, 1, ackRenew))
	assert.Zero(t, p.AcknowledgeErrorCode)
	assert.Empty(t, p.AcquiredRecords, "a renewing fetch fetches nothing, though z is there")
	assert.Empty(t, p.Records)
	for _, r := range st.c.ShareRecords("g", "t", 0)[:2] {
		assert.Equal(t, testbroker.ShareAcquired, r.State)
		assert.Equal(t, int16(1), r.DeliveryCount, "a renewal is no delivery")
		assert.Equal(t, clockStart.Add(50*time.Second), r.LockDeadline, "a full lock duration from the renewal")
	}

	p = renew(b, fetchAck(0, 1, ackRenew))
	assert.Equal(t, kerr.InvalidRecordState.Code, p.AcknowledgeErrorCode)
	assert.Equal(t, "Member is not the owner of batch record", deref(p.AcknowledgeErrorMessage))

	st.clk.Advance(29 * time.Second)
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAcquired, r.State, "renewed: the first deadline passed harmlessly")
	st.clk.Advance(time.Second)
	p = renew(a, fetchAck(0, 1, ackRenew))
	assert.Equal(t, kerr.InvalidRecordState.Code, p.AcknowledgeErrorCode)
	assert.Equal(t, "The batch cannot be acknowledged. The batch is not in the acquired state.", deref(p.AcknowledgeErrorMessage))
	r, _ = st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareAvailable, r.State)
}

// TestShareFetchRenewDisabled renews with share.renew.acknowledge.enable false: the partition's
// whole acknowledgement is refused with Kafka's message, the ACCEPT beside the RENEW included.
func TestShareFetchRenewDisabled(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.renew.acknowledge.enable", "false")
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "x", "y")
	m.take(t)

	req := m.fetchReq(fetchAck(0, 1, ackAccept, ackRenew))
	req.IsRenewAck = true
	req.MaxBytes, req.MaxRecords = 0, 0
	p := onlySharePartition(t, m.fetch(t, req))
	assert.Equal(t, kerr.InvalidRecordState.Code, p.AcknowledgeErrorCode)
	assert.Equal(t, "Renewing acquisition locks is not enabled for the group.", deref(p.AcknowledgeErrorMessage))
	for _, r := range st.c.ShareRecords("g", "t", 0) {
		assert.Equal(t, testbroker.ShareAcquired, r.State, "offset %d rolled back", r.Offset)
		assert.Equal(t, clockStart.Add(30*time.Second), r.LockDeadline)
	}
}

// TestShareFetchDeliveryLimit archives a record whose lock expired share.delivery.count.limit
// times.
func TestShareFetchDeliveryLimit(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.delivery.count.limit", "2")
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "x")
	require.Equal(t, [][3]int64{{0, 0, 1}}, acquired(m.take(t)))
	st.clk.Advance(30 * time.Second)
	require.Equal(t, [][3]int64{{0, 0, 2}}, acquired(m.take(t)))
	st.clk.Advance(30 * time.Second)

	resp := m.fetch(t, m.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Topics, "nothing left to deliver")
	start, end, _ := st.c.SharePartitionOffsets("g", "t", 0)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{start, end}, "the archived record is behind the SPSO")
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareRecordInfo{}, r, "records behind the SPSO are forgotten")
}

// TestShareFetchThrottledRedelivery releases a batch of eight records over and over with the
// default delivery limit of 5: from the third delivery on, redeliveries are halved, and the last
// attempt goes one record at a time.
func TestShareFetchThrottledRedelivery(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "0", "1", "2", "3", "4", "5", "6", "7")

	require.Equal(t, [][3]int64{{0, 7, 1}}, acquired(m.take(t)))
	require.Equal(t, [][3]int64{{0, 7, 2}}, acquired(m.take(t, fetchAck(0, 7, ackRelease))))
	require.Equal(t, [][3]int64{{0, 7, 3}}, acquired(m.take(t, fetchAck(0, 7, ackRelease))))
	assert.Equal(t, [][3]int64{{0, 3, 4}}, acquired(m.take(t, fetchAck(0, 7, ackRelease))), "halved")
	assert.Equal(t, [][3]int64{{0, 0, 5}}, acquired(m.take(t, fetchAck(0, 3, ackRelease))), "the last attempt goes alone")

	m.take(t, fetchAck(0, 0, ackRelease))
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, testbroker.ShareArchived, r.State, "released at the delivery limit")
}

// TestShareFetchLockDurationFollowsConfig changes share.record.lock.duration.ms with
// IncrementalAlterConfigs: the next response's AcquisitionLockTimeoutMs and the next lock follow.
func TestShareFetchLockDurationFollowsConfig(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	setGroupConfig(t, st.rc, "g", "share.record.lock.duration.ms", "20000")
	st.produce(t, "x")
	resp := m.fetch(t, m.fetchReq())
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(20000), resp.AcquisitionLockTimeoutMillis)
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, clockStart.Add(20*time.Second), r.LockDeadline)
}

// TestShareFetchTopicDeleted deletes a topic under a share session: its share partitions go,
// a waiting fetch wakes, and the session reports the partition unknown.
func TestShareFetchTopicDeleted(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "x")
	m.take(t)

	req := m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 60000, 1
	got := startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 2), "the lock and the wait")
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	name := "t"
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}
	delResp := request[*kmsg.DeleteTopicsResponse](t, st.rc, del)
	require.Zero(t, delResp.Topics[0].ErrorCode)

	resp := awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Equal(t, map[[16]byte]map[int32]int16{st.tid: {0: kerr.UnknownTopicOrPartition.Code}}, partitionCodes(resp))
	assert.Zero(t, st.clk.Pending(), "the lock and the wait are stopped")
	assert.Nil(t, st.c.ShareRecords("g", "t", 0))
}

// TestDescribeShareGroupOffsets reads start offsets and lag: a partition the group has fetched
// gives its SPSO and lag (v1), one it has not gives -1, an unknown topic is listed last with a
// zero id, null topics list every partition with share state, and another broker answers
// NOT_COORDINATOR.
func TestDescribeShareGroupOffsets(t *testing.T) {
	t.Parallel()
	st := startShareTest(t, testbroker.NumBrokers(2), testbroker.Topic("u", 2))
	m := st.member(t, "m", 2)
	m.open(t)
	st.produce(t, "0", "1", "2", "3", "4")
	m.take(t)
	m.take(t, fetchAck(0, 1, ackAccept))
	m.take(t, fetchAck(3, 3, ackReject))

	coordinator, other := st.rc, dialRaw(t, st.c.Addrs()[1])
	if javaHash("g")%50%2 != 0 {
		coordinator, other = other, coordinator
	}
	describe := func(rc *rawConn, version int16, topics ...kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = version
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g", Topics: topics}}
		resp := request[*kmsg.DescribeShareGroupOffsetsResponse](t, rc, req)
		require.Len(t, resp.Groups, 1)
		return resp.Groups[0]
	}
	type row struct {
		topic     string
		id        [16]byte
		partition int32
		start     int64
		epoch     int32
		lag       int64
	}
	rows := func(g kmsg.DescribeShareGroupOffsetsResponseGroup) []row {
		var out []row
		for _, rt := range g.Topics {
			for _, p := range rt.Partitions {
				require.Zero(t, p.ErrorCode)
				out = append(out, row{rt.Topic, rt.TopicID, p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag})
			}
		}
		return out
	}

	g := describe(coordinator, 1,
		kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: "missing", Partitions: []int32{0}},
		kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: "t", Partitions: []int32{0}},
		kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: "u", Partitions: []int32{1}},
	)
	require.Zero(t, g.ErrorCode)
	uid := topicIDOf(t, st.c, "u")
	assert.Equal(t, []row{
		{"t", st.tid, 0, 2, 0, 2}, // high watermark 5 - SPSO 2 - one rejected record after it
		{"u", uid, 1, -1, 0, -1},
		{"missing", [16]byte{}, 0, -1, 0, -1},
	}, rows(g))

	assert.Equal(t, []row{{"t", st.tid, 0, 2, 0, -1}}, rows(describe(coordinator, 0, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: "t", Partitions: []int32{0}})),
		"v0 has no lag")
	assert.Equal(t, []row{{"t", st.tid, 0, 2, 0, 2}}, rows(describe(coordinator, 1)), "null topics: everything with share state")

	g = describe(other, 1)
	assert.Equal(t, kerr.NotCoordinator.Code, g.ErrorCode)
	assert.Equal(t, "This is not the correct coordinator.", deref(g.ErrorMessage))
}

// TestKafka41 checks that Kafka41 advertises the share APIs of Kafka 4.1 and refuses their 4.2
// versions.
func TestKafka41(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Kafka41(), testbroker.Topic("t", 1))
	conn := dialRawKafka(t, c.Addrs()[0])
	for key, want := range map[kmsg.Key]int16{kmsg.ShareFetch: 1, kmsg.ShareAcknowledge: 1, kmsg.DescribeShareGroupOffsets: 0} {
		v, ok := advertised(t, conn, key)
		require.True(t, ok, kmsg.NameForKey(int16(key)))
		assert.Equal(t, want, v.MaxVersion, kmsg.NameForKey(int16(key)))
	}
	full := testbroker.StartT(t)
	v, ok := advertised(t, dialRawKafka(t, full.Addrs()[0]), kmsg.ShareFetch)
	require.True(t, ok)
	assert.Equal(t, int16(2), v.MaxVersion, "without the option: Kafka 4.2")

	resp := request[*kmsg.ShareFetchResponse](t, dialRaw(t, c.Addrs()[0]), shareFetchRequest(2, "g", "m", 0))
	assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
}

// TestShareFetchJoinedMember runs a member as a share consumer does: it joins the group with
// ShareGroupHeartbeat, then fetches its assigned partition with its member id. The broker does
// not check membership, as with Kafka: a member id the group does not know fetches too.
func TestShareFetchJoinedMember(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	const id = "3yJQd7xkRnqvX1lW9mA2Zg"
	resp := shareHeartbeat(t, st.rc, "g", id, 0, "t")
	requireHeartbeatOK(t, resp)
	require.Equal(t, map[[16]byte][]int32{st.tid: {0}}, assigned(resp.Assignment))

	m := st.member(t, id, 2)
	m.open(t)
	st.produce(t, "a")
	assert.Equal(t, [][3]int64{{0, 0, 1}}, acquired(m.take(t)))
	r, _ := st.c.ShareRecord("g", "t", 0, 0)
	assert.Equal(t, id, r.Member)

	stranger := st.member(t, "not-a-member", 2)
	stranger.open(t)
	st.produce(t, "b")
	assert.Equal(t, [][3]int64{{1, 1, 1}}, acquired(stranger.take(t)))
}

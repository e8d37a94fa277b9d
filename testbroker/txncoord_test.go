package testbroker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// These tests check the transaction coordinator's answers on the wire, with raw requests.

// notTxnCoordinatorAddr returns the address of a broker that does not coordinate id.
func notTxnCoordinatorAddr(t *testing.T, c *testbroker.Cluster, id string) string {
	t.Helper()
	coord := txnCoordinatorAddr(t, c, id)
	for _, a := range c.Addrs() {
		if a != coord {
			return a
		}
	}
	t.Fatal("a single broker coordinates everything")
	return ""
}

// TestTxnNotCoordinator: every transaction request for an id sent to a broker that does not
// coordinate it is NOT_COORDINATOR, as Kafka answers so that clients look the coordinator up.
func TestTxnNotCoordinator(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	id := "tx"
	rc := dialRaw(t, notTxnCoordinatorAddr(t, c, id))

	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	assert.Equal(t, kerr.NotCoordinator.Code, request[*kmsg.InitProducerIDResponse](t, rc, init).ErrorCode)

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID = 3, id
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	assert.Equal(t, kerr.NotCoordinator.Code, request[*kmsg.AddPartitionsToTxnResponse](t, rc, add).Topics[0].Partitions[0].ErrorCode)

	offs := kmsg.NewPtrAddOffsetsToTxnRequest()
	offs.Version, offs.TransactionalID, offs.Group = 3, id, "g"
	assert.Equal(t, kerr.NotCoordinator.Code, request[*kmsg.AddOffsetsToTxnResponse](t, rc, offs).ErrorCode)

	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID = 5, id
	endResp := request[*kmsg.EndTxnResponse](t, rc, end)
	assert.Equal(t, kerr.NotCoordinator.Code, endResp.ErrorCode)
	assert.Equal(t, int64(-1), endResp.ProducerID)

	desc := kmsg.NewPtrDescribeTransactionsRequest()
	desc.TransactionalIDs = []string{id}
	assert.Equal(t, kerr.NotCoordinator.Code, request[*kmsg.DescribeTransactionsResponse](t, rc, desc).TransactionStates[0].ErrorCode)
}

// TestTxnAddPartitions: AddPartitionsToTxn's client form (v3) and broker form (v4+, with
// VerifyOnly), unknown partitions, and the producer checks.
func TestTxnAddPartitions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 2))
	r := newRawTxn(t, c, "tx", false)

	add := func(partitions ...int32) []int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, r.id, r.pid, r.epoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: partitions}}
		var codes []int16
		for _, p := range request[*kmsg.AddPartitionsToTxnResponse](t, r.txnc, req).Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	assert.Equal(t, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}, add(0, 7))
	assert.Equal(t, "Empty", describeTxn(t, c, "tx").State, "nothing added")
	assert.Equal(t, []int16{0}, add(0))

	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.Version = 4
	verify.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		{TransactionalID: r.id, ProducerID: r.pid, ProducerEpoch: r.epoch, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0, 1}}}},
		{TransactionalID: r.id, ProducerID: r.pid, ProducerEpoch: r.epoch + 1, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0}}}},
	}
	vr := request[*kmsg.AddPartitionsToTxnResponse](t, r.txnc, verify)
	require.Len(t, vr.Transactions, 2)
	ps := vr.Transactions[0].Topics[0].Partitions
	assert.Zero(t, ps[0].ErrorCode, "added")
	assert.Equal(t, kerr.TransactionAbortable.Code, ps[1].ErrorCode, "not added")
	assert.Equal(t, kerr.ProducerFenced.Code, vr.Transactions[1].Topics[0].Partitions[0].ErrorCode)

	d := describeTxn(t, c, "tx")
	assert.Equal(t, "Ongoing", d.State)
	assert.Equal(t, []kmsg.DescribeTransactionsResponseTransactionStateTopic{{Topic: "t", Partitions: []int32{0}}}, d.Topics)
	assert.Equal(t, int32(60000), d.TimeoutMillis)
	assert.NotEqual(t, int64(-1), d.StartTimestamp)
}

// TestTxnProduceVerification: a classic producer's transactional batch to a partition it did
// not add is refused (INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE from it), an
// unknown producer id is INVALID_PRODUCER_ID_MAPPING; from Produce v12 the partition is added.
func TestTxnProduceVerification(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	r := newRawTxn(t, c, "tx", false)
	batch := func(pid int64) []byte {
		return recordBatch(batchSpec{producerID: pid, producerEpoch: r.epoch, attributes: 0x10, values: []string{"v"}})
	}
	produceResp := func(version int16, pid int64) kmsg.ProduceResponseTopicPartition {
		req := produceRequest("t", 0, batch(pid))
		req.Version, req.TransactionID = version, &r.id
		return request[*kmsg.ProduceResponse](t, dialRaw(t, c.Addrs()[0]), req).Topics[0].Partitions[0]
	}
	produce := func(version int16, pid int64) int16 { return produceResp(version, pid).ErrorCode }
	old := produceResp(10, r.pid)
	assert.Equal(t, kerr.InvalidTxnState.Code, old.ErrorCode)
	require.NotNil(t, old.ErrorMessage)
	assert.Equal(t, "Partition was not added to the transaction", *old.ErrorMessage)
	assert.Equal(t, kerr.TransactionAbortable.Code, produce(11, r.pid))
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, produce(11, r.pid+100))
	assert.Equal(t, "Empty", describeTxn(t, c, "tx").State)
	assert.Zero(t, produce(12, r.pid), "TV2: the produce adds the partition")
	assert.Equal(t, "Ongoing", describeTxn(t, c, "tx").State)
}

// TestTxnInitProducerIDEpochs: InitProducerId with a transactional id bumps the epoch each
// time, recovers a producer that names its id and epoch (KIP-360), and fences one that names
// an old epoch.
func TestTxnInitProducerIDEpochs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3))
	id := "tx"
	rc := dialRaw(t, txnCoordinatorAddr(t, c, id))
	initPID := func(pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 5, &id, 60000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		return request[*kmsg.InitProducerIDResponse](t, rc, req)
	}
	first := initPID(-1, -1)
	require.Zero(t, first.ErrorCode)
	assert.Equal(t, int16(0), first.ProducerEpoch)
	second := initPID(-1, -1)
	assert.Equal(t, first.ProducerID, second.ProducerID)
	assert.Equal(t, int16(1), second.ProducerEpoch)
	recovered := initPID(second.ProducerID, 1)
	require.Zero(t, recovered.ErrorCode)
	assert.Equal(t, int16(2), recovered.ProducerEpoch)
	fenced := initPID(second.ProducerID, 0)
	assert.Equal(t, kerr.ProducerFenced.Code, fenced.ErrorCode)
	assert.Equal(t, int64(-1), fenced.ProducerID)
}

// TestTxnListTransactions: each broker lists the transactions it coordinates, filtered by
// state, producer id, duration and id pattern; DescribeTransactions of an unknown id is
// TRANSACTIONAL_ID_NOT_FOUND.
func TestTxnListTransactions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	ids := []string{"app-1", "app-2", "app-3", "other"}
	pids := map[string]int64{}
	for _, id := range ids {
		pids[id] = newRawTxn(t, c, id, false).pid
	}
	list := func(mod func(*kmsg.ListTransactionsRequest)) (found []string, unknown []string) {
		for _, addr := range c.Addrs() {
			req := kmsg.NewPtrListTransactionsRequest()
			req.Version = 2
			mod(req)
			resp := roundTrip[*kmsg.ListTransactionsResponse](t, addr, req)
			require.Zero(t, resp.ErrorCode)
			for _, s := range resp.TransactionStates {
				found = append(found, s.TransactionalID)
				assert.Equal(t, pids[s.TransactionalID], s.ProducerID)
				assert.Equal(t, "Empty", s.TransactionState)
				assert.Equal(t, txnCoordinatorAddr(t, c, s.TransactionalID), addr, "listed by its coordinator")
			}
			unknown = resp.UnknownStateFilters
		}
		return found, unknown
	}
	all, _ := list(func(*kmsg.ListTransactionsRequest) {})
	assert.ElementsMatch(t, ids, all)
	pattern := "app-.*"
	apps, _ := list(func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &pattern })
	assert.ElementsMatch(t, ids[:3], apps)
	byPID, _ := list(func(r *kmsg.ListTransactionsRequest) { r.ProducerIDFilters = []int64{pids["other"]} })
	assert.Equal(t, []string{"other"}, byPID)
	none, unknown := list(func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Ongoing", "Nope"} })
	assert.Empty(t, none)
	assert.Equal(t, []string{"Nope"}, unknown)

	desc := kmsg.NewPtrDescribeTransactionsRequest()
	desc.TransactionalIDs = []string{"missing"}
	resp := roundTrip[*kmsg.DescribeTransactionsResponse](t, txnCoordinatorAddr(t, c, "missing"), desc)
	assert.Equal(t, kerr.TransactionalIDNotFound.Code, resp.TransactionStates[0].ErrorCode)
}

// TestTxnVersionFeature: ApiVersions v3+ finalizes transaction.version 2, as a Kafka 4.x
// cluster does by default, so that clients run transactions with KIP-890 part 2.
func TestTxnVersionFeature(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "test", "1"
	resp := roundTrip[*kmsg.ApiVersionsResponse](t, c.Addrs()[0], req)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "transaction.version", MinVersionLevel: 2, MaxVersionLevel: 2}}, resp.FinalizedFeatures)
	assert.Positive(t, resp.FinalizedFeaturesEpoch)
	for _, k := range []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.DescribeTransactions, kmsg.ListTransactions} {
		found := false
		for _, ak := range resp.ApiKeys {
			found = found || ak.ApiKey == int16(k)
		}
		assert.True(t, found, "%s advertised", k.Name())
	}
}

// TestTxnMarkerWaitsForLeader: a commit whose partition has no running leader is answered at
// once and stays PrepareCommit, the records unstable; the marker is written when the leader's
// broker starts again. The coordinator's state survives the restart of its own broker: another
// broker coordinates the id and has it.
func TestTxnMarkerWaitsForLeader(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.Topic("t", 1))
	p, _ := c.Partition("t", 0)
	id := ""
	for i := 0; id == ""; i++ {
		if cand := fmt.Sprint("tx", i); txnCoordinatorAddr(t, c, cand) != c.Addrs()[p.Leader] {
			id = cand
		}
	}
	r := newRawTxn(t, c, id, false)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, r.pid, r.epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	require.Zero(t, request[*kmsg.AddPartitionsToTxnResponse](t, r.txnc, add).Topics[0].Partitions[0].ErrorCode)
	require.Zero(t, produceOne(t, dialRaw(t, c.Addrs()[p.Leader]), "t", 0, txnBatch(r.pid, 0, "v")).ErrorCode)

	require.NoError(t, c.StopBroker(p.Leader))
	r.end(true)
	assert.Equal(t, "PrepareCommit", describeTxn(t, c, id).State, "the marker waits for a leader")

	require.NoError(t, c.StartBroker(p.Leader))
	assert.Equal(t, "CompleteCommit", describeTxn(t, c, id).State)
	after, _ := c.Partition("t", 0)
	assert.Equal(t, int64(2), after.LastStableOffset, "the record and its marker are stable")

	coord := txnCoordinatorAddr(t, c, id)
	for i, a := range c.Addrs() {
		if a == coord {
			require.NoError(t, c.StopBroker(int32(i)))
		}
	}
	require.NotEqual(t, coord, txnCoordinatorAddr(t, c, id), "another broker coordinates the id")
	d := describeTxn(t, c, id)
	assert.Equal(t, "CompleteCommit", d.State)
	assert.Equal(t, r.pid, d.ProducerID)
}

// TestTxnDescribeProducers: the partition leader lists its producers with the start of their
// ongoing transaction; other brokers answer NOT_LEADER_OR_FOLLOWER.
func TestTxnDescribeProducers(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.Topic("t", 1))
	p, _ := c.Partition("t", 0)
	r := newRawTxn(t, c, "tx", true)
	leader := dialRaw(t, c.Addrs()[p.Leader])
	req := produceRequest("t", 0, txnBatch(r.pid, 0, "a", "b"))
	req.Version, req.TransactionID = 12, &r.id
	require.Zero(t, request[*kmsg.ProduceResponse](t, leader, req).Topics[0].Partitions[0].ErrorCode)

	describe := func(addr string) kmsg.DescribeProducersResponseTopicPartition {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		return roundTrip[*kmsg.DescribeProducersResponse](t, addr, req).Topics[0].Partitions[0]
	}
	got := describe(c.Addrs()[p.Leader])
	require.Zero(t, got.ErrorCode)
	require.Len(t, got.ActiveProducers, 1)
	ap := got.ActiveProducers[0]
	assert.Equal(t, r.pid, ap.ProducerID)
	assert.Equal(t, int32(1), ap.LastSequence)
	assert.Equal(t, int64(0), ap.CurrentTxnStartOffset)
	assert.Equal(t, int32(-1), ap.CoordinatorEpoch)

	r.end(true)
	ap = describe(c.Addrs()[p.Leader]).ActiveProducers[0]
	assert.Equal(t, int64(-1), ap.CurrentTxnStartOffset, "the commit marker ended it")
	assert.Equal(t, int32(1), ap.ProducerEpoch, "TV2: the marker carries the bumped epoch")
	assert.Equal(t, kerr.NotLeaderForPartition.Code, describe(c.Addrs()[1-p.Leader]).ErrorCode)
}

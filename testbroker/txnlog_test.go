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

// txnBatch is a batch of producer pid's transaction (attributes 0x10) at sequence seq.
func txnBatch(pid int64, seq int32, values ...string) []byte {
	return recordBatch(batchSpec{producerID: pid, sequence: seq, attributes: 0x10, values: values})
}

// fetchAt is a sessionless fetch of partition t-0 at offset with an isolation level.
func fetchAt(offset int64, committed bool) *kmsg.FetchRequest {
	req := fetchRequest("t", 0, offset)
	if committed {
		req.IsolationLevel = 1
	}
	return req
}

// controlBatches returns the offsets of the control batches among p's records.
func controlBatches(t *testing.T, p kmsg.FetchResponseTopicPartition) []int64 {
	t.Helper()
	var out []int64
	for b := p.RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		require.NoError(t, batch.ReadFrom(b))
		b = b[12+int(batch.Length):]
		if batch.Attributes&0x20 != 0 {
			out = append(out, batch.FirstOffset)
		}
	}
	return out
}

// TestFetchTransactions produces a committed and an aborted transaction around an ongoing one
// and checks what READ_COMMITTED and READ_UNCOMMITTED fetches see at each step.
func TestFetchTransactions(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	for _, b := range [][]byte{
		plainBatch("a"),          // 0
		txnBatch(1, 0, "x", "y"), // 1-2: producer 1, to abort
		txnBatch(2, 0, "p"),      // 3: producer 2, to commit
		plainBatch("b"),          // 4
	} {
		require.Zero(t, produceOne(t, rc, "t", 0, b).ErrorCode)
	}

	committed := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Zero(t, committed.ErrorCode)
	assert.Equal(t, int64(5), committed.HighWatermark)
	assert.Equal(t, int64(1), committed.LastStableOffset, "stuck at producer 1's first offset")
	assert.Equal(t, []fetched{{0, "a"}}, fetchedRecords(t, committed, 0))
	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(1), info.LastStableOffset, "inspection shows the last stable offset")
	assert.Equal(t, int64(5), info.HighWatermark)
	assert.NotNil(t, committed.AbortedTransactions)
	assert.Empty(t, committed.AbortedTransactions)

	uncommitted := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, false)))
	assert.Equal(t, int64(1), uncommitted.LastStableOffset)
	assert.Equal(t, []fetched{{0, "a"}, {1, "x"}, {2, "y"}, {3, "p"}, {4, "b"}}, fetchedRecords(t, uncommitted, 0))
	assert.Nil(t, uncommitted.AbortedTransactions)

	off, err := c.WriteTxnMarker("t", 0, 1, 0, false) // 5
	require.NoError(t, err)
	assert.Equal(t, int64(5), off)
	committed = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Equal(t, int64(3), committed.LastStableOffset, "on to producer 2's transaction")
	assert.Equal(t, []fetched{{0, "a"}, {1, "x"}, {2, "y"}}, fetchedRecords(t, committed, 0),
		"the aborted records come with the list that makes the consumer drop them")
	assert.Equal(t, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 1, FirstOffset: 1}}, committed.AbortedTransactions)

	_, err = c.WriteTxnMarker("t", 0, 2, 0, true) // 6
	require.NoError(t, err)
	committed = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Equal(t, int64(7), committed.HighWatermark)
	assert.Equal(t, int64(7), committed.LastStableOffset)
	assert.Len(t, fetchedRecords(t, committed, 0), 7, "5 data records and 2 markers")
	assert.Equal(t, []int64{5, 6}, controlBatches(t, committed))
	assert.Equal(t, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 1, FirstOffset: 1}}, committed.AbortedTransactions,
		"the committed transaction is not listed")

	past := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(6, true)))
	assert.Empty(t, past.AbortedTransactions, "a fetch past the abort marker needs no list")
	assert.NotNil(t, past.AbortedTransactions)
	uncommitted = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, false)))
	assert.Nil(t, uncommitted.AbortedTransactions)
	assert.Equal(t, int64(7), uncommitted.LastStableOffset)
}

// TestProduceTransactionalChecks: a control batch from a client is INVALID_RECORD, and a
// non-transactional batch of a producer with an ongoing transaction INVALID_TXN_STATE.
func TestProduceTransactionalChecks(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(1, 0, "x")).ErrorCode)
	p := produceOne(t, rc, "t", 0, recordBatch(batchSpec{producerID: 1, sequence: 1, values: []string{"y"}}))
	assert.Equal(t, kerr.InvalidTxnState.Code, p.ErrorCode)
	p = produceOne(t, rc, "t", 0, recordBatch(batchSpec{producerID: 1, sequence: 1, attributes: 0x30, values: []string{"y"}}))
	assert.Equal(t, kerr.InvalidRecord.Code, p.ErrorCode)
	_, err := c.WriteTxnMarker("t", 0, 1, -1, true)
	assert.ErrorIs(t, err, kerr.InvalidProducerEpoch)
	info, _ := c.Partition("t", 0)
	assert.Equal(t, int64(1), info.LogEndOffset)
}

// TestFetchReadCommittedWokenByMarker: a READ_COMMITTED fetch at the last stable offset waits
// while the transaction is open, and the marker that ends it answers the fetch at once.
func TestFetchReadCommittedWokenByMarker(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.WithManualClock(clockStart), testbroker.Topic("t", 1))
	clk := c.ManualClock()
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(1, 0, "x")).ErrorCode)

	req := longPollRequest()
	req.IsolationLevel = 1
	got := startFetch(t, dialRaw(t, c.Addrs()[0]), req)
	require.True(t, clk.WaitPending(t.Context().Done(), 1), "the fetch parks: nothing below the last stable offset")

	_, err := c.WriteTxnMarker("t", 0, 1, 0, true)
	require.NoError(t, err)
	p := onlyPartition(t, awaitFetch(t, got))
	assert.Zero(t, p.ErrorCode)
	assert.Equal(t, int64(2), p.LastStableOffset)
	assert.Equal(t, []fetched{{0, "x"}}, fetchedRecords(t, p, 0)[:1])
	assert.Empty(t, p.AbortedTransactions)
	assert.Zero(t, clk.Pending(), "the deadline timer is stopped")
}

// TestListOffsetsLatestReadCommitted: ListOffsets -1 answers the last stable offset to a
// READ_COMMITTED client and the high watermark to a READ_UNCOMMITTED one.
func TestListOffsetsLatestReadCommitted(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a", "b")).ErrorCode)
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(1, 0, "x")).ErrorCode)
	for _, tt := range []struct {
		isolation int8
		want      int64
	}{{0, 3}, {1, 2}} {
		req := listOffsetsAt(5, "t", -1, 0)
		req.IsolationLevel = tt.isolation
		resp := request[*kmsg.ListOffsetsResponse](t, rc, req)
		sp := resp.Topics[0].Partitions[0]
		assert.Zero(t, sp.ErrorCode)
		assert.Equal(t, tt.want, sp.Offset, "isolation %d", tt.isolation)
	}
}

// TestShareFetchReadCommitted: a share group with share.isolation.level=read_committed acquires
// only below the last stable offset, never the records of aborted transactions (ARCHIVED at
// once), and the transaction markers for the client to acknowledge as gaps.
func TestShareFetchReadCommitted(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.isolation.level", "read_committed")
	setGroupConfig(t, st.rc, "g", "share.auto.offset.reset", "earliest")
	st.produce(t, "a")                                                                // 0
	require.Zero(t, produceOne(t, st.rc, "t", 0, txnBatch(1, 0, "x", "y")).ErrorCode) // 1-2
	require.Zero(t, produceOne(t, st.rc, "t", 0, txnBatch(2, 0, "p")).ErrorCode)      // 3
	_, err := st.c.WriteTxnMarker("t", 0, 1, 0, false)                                // 4
	require.NoError(t, err)
	_, err = st.c.WriteTxnMarker("t", 0, 2, 0, true) // 5
	require.NoError(t, err)
	require.Zero(t, produceOne(t, st.rc, "t", 0, txnBatch(3, 0, "q")).ErrorCode) // 6
	st.produce(t, "b")                                                           // 7

	m := st.member(t, "m1", 2)
	p := m.take(t)
	assert.Equal(t, [][3]int64{{0, 0, 1}, {3, 5, 1}}, acquired(p))
	states := map[int64]testbroker.ShareRecordState{}
	for _, r := range st.c.ShareRecords("g", "t", 0) {
		states[r.Offset] = r.State
	}
	assert.Equal(t, map[int64]testbroker.ShareRecordState{0: testbroker.ShareAcquired, 1: testbroker.ShareArchived,
		2: testbroker.ShareArchived, 3: testbroker.ShareAcquired, 4: testbroker.ShareAcquired, 5: testbroker.ShareAcquired}, states)

	_, err = st.c.WriteTxnMarker("t", 0, 3, 0, false) // 8
	require.NoError(t, err)
	p = m.take(t, fetchAck(0, 0, ackAccept), fetchAck(3, 3, ackAccept), fetchAck(4, 5, ackGap))
	assert.Equal(t, [][3]int64{{7, 8, 1}}, acquired(p), "the aborted record 6 is skipped")
	start, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(7), start, "the SPSO moved past the acknowledged and archived records")
}

// TestTransactionAcrossFailover: a transaction's leader crashes mid-transaction; the new leader
// dedups the producer's retry, takes its next sequence and the coordinator's marker, and the
// old leader, restarted and leading again, knows the transactions from what it replicated.
func TestTransactionAcrossFailover(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("t", 1, 3))
	leaderConn := func() (*rawConn, int32) {
		p, ok := c.Partition("t", 0)
		require.True(t, ok)
		return dialRaw(t, c.Addrs()[p.Leader]), p.Leader
	}
	rc, first := leaderConn()
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(7, 0, "x", "y")).ErrorCode) // 0-1, acks=all

	require.NoError(t, c.StopBroker(first))
	rc, second := leaderConn()
	require.NotEqual(t, first, second)
	retry := produceOne(t, rc, "t", 0, txnBatch(7, 0, "x", "y"))
	assert.Zero(t, retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "the new leader dedups the retry")
	next := produceOne(t, rc, "t", 0, txnBatch(7, 2, "z"))
	require.Zero(t, next.ErrorCode, "the new leader takes the producer's next sequence")
	assert.Equal(t, int64(2), next.BaseOffset)
	committed := onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Equal(t, int64(0), committed.LastStableOffset, "the new leader knows the transaction")
	assert.Empty(t, fetchedRecords(t, committed, 0))

	off, err := c.WriteTxnMarker("t", 0, 7, 0, true)
	require.NoError(t, err)
	assert.Equal(t, int64(3), off)
	// The marker counts once the ISR has it: the followers' fetchers bring it over.
	require.Eventually(t, func() bool {
		info, _ := c.Partition("t", 0)
		return info.LastStableOffset == 4
	}, 10*time.Second, time.Millisecond)
	committed = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Equal(t, []fetched{{0, "x"}, {1, "y"}, {2, "z"}}, fetchedRecords(t, committed, 0)[:3])
	assert.Empty(t, committed.AbortedTransactions)

	require.NoError(t, c.StartBroker(first))
	require.Eventually(t, func() bool {
		info, _ := c.Partition("t", 0)
		return len(info.ISR) == 3
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, c.MoveLeader("t", 0, first))
	rc = dialRaw(t, c.Addrs()[first])
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(7, 3, "w")).ErrorCode) // 4
	committed = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(0, true)))
	assert.Equal(t, int64(4), committed.LastStableOffset, "the restarted broker ended the first transaction with the replicated marker")
	_, err = c.WriteTxnMarker("t", 0, 7, 0, false) // 5
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, _ := c.Partition("t", 0)
		return info.LastStableOffset == 6
	}, 10*time.Second, time.Millisecond)
	committed = onlyPartition(t, request[*kmsg.FetchResponse](t, rc, fetchAt(4, true)))
	assert.Equal(t, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 4}}, committed.AbortedTransactions)
}

// TestFranzGoReadCommittedConsumer: franz-go's consumer reads a log holding committed, aborted
// and ongoing transactions: read_committed gets the committed and plain records only, up to the
// ongoing transaction, and read_uncommitted gets every data record.
func TestFranzGoReadCommittedConsumer(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a")).ErrorCode)                          // 0
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(1, 0, "aborted-1", "aborted-2")).ErrorCode) // 1-2
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(2, 0, "committed")).ErrorCode)              // 3
	_, err := c.WriteTxnMarker("t", 0, 1, 0, false)                                                // 4
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("b")).ErrorCode) // 5
	_, err = c.WriteTxnMarker("t", 0, 2, 0, true)                         // 6
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(3, 0, "ongoing")).ErrorCode) // 7
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("c")).ErrorCode)           // 8

	consume := func(isolation kgo.IsolationLevel, n int) []string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation))
		require.NoError(t, err)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var got []string
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			require.NoError(t, ctx.Err(), "got %v", got)
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	assert.Equal(t, []string{"a", "aborted-1", "aborted-2", "committed", "b", "ongoing", "c"}, consume(kgo.ReadUncommitted(), 7))
	assert.Equal(t, []string{"a", "committed", "b"}, consume(kgo.ReadCommitted(), 3))

	// The transaction ends in an abort: the read_committed consumer skips it and reads on.
	_, err = c.WriteTxnMarker("t", 0, 3, 0, false) // 9
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("d")).ErrorCode) // 10
	assert.Equal(t, []string{"a", "committed", "b", "c", "d"}, consume(kgo.ReadCommitted(), 5))
}

// TestShareE2EReadCommitted: franz-go's share consumer in a read_committed share group gets the
// committed and plain records only, in order, and never one of an aborted transaction.
func TestShareE2EReadCommitted(t *testing.T) {
	t.Parallel()
	c := e2eStart(t, 1)
	e2eSetGroupConfigs(t, c, "g", "share.isolation.level", "read_committed", "share.auto.offset.reset", "earliest")
	rc := dialRaw(t, c.Addrs()[0])
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("a")).ErrorCode)                          // 0
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(1, 0, "aborted-1", "aborted-2")).ErrorCode) // 1-2
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(2, 0, "committed")).ErrorCode)              // 3
	_, err := c.WriteTxnMarker("t", 0, 1, 0, false)                                                // 4
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("b")).ErrorCode) // 5
	_, err = c.WriteTxnMarker("t", 0, 2, 0, true)                         // 6
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, txnBatch(3, 0, "ongoing")).ErrorCode) // 7
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("c")).ErrorCode)           // 8

	m := e2eJoin(t, c, "g", "t", "m1")
	values := func(rs []*kgo.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, string(r.Value))
		}
		return out
	}
	assert.Equal(t, []string{"a", "committed", "b"}, values(m.pollUntilValue(t, "b", kgo.AckAccept)))
	m.flush(t)
	assert.Equal(t, int64(7), e2eStartOffset(t, c, "g", "t", 0),
		"the aborted records are archived, the markers acknowledged as gaps: %v", c.ShareRecords("g", "t", 0))

	_, err = c.WriteTxnMarker("t", 0, 3, 0, false) // 9
	require.NoError(t, err)
	require.Zero(t, produceOne(t, rc, "t", 0, plainBatch("d")).ErrorCode) // 10
	assert.Equal(t, []string{"c", "d"}, values(m.pollUntilValue(t, "d", kgo.AckAccept)))
	m.flush(t)
	assert.Equal(t, int64(11), e2eStartOffset(t, c, "g", "t", 0), "%v", c.ShareRecords("g", "t", 0))
}

// TestShareFetchReadCommittedWokenByMarker: a long-polling ShareFetch of a read_committed group
// parks while only an ongoing transaction follows its start offset; the commit marker answers it.
// An abort marker answers it too, with the marker alone: the aborted record is archived.
func TestShareFetchReadCommittedWokenByMarker(t *testing.T) {
	t.Parallel()
	st := startShareTest(t)
	setGroupConfig(t, st.rc, "g", "share.isolation.level", "read_committed")
	m := st.member(t, "m", 2)
	m.open(t)

	require.Zero(t, produceOne(t, st.rc, "t", 0, txnBatch(1, 0, "x")).ErrorCode) // 0
	req := m.fetchReq()
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	got := startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 1), "the fetch parks")
	_, err := st.c.WriteTxnMarker("t", 0, 1, 0, true) // 1
	require.NoError(t, err)
	resp := awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Equal(t, [][3]int64{{0, 1, 1}}, acquired(onlySharePartition(t, resp)))

	require.Zero(t, produceOne(t, st.rc, "t", 0, txnBatch(2, 0, "y")).ErrorCode) // 2
	req = m.fetchReq(fetchAck(0, 0, ackAccept), fetchAck(1, 1, ackGap))
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	got = startShareFetch(t, m.rc, req)
	require.True(t, st.clk.WaitPending(t.Context().Done(), 1), "the fetch parks")
	_, err = st.c.WriteTxnMarker("t", 0, 2, 0, false) // 3
	require.NoError(t, err)
	resp = awaitShareFetch(t, got)
	m.advance(req.ShareSessionEpoch, resp.ErrorCode)
	assert.Equal(t, [][3]int64{{3, 3, 1}}, acquired(onlySharePartition(t, resp)), "only the abort marker")
	start, _, ok := st.c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(3), start, "past the acknowledged records and the archived one")
}

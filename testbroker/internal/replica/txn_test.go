package replica

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// txnBatch is a produced batch of n records in producer pid's transaction, at sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, LastOffsetDelta: int32(n - 1),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n)}
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// replicate copies what broker's log lacks from the leader's log, as a follower's fetch does,
// and reports the follower's new log end offset to the leader.
func replicate(t *testing.T, p *Partition, broker int32) {
	t.Helper()
	st := p.State()
	from := st.Log(broker).LogEndOffset()
	records, err := st.LeaderLog().AppendRecords(nil, from, 1<<20, st.LeaderLog().LogEndOffset())
	require.NoError(t, err)
	require.NoError(t, p.Replicated(broker, st.LeaderEpoch, records, st.LeaderLog().HighWatermark()))
	require.NoError(t, p.Fetched(broker, -1, st.Log(broker).LogEndOffset()))
	require.NoError(t, p.Replicated(broker, st.LeaderEpoch, nil, st.LeaderLog().HighWatermark()))
}

func TestLeaderMoveInTransaction(t *testing.T) {
	clk := clock.NewManual(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	m := NewManager(Config{Brokers: 2, Clock: clk, Settings: func() Settings { return Settings{LagTimeMax: 30 * time.Second} }})
	defer m.Close()
	p := m.NewPartition([16]byte{1}, "t", 0, []int32{0, 1}, log.Config{})

	st := p.State()
	_, err := p.AppendAsLeader(st, txnBatch(7, 0, 0, 2), clk.Now(), -1, 1) // [0, 1]
	require.NoError(t, err)
	replicate(t, p, 1)
	require.Equal(t, int64(2), st.LeaderLog().HighWatermark())
	assert.Equal(t, int64(0), st.LeaderLog().LastStableOffset())
	assert.Equal(t, int64(0), st.Log(1).LastStableOffset(), "the follower knows the transaction")

	old, next, err := p.MoveLeader(1)
	require.NoError(t, err)
	_, err = p.AppendTxnMarkerAsLeader(old, 7, 0, true, 0, 1, 1)
	assert.ErrorIs(t, err, kerr.NotLeaderForPartition, "the old leader's marker")

	res, err := p.AppendAsLeader(next, txnBatch(7, 0, 0, 2), clk.Now(), -1, 1)
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "the new leader dedups the retry")
	res, err = p.AppendAsLeader(next, txnBatch(7, 0, 2, 1), clk.Now(), -1, 1) // 2
	require.NoError(t, err, "the new leader accepts the producer's next sequence")
	assert.Equal(t, int64(2), res.BaseOffset)

	off, err := p.AppendTxnMarkerAsLeader(next, 7, 0, false, 0, 1, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(3), off)
	lg := next.LeaderLog()
	assert.Equal(t, int64(0), lg.LastStableOffset(), "the marker is not replicated yet")
	replicate(t, p, 0)
	assert.Equal(t, int64(4), lg.HighWatermark())
	assert.Equal(t, int64(4), lg.LastStableOffset())
	assert.Equal(t, []log.AbortedTxn{{ProducerID: 7, FirstOffset: 0}}, lg.AbortedTransactions(0, 4))
	assert.Equal(t, int64(4), next.Log(0).LastStableOffset(), "the old leader, now a follower, replicated the marker")
	assert.Equal(t, lg.AbortedTransactions(0, 4), next.Log(0).AbortedTransactions(0, 4))
}

func TestTxnMarkerNeedsMinISR(t *testing.T) {
	clk := clock.NewManual(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	m := NewManager(Config{Brokers: 2, Clock: clk, Settings: func() Settings { return Settings{LagTimeMax: 30 * time.Second} }})
	defer m.Close()
	p := m.NewPartition([16]byte{1}, "t", 0, []int32{0, 1}, log.Config{})
	m.StopBroker(1)
	require.Equal(t, []int32{0}, p.State().ISR)
	_, err := p.AppendTxnMarkerAsLeader(p.State(), 7, 0, true, 0, 2, 2)
	assert.ErrorIs(t, err, kerr.NotEnoughReplicas)
	assert.Equal(t, int64(0), p.State().LeaderLog().LogEndOffset())
}

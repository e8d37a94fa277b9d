package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/clock"
)

// marker is one WriteMarker or EndGroupOffsets call of the fake cluster.
type marker struct {
	tp     TopicPartition
	group  string
	pid    int64
	epoch  int16
	commit bool
}

type fakeCluster struct {
	clk     *clock.Manual
	nextPID int64
	markers []marker
	down    map[TopicPartition]bool  // partitions without a leader
	fail    map[TopicPartition]error // partitions whose leader refuses the marker
}

func newTestCoordinator(t *testing.T) (*Coordinator, *fakeCluster) {
	t.Helper()
	f := &fakeCluster{clk: clock.NewManual(time.Unix(1000, 0)), nextPID: 100, down: map[TopicPartition]bool{}, fail: map[TopicPartition]error{}}
	c := NewCoordinator(Config{
		Clock:    f.clk,
		Settings: func() Settings { return Settings{MaxTimeout: 15 * time.Minute, AbortInterval: 10 * time.Second} },
		NewProducerID: func() int64 {
			f.nextPID++
			return f.nextPID - 1
		},
		WriteMarker: func(tp TopicPartition, pid int64, epoch int16, commit bool, _ Version) error {
			if f.down[tp] {
				return kerr.NotLeaderForPartition
			}
			if err := f.fail[tp]; err != nil {
				return err
			}
			f.markers = append(f.markers, marker{tp: tp, pid: pid, epoch: epoch, commit: commit})
			return nil
		},
		EndGroupOffsets: func(group string, pid int64, commit bool) {
			f.markers = append(f.markers, marker{group: group, pid: pid, commit: commit})
		},
		GroupPartition: func(string) int32 { return 7 },
	})
	t.Cleanup(c.Close)
	return c, f
}

var tp0 = TopicPartition{"t", 0}
var tp1 = TopicPartition{"t", 1}

func state(t *testing.T, c *Coordinator, id string) Description {
	t.Helper()
	d, err := c.Describe(id)
	require.NoError(t, err)
	return d
}

func TestInitProducerIDNewAndBump(t *testing.T) {
	c, _ := newTestCoordinator(t)
	pid, epoch, err := c.InitProducerID("a", 60000, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(100), pid)
	assert.Equal(t, int16(0), epoch)
	pid2, epoch2, err := c.InitProducerID("a", 60000, nil)
	require.NoError(t, err)
	assert.Equal(t, pid, pid2, "same id keeps its producer id")
	assert.Equal(t, int16(1), epoch2, "a second producer bumps the epoch")
	_, _, err = c.InitProducerID("b", 0, nil)
	assert.ErrorIs(t, err, kerr.InvalidTransactionTimeout)
	_, _, err = c.InitProducerID("b", int32((16 * time.Minute).Milliseconds()), nil)
	assert.ErrorIs(t, err, kerr.InvalidTransactionTimeout)
}

func TestInitProducerIDKIP360(t *testing.T) {
	c, _ := newTestCoordinator(t)
	pid, _, _ := c.InitProducerID("a", 60000, nil)
	_, epoch, err := c.InitProducerID("a", 60000, &ProducerIDAndEpoch{pid, 0})
	require.NoError(t, err)
	assert.Equal(t, int16(1), epoch)
	_, epoch, err = c.InitProducerID("a", 60000, &ProducerIDAndEpoch{pid, 0})
	require.NoError(t, err, "a retry of the bump")
	assert.Equal(t, int16(1), epoch)
	_, _, err = c.InitProducerID("a", 60000, &ProducerIDAndEpoch{pid + 50, 1})
	assert.ErrorIs(t, err, kerr.ProducerFenced)
	c.InitProducerID("a", 60000, nil) // another producer: epoch 2, last epoch forgotten
	_, _, err = c.InitProducerID("a", 60000, &ProducerIDAndEpoch{pid, 0})
	assert.ErrorIs(t, err, kerr.ProducerFenced)
}

func TestInitProducerIDEpochExhausted(t *testing.T) {
	c, _ := newTestCoordinator(t)
	pid, _, _ := c.InitProducerID("a", 60000, nil)
	c.txns["a"].epoch = maxEpoch - 1
	pid2, epoch, err := c.InitProducerID("a", 60000, nil)
	require.NoError(t, err)
	assert.NotEqual(t, pid, pid2)
	assert.Equal(t, int16(0), epoch)
}

func TestCommitClassic(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 60000, nil)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0, tp1}, V0))
	require.NoError(t, c.AddOffsets("a", pid, epoch, "g", V0))
	assert.Equal(t, Ongoing, state(t, c, "a").State)
	assert.Len(t, state(t, c, "a").Partitions, 3)
	gotPID, gotEpoch, err := c.EndTxn("a", pid, epoch, true, V0)
	require.NoError(t, err)
	assert.Equal(t, pid, gotPID)
	assert.Equal(t, epoch, gotEpoch, "classic keeps the epoch")
	assert.Equal(t, CompleteCommit, state(t, c, "a").State)
	assert.Equal(t, []marker{
		{group: "g", pid: pid, commit: true},
		{tp: tp0, pid: pid, epoch: epoch, commit: true},
		{tp: tp1, pid: pid, epoch: epoch, commit: true},
	}, f.markers)
	_, _, err = c.EndTxn("a", pid, epoch, true, V0)
	assert.NoError(t, err, "a retried commit")
	_, _, err = c.EndTxn("a", pid, epoch, false, V0)
	assert.ErrorIs(t, err, kerr.InvalidTxnState)
	_, _, err = c.EndTxn("a", pid, epoch+1, true, V0)
	assert.ErrorIs(t, err, kerr.ProducerFenced)
	_, _, err = c.EndTxn("a", pid, epoch, false, V0)
	assert.ErrorIs(t, err, kerr.InvalidTxnState, "classic: no transaction to abort")
	_, _, err = c.EndTxn("a", pid+1, epoch, true, V0)
	assert.ErrorIs(t, err, kerr.InvalidProducerIDMapping)
}

func TestEndTxnTV2BumpsEpoch(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 60000, nil)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V2))
	gotPID, gotEpoch, err := c.EndTxn("a", pid, epoch, false, V2)
	require.NoError(t, err)
	assert.Equal(t, pid, gotPID)
	assert.Equal(t, epoch+1, gotEpoch)
	assert.Equal(t, []marker{{tp: tp0, pid: pid, epoch: epoch + 1}}, f.markers, "the marker carries the bumped epoch")
	gotPID, gotEpoch, err = c.EndTxn("a", pid, epoch, false, V2)
	require.NoError(t, err, "a retry with the old epoch")
	assert.Equal(t, epoch+1, gotEpoch)
	assert.Equal(t, pid, gotPID)
	_, gotEpoch, err = c.EndTxn("a", pid, epoch+1, false, V2)
	require.NoError(t, err, "an abort without a transaction")
	assert.Equal(t, epoch+2, gotEpoch, "bumps the epoch too")
	assert.Len(t, f.markers, 1, "and writes no marker")
}

func TestEndTxnTV2RotatesExhaustedEpoch(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, _, _ := c.InitProducerID("a", 60000, nil)
	c.txns["a"].epoch = maxEpoch - 1
	require.NoError(t, c.AddPartitions("a", pid, maxEpoch-1, []TopicPartition{tp0}, V2))
	gotPID, gotEpoch, err := c.EndTxn("a", pid, maxEpoch-1, true, V2)
	require.NoError(t, err)
	assert.NotEqual(t, pid, gotPID)
	assert.Equal(t, int16(0), gotEpoch)
	assert.Equal(t, []marker{{tp: tp0, pid: pid, epoch: maxEpoch, commit: true}}, f.markers)
	retryPID, retryEpoch, err := c.EndTxn("a", pid, maxEpoch-1, true, V2)
	require.NoError(t, err, "a retry across the rotation")
	assert.Equal(t, gotPID, retryPID)
	assert.Equal(t, int16(0), retryEpoch)
}

func TestInitProducerIDFencesOngoing(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 60000, nil)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V0))
	_, _, err := c.InitProducerID("a", 60000, nil)
	assert.ErrorIs(t, err, kerr.ConcurrentTransactions)
	assert.Equal(t, []marker{{tp: tp0, pid: pid, epoch: epoch + 1}}, f.markers, "the zombie's transaction is aborted at a bumped epoch")
	assert.Equal(t, CompleteAbort, state(t, c, "a").State)
	_, newEpoch, err := c.InitProducerID("a", 60000, nil)
	require.NoError(t, err)
	assert.Equal(t, epoch+2, newEpoch)
	_, _, err = c.EndTxn("a", pid, epoch, true, V0)
	assert.ErrorIs(t, err, kerr.ProducerFenced, "the zombie is fenced")
	assert.ErrorIs(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V0), kerr.ProducerFenced)
}

func TestMarkersPendingUntilLeaderBack(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 60000, nil)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0, tp1}, V0))
	f.down[tp1] = true
	_, _, err := c.EndTxn("a", pid, epoch, true, V0)
	require.NoError(t, err)
	assert.Equal(t, PrepareCommit, state(t, c, "a").State)
	_, _, err = c.EndTxn("a", pid, epoch, true, V0)
	assert.ErrorIs(t, err, kerr.ConcurrentTransactions)
	_, _, err = c.InitProducerID("a", 60000, nil)
	assert.ErrorIs(t, err, kerr.ConcurrentTransactions)
	assert.ErrorIs(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V0), kerr.ConcurrentTransactions)
	c.RetryMarkers()
	assert.Equal(t, PrepareCommit, state(t, c, "a").State, "still no leader")
	f.down[tp1] = false
	c.RetryMarkers()
	assert.Equal(t, CompleteCommit, state(t, c, "a").State)
	assert.Equal(t, []marker{{tp: tp0, pid: pid, epoch: epoch, commit: true}, {tp: tp1, pid: pid, epoch: epoch, commit: true}}, f.markers, "each marker written once")
}

func TestMarkerErrorsRetriedOrDropped(t *testing.T) {
	for _, tc := range []struct {
		err     error
		pending bool
	}{
		{kerr.NotLeaderForPartition, true},
		{kerr.NotEnoughReplicas, true},
		{kerr.InvalidProducerEpoch, false},
		{kerr.TransactionCoordinatorFenced, false},
		{kerr.UnknownTopicOrPartition, false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			c, f := newTestCoordinator(t)
			pid, epoch, _ := c.InitProducerID("a", 60000, nil)
			require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0, tp1}, V0))
			f.fail[tp1] = tc.err
			_, _, err := c.EndTxn("a", pid, epoch, false, V0)
			require.NoError(t, err)
			want := CompleteAbort
			if tc.pending {
				want = PrepareAbort
			}
			assert.Equal(t, want, state(t, c, "a").State)
			c.RetryMarkers()
			assert.Equal(t, want, state(t, c, "a").State, "a retry changes nothing while the error lasts")
		})
	}
}

func TestTimedOutTransactionAborted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       Version
		abortOK bool // the producer's own abort afterwards succeeds
	}{
		{"classic", V0, false},
		{"tv2", V2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newTestCoordinator(t)
			pid, epoch, _ := c.InitProducerID("a", 15000, nil)
			require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, tc.v))
			f.clk.Advance(10 * time.Second)
			assert.Equal(t, Ongoing, state(t, c, "a").State, "not timed out at 10s")
			f.clk.Advance(10 * time.Second)
			assert.Equal(t, CompleteAbort, state(t, c, "a").State, "aborted at the check after 15s")
			assert.Equal(t, []marker{{tp: tp0, pid: pid, epoch: epoch + 1}}, f.markers)
			_, _, err := c.EndTxn("a", pid, epoch, true, tc.v)
			if tc.abortOK {
				assert.ErrorIs(t, err, kerr.InvalidTxnState, "a commit of an aborted transaction")
			} else {
				assert.ErrorIs(t, err, kerr.ProducerFenced)
			}
			_, gotEpoch, err := c.EndTxn("a", pid, epoch, false, tc.v)
			if tc.abortOK {
				require.NoError(t, err)
				assert.Equal(t, epoch+1, gotEpoch)
			} else {
				assert.ErrorIs(t, err, kerr.ProducerFenced)
			}
		})
	}
}

func TestVerifyAndTxnOffsetCommit(t *testing.T) {
	c, _ := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 60000, nil)
	_, err := c.VerifyPartitions("a", pid+1, epoch, []TopicPartition{tp0})
	assert.ErrorIs(t, err, kerr.InvalidProducerIDMapping)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V0))
	errs, err := c.VerifyPartitions("a", pid, epoch, []TopicPartition{tp0, tp1})
	require.NoError(t, err)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], kerr.TransactionAbortable)

	ran := false
	err = c.TxnOffsetCommit("a", pid, epoch, "g", V0, func() { ran = true })
	assert.ErrorIs(t, err, kerr.InvalidTxnState, "classic: the group was not added")
	assert.False(t, ran)
	require.NoError(t, c.AddOffsets("a", pid, epoch, "g", V0))
	require.NoError(t, c.TxnOffsetCommit("a", pid, epoch, "g", V0, func() { ran = true }))
	assert.True(t, ran)

	ran = false
	require.NoError(t, c.TxnOffsetCommit("a", pid, epoch, "h", V2, func() { ran = true }), "TV2 adds the group")
	assert.True(t, ran)
	assert.Contains(t, state(t, c, "a").Partitions, TopicPartition{OffsetsTopic, 7})
}

func TestList(t *testing.T) {
	c, f := newTestCoordinator(t)
	pa, ea, _ := c.InitProducerID("app-a", 60000, nil)
	c.InitProducerID("app-b", 60000, nil)
	c.InitProducerID("other", 60000, nil)
	require.NoError(t, c.AddPartitions("app-a", pa, ea, []TopicPartition{tp0}, V0))
	f.clk.Advance(5 * time.Second)

	ids := func(f ListFilter) []string {
		l, _, err := c.List(f)
		require.NoError(t, err)
		var out []string
		for _, x := range l {
			out = append(out, x.TransactionalID)
		}
		return out
	}
	assert.Equal(t, []string{"app-a", "app-b", "other"}, ids(ListFilter{MinDurationMs: -1}))
	assert.Equal(t, []string{"app-a"}, ids(ListFilter{MinDurationMs: -1, States: []string{"Ongoing"}}))
	assert.Equal(t, []string{"app-a"}, ids(ListFilter{MinDurationMs: -1, ProducerIDs: []int64{pa}}))
	pattern := "app-.*"
	assert.Equal(t, []string{"app-a", "app-b"}, ids(ListFilter{MinDurationMs: -1, IDPattern: &pattern}))
	assert.Equal(t, []string{"app-a"}, ids(ListFilter{MinDurationMs: 4000, States: []string{"Ongoing"}}))
	assert.Empty(t, ids(ListFilter{MinDurationMs: 6000, States: []string{"Ongoing"}}))
	_, unknown, err := c.List(ListFilter{MinDurationMs: -1, States: []string{"Bogus"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"Bogus"}, unknown)
	bad := "("
	_, _, err = c.List(ListFilter{MinDurationMs: -1, IDPattern: &bad})
	assert.ErrorIs(t, err, kerr.InvalidRequest)
}

// TestTimeoutCheckTimer: the timeout check is a periodic task from the coordinator's start,
// which the manual clock does not count as pending (an open transaction does not hide the
// timers a test waits for); it aborts at the first check after the timeout, and Close stops it.
func TestTimeoutCheckTimer(t *testing.T) {
	c, f := newTestCoordinator(t)
	pid, epoch, _ := c.InitProducerID("a", 1000, nil)
	f.clk.Advance(3 * time.Second)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []TopicPartition{tp0}, V0))
	assert.Zero(t, f.clk.Pending(), "an Ongoing transaction adds no pending timer")
	_, ok := f.clk.NextDeadline()
	assert.False(t, ok, "nor a deadline")

	f.clk.Advance(7*time.Second - time.Millisecond)
	assert.Equal(t, Ongoing, state(t, c, "a").State, "timed out 6 s ago, but no check yet")
	f.clk.Advance(time.Millisecond)
	assert.Equal(t, CompleteAbort, state(t, c, "a").State, "aborted at the check at start+10s, not 10s after the add")

	pid, epoch, _ = c.InitProducerID("b", 1000, nil)
	require.NoError(t, c.AddPartitions("b", pid, epoch, []TopicPartition{tp0}, V0))
	c.Close()
	f.clk.Advance(time.Minute)
	assert.Equal(t, Ongoing, state(t, c, "b").State, "no check after Close")
}

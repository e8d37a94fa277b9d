package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAcknowledgeTransitions(t *testing.T) {
	tests := []struct {
		name string
		typ  int8
		want RecordState
	}{
		{"gap", ackGap, Archived},
		{"accept", ackAccept, Acknowledged},
		{"release", ackRelease, Available},
		{"reject", ackReject, Archived},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Offset 0 stays ACQUIRED so that the SPSO does not forget the others.
			f := newFixture(t, defaults(), 1, 3)
			require.Equal(t, []AcquiredRange{rng(0, 0, 1)}, f.acquire("m", 1))
			require.Equal(t, []AcquiredRange{rng(1, 3, 1)}, f.acquire("m", 3))
			require.NoError(t, f.ack("m", 1, 3, tt.typ))
			for o := int64(1); o <= 3; o++ {
				assert.Equal(t, RecordInfo{Offset: o, State: tt.want, DeliveryCount: 1}, f.record(o))
			}
			assert.Equal(t, 1, f.clk.Pending(), "the acknowledged batch's lock is stopped")
			assert.Equal(t, int64(0), f.p.StartOffset())
		})
	}
}

func TestReleaseAtDeliveryLimitArchives(t *testing.T) {
	set := defaults()
	set.DeliveryCountLimit = 2
	f := newFixture(t, set, 1, 2)
	f.acquire("m", 1)
	f.acquire("m", 2)
	require.NoError(t, f.ack("m", 1, 2, ackRelease))
	require.Equal(t, []AcquiredRange{rng(1, 2, 2)}, f.acquire("m", 2))
	require.NoError(t, f.ack("m", 1, 2, ackRelease))
	f.requireStates(1, st(Archived, 2), st(Archived, 2))
	assert.Empty(t, f.acquire("m", 10))
}

func TestAcknowledgeAcrossBatches(t *testing.T) {
	f := newFixture(t, defaults(), 5, 5)
	f.acquire("m", 5)
	f.acquire("m", 5)
	require.NoError(t, f.ack("m", 0, 9, ackAccept))
	assert.Equal(t, int64(10), f.p.StartOffset())
	assert.Equal(t, int64(10), f.p.EndOffset())
	assert.Empty(t, f.p.Records())
	assert.Zero(t, f.clk.Pending())
}

func TestAcknowledgeErrors(t *testing.T) {
	// [0-4] by m1 and [5-9] by m2, whole; [10-14] by m1, split: 10 released and acquired
	// again by m2, 11 released; [15-19] by m3, expired.
	setup := func(t *testing.T) *fixture {
		f := newFixture(t, defaults(), 5, 5, 5, 5)
		for _, m := range []string{"m1", "m2", "m1", "m3"} {
			f.acquire(m, 5)
		}
		f.clk.Advance(20 * time.Second)
		require.NoError(t, f.p.Acknowledge("m1", []AckBatch{{0, 4, []int8{ackRenew}}, {10, 14, []int8{ackRenew}}}))
		require.NoError(t, f.ack("m2", 5, 9, ackRenew))
		require.NoError(t, f.ack("m1", 10, 11, ackRelease))
		ranges, _, err := f.p.Acquire(nil, "m2", 1, 0, 1<<30, RecordLimit)
		require.NoError(t, err)
		require.Equal(t, []AcquiredRange{rng(10, 10, 2)}, ranges)
		f.clk.Advance(10 * time.Second)
		require.Equal(t, Available, f.record(15).State)
		require.Equal(t, Acquired, f.record(0).State)
		return f
	}
	tests := []struct {
		name    string
		member  string
		batches []AckBatch
		code    *kerr.Error
		message string
	}{
		{"another member's batch", "m1", []AckBatch{{5, 9, []int8{ackAccept}}}, kerr.InvalidRecordState, msgNotOwnerOfBatch},
		{"part of another member's batch", "m1", []AckBatch{{6, 7, []int8{ackRenew}}}, kerr.InvalidRecordState, msgNotOwnerOfBatch},
		{"another member's offset", "m1", []AckBatch{{10, 10, []int8{ackAccept}}}, kerr.InvalidRecordState, msgNotOwnerOfOffset},
		{"an offset not acquired", "m1", []AckBatch{{11, 12, []int8{ackAccept}}}, kerr.InvalidRecordState, msgOffsetNotAcquired},
		{"an expired batch", "m3", []AckBatch{{15, 19, []int8{ackRenew}}}, kerr.InvalidRecordState, msgBatchNotAcquired},
		{"part of an expired batch", "m3", []AckBatch{{15, 16, []int8{ackAccept}}}, kerr.InvalidRecordState, msgBatchNotAcquired},
		{"past the acquired records", "m1", []AckBatch{{20, 21, []int8{ackAccept}}}, kerr.InvalidRequest, msgFirstPastAcquired},
		{"ending past the acquired records", "m3", []AckBatch{{18, 20, []int8{ackAccept}}}, kerr.InvalidRequest, msgLastPastAcquired},
		{"an unknown type", "m1", []AckBatch{{0, 1, []int8{ackAccept, 5}}}, kerr.InvalidRequest, "Invalid acknowledge type: [1, 5]"},
		{"a negative type", "m1", []AckBatch{{0, 0, []int8{-1}}}, kerr.InvalidRequest, "Invalid acknowledge type: [-1]"},
		{"types that do not fit", "m1", []AckBatch{{0, 2, []int8{ackAccept, ackAccept}}}, kerr.InvalidRequest, ""},
		{"no types", "m1", []AckBatch{{0, 2, nil}}, kerr.InvalidRequest, ""},
		{"a later batch failing", "m1", []AckBatch{{0, 4, []int8{ackAccept}}, {5, 9, []int8{ackAccept}}}, kerr.InvalidRecordState, msgNotOwnerOfBatch},
		{"a later offset failing", "m1", []AckBatch{{0, 4, []int8{ackRenew}}, {10, 12, []int8{ackReject, ackAccept, ackAccept}}}, kerr.InvalidRecordState, msgNotOwnerOfOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			before, pending := f.p.Records(), f.clk.Pending()
			err := f.p.Acknowledge(tt.member, tt.batches)
			requireShareError(t, err, tt.code, tt.message)
			assert.Equal(t, before, f.p.Records(), "nothing changes")
			assert.Equal(t, pending, f.clk.Pending(), "no timer changes")
		})
	}
}

func TestAcknowledgeNothingCached(t *testing.T) {
	set := defaults()
	set.AutoOffsetReset = "latest"
	f := newFixture(t, set, 5)
	f.produce(5)
	err := f.ack("m", 5, 6, ackAccept)
	requireShareError(t, err, kerr.InvalidRecordState, msgNotInCache)
}

func TestAcknowledgeBelowStartOffsetIsIgnored(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m", 5)
	require.NoError(t, f.ack("m", 0, 4, ackAccept))
	require.NoError(t, f.ack("m", 0, 4, ackReject), "records below the SPSO are already terminal")
	require.NoError(t, f.ack("other", 2, 3, ackRenew))
}

func TestAcknowledgeRollsBackTheWholeRequest(t *testing.T) {
	f := newFixture(t, defaults(), 5, 5)
	f.acquire("m1", 5)
	f.acquire("m2", 5)
	err := f.p.Acknowledge("m1", []AckBatch{{0, 4, []int8{ackAccept}}, {5, 9, []int8{ackAccept}}})
	requireShareError(t, err, kerr.InvalidRecordState, msgNotOwnerOfBatch)
	f.requireStates(0, st(Acquired, 1), st(Acquired, 1))
	assert.Equal(t, int64(0), f.p.StartOffset())
	// The lock still runs.
	f.clk.Advance(30 * time.Second)
	f.requireStates(0, st(Available, 1))
}

func TestRenewDisabledRollsBack(t *testing.T) {
	set := defaults()
	set.RenewEnabled = false
	f := newFixture(t, set, 5, 5)
	require.Equal(t, []AcquiredRange{rng(0, 9, 1)}, f.acquire("m", 10))
	err := f.p.Acknowledge("m", []AckBatch{{0, 4, []int8{ackAccept}}, {5, 9, []int8{ackRenew}}})
	requireShareError(t, err, kerr.InvalidRecordState, msgRenewNotEnabled)
	for o := range int64(10) {
		assert.Equal(t, Acquired, f.record(o).State, "offset %d", o)
	}
	assert.Equal(t, 1, f.clk.Pending())

	// Enabled again, the same request goes through.
	f.set.RenewEnabled = true
	require.NoError(t, f.p.Acknowledge("m", []AckBatch{{0, 4, []int8{ackAccept}}, {5, 9, []int8{ackRenew}}}))
	f.requireStates(4, st(Acknowledged, 1), st(Acquired, 1))
}

func TestRenewRestartsTheFullDuration(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m", 5)
	f.clk.Advance(20 * time.Second)
	require.NoError(t, f.ack("m", 0, 4, ackRenew))
	ri := f.record(2)
	assert.Equal(t, RecordInfo{Offset: 2, State: Acquired, DeliveryCount: 1, Member: "m", LockDeadline: t0.Add(50 * time.Second)}, ri)
	assert.Equal(t, 1, f.clk.Pending(), "one timer for the renewed batch")

	f.clk.Advance(30*time.Second - time.Millisecond)
	f.requireStates(0, st(Acquired, 1))
	// A renew reads the lock duration at the moment.
	f.set.LockDuration = 45 * time.Second
	require.NoError(t, f.ack("m", 0, 4, ackRenew))
	f.clk.Advance(45*time.Second - time.Millisecond)
	f.requireStates(0, st(Acquired, 1))
	f.clk.Advance(time.Millisecond)
	f.requireStates(0, st(Available, 1))
}

func TestRenewExpiredRecordFails(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m", 5)
	f.clk.Advance(30 * time.Second)
	for _, typ := range []int8{ackRenew, ackAccept, ackRelease, ackReject} {
		err := f.ack("m", 0, 4, typ)
		requireShareError(t, err, kerr.InvalidRecordState, msgBatchNotAcquired)
	}
	f.requireStates(0, st(Available, 1))
}

func TestRenewAnotherMembersRecordFails(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m1", 5)
	requireShareError(t, f.ack("m2", 0, 4, ackRenew), kerr.InvalidRecordState, msgNotOwnerOfBatch)
	assert.Equal(t, "m1", f.record(0).Member)
}

func TestMixedPerOffsetAcknowledgement(t *testing.T) {
	f := newFixture(t, defaults(), 5)
	f.acquire("m", 5)
	f.clk.Advance(10 * time.Second)
	require.NoError(t, f.ack("m", 0, 4, ackRenew, ackAccept, ackRelease, ackRenew, ackReject))
	f.requireStates(0, st(Acquired, 1), st(Acknowledged, 1), st(Available, 1), st(Acquired, 1), st(Archived, 1))
	assert.Equal(t, t0.Add(40*time.Second), f.record(0).LockDeadline)
	assert.Equal(t, t0.Add(40*time.Second), f.record(3).LockDeadline)
	assert.Equal(t, 2, f.clk.Pending(), "one timer per renewed offset; the old lock is stopped")
	assert.Equal(t, int64(0), f.p.StartOffset())

	// The released offset goes to the next fetch, alone.
	assert.Equal(t, []AcquiredRange{rng(2, 2, 2)}, f.acquire("m2", 10))
	f.clk.Advance(20 * time.Second) // the original deadline
	f.requireStates(0, st(Acquired, 1))
	f.clk.Advance(10 * time.Second)
	f.requireStates(0, st(Available, 1), st(Acknowledged, 1), st(Available, 2), st(Available, 1))
}

func TestRenewSpanningBatchesAndOverlappingBatches(t *testing.T) {
	f := newFixture(t, defaults(), 5, 5)
	f.acquire("m", 5)
	f.acquire("m", 5)
	require.NoError(t, f.ack("m", 0, 9, ackRenew))
	assert.Equal(t, 2, f.clk.Pending(), "one timer per whole renewed batch")

	// Batches may share their boundary offset: the second sees the first's effect on it.
	f2 := newFixture(t, defaults(), 10)
	f2.acquire("m", 10)
	require.NoError(t, ValidateBatches([]AckBatch{{0, 4, []int8{ackRenew}}, {4, 6, []int8{ackAccept}}}, 4, true))
	require.NoError(t, f2.p.Acknowledge("m", []AckBatch{{0, 4, []int8{ackRenew}}, {4, 6, []int8{ackAccept}}}))
	f2.requireStates(3, st(Acquired, 1), st(Acknowledged, 1), st(Acknowledged, 1), st(Acknowledged, 1), st(Acquired, 1))
	assert.Equal(t, 5, f2.clk.Pending(), "renewed 0-3, and the original lock for 7-9")
	err := f2.p.Acknowledge("m", []AckBatch{{7, 8, []int8{ackAccept}}, {8, 9, []int8{ackAccept}}})
	requireShareError(t, err, kerr.InvalidRecordState, msgOffsetNotAcquired)
	f2.requireStates(7, st(Acquired, 1), st(Acquired, 1))
}

func TestValidateBatches(t *testing.T) {
	tests := []struct {
		name    string
		batches []AckBatch
		maxType int8
		renew   bool
		ok      bool
	}{
		{"empty", nil, 4, false, true},
		{"one type", []AckBatch{{0, 9, []int8{1}}}, 3, false, true},
		{"per offset", []AckBatch{{0, 2, []int8{1, 0, 3}}}, 3, false, true},
		{"ascending", []AckBatch{{0, 2, []int8{1}}, {2, 4, []int8{2}}, {7, 7, []int8{3}}}, 3, false, true},
		{"renew v2", []AckBatch{{0, 2, []int8{4}}}, 4, true, true},
		{"renew ack without renew", []AckBatch{{0, 2, []int8{1}}}, 4, true, true},
		{"first above last", []AckBatch{{3, 2, []int8{1}}}, 3, false, false},
		{"descending", []AckBatch{{5, 6, []int8{1}}, {4, 4, []int8{1}}}, 3, false, false},
		{"no types", []AckBatch{{0, 2, nil}}, 3, false, false},
		{"types do not fit", []AckBatch{{0, 2, []int8{1, 1}}}, 3, false, false},
		{"negative type", []AckBatch{{0, 0, []int8{-1}}}, 3, false, false},
		{"renew v1", []AckBatch{{0, 0, []int8{4}}}, 3, true, false},
		{"unknown type", []AckBatch{{0, 0, []int8{5}}}, 4, true, false},
		{"renew without renew ack", []AckBatch{{0, 1, []int8{1, 4}}}, 4, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBatches(tt.batches, tt.maxType, tt.renew)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			requireShareError(t, err, kerr.InvalidRequest, "")
		})
	}
}

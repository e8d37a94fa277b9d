package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/errors"
)

// leaseT0 is when the tests of Process's records start, on a clock of their own.
var leaseT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tLeaseLedger returns an empty ledger whose lease counts from an hour before leaseT0, as New
// sets it.
func tLeaseLedger() *ledger {
	l := &ledger{}
	l.lease.epoch = leaseT0.Add(-time.Hour)
	return l
}

// lostLog is the holder of Process's records in the tests: it records, by offset, why each
// record's lock was lost, and how many times a loss was told.
type lostLog struct {
	reasons map[int64]errors.LockLostReason
	told    int
}

func (h *lostLog) lockLost(err *errors.LockLostError) {
	if h.reasons == nil {
		h.reasons = make(map[int64]errors.LockLostReason)
	}
	h.reasons[err.Offset] = err.Reason
	h.told++
}

// tAcquire has l acquire the records at offsets of part for Process, as one ShareFetch answer
// from part's leader sent at sent and answered at the same moment, under a lock of lock; h holds
// them.
func tAcquire(l *ledger, part *heldPart, sent time.Time, lock time.Duration, renewable bool, h lockHolder, offsets ...int64) []entry {
	recs := make([]*Record, len(offsets))
	for i, o := range offsets {
		recs[i] = &Record{Topic: part.tp.Topic, Partition: part.tp.Partition, Offset: o, DeliveryCount: 1}
	}
	return l.acquire(part.node, []poolPart{{part, recs}}, sent, lock, renewable, sent, func(es []entry) {
		for i := range es {
			es[i].holder = h
		}
	})
}

// TestFreshDeliveryWinsOverRenewedRecord holds a renewed record whose offset a later fetch
// delivered again: the Poll returns the fresh delivery only, once, whether the fresh delivery
// reached the ledger's buffer through hold (which forgets the renewed record at once) or sits
// there beside a renewed record ready for a Poll.
func TestFreshDeliveryWinsOverRenewedRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		viaHold bool
	}{
		{"held", true},
		{"beside the renewed record", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var l ledger
			now := time.Now()
			part := tHeld(0, 0)
			k := renewKey(part.tp, 7)
			old := &Record{Topic: "t", Partition: 0, Offset: 7, DeliveryCount: 1}
			l.renews.Add(k, &renewEntry{rec: old, part: part})
			tk, ok := l.renews.MarkSent(k, now)
			require.True(t, ok)
			require.True(t, l.renews.Complete(k, tk, time.Minute))
			fresh := &Record{Topic: "t", Partition: 0, Offset: 7, DeliveryCount: 2}
			if tc.viaHold {
				l.hold(part, []*Record{fresh}, nil, lockReport{})
			} else {
				l.buffer = append(l.buffer, bufItem{part: part, recs: []*Record{fresh}})
				l.bufRecords = 1
			}

			got, ce, _, _, _ := l.take(now, 10)
			require.Nil(t, ce)
			require.Len(t, got, 1)
			assert.Same(t, fresh, got[0])
			got, _, _, _, _ = l.take(now, 10)
			assert.Empty(t, got, "once")
			assert.Zero(t, l.renews.Len())
		})
	}
}

// TestLedgerKeepsTheLatestDelivery has Process acquire a record it holds already (its earlier
// lock was lost, and the broker delivered it again): the earlier delivery is lost, and settling
// it does not touch the later one.
func TestLedgerKeepsTheLatestDelivery(t *testing.T) {
	t.Parallel()
	l := tLeaseLedger()
	part := tHeld(0, 1)
	h := &lostLog{}
	first := tAcquire(l, part, leaseT0, time.Second, true, h, 5)
	again := tAcquire(l, part, leaseT0.Add(time.Second), time.Second, true, h, 5)
	assert.Equal(t, entryLost, first[0].state.Load())
	assert.Equal(t, map[int64]errors.LockLostReason{5: errors.LockDeadlinePassed}, h.reasons)
	assert.Equal(t, entryQueued, again[0].state.Load())
	require.Len(t, l.lease.nodes[1].acqs, 1, "the earlier delivery left the ledger")
	assert.Same(t, again[0].acq, l.lease.nodes[1].acqs[0])

	assert.False(t, l.release(&first[0]), "the earlier delivery does not settle the later one")
	assert.Equal(t, entryQueued, again[0].state.Load())
	assert.Len(t, l.lease.nodes[1].acqs, 1)
	assert.Zero(t, part.inbox.len(), "nothing acknowledged for the lost delivery")
	assert.True(t, l.release(&again[0]))
	assert.Empty(t, l.lease.nodes[1].acqs)
	assert.Equal(t, 1, part.inbox.len(), "the later delivery released")
	assert.Zero(t, l.lease.held.Load())
	assert.Zero(t, l.lease.queued.Load())
	assert.Equal(t, 1, h.told)
}

// TestLedgerBeginRefusesARecordWhoseLockRanOut: a worker that takes a record whose lock ran
// out by the local estimate, with no renew in flight, does not start it, whether or not the
// lease has seen the deadline yet: the record is lost (errors.LockDeadlinePassed) and leaves
// the ledger. A record whose lock runs, or whose renew is on its way, starts.
func TestLedgerBeginRefusesARecordWhoseLockRanOut(t *testing.T) {
	t.Parallel()
	now := leaseT0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		sent  time.Time
		lock  time.Duration
		setup func(l *ledger)
		start bool
	}{
		{name: "lock ran out", sent: now.Add(-2 * time.Second), lock: time.Second},
		{name: "lock ran out, seen by the lease", sent: now.Add(-2 * time.Second), lock: time.Second,
			setup: func(l *ledger) { l.due(now) }},
		{name: "lock runs", sent: now, lock: time.Hour, start: true},
		{name: "renew on its way", sent: now.Add(-2 * time.Second), lock: time.Second, start: true,
			setup: func(l *ledger) { require.NotEmpty(t, l.renewParts(1, now.Add(-1500*time.Millisecond))) }},
		{name: "no lock duration known", sent: now.Add(-time.Hour), start: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := tLeaseLedger()
			h := &lostLog{}
			es := tAcquire(l, tHeld(0, 1), tc.sent, tc.lock, true, h, 1)
			if tc.setup != nil {
				tc.setup(l)
			}
			e := &es[0]
			started := l.begin(e, l.lease.mono(now))
			require.Equal(t, tc.start, started)
			if tc.start {
				assert.Equal(t, entryRunning, e.state.Load())
				assert.Zero(t, h.told)
				assert.Len(t, l.lease.nodes[1].acqs, 1)
				return
			}
			assert.Equal(t, entryLost, e.state.Load())
			assert.Equal(t, map[int64]errors.LockLostReason{1: errors.LockDeadlinePassed}, h.reasons)
			assert.Equal(t, 1, h.told, "told once")
			assert.Empty(t, l.lease.nodes[1].acqs, "the lost record left the ledger")
			assert.False(t, l.finish(e), "nothing is acknowledged for it")
		})
	}
}

package shareconsumer

import (
	"context"
	stderrors "errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// hookKey is the context key recHook's OnProcessStart sets: the record's offset.
type hookKey struct{}

// recHook implements every hook interface and records what it is told. Calls after
// OnConsumerClosed are counted apart: there must be none.
type recHook struct {
	mu         sync.Mutex
	cons       *Consumer
	created    int
	closed     int
	afterClose int
	fetches    []ShareFetchEvent
	polls      []PollEvent
	starts     []*Record
	dones      []doneEvent
	acks       []AcknowledgeEvent
	renews     []RenewEvent
	lost       []LockLostEvent
	members    []MembershipEvent
	lags       int
}

type doneEvent struct {
	ctx context.Context
	out RecordOutcome
}

var (
	_ HookNewConsumer    = (*recHook)(nil)
	_ HookConsumerClosed = (*recHook)(nil)
	_ HookShareFetch     = (*recHook)(nil)
	_ HookPoll           = (*recHook)(nil)
	_ HookProcessStart   = (*recHook)(nil)
	_ HookProcessDone    = (*recHook)(nil)
	_ HookAcknowledge    = (*recHook)(nil)
	_ HookRenew          = (*recHook)(nil)
	_ HookLockLost       = (*recHook)(nil)
	_ HookMembership     = (*recHook)(nil)
	_ HookLag            = (*recHook)(nil)
)

// record runs fn under the hook's lock, counting a call after OnConsumerClosed.
func (h *recHook) record(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed > 0 {
		h.afterClose++
	}
	fn()
}

func (h *recHook) OnNewConsumer(c *Consumer) { h.record(func() { h.cons, h.created = c, h.created+1 }) }
func (h *recHook) OnConsumerClosed(c *Consumer) {
	h.record(func() { h.closed++ })
}
func (h *recHook) OnShareFetch(ev ShareFetchEvent) {
	h.record(func() { h.fetches = append(h.fetches, ev) })
}
func (h *recHook) OnPoll(ev PollEvent) { h.record(func() { h.polls = append(h.polls, ev) }) }
func (h *recHook) OnProcessStart(ctx context.Context, r *Record) context.Context {
	h.record(func() { h.starts = append(h.starts, r) })
	return context.WithValue(ctx, hookKey{}, r.Offset)
}
func (h *recHook) OnProcessDone(ctx context.Context, o RecordOutcome) {
	h.record(func() { h.dones = append(h.dones, doneEvent{ctx, o}) })
}
func (h *recHook) OnAcknowledge(ev AcknowledgeEvent) {
	h.record(func() { h.acks = append(h.acks, ev) })
}
func (h *recHook) OnRenew(ev RenewEvent)       { h.record(func() { h.renews = append(h.renews, ev) }) }
func (h *recHook) OnLockLost(ev LockLostEvent) { h.record(func() { h.lost = append(h.lost, ev) }) }
func (h *recHook) OnMembership(ev MembershipEvent) {
	h.record(func() { h.members = append(h.members, ev) })
}
func (h *recHook) OnLag(LagEvent) { h.record(func() { h.lags++ }) }

// ackCounts sums the acknowledgements of every event by type, failing the test on an event
// whose partitions have an error.
func (h *recHook) ackCounts(t *testing.T) [5]int {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var n [5]int
	for _, ev := range h.acks {
		assert.Contains(t, []string{"ShareFetch", "ShareAcknowledge"}, ev.Request)
		assert.NoError(t, ev.Err)
		assert.GreaterOrEqual(t, ev.Latency, time.Duration(0))
		for _, p := range ev.Partitions {
			assert.NoError(t, p.Err, "%s/%d", p.Topic, p.Partition)
			for ty := range n {
				n[ty] += p.Count(acktype.Type(ty))
			}
		}
	}
	return n
}

// fetched sums the records and bytes of the ShareFetch events, checking that every event's
// totals are its partitions' sums.
func (h *recHook) fetched(t *testing.T) (records, bytes int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.fetches {
		require.NoError(t, ev.Err)
		n, b := 0, 0
		for _, p := range ev.Partitions {
			assert.NoError(t, p.Err)
			n += p.Records
			b += p.Bytes
		}
		assert.Equal(t, ev.Records, n, "an event's Records is its partitions' sum")
		assert.Equal(t, ev.Bytes, b, "an event's Bytes is its partitions' sum (every partition with bytes has records here)")
		records += ev.Records
		bytes += ev.Bytes
	}
	return records, bytes
}

func TestHooksRefusedByNew(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hooks []Hook
		want  string
	}{
		{"nil", []Hook{nil}, "shareconsumer: Hooks: hook 0 is nil"},
		{"no interface", []Hook{&recHook{}, struct{}{}}, "shareconsumer: Hooks: hook 1 (struct {}) implements none of the hook interfaces"},
		{"wrong signature", []Hook{func(PollEvent) {}}, "hook 0 (func(shareconsumer.PollEvent)) implements none of the hook interfaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Group("g"), ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Hooks(tc.hooks...))
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	c, err := New(Group("g"), ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Hooks(&recHook{}), Hooks())
	require.NoError(t, err, "Hooks() adds nothing and is no error")
	require.NoError(t, c.Close(context.Background()))
}

// TestHooksPoll drives Poll through every acknowledgement type and checks what the hooks were
// told, and Status().Held along the way.
func TestHooksPoll(t *testing.T) {
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	var produced countProduced
	tProduce(t, c, "t", 0, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, kgo.WithHooks(&produced), kgo.ProducerBatchCompression(kgo.NoCompression()))
	h := &recHook{}
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement(), Hooks(h))
	require.Same(t, cons, h.cons, "OnNewConsumer got the consumer before New returned")
	assert.Equal(t, 1, h.created)

	ctx := tCtx(t)
	var returned []*Record // every record a Poll returned, in order
	poll := func() []*Record {
		recs, err := cons.Poll(ctx)
		require.NoError(t, err)
		returned = append(returned, recs...)
		return recs
	}
	var first []*Record
	for len(first) < 8 {
		first = append(first, poll()...)
	}
	require.Len(t, first, 8)
	// A metrics hook reads the gauge through the consumer OnNewConsumer gave it.
	assert.Equal(t, 8, h.cons.Status().Held, "polled, not acknowledged")
	for i, ty := range []acktype.Type{acktype.Accept, acktype.Accept, acktype.Release, acktype.Release, acktype.Reject, acktype.Reject, acktype.Renew, acktype.Renew} {
		require.NoError(t, cons.Acknowledge(first[i], ty))
	}
	assert.Equal(t, 8, h.cons.Status().Held, "acknowledged, not yet taken for sending")

	// The renewed records come back (same *Record), and so do the released ones (delivered
	// again); everything returned from now on is accepted.
	renewedBack, releasedBack := 0, 0
	for renewedBack < 2 || releasedBack < 2 {
		for _, r := range poll() {
			switch {
			case r == first[6] || r == first[7]:
				renewedBack++
			case r.Offset == 2 || r.Offset == 3:
				assert.Equal(t, int16(2), r.DeliveryCount)
				releasedBack++
			default:
				t.Fatalf("unexpected record at offset %d", r.Offset)
			}
			require.NoError(t, cons.Acknowledge(r, acktype.Accept))
		}
	}
	res, err := cons.CommitSync(ctx)
	require.NoError(t, err)
	for tp, err := range res {
		require.NoError(t, err, "%v", tp)
	}
	assert.Equal(t, 0, h.cons.Status().Held, "every acknowledgement sent")
	// The hooks of a request run on its session's goroutine once the answer is applied, which
	// may be after CommitSync returned; Close waits for those goroutines.
	require.NoError(t, cons.Close(ctx))

	// Acknowledgements, by type, over every request.
	assert.Equal(t, [5]int{acktype.Accept: 6, acktype.Release: 2, acktype.Reject: 2, acktype.Renew: 2}, h.ackCounts(t))

	h.mu.Lock()
	// One renew, of the two records, with the deadline the Poll that returned them set.
	if assert.Len(t, h.renews, 1) {
		ev := h.renews[0]
		assert.ElementsMatch(t, []*Record{first[6], first[7]}, ev.Records)
		assert.Equal(t, first[6].LockDeadline, ev.LockDeadline)
		assert.True(t, ev.LockDeadline.After(time.Now()), "a lock renewed just now")
	}
	// Poll events: the records of every Poll, in order, and nothing else.
	var told []*Record
	for _, ev := range h.polls {
		assert.NoError(t, ev.Err)
		assert.False(t, ev.Start.IsZero())
		assert.GreaterOrEqual(t, ev.Duration, time.Duration(0))
		told = append(told, ev.Records...)
	}
	assert.Equal(t, returned, told)
	assert.Empty(t, h.starts, "no Process")
	assert.Empty(t, h.dones, "no Process")
	assert.Empty(t, h.lost, "Poll's locks are not watched")
	h.mu.Unlock()

	// ShareFetch events: every record fetched (all but the renewed ones' second return), and
	// the bytes of the one batch produced, fetched once more for the released records.
	records, bytes := h.fetched(t)
	assert.Equal(t, len(returned)-2, records)
	assert.Equal(t, 2*produced.batchBytes(), bytes, "the batch, fetched twice")

	require.ErrorIs(t, cons.Close(ctx), errors.ErrClosed)
	h.mu.Lock()
	var stable MembershipEvent // the last one before the close
	for _, ev := range h.members {
		if ev.State == StateClosed {
			break
		}
		stable = ev
	}
	assert.Equal(t, StateStable, stable.State)
	assert.Equal(t, []TopicPartition{{"t", 0}}, stable.Assigned)
	assert.Positive(t, stable.MemberEpoch)
	assert.Equal(t, "g", stable.Group)
	assert.NotEmpty(t, stable.MemberID)
	assert.NoError(t, stable.Err)
	h.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Equal(t, 1, h.closed, "OnConsumerClosed once")
	assert.Zero(t, h.afterClose, "nothing after OnConsumerClosed")
	assert.Equal(t, StateClosed, h.members[len(h.members)-1].State, "the last membership event is the close")
	assert.Zero(t, h.lags, "lag is not looked up without LagInterval")
}

// countProduced counts the batches a producer wrote and their size.
type countProduced struct {
	batches, bytes atomic.Int64
}

func (c *countProduced) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	c.batches.Add(1)
	c.bytes.Add(int64(m.CompressedBytes))
}

// batchBytes is the size of the one batch produced on the wire: kgo counts its records, without
// the 61 bytes of the v2 batch header.
func (c *countProduced) batchBytes() int {
	if c.batches.Load() != 1 {
		panic("batchBytes: " + strconv.FormatInt(c.batches.Load(), 10) + " batches")
	}
	return int(c.bytes.Load()) + 61
}

// TestHooksMembershipJoin checks the membership events of a consumer that subscribes, joins,
// is assigned both partitions, and unsubscribes.
func TestHooksMembershipJoin(t *testing.T) {
	c := tStart(t, testbroker.Topic("t", 2))
	h := &recHook{}
	cons := tNew(t, c, "g", Hooks(h))
	require.NoError(t, cons.Subscribe("t"))
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := len(h.members)
		return n > 0 && h.members[n-1].State == StateStable && len(h.members[n-1].Assigned) == 2
	}, 10*time.Second, 5*time.Millisecond)
	h.mu.Lock()
	first, last := h.members[0], h.members[len(h.members)-1]
	h.mu.Unlock()
	assert.Equal(t, StateJoining, first.State, "subscribed, not a member yet")
	assert.Zero(t, first.MemberEpoch)
	assert.Equal(t, []TopicPartition{{"t", 0}, {"t", 1}}, last.Assigned)
	st := cons.Status()
	assert.Equal(t, st.MemberEpoch, last.MemberEpoch, "the event agrees with Status")

	require.NoError(t, cons.Unsubscribe())
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		ev := h.members[len(h.members)-1]
		return ev.State == StateUnsubscribed && len(ev.Assigned) == 0
	}, 10*time.Second, 5*time.Millisecond)
}

// TestHooksProcess runs Process over records that are accepted, released by a handler's error
// (and accepted when delivered again), rejected, and handled for three lock durations (renewed
// twice or more), and checks what the hooks were told.
func TestHooksProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 4)
		h := &recHook{}
		cons := sNew(t, c, Hooks(h))
		var mu sync.Mutex
		handlerOffsets := map[*Record]any{}
		heldWhileSlow := 0
		var final atomic.Int32
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			mu.Lock()
			handlerOffsets[r] = ctx.Value(hookKey{})
			mu.Unlock()
			// The slow record comes last: fast records before it in a worker's run have their
			// acknowledgements published by the flush while it works.
			switch string(r.Value) {
			case "3":
				heldWhileSlow = cons.Status().Held
				time.Sleep(3 * lockMs * time.Millisecond)
				return ctx.Err()
			case "1":
				if r.DeliveryCount == 1 {
					return stderrors.New("not now")
				}
			case "2":
				return errors.Reject(stderrors.New("never"))
			}
			return nil
		}, func(o RecordOutcome) bool {
			if o.Ack == acktype.Accept || o.Ack == acktype.Reject {
				return final.Add(1) == 4
			}
			return false
		})
		require.NoError(t, err)
		require.NoError(t, cons.Close(context.Background()))

		h.mu.Lock()
		defer h.mu.Unlock()
		// OnProcessStart's context reached the handler, and OnProcessDone got it back.
		require.Len(t, h.starts, 5, "four records, one delivered twice")
		for r, v := range handlerOffsets {
			assert.Equal(t, r.Offset, v, "offset %d: the handler's context is the hooks'", r.Offset)
		}
		require.Len(t, h.dones, 5)
		var outs [5]int
		for _, d := range h.dones {
			assert.Equal(t, d.out.Record.Offset, d.ctx.Value(hookKey{}), "the done hook gets the start hook's context")
			if d.out.Ack == acktype.Accept {
				assert.NoError(t, d.out.Err)
			} else {
				assert.Error(t, d.out.Err, "the handler's error")
			}
			outs[d.out.Ack]++
		}
		assert.Equal(t, [5]int{acktype.Accept: 3, acktype.Release: 1, acktype.Reject: 1}, outs)

		// The slow record's lock was renewed, each renew a later deadline.
		require.GreaterOrEqual(t, len(h.renews), 2)
		var prev time.Time
		for _, ev := range h.renews {
			require.Len(t, ev.Records, 1)
			assert.Equal(t, "3", string(ev.Records[0].Value))
			assert.True(t, ev.LockDeadline.After(prev))
			prev = ev.LockDeadline
		}
		assert.Empty(t, h.lost)
		assert.Empty(t, h.polls, "Process is not Poll")
		assert.GreaterOrEqual(t, heldWhileSlow, 1, "Status().Held counts the record with a handler")
		h.mu.Unlock()
		counts := h.ackCounts(t)
		records, _ := h.fetched(t)
		h.mu.Lock()
		assert.Equal(t, [5]int{acktype.Accept: 3, acktype.Release: 1, acktype.Reject: 1, acktype.Renew: len(h.renews)}, counts,
			"the renews are acknowledgements too, one per renew request")
		assert.Equal(t, 5, records, "fetched: four records, one twice")
		assert.Equal(t, 1, h.closed)
		assert.Zero(t, h.afterClose)
	})
}

// TestHooksProcessLockLost refuses the renews of a record whose handler waits for its context:
// the lock is lost, the hook gets the error the handler's context ends with, and OnProcessDone
// the outcome OnRecordDone gets.
func TestHooksProcessLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sStart(t, 1)
		require.NoError(t, c.SetGroupConfig("g", "share.renew.acknowledge.enable", "false"))
		h := &recHook{}
		cons := sNew(t, c, Hooks(h))
		var cause error
		var outcome RecordOutcome
		err := runUntil(t, cons, func(ctx context.Context, r *Record) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}, func(o RecordOutcome) bool { outcome = o; return true })
		require.NoError(t, err)
		require.NoError(t, cons.Close(context.Background()))

		var lle *errors.LockLostError
		require.ErrorAs(t, cause, &lle)
		assert.Equal(t, errors.LockInvalidRecordState, lle.Reason)
		h.mu.Lock()
		defer h.mu.Unlock()
		require.Len(t, h.lost, 1)
		assert.Same(t, lle, h.lost[0].Err, "the handler's context ends with the hook's error")
		assert.True(t, h.lost[0].Running)
		assert.Equal(t, int64(0), h.lost[0].Record.Offset)
		require.Len(t, h.dones, 1)
		assert.Equal(t, outcome, h.dones[0].out)
		assert.Same(t, lle, h.dones[0].out.Err)
		assert.Equal(t, int64(0), h.dones[0].ctx.Value(hookKey{}))
		assert.Empty(t, h.renews, "the renew was refused")
		var renewErr error
		for _, ev := range h.acks {
			for _, p := range ev.Partitions {
				if p.Count(acktype.Renew) > 0 {
					renewErr = p.Err
				}
			}
		}
		assert.ErrorIs(t, renewErr, kerr.InvalidRecordState, "the refused renew is in the acknowledge event")
	})
}

// TestHooksKgoFetchHooksNeverFire checks what kgo's own hooks see of a share consumer: its
// broker requests, and none of kgo's fetch hooks, since the consumer decodes ShareFetch
// answers itself.
func TestHooksKgoFetchHooksNeverFire(t *testing.T) {
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})
	var kh kgoHooks
	cons, err := New(ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.WithHooks(&kh)), Group("g"), Topics("t"), FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer func() { _ = cons.Close(context.Background()) }()
	tPollN(t, cons, 2)
	assert.Positive(t, kh.shareFetchReads.Load(), "HookBrokerRead sees the ShareFetch answers")
	assert.Zero(t, kh.batchRead.Load(), "OnFetchBatchRead never fires")
	assert.Zero(t, kh.buffered.Load(), "OnFetchRecordBuffered never fires")
}

type kgoHooks struct {
	shareFetchReads, batchRead, buffered atomic.Int64
}

func (h *kgoHooks) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsgShareFetch) {
		h.shareFetchReads.Add(1)
	}
}

func (h *kgoHooks) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	h.batchRead.Add(1)
}

func (h *kgoHooks) OnFetchRecordBuffered(*kgo.Record) { h.buffered.Add(1) }

// heldDest takes the acknowledgements leaving the ledger, and forgets them.
type heldDest struct{}

func (heldDest) ack(*heldPart, int64, int64, acktype.Type) {}
func (heldDest) renewQueued(*heldPart)                     {}

// TestLedgerHeld counts what Status.Held counts of Poll's records through their life: fetched,
// polled, acknowledged, renewed, sent; the offsets of a corrupt batch never count.
func TestLedgerHeld(t *testing.T) {
	t.Parallel()
	var l ledger
	part := tHeld(0, 0)
	recs := []*Record{{Topic: "t", Offset: 0}, {Topic: "t", Offset: 1}, {Topic: "t", Offset: 2}}
	l.hold(part, recs, nil, lockReport{})
	l.hold(part, nil, &errors.CorruptBatchError{Topic: "t", Offsets: []int64{3, 4}}, lockReport{})
	assert.Equal(t, 3, l.held(), "fetched, not returned")
	now := time.Now()
	out, corrupt, _, _, _ := l.take(now, 2)
	require.Len(t, out, 2)
	require.Nil(t, corrupt)
	assert.Equal(t, 3, l.held(), "two polled, one fetched")
	for _, r := range out {
		_, err := l.acknowledge(part.tp, r.Offset, acktype.Accept, false, nil)
		require.NoError(t, err)
	}
	_, err := l.acknowledge(part.tp, out[1].Offset, acktype.Renew, false, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, l.held(), "acknowledged, not taken for sending")
	l.moveAcked(heldDest{})
	assert.Equal(t, 2, l.held(), "the accepted one left; the renewed one waits in the renew buffer")
	out, corrupt, _, _, _ = l.take(now, 10)
	require.Len(t, out, 1)
	require.Nil(t, corrupt)
	_, corrupt, _, _, _ = l.take(now, 10)
	require.NotNil(t, corrupt, "the corrupt batch, reported on its own")
	assert.Equal(t, 2, l.held(), "the polled record and the renewed one; not the corrupt offsets")
	_, err = l.acknowledge(part.tp, out[0].Offset, acktype.Release, false, nil)
	require.NoError(t, err)
	l.moveAcked(heldDest{})
	assert.Equal(t, 1, l.held(), "the renewed record, its renew not answered yet")
	// The renew was never sent (the session was reset): the record is dropped.
	l.renewAnswered(&ackPart{tp: part.tp, batches: []acktype.Batch{{FirstOffset: 1, LastOffset: 1, Types: []acktype.Type{acktype.Renew}}}}, stderrors.New("reset"), time.Minute, false)
	assert.Equal(t, 0, l.held())
}

func TestConsumerGroup(t *testing.T) {
	c, err := New(Group("orders-workers"), ClientOpts(kgo.SeedBrokers("127.0.0.1:1")))
	require.NoError(t, err)
	assert.Equal(t, "orders-workers", c.Group())
	require.NoError(t, c.Close(context.Background()))
	assert.Equal(t, "orders-workers", c.Group(), "after Close too")
}

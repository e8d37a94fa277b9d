package shareconsumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// End-to-end tests that hold for any Kafka: each runs against testbroker and kfake.

// pollAck polls until at least n records came, giving each record the type ack returns right
// after the Poll that returned it (explicit mode), and returns the records.
func pollAck(t *testing.T, c *shareconsumer.Consumer, n int, d time.Duration, ack func(*shareconsumer.Record) acktype.Type) []*shareconsumer.Record {
	t.Helper()
	ctx := e2eCtx(t, d)
	var out []*shareconsumer.Record
	for len(out) < n {
		recs, err := c.Poll(ctx)
		require.NoError(t, err, "after %d of %d records", len(out), n)
		for _, r := range recs {
			require.NoError(t, c.Acknowledge(r, ack(r)))
		}
		out = append(out, recs...)
	}
	return out
}

func acceptAll(*shareconsumer.Record) acktype.Type { return acktype.Accept }

// acceptAllBut acknowledges the record at offset with ty and accepts every other.
func acceptAllBut(offset int64, ty acktype.Type) func(*shareconsumer.Record) acktype.Type {
	return func(r *shareconsumer.Record) acktype.Type {
		if r.Offset == offset {
			return ty
		}
		return acktype.Accept
	}
}

// recKey names a record by partition and offset.
type recKey struct {
	p   int32
	off int64
}

// workGroup has each consumer of cs poll on a goroutine of its own and hand every record to
// handle, until total distinct records are finished (handle returned true: their final
// acknowledgement is recorded) or 60 seconds pass. It fails the test on an error from Poll or
// handle, on a record finished twice, and on a record never finished, and returns which
// consumer finished each record.
func workGroup(t *testing.T, cs []*shareconsumer.Consumer, total int, handle func(i int, r *shareconsumer.Record) (finished bool, err error)) map[recKey]int {
	t.Helper()
	var (
		mu       sync.Mutex
		finished = map[recKey]int{}
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	ctx := e2eCtx(t, 60*time.Second)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for {
				mu.Lock()
				stop := len(finished) == total || len(failures) > 0
				mu.Unlock()
				if stop {
					return
				}
				if ctx.Err() != nil {
					fail("consumer %d: gave up after 60s", i)
					return
				}
				pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				recs, err := c.Poll(pctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					fail("consumer %d: Poll: %v", i, err)
					return
				}
				for _, r := range recs {
					done, err := handle(i, r)
					if err != nil {
						fail("consumer %d: %d/%d: %v", i, r.Partition, r.Offset, err)
						return
					}
					if !done {
						continue
					}
					k := recKey{r.Partition, r.Offset}
					mu.Lock()
					if prev, ok := finished[k]; ok {
						failures = append(failures, fmt.Sprintf("%d/%d finished by consumers %d and %d (delivery %d)", r.Partition, r.Offset, prev, i, r.DeliveryCount))
					}
					finished[k] = i
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
	require.Len(t, finished, total)
	return finished
}

// TestE2EThreeConsumersShareTenThousand has three consumers of one group split 10,000 records
// of three partitions, accepting each explicitly: every record is delivered once, to one of
// them, and the group ends with every partition acknowledged to its end.
func TestE2EThreeConsumersShareTenThousand(t *testing.T) {
	t.Parallel()
	testThreeConsumersShare(t)
}

// TestE2EThreeConsumersShareTenThousandFetchAhead is the same with FetchAhead: records fetched
// ahead are still delivered once.
func TestE2EThreeConsumersShareTenThousandFetchAhead(t *testing.T) {
	t.Parallel()
	testThreeConsumersShare(t, shareconsumer.FetchAhead())
}

func testThreeConsumersShare(t *testing.T, extra ...shareconsumer.Opt) {
	forEachBroker(t, e2eSetup{brokers: 2, partitions: 3}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		var cb commits
		cs := env.newMembers(t, group, 3, append([]shareconsumer.Opt{shareconsumer.ExplicitAcknowledgement(), cb.opt()}, extra...)...)
		perPartition := map[int32]int{0: 3334, 1: 3333, 2: 3333}
		total := 0
		for p, n := range perPartition {
			total += env.produce(t, []int32{p}, n)
		}
		require.Equal(t, 10000, total)

		finished := workGroup(t, cs, total, func(i int, r *shareconsumer.Record) (bool, error) {
			return true, cs[i].Acknowledge(r, acktype.Accept)
		})
		got := make([]int, len(cs))
		for _, i := range finished {
			got[i]++
		}
		t.Logf("%s: records per consumer %v", env.name, got)
		for p, n := range perPartition {
			for off := range int64(n) {
				if _, ok := finished[recKey{p, off}]; !ok {
					t.Errorf("record %d/%d never delivered", p, off)
				}
			}
		}

		// The last Polls' acknowledgements are still pending: the commits send them.
		for i, c := range cs {
			commitSyncOK(t, c, fmt.Sprintf("consumer %d", i))
		}
		for _, ac := range cb.get() {
			assert.NoError(t, ac.Err, "acknowledging %s offsets %v", ac.TopicPartition, ac.Offsets)
		}
		for p, n := range perPartition {
			env.waitSPSO(t, group, []int32{p}, int64(n))
		}
	})
}

// TestE2EImplicitAcceptsAtNextPoll checks that implicit mode accepts the records of a Poll with
// the next Poll, and not before. Another member holds offset 0 meanwhile, so that the share
// partition keeps tracking the accepted records (testbroker shows their state) and the start
// offset moves past them only once that member accepts offset 0.
func TestE2EImplicitAcceptsAtNextPoll(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 1)
		holder := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		held := pollN(t, holder, 1, 10*time.Second)
		require.Len(t, held, 1)
		require.EqualValues(t, 0, held[0].Offset)

		env.produce(t, []int32{0}, 5) // offsets 1-5
		c := env.newConsumer(t, group)
		recs := pollN(t, c, 5, 10*time.Second)
		require.Len(t, recs, 5)
		for i, r := range recs {
			assert.EqualValues(t, i+1, r.Offset)
			assert.EqualValues(t, 1, r.DeliveryCount)
		}
		require.ErrorIs(t, c.Acknowledge(recs[0], acktype.Release), errors.ErrImplicitMode)
		if env.tb != nil {
			for _, sr := range env.tb.ShareRecords(group, e2eTopic, 0) {
				assert.Equal(t, testbroker.ShareAcquired, sr.State, "offset %d before the next Poll", sr.Offset)
			}
		}

		pollNothing(t, c, 500*time.Millisecond)
		if env.tb != nil {
			require.Eventually(t, func() bool {
				sr, ok := env.tb.ShareRecord(group, e2eTopic, 0, 5)
				return ok && sr.State == testbroker.ShareAcknowledged
			}, 10*time.Second, time.Millisecond)
			srs := env.tb.ShareRecords(group, e2eTopic, 0)
			require.Len(t, srs, 6)
			for _, sr := range srs[1:] {
				assert.Equal(t, testbroker.ShareAcknowledged, sr.State, "offset %d", sr.Offset)
				assert.EqualValues(t, 1, sr.DeliveryCount, "offset %d", sr.Offset)
			}
		}
		assert.EqualValues(t, 0, env.spso(t, group, 0), "offset 0 is still held")

		// Once offset 0 is accepted the start offset moves past everything: 1-5 were accepted.
		require.NoError(t, holder.Acknowledge(held[0], acktype.Accept))
		commitSyncOK(t, holder, "holder")
		env.waitSPSO(t, group, []int32{0}, 6)
	})
}

// TestE2EExplicitRefusesPollWhileUnacknowledged checks that explicit mode refuses Poll while a
// record of the last Poll is unacknowledged, consuming nothing, and that once it is
// acknowledged every record is delivered once and accepted.
func TestE2EExplicitRefusesPollWhileUnacknowledged(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 10)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), shareconsumer.MaxPollRecords(4))
		ctx := e2eCtx(t, 10*time.Second)

		first, err := c.Poll(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, first)
		last := first[len(first)-1]
		for _, r := range first[:len(first)-1] {
			require.NoError(t, c.Acknowledge(r, acktype.Accept))
		}
		for range 2 {
			recs, err := c.Poll(ctx)
			require.ErrorIs(t, err, errors.ErrUnacknowledgedRecords)
			require.Empty(t, recs)
		}
		require.NoError(t, c.Acknowledge(last, acktype.Accept))

		all := slices.Clone(first)
		all = append(all, pollAck(t, c, 10-len(first), 10*time.Second, acceptAll)...)
		offs := make([]int64, len(all))
		for i, r := range all {
			offs[i] = r.Offset
			assert.EqualValues(t, 1, r.DeliveryCount, "offset %d", r.Offset)
			assert.Equal(t, fmt.Sprintf("p0-%d", r.Offset), string(r.Value))
		}
		slices.Sort(offs)
		assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, offs)

		res, err := c.CommitSync(ctx)
		require.NoError(t, err)
		for tp, err := range res {
			assert.NoError(t, err, "%s", tp)
		}
		env.waitSPSO(t, group, []int32{0}, 10)
		if env.tb != nil {
			for _, sr := range env.tb.ShareRecords(group, e2eTopic, 0) {
				assert.Equal(t, testbroker.ShareAcknowledged, sr.State, "offset %d", sr.Offset)
				assert.EqualValues(t, 1, sr.DeliveryCount, "offset %d", sr.Offset)
			}
		}
	})
}

// TestE2EReleaseRedelivers checks that a released record comes back with its delivery count
// one higher, and the accepted ones do not.
func TestE2EReleaseRedelivers(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 5)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		first := pollAck(t, c, 5, 10*time.Second, acceptAllBut(2, acktype.Release))
		require.Len(t, first, 5)

		again := pollAck(t, c, 1, 10*time.Second, acceptAll)
		require.Len(t, again, 1, "only the released record comes back: %v", recOffsets(again))
		assert.EqualValues(t, 2, again[0].Offset)
		assert.EqualValues(t, 2, again[0].DeliveryCount)
		assert.Equal(t, "p0-2", string(again[0].Value))

		assert.Len(t, commitSyncOK(t, c, "consumer"), 1)
		env.waitSPSO(t, group, []int32{0}, 5)
	})
}

// TestE2ERejectNeverRedelivers checks that a rejected record is archived and never comes back.
func TestE2ERejectNeverRedelivers(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 5)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		pollAck(t, c, 5, 10*time.Second, acceptAllBut(2, acktype.Reject))
		pollNothing(t, c, 500*time.Millisecond)
		// The start offset moves past the rejected record: it is archived.
		env.waitSPSO(t, group, []int32{0}, 5)

		// New records still flow, and the rejected one is not among them.
		env.produce(t, []int32{0}, 1)
		recs := pollAck(t, c, 1, 10*time.Second, acceptAll)
		require.Len(t, recs, 1)
		assert.EqualValues(t, 5, recs[0].Offset)
	})
}

// TestE2EDeliveryLimit checks that with share.delivery.count.limit=2 a record released twice is
// archived and never delivered a third time.
func TestE2EDeliveryLimit(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{deliveryLimit: 2}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 3)
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		releaseOne := acceptAllBut(1, acktype.Release)
		pollAck(t, c, 3, 10*time.Second, releaseOne)
		again := pollAck(t, c, 1, 10*time.Second, releaseOne)
		require.Len(t, again, 1)
		assert.EqualValues(t, 1, again[0].Offset)
		assert.EqualValues(t, 2, again[0].DeliveryCount)

		pollNothing(t, c, 500*time.Millisecond)
		// The start offset moves past the record released twice: it is archived.
		env.waitSPSO(t, group, []int32{0}, 3)
		env.produce(t, []int32{0}, 1)
		recs := pollAck(t, c, 1, 10*time.Second, acceptAll)
		require.Len(t, recs, 1)
		assert.EqualValues(t, 3, recs[0].Offset)
	})
}

// TestE2ECommitSyncResults checks CommitSync's result per partition and what the callback
// receives for the same acknowledgements, over three partitions led by two brokers.
func TestE2ECommitSyncResults(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{brokers: 2, partitions: 3}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		parts := []int32{0, 1, 2}
		env.produce(t, parts, 4)
		var cb commits
		c := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement(), cb.opt())
		ctx := e2eCtx(t, 20*time.Second)

		res, err := c.CommitSync(ctx)
		require.NoError(t, err)
		assert.Empty(t, res, "nothing to commit")

		acked := map[shareconsumer.TopicPartition][]int64{}
		for n := 0; n < 12; {
			recs, err := c.Poll(ctx)
			require.NoError(t, err)
			want := map[shareconsumer.TopicPartition][]int64{}
			for _, r := range recs {
				tp := shareconsumer.TopicPartition{Topic: r.Topic, Partition: r.Partition}
				require.NoError(t, c.Acknowledge(r, acktype.Accept))
				want[tp] = append(want[tp], r.Offset)
				acked[tp] = append(acked[tp], r.Offset)
			}
			n += len(recs)

			before := len(cb.get())
			res, err := c.CommitSync(ctx)
			require.NoError(t, err)
			require.Len(t, res, len(want), "one result per partition acknowledged: %v", res)
			for tp := range want {
				err, ok := res[tp]
				require.True(t, ok, "no result for %s", tp)
				assert.NoError(t, err, "%s", tp)
			}
			// The callback has run, during CommitSync, once per partition of the commit.
			got := map[shareconsumer.TopicPartition][]int64{}
			for _, ac := range cb.get()[before:] {
				assert.NoError(t, ac.Err, "%s", ac.TopicPartition)
				got[ac.TopicPartition] = append(got[ac.TopicPartition], ac.Offsets...)
			}
			assert.Equal(t, want, got, "callback contents for the commit")
		}
		for _, p := range parts {
			tp := shareconsumer.TopicPartition{Topic: e2eTopic, Partition: p}
			offs := slices.Clone(acked[tp])
			slices.Sort(offs)
			assert.Equal(t, []int64{0, 1, 2, 3}, offs, "%s", tp)
		}
		env.waitSPSO(t, group, parts, 4)
	})
}

// TestE2ECloseReleasesAndLeaves checks that Close sends the acknowledgements recorded, releases
// the records left unacknowledged with their delivery count unchanged, and leaves the group;
// another member then gets the released records at their second delivery.
func TestE2ECloseReleasesAndLeaves(t *testing.T) {
	t.Parallel()
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.produce(t, []int32{0}, 5)
		a, err := shareconsumer.New(
			shareconsumer.ClientOpts(seedOpt(env)),
			shareconsumer.Group(group), shareconsumer.Topics(e2eTopic),
			shareconsumer.FetchMaxWait(100*time.Millisecond), shareconsumer.ExplicitAcknowledgement(),
		)
		require.NoError(t, err)
		recs := pollN(t, a, 5, 10*time.Second)
		require.Len(t, recs, 5, "one Poll brings the five records")
		for _, r := range recs[:2] {
			require.NoError(t, a.Acknowledge(r, acktype.Accept))
		}
		require.NoError(t, a.Close(e2eCtx(t, 10*time.Second)))

		if env.tb != nil {
			srs := env.tb.ShareRecords(group, e2eTopic, 0)
			require.Len(t, srs, 5)
			for _, sr := range srs {
				want := testbroker.ShareAvailable
				if sr.Offset < 2 {
					want = testbroker.ShareAcknowledged
				}
				assert.Equal(t, want, sr.State, "offset %d", sr.Offset)
				assert.EqualValues(t, 1, sr.DeliveryCount, "offset %d", sr.Offset)
			}
			g, ok := env.tb.ShareGroup(group)
			require.True(t, ok)
			assert.Empty(t, g.Members)
		}
		env.waitMembers(t, group, 0)
		env.waitSPSO(t, group, []int32{0}, 2)

		b := env.newConsumer(t, group, shareconsumer.ExplicitAcknowledgement())
		again := pollAck(t, b, 3, 10*time.Second, acceptAll)
		require.Len(t, again, 3, "%v", recOffsets(again))
		for i, r := range again {
			assert.EqualValues(t, i+2, r.Offset)
			assert.EqualValues(t, 2, r.DeliveryCount, "offset %d", r.Offset)
		}
	})
}

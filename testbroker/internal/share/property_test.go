package share

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// model is the plainest share partition: one state per offset, offsets never acquired being
// AVAILABLE with delivery count 0.
type model struct {
	recs    []RecordInfo // by offset; the log starts at 0
	limit   int16
	lockFor time.Duration
}

// spso is the first offset that is not terminal.
func (m *model) spso() int64 {
	o := 0
	for o < len(m.recs) && m.recs[o].State.terminal() {
		o++
	}
	return int64(o)
}

func (m *model) settle(r *RecordInfo, target RecordState) {
	if target == Available && r.DeliveryCount >= m.limit {
		target = Archived
	}
	r.State, r.Member, r.LockDeadline = target, "", time.Time{}
}

// expire releases the records whose lock deadline has come.
func (m *model) expire(now time.Time) {
	for i := range m.recs {
		if r := &m.recs[i]; r.State == Acquired && !r.LockDeadline.After(now) {
			m.settle(r, Available)
		}
	}
}

// ack returns the records after member's acknowledgement, or false if the partition must
// refuse it: some record it covers at or after the SPSO is not ACQUIRED by member, or a RENEW
// reaches a record while renewal is disabled.
func (m *model) ack(member string, batches []AckBatch, renew bool, now time.Time) ([]RecordInfo, bool) {
	recs := slices.Clone(m.recs)
	spso := m.spso()
	for _, b := range batches {
		for o := max(b.FirstOffset, spso); o <= b.LastOffset; o++ {
			if o >= int64(len(recs)) {
				return nil, false
			}
			r := &recs[o]
			if r.State != Acquired || r.Member != member {
				return nil, false
			}
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.FirstOffset]
			}
			switch t {
			case ackRenew:
				if !renew {
					return nil, false
				}
				r.LockDeadline = now.Add(m.lockFor)
			case ackAccept:
				m.settle(r, Acknowledged)
			case ackRelease:
				m.settle(r, Available)
			default:
				m.settle(r, Archived)
			}
		}
	}
	return recs, true
}

func TestPropertyRandomOperations(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 20
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomOperations(t, seed) })
	}
}

func runRandomOperations(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 0x5ea))
	set := defaults()
	set.DeliveryCountLimit = int16(2 + rnd.IntN(4))
	set.MaxRecordLocks = 5 + rnd.IntN(40)
	f := newFixture(t, set)
	m := &model{limit: set.DeliveryCountLimit, lockFor: set.LockDuration}
	members := []string{"a", "b", "c"}
	member := func() string { return members[rnd.IntN(len(members))] }

	produce := func() {
		for range 1 + rnd.IntN(3) {
			if len(m.recs) > 150 {
				return
			}
			n := 1 + rnd.IntN(6)
			f.produce(n)
			for range n {
				m.recs = append(m.recs, RecordInfo{Offset: int64(len(m.recs))})
			}
		}
	}

	acquire := func(who string, maxRecords, batchSize, maxBytes int, mode AcquireMode) []AcquiredRange {
		ranges, records, err := f.p.Acquire(nil, who, maxRecords, batchSize, maxBytes, mode)
		require.NoError(t, err)
		if len(ranges) == 0 {
			require.Empty(t, records)
			return nil
		}
		spso, hwm, now := m.spso(), f.log.HighWatermark(), f.clk.Now()
		prev := int64(-1)
		for _, r := range ranges {
			require.LessOrEqual(t, r.FirstOffset, r.LastOffset)
			require.Greater(t, r.FirstOffset, prev, "ranges ascend without overlap")
			prev = r.LastOffset
			require.LessOrEqual(t, r.DeliveryCount, m.limit)
			for o := r.FirstOffset; o <= r.LastOffset; o++ {
				if o < spso || o >= hwm {
					t.Fatalf("offset %d acquired outside [%d, %d)", o, spso, hwm)
				}
				mr := &m.recs[o]
				if mr.State != Available || mr.DeliveryCount+1 != r.DeliveryCount {
					t.Fatalf("offset %d acquired with delivery count %d while %v with %d", o, r.DeliveryCount, mr.State, mr.DeliveryCount)
				}
				mr.State, mr.DeliveryCount, mr.Member, mr.LockDeadline = Acquired, r.DeliveryCount, who, now.Add(m.lockFor)
			}
		}
		batches, err := log.SplitBatches(bytes.Join(records, nil))
		require.NoError(t, err)
		require.Len(t, batches, len(records), "one slice per batch")
		require.LessOrEqual(t, batches[0].Header.BaseOffset, ranges[0].FirstOffset)
		require.Greater(t, batches[0].Header.LastOffset(), ranges[0].FirstOffset-1)
		require.GreaterOrEqual(t, batches[len(batches)-1].Header.LastOffset(), prev)
		require.LessOrEqual(t, batches[len(batches)-1].Header.BaseOffset, prev)
		return ranges
	}

	// ackBatches builds acknowledgement batches over some of who's acquired records, in runs
	// that may share a boundary offset, with one type or one per offset.
	ackBatches := func(who string) []AckBatch {
		var mine []int64
		for _, r := range m.recs {
			if r.State == Acquired && r.Member == who {
				mine = append(mine, r.Offset)
			}
		}
		if len(mine) == 0 || rnd.IntN(5) == 0 {
			first := int64(rnd.IntN(len(m.recs) + 3))
			return []AckBatch{{FirstOffset: first, LastOffset: first + int64(rnd.IntN(4)), Types: []int8{int8(rnd.IntN(5))}}}
		}
		from := rnd.IntN(len(mine))
		mine = mine[from : from+1+rnd.IntN(len(mine)-from)]
		var batches []AckBatch
		for i := 0; i < len(mine); {
			j := i + 1
			for j < len(mine) && mine[j] == mine[j-1]+1 && rnd.IntN(6) != 0 {
				j++
			}
			first, last := mine[i], mine[j-1]
			if n := len(batches); n > 0 && batches[n-1].LastOffset+1 == first && rnd.IntN(4) == 0 {
				first-- // share the boundary offset with the previous batch
			}
			types := []int8{int8(rnd.IntN(5))}
			if rnd.IntN(2) == 0 {
				types = make([]int8, last-first+1)
				for k := range types {
					types[k] = int8(rnd.IntN(5))
				}
			}
			batches = append(batches, AckBatch{FirstOffset: first, LastOffset: last, Types: types})
			i = j
		}
		return batches
	}

	check := func(step func() string) {
		t.Helper()
		spso, hwm := m.spso(), f.log.HighWatermark()
		require.Equal(t, spso, f.p.StartOffset(), "SPSO after %s", step())
		got := f.p.Records()
		acquired := 0
		for _, ri := range got {
			if m.recs[ri.Offset] != ri {
				require.Equal(t, m.recs[ri.Offset], ri, "offset %d after %s", ri.Offset, step())
			}
		}
		if len(got) > 0 {
			require.LessOrEqual(t, got[0].Offset, spso)
			require.Equal(t, f.p.EndOffset(), got[len(got)-1].Offset)
		}
		var done int64
		end := f.p.EndOffset()
		for o, r := range m.recs {
			if r.DeliveryCount > m.limit {
				t.Fatalf("offset %d delivered %d times after %s", o, r.DeliveryCount, step())
			}
			if int64(o) >= spso && r.State.terminal() {
				done++
			}
			if r.State == Acquired {
				acquired++
			}
			if (int64(o) > end || len(got) == 0 && int64(o) >= spso) && r != (RecordInfo{Offset: int64(o)}) {
				t.Fatalf("untracked offset %d is %+v after %s", o, r, step())
			}
		}
		require.Equal(t, hwm-spso-done, f.p.Lag(), "lag after %s", step())
		f.p.mu.Lock()
		wantNext, gotNext := scanNextFetchOffset(f.p), f.p.nextFetchOffset()
		f.p.mu.Unlock()
		require.Equal(t, wantNext, gotNext, "next fetch offset after %s", step())
		require.LessOrEqual(t, f.clk.Pending(), acquired, "timers after %s", step())
		require.Equal(t, acquired > 0, f.clk.Pending() > 0, "timers after %s", step())
	}

	for step := range 300 {
		var name string
		switch op := rnd.IntN(100); {
		case op < 15:
			name = "produce"
			produce()
		case op < 45:
			name = "acquire"
			modes := []AcquireMode{BatchOptimized, RecordLimit}
			sizes := []int{1, 100, 1 << 20}
			acquire(member(), 1+rnd.IntN(15), rnd.IntN(8), sizes[rnd.IntN(len(sizes))], modes[rnd.IntN(2)])
		case op < 75:
			name = "acknowledge"
			who := member()
			batches := ackBatches(who)
			want, valid := m.ack(who, batches, f.set.RenewEnabled, f.clk.Now())
			before, pending := f.p.Records(), f.clk.Pending()
			err := f.p.Acknowledge(who, batches)
			if !valid {
				var se *kafkaerr.Error
				require.ErrorAs(t, err, &se, "step %d: %s acknowledges %v", step, who, batches)
				require.Equal(t, before, f.p.Records(), "a refused acknowledgement changes nothing")
				require.Equal(t, pending, f.clk.Pending(), "a refused acknowledgement changes no timer")
				break
			}
			require.NoError(t, err, "step %d: %s acknowledges %v", step, who, batches)
			m.recs = want
		case op < 90:
			name = "advance"
			f.clk.Advance(time.Duration(rnd.IntN(40)) * time.Second)
			m.expire(f.clk.Now())
		case op < 95:
			name = "release member"
			who := member()
			var n int
			for i := range m.recs {
				if r := &m.recs[i]; r.State == Acquired && r.Member == who {
					m.settle(r, Available)
					n++
				}
			}
			require.Equal(t, n, f.p.ReleaseMember(who))
		case op < 97:
			name = "handover"
			for i := range m.recs {
				if r := &m.recs[i]; r.State == Acquired {
					*r = RecordInfo{Offset: r.Offset, State: Available, DeliveryCount: r.DeliveryCount - 1}
				}
			}
			f.handover()
		default:
			name = "toggle renew"
			f.set.RenewEnabled = !f.set.RenewEnabled
		}
		check(func() string { return fmt.Sprintf("step %d (%s)", step, name) })
	}

	// Drain: whatever happened, accepting everything from now on leaves no record behind.
	f.set.RenewEnabled = true
	for range 2000 {
		f.clk.Advance(m.lockFor)
		m.expire(f.clk.Now())
		ranges := acquire("drain", 1000, 0, 1<<20, BatchOptimized)
		if len(ranges) == 0 && f.p.StartOffset() == f.log.HighWatermark() {
			break
		}
		for _, r := range ranges {
			batch := []AckBatch{{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, Types: []int8{ackAccept}}}
			want, valid := m.ack("drain", batch, true, f.clk.Now())
			require.True(t, valid)
			require.NoError(t, f.p.Acknowledge("drain", batch))
			m.recs = want
		}
		check(func() string { return "drain" })
	}
	require.Equal(t, f.log.HighWatermark(), f.p.StartOffset(), "every record is terminal")
	for _, r := range m.recs {
		require.True(t, r.State.terminal(), "offset %d ends %v", r.Offset, r.State)
	}
	require.Empty(t, f.p.Records())
	require.Zero(t, f.clk.Pending())
}

// scanNextFetchOffset is nextFetchOffset without its availFrom bound: a scan of every cached
// record from the first.
func scanNextFetchOffset(p *Partition) int64 {
	if !p.cached() || p.start > p.end {
		return p.end
	}
	for i := p.head; i < len(p.batches); i++ {
		b := &p.batches[i]
		for o := b.first; o <= b.last; o++ {
			if b.at(o).state == Available {
				return o
			}
		}
	}
	return p.end + 1
}

package shareconsumer

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/apiversions"
)

// Unit tests of admission: when a session may fetch and how much, for Poll and Process, with
// the times passed in.

// aVersions returns the ApiVersions of a broker whose ShareFetch and ShareAcknowledge go up to
// version v.
func aVersions(t *testing.T, v int16) apiversions.Versions {
	t.Helper()
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.ShareGroupHeartbeat} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: 1, MaxVersion: v})
	}
	vs, err := apiversions.FromResponse(resp)
	require.NoError(t, err)
	return vs
}

func aPoll(opts ...func(*cfg)) admission {
	c := cfg{maxPollRecords: 10, fetchMaxWait: 500 * time.Millisecond}
	for _, o := range opts {
		o(&c)
	}
	return newAdmission(c)
}

func TestAdmissionPollMayFetch(t *testing.T) {
	t.Parallel()
	const max = 10
	for _, tc := range []struct {
		name       string
		waiting    bool
		fetchAhead bool
		returned   uint64 // Polls that returned records
		fetched    uint64 // s.fetchedAhead
		s          func(*session)
		pv         pollView
		want       int
	}{
		{name: "waiting, nothing buffered", waiting: true, want: max},
		{name: "nobody waiting", want: 0},
		{name: "waiting, records buffered", waiting: true, pv: pollView{buffered: 3, anyBuffered: true}, want: 0},
		{name: "waiting, a corrupt batch buffered", waiting: true, pv: pollView{anyBuffered: true}, want: 0},
		{name: "a ShareFetch in flight", waiting: true, s: func(s *session) { s.fetching = true }, want: 0},
		{name: "acknowledgements on a ShareFetch in flight", waiting: true, s: func(s *session) { s.piggyback = &ackJob{} }, want: 0},
		{name: "a ShareAcknowledge in flight", waiting: true, s: func(s *session) { s.sending = &ackJob{} }, want: 0},
		{name: "renewed records ready go first", waiting: true, pv: pollView{renewsHeld: 2, renewsReady: 1}, want: 0},
		{name: "a waiting Poll waits for its renews' answers", waiting: true, pv: pollView{renewsHeld: 2}, want: 0},
		{name: "renews queued for the session: a renew fetch", waiting: true, s: func(s *session) { s.queuedRenews = 2 }, pv: pollView{renewsHeld: 2}, want: 1},
		{name: "renews queued, nobody waiting", s: func(s *session) { s.queuedRenews = 2 }, pv: pollView{renewsHeld: 2}, want: 0},
		{name: "fetch ahead after a Poll returned records", fetchAhead: true, returned: 1, pv: pollView{buffered: max - 1, anyBuffered: true}, want: max},
		{name: "fetch ahead while renews are answered", fetchAhead: true, returned: 1, pv: pollView{renewsHeld: 2}, want: max},
		{name: "no fetch ahead while renewed records are ready", fetchAhead: true, returned: 1, pv: pollView{renewsHeld: 2, renewsReady: 2}, want: 0},
		{name: "fetch ahead once per Poll that returned records", fetchAhead: true, returned: 3, fetched: 3, want: 0},
		{name: "no fetch ahead with MaxPollRecords buffered", fetchAhead: true, returned: 1, pv: pollView{buffered: max, anyBuffered: true}, want: 0},
		{name: "no fetch ahead before a Poll returned records", fetchAhead: true, want: 0},
		{name: "no fetch ahead without FetchAhead", returned: 1, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := aPoll(func(c *cfg) { c.fetchAhead = tc.fetchAhead })
			a.waiting, a.returned = tc.waiting, tc.returned
			s := newSession(1, nil)
			s.fetchedAhead = tc.fetched
			if tc.s != nil {
				tc.s(s)
			}
			assert.Equal(t, tc.want, a.mayFetch(s, tc.pv, heldView{}, []int32{1}))
		})
	}
}

func TestAdmissionPollFetchAheadOncePerReturnedPoll(t *testing.T) {
	t.Parallel()
	a := aPoll(func(c *cfg) { c.fetchAhead = true })
	v := aVersions(t, 2)
	s1, s2 := newSession(1, nil), newSession(2, nil)
	leaders := []int32{1, 2}
	pv := pollView{buffered: 4, anyBuffered: true}

	a.pollSeq, a.returned = 1, 1 // a Poll returned records
	for _, s := range []*session{s1, s2} {
		require.Equal(t, 10, a.mayFetch(s, pv, heldView{}, leaders), "node %d", s.node)
		l := a.limits(s, v, heldView{}, leaders, 0)
		assert.Zero(t, l.maxWait, "a fetch ahead takes what is there")
		assert.Equal(t, int32(10), l.records)
		assert.Zero(t, l.grant)
		assert.Zero(t, a.mayFetch(s, pv, heldView{}, leaders), "node %d: once per Poll", s.node)
	}
	a.pollSeq++ // a Poll that returned nothing
	assert.Zero(t, a.mayFetch(s1, pv, heldView{}, leaders))
	a.pollSeq++
	a.returned++
	assert.Equal(t, 10, a.mayFetch(s1, pv, heldView{}, leaders), "the next Poll that returned records")

	// A waiting Poll's fetch waits at the broker.
	a.waiting = true
	l := a.limits(s1, v, heldView{}, leaders, 0)
	assert.Equal(t, int32(500), l.maxWait)
	assert.Equal(t, a.pollSeq, s1.fetchedPoll)
	assert.Equal(t, a.returned, s1.fetchedAhead)
}

func TestAdmissionPollRecordLimitOneLeaderAtATime(t *testing.T) {
	t.Parallel()
	a := aPoll(func(c *cfg) { c.recordLimit = true })
	a.waiting = true
	ss := map[int32]*session{1: newSession(1, nil), 2: newSession(2, nil), 3: newSession(3, nil)}
	leaders := []int32{1, 2, 3}
	fetching := func() []int32 {
		var out []int32
		for _, n := range leaders {
			if a.mayFetch(ss[n], pollView{}, heldView{}, leaders) > 0 {
				out = append(out, n)
			}
		}
		return out
	}
	assert.Equal(t, []int32{1}, fetching(), "the first leader")
	l := a.limits(ss[1], aVersions(t, 1), heldView{}, leaders, 0)
	assert.Equal(t, int8(1), l.acquireMode)
	assert.Equal(t, int32(10), l.records, "exactly MaxPollRecords")

	a.rotate(leaders) // an empty fetch
	assert.Equal(t, []int32{2}, fetching())
	a.rotate(leaders)
	assert.Equal(t, []int32{3}, fetching())
	a.rotate(leaders)
	assert.Equal(t, []int32{1}, fetching(), "round again")

	// The leader fetched loses its partitions: the first leader left takes over.
	leaders = []int32{2, 3}
	assert.Equal(t, []int32{2}, fetching())
	a.rotate(nil)
	assert.Equal(t, []int32{2}, fetching(), "no leaders: nothing moves")
	leaders = nil
	assert.Empty(t, fetching())
}

func TestAdmissionProcessCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workers, queue int
		rate           float64
		want           int
	}{
		{workers: 4, queue: 1000, rate: 0, want: 4 + 4},
		{workers: 4, queue: 1000, rate: 2, want: 4 + 4},
		{workers: 4, queue: 1000, rate: 500, want: 4 + 500},
		{workers: 4, queue: 1000, rate: 1e7, want: 4 + 1000},
		{workers: 8, queue: 3, rate: 0, want: 8 + 3},
		{workers: 8, queue: 3, rate: 1e7, want: 8 + 3},
	} {
		a := aPoll()
		a.startPool(tc.workers, tc.queue, time.Unix(0, 0))
		a.rate = tc.rate
		assert.Equal(t, tc.want, a.capacity(), "%+v", tc)
	}

	// Capacity follows the settle rate as it is observed: up to QueueSize, and never below
	// min(workers, QueueSize) however slow the handlers.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		workers, queue := 1+rng.IntN(64), 1+rng.IntN(1000)
		a := aPoll()
		now := time.Unix(1000, 0)
		a.startPool(workers, queue, now)
		settled := uint64(0)
		for range 50 {
			now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
			settled += uint64(rng.IntN(5000))
			a.observeSettled(settled, now)
			c := a.capacity()
			require.GreaterOrEqual(t, c, workers+min(workers, queue))
			require.LessOrEqual(t, c, workers+queue)
			require.GreaterOrEqual(t, a.low.Load(), int64(0))
			require.Less(t, 2*a.low.Load(), int64(c), "the watermark is under half the room")
		}
	}

	// The first answer only starts the count (the join came before it); then the rate rises at
	// once and falls a quarter of the way at each sample.
	a := aPoll()
	t0 := time.Unix(1000, 0)
	a.startPool(4, 1000, t0)
	a.observeSettled(0, t0.Add(5*time.Second))
	assert.Equal(t, 4+4, a.capacity(), "no rate yet: as many queued as workers")
	a.observeSettled(500, t0.Add(6*time.Second)) // 500/s
	assert.Equal(t, 4+500, a.capacity())
	a.observeSettled(500, t0.Add(6*time.Second+time.Microsecond)) // under a millisecond: no sample
	assert.Equal(t, 4+500, a.capacity())
	a.observeSettled(900, t0.Add(7*time.Second)) // 400/s: a quarter of the way down
	assert.Equal(t, 4+475, a.capacity())
	a.observeSettled(5900, t0.Add(8*time.Second)) // 5000/s: at once, up to QueueSize
	assert.Equal(t, 4+1000, a.capacity(), "QueueSize at most")
}

func TestAdmissionProcessEvenSharesAmongLeadersNotFetching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		held    int
		leaders []int32
		want    []int // the grants of the leaders, one after the other
	}{
		{name: "four leaders", leaders: []int32{1, 2, 3, 4}, want: []int{2, 2, 2, 2}},
		{name: "one leader takes the room", leaders: []int32{1}, want: []int{8}},
		{name: "half held", held: 4, leaders: []int32{1, 2, 3, 4}, want: []int{1, 1, 1, 1}},
		{name: "less room than leaders: one each while any is left", held: 5, leaders: []int32{1, 2, 3, 4}, want: []int{1, 1, 1, 0}},
		{name: "full", held: 8, leaders: []int32{1, 2}, want: []int{0, 0}},
		{name: "uneven", held: 1, leaders: []int32{1, 2}, want: []int{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := aPoll()
			a.startPool(4, 8, time.Unix(0, 0)) // capacity 8
			a.waiting = true
			hv := heldView{held: tc.held}
			var got []int
			sum := 0
			for _, n := range tc.leaders {
				s := newSession(n, nil)
				g := a.mayFetch(s, pollView{}, hv, tc.leaders)
				got = append(got, g)
				if g > 0 {
					l := a.limits(s, aVersions(t, 2), hv, tc.leaders, 30*time.Second)
					require.Equal(t, g, l.grant, "limits grants what mayFetch allowed")
					require.Equal(t, int32(g), l.records)
					a.fetchSent(s, l.grant)
					sum += g
				}
			}
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, sum, a.capacity()-tc.held)
			assert.Equal(t, sum, a.reserved)
		})
	}
}

// TestAdmissionProcessGrantsNeverExceedTheRoom drives admission with random fetches, answers
// and settled records: the records held plus the grants of the ShareFetches in flight never
// exceed the capacity when a grant is given.
func TestAdmissionProcessGrantsNeverExceedTheRoom(t *testing.T) {
	t.Parallel()
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a := aPoll()
		now := time.Unix(1000, 0)
		workers, queue := 1+rng.IntN(16), 1+rng.IntN(200)
		a.startPool(workers, queue, now)
		a.waiting = true
		leaders := []int32{1, 2, 3}[:1+rng.IntN(3)]
		ss := make([]*session, len(leaders))
		for i, n := range leaders {
			ss[i] = newSession(n, nil)
		}
		v := aVersions(t, 2)
		held, queued := 0, 0
		settled := uint64(0)
		for step := range 500 {
			s := ss[rng.IntN(len(ss))]
			now = now.Add(time.Duration(rng.IntN(50)) * time.Millisecond)
			switch {
			case !s.fetching:
				hv := heldView{held: held, queued: queued}
				g := a.mayFetch(s, pollView{}, hv, leaders)
				if g == 0 {
					if int64(queued) > a.low.Load() || a.capacity()-held-a.reserved <= 0 {
						assert.True(t, a.wantKick.Load(), "seed %d step %d: a fetch declined asks for a kick", seed, step)
					}
					a.wantKick.Store(false)
					continue
				}
				require.LessOrEqual(t, int64(queued), a.low.Load(), "seed %d step %d: fetch above the watermark", seed, step)
				l := a.limits(s, v, hv, leaders, 30*time.Second)
				require.Equal(t, g, l.grant)
				require.LessOrEqual(t, held+a.reserved+l.grant, a.capacity(), "seed %d step %d: the grant goes past the room", seed, step)
				a.fetchSent(s, l.grant)
				s.fetching = true
			default:
				n := rng.IntN(s.grant + 1) // the answer brings up to the grant
				held += n
				queued += n
				s.fetching = false
				a.fetchAnswered(s, time.Duration(1+rng.IntN(100))*time.Millisecond, settled, now)
				require.GreaterOrEqual(t, a.reserved, 0)
			}
			// Handlers settle some records.
			k := rng.IntN(held + 1)
			held -= k
			queued = min(queued, held)
			settled += uint64(k)
		}
	}
}

func TestAdmissionProcessWatermark(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	a := aPoll()
	a.startPool(4, 1000, t0)
	a.waiting = true
	s := newSession(1, nil)
	leaders := []int32{1}
	assert.Zero(t, a.low.Load(), "no rate yet: fetch when the queue is empty")
	assert.Zero(t, a.mayFetch(s, pollView{}, heldView{held: 3, queued: 1}, leaders))
	assert.True(t, a.wantKick.Load(), "a fetch declined for the queue asks for a kick")
	a.wantKick.Store(false)
	assert.Positive(t, a.mayFetch(s, pollView{}, heldView{held: 3}, leaders))
	assert.False(t, a.wantKick.Load())

	// 100 records a second and a 100 ms round trip: the records of two round trips. (The first
	// answer only starts the count of settled records.)
	a.fetchSent(s, 5)
	a.fetchAnswered(s, 100*time.Millisecond, 0, t0.Add(time.Second))
	a.fetchSent(s, 5)
	a.fetchAnswered(s, 100*time.Millisecond, 100, t0.Add(2*time.Second))
	assert.Zero(t, a.reserved)
	assert.Equal(t, 4+100, a.capacity())
	assert.Equal(t, int64(20), a.low.Load())
	assert.Zero(t, a.mayFetch(s, pollView{}, heldView{held: 30, queued: 21}, leaders))
	assert.True(t, a.wantKick.Load())
	a.wantKick.Store(false)
	assert.Equal(t, 4+100-30, a.mayFetch(s, pollView{}, heldView{held: 30, queued: 20}, leaders))
	assert.False(t, a.wantKick.Load())

	// Full at the watermark: no fetch, a kick wanted.
	assert.Zero(t, a.mayFetch(s, pollView{}, heldView{held: 104, queued: 0}, leaders))
	assert.True(t, a.wantKick.Load())
	a.wantKick.Store(false)

	// Not waiting (shutting down): no fetch and no kick.
	a.waiting = false
	assert.Zero(t, a.mayFetch(s, pollView{}, heldView{}, leaders))
	assert.False(t, a.wantKick.Load())
	a.waiting = true

	// A watermark over half the room is no watermark: the queue runs down to empty.
	a2 := aPoll()
	a2.startPool(4, 1000, t0)
	a2.fetchAnswered(s, time.Second, 0, t0.Add(time.Second))
	a2.fetchAnswered(s, time.Second, 100, t0.Add(2*time.Second))
	assert.Equal(t, 4+100, a2.capacity())
	assert.Zero(t, a2.low.Load(), "200 records of two round trips is over half of 104")

	// endPool: Poll's rules again.
	a.endPool()
	assert.Equal(t, 10, a.mayFetch(s, pollView{}, heldView{held: 50, queued: 50}, leaders))
}

func TestAdmissionProcessLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxWait  time.Duration
		lock     time.Duration
		version  int16
		wantWait int32
		wantMode int8
	}{
		{name: "ackFlushInterval", maxWait: 500 * time.Millisecond, lock: 30 * time.Second, version: 2, wantWait: 100, wantMode: 1},
		{name: "FetchMaxWait", maxWait: 50 * time.Millisecond, lock: 30 * time.Second, version: 2, wantWait: 50, wantMode: 1},
		{name: "a quarter of the lock", maxWait: 500 * time.Millisecond, lock: 200 * time.Millisecond, version: 2, wantWait: 50, wantMode: 1},
		{name: "no lock known", maxWait: 500 * time.Millisecond, version: 2, wantWait: 100, wantMode: 1},
		{name: "no lock known, FetchMaxWait", maxWait: 30 * time.Millisecond, version: 2, wantWait: 30, wantMode: 1},
		{name: "Kafka 4.1: batches, not a record limit", maxWait: 500 * time.Millisecond, lock: 30 * time.Second, version: 1, wantWait: 100, wantMode: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := aPoll(func(c *cfg) { c.fetchMaxWait = tc.maxWait })
			a.startPool(4, 100, time.Unix(0, 0))
			a.waiting = true
			s := newSession(1, nil)
			l := a.limits(s, aVersions(t, tc.version), heldView{held: 2}, []int32{1, 2}, tc.lock)
			assert.Equal(t, tc.wantWait, l.maxWait)
			assert.Equal(t, tc.wantMode, l.acquireMode)
			assert.Equal(t, 3, l.grant, "half of the 6 free among two leaders")
			assert.Equal(t, int32(3), l.records)
			require.LessOrEqual(t, time.Duration(l.maxWait)*time.Millisecond, min(tc.maxWait, ackFlushInterval))
			if tc.lock > 0 {
				require.LessOrEqual(t, time.Duration(l.maxWait)*time.Millisecond, tc.lock/4)
			}
		})
	}
}

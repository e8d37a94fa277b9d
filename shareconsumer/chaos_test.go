package shareconsumer_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// answer is what every consumer does with a record, decided by the record alone so that the
// outcome of each offset is known whoever gets it: about 1% are rejected, 1% released at each
// delivery (archived at the delivery limit), the rest accepted.
func (k chaosKey) answer(seed uint64) acktype.Type {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", seed, k.p, k.off)
	switch h.Sum64() % 100 {
	case 0:
		return acktype.Reject
	case 1:
		return acktype.Release
	}
	return acktype.Accept
}

// tally is what one kshare consumer's own records say: the acknowledgements its application
// (or handlers) made and the outcomes its OnAcknowledgementCommit callback reported.
type tally struct {
	name string
	mu   sync.Mutex
	// pending counts a poll loop's acknowledgements waiting for their outcome. Each is recorded
	// before Acknowledge, so the callback always finds it; an outcome with none pending is the
	// consumer's own (a release of records fetched and not returned).
	// Each entry is the record's lock deadline as the consumer saw it at delivery.
	pending map[chaosKey][]time.Time
	// done counts a pool's handled records that were acknowledged (OnRecordDone), results the
	// callback's outcomes in order; the pool's own releases (at shutdown) come after its
	// handlers' acknowledgements, so the first done[k] results are the handlers'.
	done    map[chaosKey][]time.Time
	results map[chaosKey][]ackResult
	// accepted counts successful accepts whose outcome came before the record's lock deadline:
	// a broker skips, without an error, acknowledgements of records below the share-partition
	// start offset (as Kafka does), so a late accept may succeed after another member's accept.
	accepted map[chaosKey]int
	late     int              // successful accepts whose outcome came after the lock deadline
	attempts map[chaosKey]int // accepts made
	lost     int              // pool records whose lock loss was reported
	failed   int              // outcomes with an error
	maxDC    int16
	badLoss  []string
	log      *acceptLog
}

func newTally(name string, log *acceptLog) *tally {
	return &tally{name: name, pending: map[chaosKey][]time.Time{}, done: map[chaosKey][]time.Time{}, results: map[chaosKey][]ackResult{},
		accepted: map[chaosKey]int{}, attempts: map[chaosKey]int{}, log: log}
}

func (t *tally) delivered(r *shareconsumer.Record) {
	t.log.delivered(t.name, chaosKey{r.Partition, r.Offset}, r.LockDeadline.Add(-chaosLockMs*time.Millisecond))
	t.mu.Lock()
	t.maxDC = max(t.maxDC, r.DeliveryCount)
	t.mu.Unlock()
}

// acceptLog is when an accept of each offset first succeeded, as a poll loop's callback said,
// and the deliveries that were acquired after it: a broker never acquires an acknowledged
// record again. A delivery's acquisition came after its ShareFetch was sent, which is its lock
// deadline less the lock duration. (Its receipt by the application may come long after an
// accept by another member and be no fault: a broker releases a member's records when its
// connection drops, before the member can know.) franz-go's records carry no send time, so its
// deliveries are not checked here.
type acceptLog struct {
	mu    sync.Mutex
	at    map[chaosKey]time.Time
	after []string
}

func (l *acceptLog) accepted(k chaosKey, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.at[k]; !ok {
		l.at[k] = at
	}
}

func (l *acceptLog) delivered(who string, k chaosKey, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.at[k]; ok && sent.After(at) {
		l.after = append(l.after, fmt.Sprintf("%d/%d delivered to %s by a fetch sent %v after an accept of it succeeded", k.p, k.off, who, sent.Sub(at)))
	}
}

func (t *tally) commitOpt(seed uint64, pool bool) shareconsumer.Opt {
	return shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if ac.Err != nil {
			t.failed += len(ac.Offsets)
		}
		now := time.Now()
		for _, off := range ac.Offsets {
			k := chaosKey{ac.Partition, off}
			if pool {
				t.results[k] = append(t.results[k], ackResult{ac.Err == nil, now})
				continue
			}
			if len(t.pending[k]) == 0 {
				continue
			}
			deadline := t.pending[k][0]
			t.pending[k] = t.pending[k][1:]
			if ac.Err == nil && k.answer(seed) == acktype.Accept {
				t.countAccept(k, deadline, now)
				t.log.accepted(k, now)
			}
		}
	})
}

// ackResult is one outcome the callback reported for a pool's record.
type ackResult struct {
	ok bool
	at time.Time
}

func (t *tally) countAccept(k chaosKey, deadline, at time.Time) {
	if at.Before(deadline) {
		t.accepted[k]++
	} else {
		t.late++
	}
}

// settle turns a pool's records into accepts and reports what was never answered.
func (t *tally) settle(seed uint64) (unanswered int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ds := range t.pending {
		unanswered += len(ds)
	}
	for k, ds := range t.done {
		n := len(ds)
		rs := t.results[k]
		if len(rs) < n {
			unanswered += n - len(rs)
			rs = rs[:len(rs):len(rs)]
		} else {
			rs = rs[:n]
		}
		if k.answer(seed) != acktype.Accept {
			continue
		}
		for i, r := range rs {
			if r.ok {
				t.countAccept(k, ds[i], r.at)
			}
		}
	}
	return unanswered
}

// TestChaos works a stream of records, produced with acks=all to a topic replicated on three
// brokers, through three explicit poll loops, a Process pool and franz-go's share consumer
// while faults are injected at random, then checks what the brokers and the consumers say.
func TestChaos(t *testing.T) {
	t.Parallel()
	run := startChaos(t, chaosDCLimit)
	seed := run.seed

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var pollErrs atomic.Int64
	var fatal atomic.Value

	// Three poll loops, each with a channel on which the fault injector tells it to stall.
	var tallies []*tally
	accepts := &acceptLog{at: map[chaosKey]time.Time{}}
	var stalls []chan time.Duration
	var consumers []*shareconsumer.Consumer
	newConsumer := func(tl *tally, pool bool) *shareconsumer.Consumer {
		cons := run.newConsumer(tl.commitOpt(seed, pool))
		consumers = append(consumers, cons)
		tallies = append(tallies, tl)
		return cons
	}
	for i := range 3 {
		tl := newTally(fmt.Sprintf("poll-%d", i), accepts)
		cons := newConsumer(tl, false)
		stall := make(chan time.Duration, 1)
		stalls = append(stalls, stall)
		wg.Go(func() { chaosPollLoop(ctx, cons, tl, seed, stall, &pollErrs, &fatal) })
	}

	// The Process pool; about one handler in two hundred works past the lock duration, so
	// that its lock is renewed.
	ptl := newTally("pool", accepts)
	pcons := newConsumer(ptl, true)
	wg.Go(func() {
		err := pcons.Process(ctx, func(hctx context.Context, r *shareconsumer.Record) error {
			ptl.delivered(r)
			k := chaosKey{r.Partition, r.Offset}
			h := fnv.New32a()
			fmt.Fprintf(h, "slow/%d/%d", k.p, k.off)
			if h.Sum32()%200 == 0 {
				select {
				case <-hctx.Done():
				case <-time.After(chaosLockMs * 3 / 2 * time.Millisecond):
				}
			}
			switch k.answer(seed) {
			case acktype.Reject:
				return errors.ErrReject
			case acktype.Release:
				return fmt.Errorf("chaos release")
			}
			return nil
		}, shareconsumer.Workers(4), shareconsumer.QueueSize(8), shareconsumer.ShutdownGrace(2*time.Second),
			shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
				k := chaosKey{o.Record.Partition, o.Record.Offset}
				ptl.mu.Lock()
				defer ptl.mu.Unlock()
				if o.Ack != 0 {
					ptl.done[k] = append(ptl.done[k], o.Record.LockDeadline)
					if o.Ack == acktype.Accept {
						ptl.attempts[k]++
					}
					return
				}
				var lle *errors.LockLostError
				if errors.As(o.Err, &lle) {
					ptl.lost++
				} else {
					ptl.badLoss = append(ptl.badLoss, fmt.Sprintf("%d/%d: nothing acknowledged and no loss reported: %v", k.p, k.off, o.Err))
				}
			}))
		if err != nil {
			fatal.CompareAndSwap(nil, fmt.Errorf("pool: Process: %w", err))
		}
	})

	// franz-go's share consumer, whose acknowledgements count as attempts only: its callback
	// does not name offsets. What it receives counts towards the brokers' states and the
	// delivery counts.
	var outsiderMu sync.Mutex
	outsiderAcks := map[chaosKey]int{}
	var outsiderDC int32
	var outsiderFailed int
	outsider, err := kgo.NewClient(append(run.clientOpts, kgo.ConsumeTopics(chaosTopic), kgo.ShareGroup(chaosGroup),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			outsiderMu.Lock()
			defer outsiderMu.Unlock()
			for _, r := range rs {
				if r.Err != nil {
					outsiderFailed++
				}
			}
		}))...)
	if err != nil {
		t.Fatal(err)
	}
	outsiderDone := make(chan struct{})
	go func() {
		defer close(outsiderDone)
		for ctx.Err() == nil {
			fs := outsider.PollRecords(ctx, 50)
			fs.EachRecord(func(r *kgo.Record) {
				k := chaosKey{r.Partition, r.Offset}
				outsiderMu.Lock()
				outsiderDC = max(outsiderDC, r.DeliveryCount())
				outsiderMu.Unlock()
				switch k.answer(seed) {
				case acktype.Reject:
					r.Ack(kgo.AckReject)
				case acktype.Release:
					r.Ack(kgo.AckRelease)
				default:
					outsiderMu.Lock()
					outsiderAcks[k]++
					outsiderMu.Unlock()
					r.Ack(kgo.AckAccept)
				}
			})
		}
	}()

	produced := run.produce(ctx)
	seen, stopInspecting := run.inspect(ctx)
	start := time.Now()
	faults := run.injectFaults(stalls, produced)
	faultTime := time.Since(start)
	run.awaitDrained(ctx, &fatal)
	drainTime := time.Since(start) - faultTime
	stopInspecting()

	cancel()
	wg.Wait()
	<-outsiderDone
	for i, cons := range consumers {
		run.closeConsumer(tallies[i].name, cons)
	}
	outsider.Close()
	run.failOnFatal(&fatal)

	// The invariants.
	iv := &chaosInvariants{t: t}
	accepted := map[chaosKey][]string{}
	attempts := map[chaosKey]bool{}
	var unanswered, lost, failed, late int
	var maxDC int16
	var badLoss []string
	for _, tl := range tallies {
		unanswered += tl.settle(seed)
		for k, n := range tl.accepted {
			for range n {
				accepted[k] = append(accepted[k], tl.name)
			}
		}
		for k := range tl.attempts {
			attempts[k] = true
		}
		lost += tl.lost
		late += tl.late
		failed += tl.failed
		maxDC = max(maxDC, tl.maxDC)
		badLoss = append(badLoss, tl.badLoss...)
	}
	for k := range outsiderAcks {
		attempts[k] = true
	}
	var twice, badState, overLimit []string
	notDone := run.notDone()
	states := map[testbroker.ShareRecordState]int{}
	for k, sr := range seen.final {
		states[sr.State]++
		switch {
		case sr.State < 0:
			badState = append(badState, fmt.Sprintf("%d/%d went from one terminal state to the other", k.p, k.off))
		case sr.State == testbroker.ShareAcknowledged && k.answer(seed) != acktype.Accept:
			badState = append(badState, fmt.Sprintf("%d/%d ACKNOWLEDGED though nobody accepts it", k.p, k.off))
		case sr.State == testbroker.ShareArchived && len(accepted[k]) > 0:
			badState = append(badState, fmt.Sprintf("%d/%d ARCHIVED though %v accepted it", k.p, k.off, accepted[k]))
		case sr.State == testbroker.ShareAcknowledged && !attempts[k]:
			badState = append(badState, fmt.Sprintf("%d/%d ACKNOWLEDGED though no consumer accepted it", k.p, k.off))
		}
	}
	for k, dc := range seen.maxDC {
		if dc > chaosDCLimit {
			overLimit = append(overLimit, fmt.Sprintf("%d/%d: %d deliveries", k.p, k.off, dc))
		}
	}
	for k, who := range accepted {
		if len(who) > 1 {
			twice = append(twice, fmt.Sprintf("%d/%d by %v", k.p, k.off, who))
		}
	}
	var acceptedN int
	for _, who := range accepted {
		acceptedN += len(who)
	}
	iv.check("every offset ACKNOWLEDGED or ARCHIVED", len(notDone) == 0, "%d not: %v", len(notDone), first(notDone))
	iv.check("no offset accepted twice", len(twice) == 0, "%d offsets: %v", len(twice), first(twice))
	iv.check("final states match the answers", len(badState) == 0, "%d offsets: %v", len(badState), first(badState))
	iv.check("delivery counts within the limit", len(overLimit) == 0 && maxDC <= chaosDCLimit && outsiderDC <= chaosDCLimit,
		"broker: %v; most deliveries a kshare consumer saw: %d, franz-go: %d", first(overLimit), maxDC, outsiderDC)
	iv.check("no record acquired again after its accept succeeded", len(accepts.after) == 0, "%d deliveries: %v", len(accepts.after), first(accepts.after))
	iv.check("every acknowledgement's outcome reported", unanswered == 0, "%d acknowledgements without an outcome", unanswered)
	iv.check("every handled record acknowledged or its loss reported", len(badLoss) == 0, "%v", first(badLoss))

	t.Logf("seed %d: %d records on %d partitions; faults for %v (%s); drained in %v",
		seed, run.total, run.parts, faultTime.Round(time.Millisecond), faults, drainTime.Round(time.Millisecond))
	t.Logf("final states of the %d offsets the inspection saw terminal: %v; kshare accepts that succeeded in time %d (late, maybe skipped below the start offset: %d), outcomes with an error %d, pool locks lost %d, Poll errors %d; franz-go: %d accepts made, %d partition outcomes with an error; %s",
		len(seen.final), states, acceptedN, late, failed, lost, pollErrs.Load(), len(outsiderAcks), outsiderFailed, pcons.ProcessStats())
	iv.log()
}

// chaosPollLoop polls and acknowledges each record by its answer until ctx ends. Told to
// stall, it stops halfway through a batch, without Close, for longer than MaxPollInterval.
func chaosPollLoop(ctx context.Context, cons *shareconsumer.Consumer, tl *tally, seed uint64, stall <-chan time.Duration, pollErrs *atomic.Int64, fatal *atomic.Value) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := cons.Poll(pctx)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			var fe *errors.FatalError
			if errors.As(err, &fe) || errors.Is(err, errors.ErrClosed) {
				fatal.CompareAndSwap(nil, fmt.Errorf("%s: Poll: %w", tl.name, err))
				return
			}
			pollErrs.Add(1)
		}
		// Received now: a stall below comes after the receipt of every record Poll returned.
		for _, r := range recs {
			tl.delivered(r)
		}
		for i, r := range recs {
			if i == len(recs)/2 {
				chaosStall(ctx, stall)
			}
			k := chaosKey{r.Partition, r.Offset}
			ty := k.answer(seed)
			tl.mu.Lock()
			tl.pending[k] = append(tl.pending[k], r.LockDeadline)
			if ty == acktype.Accept {
				tl.attempts[k]++
			}
			tl.mu.Unlock()
			if err := cons.Acknowledge(r, ty); err != nil {
				tl.mu.Lock()
				tl.pending[k] = tl.pending[k][:len(tl.pending[k])-1]
				tl.mu.Unlock()
				fatal.CompareAndSwap(nil, fmt.Errorf("%s: Acknowledge %d/%d: %w", tl.name, k.p, k.off, err))
				return
			}
		}
	}
}

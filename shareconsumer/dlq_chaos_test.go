package shareconsumer_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// The dead-letter chaos run's topic, and its group's delivery count limit: 3, not Kafka's
// default, so that the limit read from the group config is what decides.
const (
	chaosDLQ      = "chaos.dlq"
	dlqChaosLimit = 3
)

// dlqFate is what every consumer does with a record in the dead-letter chaos run, decided by
// the record alone: about 3% fail on every delivery (dead-lettered on the last), 2% are poison
// (dead-lettered at once), the rest are accepted.
type dlqFate int

const (
	fateAccept dlqFate = iota
	fateFail
	fatePoison
)

func (k chaosKey) fate(seed uint64) dlqFate {
	h := fnv.New64a()
	fmt.Fprintf(h, "dlq/%d/%d/%d", seed, k.p, k.off)
	switch h.Sum64() % 100 {
	case 0, 1, 2:
		return fateFail
	case 3, 4:
		return fatePoison
	}
	return fateAccept
}

// dlqTally is what the consumers of the dead-letter chaos run report.
type dlqTally struct {
	mu sync.Mutex
	// unsettled are the records whose copy may be in the dead-letter topic while the record was
	// not settled: the produce failed (it may still have landed), the lock was lost after it,
	// or the ACCEPT that followed it failed. Only these may be dead-lettered twice.
	unsettled map[chaosKey]bool
	// copied are the records whose copy a consumer saw produced.
	copied map[chaosKey]bool
	// bad are outcomes no consumer may have: a failing record released on its last delivery
	// without an attempt to dead-letter it, an accepted record dead-lettered, a rejection.
	bad []string
}

func (d *dlqTally) unsettle(k chaosKey) {
	d.mu.Lock()
	d.unsettled[k] = true
	d.mu.Unlock()
}

func (d *dlqTally) wrong(format string, args ...any) {
	d.mu.Lock()
	d.bad = append(d.bad, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// commitOpt marks the records whose acknowledgement failed.
func (d *dlqTally) commitOpt() shareconsumer.Opt {
	return shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
		if ac.Err == nil {
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, off := range ac.Offsets {
			d.unsettled[chaosKey{ac.Partition, off}] = true
		}
	})
}

// TestChaosDeadLetter runs the chaos harness (faults on the share APIs, dropped connections,
// leader moves, stopped brokers, stalled poll loops, and produces to the dead-letter topic
// failed) with two Process pools and an explicit poll loop that dead-letter failing and poison
// records, the group's limit at 3, and checks that some dead-letter produces failed while the
// record was held and that nothing is lost: every
// record a broker settled ACKNOWLEDGED is accepted or in the dead-letter topic; every record in
// the dead-letter topic is one that failed, with its headers; each is there once unless a
// consumer reported that it could not settle the record after producing its copy; and a record
// a broker archived without a copy was delivered as often as the limit allows (its last
// dead-letter produce failed, or every delivery's lock was lost before its handler could settle
// it: a client-side dead-letter topic cannot save those, docs/semantics.md).
func TestChaosDeadLetter(t *testing.T) {
	t.Parallel()
	run := startChaos(t, dlqChaosLimit, testbroker.ReplicatedTopic(chaosDLQ, 2, 3))
	seed, c := run.seed, run.c
	tl := &dlqTally{unsettled: map[chaosKey]bool{}, copied: map[chaosKey]bool{}}
	errText := func(k chaosKey) string { return fmt.Sprintf("fails %d/%d", k.p, k.off) }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var fatal atomic.Value
	var failedHeld atomic.Int64 // dead-letter produces failed by an injected fault, the record still held
	var consumers []*shareconsumer.Consumer
	newConsumer := func() *shareconsumer.Consumer {
		cons := run.newConsumer(shareconsumer.DeadLetterTopic(chaosDLQ), tl.commitOpt())
		consumers = append(consumers, cons)
		return cons
	}

	for i := range 2 {
		cons := newConsumer()
		wg.Go(func() {
			err := cons.Process(ctx, func(_ context.Context, r *shareconsumer.Record) error {
				k := chaosKey{r.Partition, r.Offset}
				switch k.fate(seed) {
				case fatePoison:
					return errors.DeadLetter(errors.New(errText(k)))
				case fateFail:
					return errors.New(errText(k))
				}
				return nil
			}, shareconsumer.Workers(4), shareconsumer.QueueSize(8), shareconsumer.ShutdownGrace(2*time.Second),
				shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
					k := chaosKey{o.Record.Partition, o.Record.Offset}
					fate := k.fate(seed)
					switch {
					case o.DeadLettered:
						tl.mu.Lock()
						tl.copied[k] = true
						tl.mu.Unlock()
						if o.Ack == 0 {
							tl.unsettle(k)
						}
					case o.DeadLetterErr != nil:
						tl.unsettle(k)
						if o.Ack == acktype.Release && errors.Is(o.DeadLetterErr, kerr.TopicAuthorizationFailed) {
							failedHeld.Add(1) // an injected failure, the lock held: released
						}
					case o.Ack == acktype.Reject:
						tl.wrong("pool %d rejected %d/%d", i, k.p, k.off)
					case o.Ack == acktype.Release && fate == fatePoison:
						tl.wrong("pool %d released poison %d/%d without dead-lettering it", i, k.p, k.off)
					case o.Ack == acktype.Release && fate == fateFail && o.Record.DeliveryCount >= dlqChaosLimit:
						tl.wrong("pool %d released %d/%d on its last delivery (%d) without dead-lettering it", i, k.p, k.off, o.Record.DeliveryCount)
					}
					if o.DeadLettered && fate == fateAccept {
						tl.wrong("pool %d dead-lettered %d/%d, which handlers accept", i, k.p, k.off)
					}
				}))
			if err != nil {
				fatal.CompareAndSwap(nil, fmt.Errorf("pool %d: Process: %w", i, err))
			}
		})
	}

	// An explicit poll loop dead-letters with Consumer.DeadLetter, by the limit it reads.
	pollCons := newConsumer()
	stall := make(chan time.Duration, 1)
	wg.Go(func() {
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			recs, err := pollCons.Poll(pctx)
			pcancel()
			var fe *errors.FatalError
			if errors.As(err, &fe) || errors.Is(err, errors.ErrClosed) {
				fatal.CompareAndSwap(nil, fmt.Errorf("poll loop: Poll: %w", err))
				return
			}
			for i, r := range recs {
				if i == len(recs)/2 {
					chaosStall(ctx, stall)
				}
				k := chaosKey{r.Partition, r.Offset}
				ty := acktype.Accept
				fate := k.fate(seed)
				if fate != fateAccept {
					limit, _ := pollCons.DeliveryCountLimit(ctx)
					ty = acktype.Release
					if fate == fatePoison || int(r.DeliveryCount) >= limit {
						cause := errors.New(errText(k))
						if fate == fatePoison {
							cause = errors.DeadLetter(cause)
						}
						err := pollCons.DeadLetter(ctx, r, cause)
						if err == nil {
							tl.mu.Lock()
							tl.copied[k] = true
							tl.mu.Unlock()
							continue
						}
						tl.unsettle(k)
						if errors.Is(err, kerr.TopicAuthorizationFailed) {
							failedHeld.Add(1) // left to this loop, which releases it
						}
					}
				}
				if err := pollCons.Acknowledge(r, ty); err != nil {
					fatal.CompareAndSwap(nil, fmt.Errorf("poll loop: Acknowledge %d/%d: %w", k.p, k.off, err))
					return
				}
			}
		}
	})

	produced := run.produce(ctx)
	seen, stopInspecting := run.inspect(ctx)
	start := time.Now()
	stopDLQFaults := make(chan struct{})
	dlqFaults := make(chan int, 1)
	go func() {
		dlqFaults <- injectDLQFaults(t, c, rand.New(rand.NewPCG(seed^0x5bd1e995, seed)), stopDLQFaults)
	}()
	faults := run.injectFaults([]chan time.Duration{stall}, produced)
	close(stopDLQFaults)
	nDLQFaults := <-dlqFaults
	c.ClearFaults()
	run.awaitDrained(ctx, &fatal)
	stopInspecting()
	cancel()
	wg.Wait()
	var stats []string
	for i, cons := range consumers {
		stats = append(stats, cons.ProcessStats().String())
		run.closeConsumer(fmt.Sprintf("consumer %d", i), cons)
	}
	run.failOnFatal(&fatal)

	// Every copy in the dead-letter topic, by the record it copies.
	copies := readAllChaosDLQ(t, run.clientOpts)
	var badCopies []string
	inDLQ := map[chaosKey]int{}
	for _, r := range copies {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		p, _ := strconv.Atoi(h[shareconsumer.HeaderDeadLetterPartition])
		off, _ := strconv.ParseInt(h[shareconsumer.HeaderDeadLetterOffset], 10, 64)
		k := chaosKey{int32(p), off}
		inDLQ[k]++
		dc, _ := strconv.Atoi(h[shareconsumer.HeaderDeadLetterDeliveryCount])
		fate := k.fate(seed)
		switch {
		case h[shareconsumer.HeaderDeadLetterTopic] != chaosTopic || h[shareconsumer.HeaderDeadLetterGroup] != chaosGroup:
			badCopies = append(badCopies, fmt.Sprintf("%d/%d: headers %v", k.p, k.off, h))
		case fate == fateAccept:
			badCopies = append(badCopies, fmt.Sprintf("%d/%d: dead-lettered though handlers accept it", k.p, k.off))
		case h[shareconsumer.HeaderDeadLetterMessage] != errText(k):
			badCopies = append(badCopies, fmt.Sprintf("%d/%d: message %q", k.p, k.off, h[shareconsumer.HeaderDeadLetterMessage]))
		case fate == fateFail && dc != dlqChaosLimit, fate == fatePoison && (dc < 1 || dc > dlqChaosLimit):
			badCopies = append(badCopies, fmt.Sprintf("%d/%d (fate %d): delivery count %d", k.p, k.off, fate, dc))
		case len(r.Value) == 0:
			badCopies = append(badCopies, fmt.Sprintf("%d/%d: no value", k.p, k.off))
		case int32(r.Partition) != k.p%2:
			badCopies = append(badCopies, fmt.Sprintf("%d/%d: on dead-letter partition %d", k.p, k.off, r.Partition))
		}
	}

	iv := &chaosInvariants{t: t}
	var lost, twice, archivedEarly []string
	notDone := run.notDone()
	archivedWithoutCopy := 0
	for k, sr := range seen.final {
		fate := k.fate(seed)
		switch {
		case sr.State < 0:
			lost = append(lost, fmt.Sprintf("%d/%d went from one terminal state to the other", k.p, k.off))
		case fate != fateAccept && sr.State == testbroker.ShareAcknowledged && inDLQ[k] == 0:
			lost = append(lost, fmt.Sprintf("%d/%d (fate %d) ACKNOWLEDGED without a copy in the dead-letter topic", k.p, k.off, fate))
		case fate != fateAccept && sr.State == testbroker.ShareArchived && inDLQ[k] == 0:
			archivedWithoutCopy++
			if seen.maxDC[k] < dlqChaosLimit {
				archivedEarly = append(archivedEarly, fmt.Sprintf("%d/%d archived after %d deliveries", k.p, k.off, seen.maxDC[k]))
			}
		}
	}
	tl.mu.Lock()
	for k, n := range inDLQ {
		if n > 1 && !tl.unsettled[k] {
			twice = append(twice, fmt.Sprintf("%d/%d: %d copies", k.p, k.off, n))
		}
	}
	bad := tl.bad
	tl.mu.Unlock()
	iv.check("every offset ACKNOWLEDGED or ARCHIVED", len(notDone) == 0, "%d not: %v", len(notDone), first(notDone))
	iv.check("every failing record ACKNOWLEDGED is in the dead-letter topic", len(lost) == 0, "%d: %v", len(lost), first(lost))
	iv.check("the dead-letter copies are of failing records, with their headers", len(badCopies) == 0, "%d: %v", len(badCopies), first(badCopies))
	iv.check("each record dead-lettered once, unless its settle failed", len(twice) == 0, "%d: %v", len(twice), first(twice))
	iv.check("no record archived without a copy before its last delivery", len(archivedEarly) == 0, "%d: %v", len(archivedEarly), first(archivedEarly))
	iv.check("no consumer released a record at its limit without dead-lettering, or rejected", len(bad) == 0, "%d: %v", len(bad), first(bad))
	iv.check("some dead-letter produces failed while the record was held", failedHeld.Load() > 0, "none of %d injected faults failed one", nDLQFaults)

	dups := 0
	for _, n := range inDLQ {
		dups += n - 1
	}
	t.Logf("seed %d: %d records on %d partitions; faults for %v (%s); %d copies of %d records in the dead-letter topic (%d extra after a failed settle); %d failing records archived by the broker without a copy (its last dead-letter produce failed, or every delivery's lock was lost)",
		seed, run.total, run.parts, time.Since(start).Round(time.Millisecond), faults, len(copies), len(inDLQ), dups, archivedWithoutCopy)
	t.Logf("%d dead-letter produce faults injected; %d produces failed by them with the record held", nDLQFaults, failedHeld.Load())
	t.Logf("stats: %s", strings.Join(stats, " | "))
	iv.log()
}

// injectDLQFaults fails produces to the dead-letter topic with TOPIC_AUTHORIZATION_FAILED (not
// retried by the producer): every 100-300 ms a fault for the next one or two, until stop is
// closed (the caller clears what is left). It returns how many faults it injected.
func injectDLQFaults(t *testing.T, c *testbroker.Cluster, rng *rand.Rand, stop <-chan struct{}) int {
	n := 0
	for {
		select {
		case <-stop:
			return n
		case <-time.After(time.Duration(100+rng.IntN(200)) * time.Millisecond):
		}
		if _, err := c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{kmsg.Produce}, Topic: chaosDLQ, Err: kerr.TopicAuthorizationFailed, Times: 1 + rng.IntN(2)}); err != nil {
			t.Errorf("InjectFault: %v", err)
			return n
		}
		n++
	}
}

// readAllChaosDLQ reads every record of the chaos dead-letter topic.
func readAllChaosDLQ(t *testing.T, clientOpts []kgo.Opt) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(clientOpts, kgo.ConsumeTopics(chaosDLQ), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, chaosDLQ)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d dead-letter records", len(out), want)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

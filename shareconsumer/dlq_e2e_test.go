package shareconsumer_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// dlqTopic is the dead-letter topic of these tests.
const dlqTopic = "t.dlq"

// createDLQ creates the dead-letter topic with partitions partitions.
func (e *e2eEnv) createDLQ(t *testing.T, partitions int32) {
	t.Helper()
	res, err := e.adm(t).CreateTopics(e2eCtx(t, 10*time.Second), partitions, 1, nil, dlqTopic)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.Topic)
	}
}

// produceWithHeaders produces one record with a key and headers to partition p of the test
// topic and returns its offset.
func (e *e2eEnv) produceWithHeaders(t *testing.T, p int32, key, value string, headers ...kgo.RecordHeader) int64 {
	t.Helper()
	cl := e.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	r := &kgo.Record{Topic: e2eTopic, Partition: p, Key: []byte(key), Value: []byte(value), Headers: headers}
	require.NoError(t, cl.ProduceSync(e2eCtx(t, 10*time.Second), r).FirstErr())
	return r.Offset
}

// readDLQ reads the dead-letter topic from its start until it holds n records, and requires its
// partitions to hold no more than n.
func (e *e2eEnv) readDLQ(t *testing.T, n int) []*kgo.Record {
	t.Helper()
	ctx := e2eCtx(t, 10*time.Second)
	ends, err := e.adm(t).ListEndOffsets(ctx, dlqTopic)
	require.NoError(t, err)
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	require.EqualValues(t, n, total, "records in the dead-letter topic")
	cl := e.client(t, kgo.ConsumeTopics(dlqTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d dead-letter records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) { t.Logf("%s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// header returns the value of r's header key, and whether it has exactly one.
func header(r *kgo.Record, key string) (string, bool) {
	var v string
	n := 0
	for _, h := range r.Headers {
		if h.Key == key {
			v = string(h.Value)
			n++
		}
	}
	return v, n == 1
}

// requireDeadLetterHeaders checks the headers a dead-letter copy of the record at p/off must
// carry.
func requireDeadLetterHeaders(t *testing.T, r *kgo.Record, group string, p int32, off int64, dc int, msg string, after time.Time) {
	t.Helper()
	want := map[string]string{
		shareconsumer.HeaderDeadLetterTopic:         e2eTopic,
		shareconsumer.HeaderDeadLetterPartition:     strconv.Itoa(int(p)),
		shareconsumer.HeaderDeadLetterOffset:        strconv.FormatInt(off, 10),
		shareconsumer.HeaderDeadLetterGroup:         group,
		shareconsumer.HeaderDeadLetterDeliveryCount: strconv.Itoa(dc),
		shareconsumer.HeaderDeadLetterMessage:       msg,
	}
	for k, v := range want {
		got, ok := header(r, k)
		assert.True(t, ok, "one header %s", k)
		assert.Equal(t, v, got, "header %s", k)
	}
	ts, ok := header(r, shareconsumer.HeaderDeadLetterTimestamp)
	require.True(t, ok, "one header %s", shareconsumer.HeaderDeadLetterTimestamp)
	ms, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	at := time.UnixMilli(ms)
	assert.False(t, at.Before(after.Truncate(time.Millisecond)), "dead-lettered at %v, before the test's %v", at, after)
	assert.False(t, at.After(time.Now()), "dead-lettered at %v, in the future", at)
	rts, ok := header(r, shareconsumer.HeaderDeadLetterRecordTimestamp)
	require.True(t, ok, "one header %s", shareconsumer.HeaderDeadLetterRecordTimestamp)
	ms, err = strconv.ParseInt(rts, 10, 64)
	require.NoError(t, err)
	assert.False(t, time.UnixMilli(ms).After(at), "the record's timestamp %v, after its dead-lettering at %v", time.UnixMilli(ms), at)
	assert.False(t, time.UnixMilli(ms).Before(after.Truncate(time.Millisecond)), "the record's timestamp %v, before the test's %v", time.UnixMilli(ms), after)
}

// dlqOutcomes collects Process's outcomes and the dead-letter hook's events.
type dlqOutcomes struct {
	mu     sync.Mutex
	events []shareconsumer.DeadLetterEvent
	ch     chan shareconsumer.RecordOutcome
}

func newDLQOutcomes() *dlqOutcomes {
	return &dlqOutcomes{ch: make(chan shareconsumer.RecordOutcome, 100)}
}

func (d *dlqOutcomes) OnDeadLetter(ev shareconsumer.DeadLetterEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, ev)
}

func (d *dlqOutcomes) opt() shareconsumer.ProcessOpt {
	return shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) { d.ch <- o })
}

// next waits for the next outcome.
func (d *dlqOutcomes) next(t *testing.T) shareconsumer.RecordOutcome {
	t.Helper()
	select {
	case o := <-d.ch:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("no record outcome in 20s")
		return shareconsumer.RecordOutcome{}
	}
}

func (d *dlqOutcomes) hookEvents() []shareconsumer.DeadLetterEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]shareconsumer.DeadLetterEvent(nil), d.events...)
}

// runProcess runs Process on c with h and opts until the test ends it with the returned stop,
// which waits for Process to return and requires it to return nil.
func runProcess(t *testing.T, c *shareconsumer.Consumer, h shareconsumer.Handler, opts ...shareconsumer.ProcessOpt) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Process(ctx, h, opts...) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return stop
}

// TestE2EDeadLetterAfterLastDelivery fails a record on every delivery: with the group's limit
// at 2 it is released once, then produced to the dead-letter topic, once, with its key, value,
// headers and the dead-letter headers, accepted, and not delivered again. On kfake, which keeps
// no group value for share.delivery.count.limit, the consumer reads the broker config instead.
func TestE2EDeadLetterAfterLastDelivery(t *testing.T) {
	forEachBroker(t, e2eSetup{partitions: 2, deliveryLimit: 2}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 1)
		start := time.Now()
		off := env.produceWithHeaders(t, 1, "k", "v", kgo.RecordHeader{Key: "trace", Value: []byte("abc")},
			kgo.RecordHeader{Key: shareconsumer.HeaderDeadLetterMessage, Value: []byte("an earlier failure")})
		hooks := newDLQOutcomes()
		c := env.newConsumer(t, group, shareconsumer.Hooks(hooks))
		limit, err := c.DeliveryCountLimit(e2eCtx(t, 10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 2, limit)

		boom := fmt.Errorf("boom")
		stop := runProcess(t, c, func(context.Context, *shareconsumer.Record) error { return boom },
			shareconsumer.DeadLetterTopic(dlqTopic), hooks.opt())
		first := hooks.next(t)
		assert.Equal(t, acktype.Release, first.Ack)
		assert.False(t, first.DeadLettered)
		assert.EqualValues(t, 1, first.Record.DeliveryCount)
		second := hooks.next(t)
		assert.Equal(t, acktype.Accept, second.Ack)
		assert.True(t, second.DeadLettered)
		assert.NoError(t, second.DeadLetterErr)
		assert.Equal(t, boom, second.Err)
		assert.EqualValues(t, 2, second.Record.DeliveryCount)
		env.waitSPSO(t, group, []int32{1}, off+1)
		if env.tb != nil {
			sr, ok := env.tb.ShareRecord(group, e2eTopic, 1, off)
			if ok { // the broker may have forgotten it past the start offset
				assert.Equal(t, testbroker.ShareAcknowledged, sr.State)
			}
		}
		stop()

		s := c.ProcessStats()
		assert.EqualValues(t, 2, s.Delivered, "%s", s)
		assert.EqualValues(t, 1, s.DeadLettered, "%s", s)
		assert.EqualValues(t, 0, s.DeadLetterFailures, "%s", s)
		assert.EqualValues(t, 0, s.Accepted, "%s", s)
		assert.EqualValues(t, 1, s.Released, "%s", s)
		assert.Contains(t, s.String(), " dead_lettered=1 dead_letter_failures=0 ")

		evs := hooks.hookEvents()
		require.Len(t, evs, 1)
		assert.Equal(t, dlqTopic, evs[0].DeadLetterTopic)
		assert.Equal(t, boom, evs[0].Cause)
		assert.NoError(t, evs[0].Err)
		assert.Equal(t, off, evs[0].Record.Offset)

		recs := env.readDLQ(t, 1)
		r := recs[0]
		assert.Equal(t, "k", string(r.Key))
		assert.Equal(t, "v", string(r.Value))
		trace, ok := header(r, "trace")
		assert.True(t, ok)
		assert.Equal(t, "abc", trace)
		requireDeadLetterHeaders(t, r, group, 1, off, 2, "boom", start)
		assert.Len(t, r.Headers, 9, "the original header and the eight dead-letter headers: %v", r.Headers)
	})
}

// TestE2EDeadLetterPoison sends a record to the dead-letter topic on its first delivery when the
// handler says so (errors.DeadLetter), and a panic on the last delivery goes there too, with the
// panic's text; the copy lands on the record's partition modulo the topic's.
func TestE2EDeadLetterPoison(t *testing.T) {
	forEachBroker(t, e2eSetup{partitions: 3, deliveryLimit: 2}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 2)
		start := time.Now()
		poisonOff := env.produceWithHeaders(t, 2, "poison", "x")
		c := env.newConsumer(t, group)
		hooks := newDLQOutcomes()
		poison := fmt.Errorf("cannot parse")
		stop := runProcess(t, c, func(_ context.Context, r *shareconsumer.Record) error {
			if string(r.Key) == "poison" {
				return errors.DeadLetter(poison)
			}
			panic("bad record")
		}, shareconsumer.DeadLetterTopic(dlqTopic), hooks.opt())
		o := hooks.next(t)
		assert.True(t, o.DeadLettered)
		assert.EqualValues(t, 1, o.Record.DeliveryCount)
		assert.ErrorIs(t, o.Err, poison)
		assert.ErrorIs(t, o.Err, errors.ErrDeadLetter)
		env.waitSPSO(t, group, []int32{2}, poisonOff+1)
		recs := env.readDLQ(t, 1)
		assert.EqualValues(t, 0, recs[0].Partition, "partition 2 modulo 2")
		requireDeadLetterHeaders(t, recs[0], group, 2, poisonOff, 1, "cannot parse", start)

		panicOff := env.produceWithHeaders(t, 1, "panic", "y")
		o = hooks.next(t)
		assert.Equal(t, acktype.Release, o.Ack)
		o = hooks.next(t)
		assert.True(t, o.DeadLettered)
		var pe *errors.PanicError
		assert.ErrorAs(t, o.Err, &pe)
		env.waitSPSO(t, group, []int32{1}, panicOff+1)
		stop()
		recs = env.readDLQ(t, 2)
		var last *kgo.Record
		for _, r := range recs {
			if string(r.Key) == "panic" {
				last = r
			}
		}
		require.NotNil(t, last)
		assert.EqualValues(t, 1, last.Partition, "partition 1 modulo 2")
		requireDeadLetterHeaders(t, last, group, 1, panicOff, 2, "shareconsumer: handler panicked: bad record", start)
		s := c.ProcessStats()
		assert.EqualValues(t, 2, s.DeadLettered, "%s", s)
		assert.EqualValues(t, 2, s.Panics, "%s", s, "one per delivery")
	})
}

// TestE2EDeadLetterProduceFailsReleases dead-letters to a topic that does not exist, on a
// cluster that does not create topics: the produce fails with UNKNOWN_TOPIC_OR_PARTITION, the
// record is released and delivered again; once the topic exists, it goes there.
func TestE2EDeadLetterProduceFailsReleases(t *testing.T) {
	t.Parallel()
	env := startTestbroker(t, e2eSetup{noAutoCreate: true})
	const group = "g"
	env.prepareGroup(t, group)
	start := time.Now()
	off := env.produceWithHeaders(t, 0, "k", "v")
	hooks := newDLQOutcomes()
	cons := env.newConsumer(t, group, shareconsumer.Hooks(hooks), shareconsumer.DeadLetterTopic(dlqTopic))
	created := make(chan struct{})
	stop := runProcess(t, cons, func(ctx context.Context, r *shareconsumer.Record) error {
		if r.DeliveryCount > 1 {
			select {
			case <-created:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return errors.DeadLetter(nil)
	}, hooks.opt())
	o := hooks.next(t)
	assert.Equal(t, acktype.Release, o.Ack)
	assert.False(t, o.DeadLettered)
	var de *errors.DeadLetterError
	require.ErrorAs(t, o.DeadLetterErr, &de)
	assert.ErrorIs(t, de, kerr.UnknownTopicOrPartition)
	assert.Equal(t, dlqTopic, de.DeadLetterTopic)
	assert.Equal(t, off, de.Offset)
	evs := hooks.hookEvents()
	require.Len(t, evs, 1)
	assert.Equal(t, o.DeadLetterErr, evs[0].Err)

	require.NoError(t, env.tb.CreateTopic(dlqTopic, 1, nil))
	close(created)
	o = hooks.next(t)
	assert.True(t, o.DeadLettered)
	assert.EqualValues(t, 2, o.Record.DeliveryCount, "delivered again after the failed produce")
	env.waitSPSO(t, group, []int32{0}, off+1)
	stop()
	s := cons.ProcessStats()
	assert.EqualValues(t, 1, s.DeadLettered, "%s", s)
	assert.EqualValues(t, 1, s.DeadLetterFailures, "%s", s)
	assert.EqualValues(t, 1, s.Released, "%s", s)
	recs := env.readDLQ(t, 1)
	requireDeadLetterHeaders(t, recs[0], group, 0, off, 2, "record sent to the dead-letter topic by the handler", start)
}

// TestE2EDeadLetterWithoutTopicRejects: a handler's errors.DeadLetter with no dead-letter topic
// (here New's turned off for the Process call by NoDeadLetterTopic) rejects the record.
func TestE2EDeadLetterWithoutTopicRejects(t *testing.T) {
	onTestbroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		const group = "g"
		env.prepareGroup(t, group)
		env.createDLQ(t, 1)
		off := env.produceWithHeaders(t, 0, "k", "v")
		c := env.newConsumer(t, group, shareconsumer.DeadLetterTopic(dlqTopic))
		hooks := newDLQOutcomes()
		stop := runProcess(t, c, func(context.Context, *shareconsumer.Record) error { return errors.DeadLetter(nil) },
			hooks.opt(), shareconsumer.NoDeadLetterTopic())
		o := hooks.next(t)
		assert.Equal(t, acktype.Reject, o.Ack)
		assert.False(t, o.DeadLettered)
		env.waitSPSO(t, group, []int32{0}, off+1)
		stop()
		s := c.ProcessStats()
		assert.EqualValues(t, 1, s.Rejected, "%s", s)
		assert.EqualValues(t, 0, s.DeadLetterFailures, "%s", s)
		env.readDLQ(t, 0)
	})
}

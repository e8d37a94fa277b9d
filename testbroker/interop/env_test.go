package interop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// env is one cluster as the checks see it: its seeds, and a franz-go client that prepares what a
// check needs (topics, records, transactions) and reads back what the client under test wrote.
type env struct {
	broker string
	seeds  []string
	kcl    *kgo.Client
	adm    *kadm.Client
}

func newEnv(t *testing.T, broker string, seeds []string) *env {
	kcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("kgo: %v", err)
	}
	t.Cleanup(kcl.Close)
	return &env{broker: broker, seeds: seeds, kcl: kcl, adm: kadm.NewClient(kcl)}
}

// topic creates a topic with replication factor 1.
func (e *env) topic(ctx context.Context, name string, partitions int32, configs map[string]*string) error {
	resp, err := e.adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", name, resp.Err, resp.ErrMessage)
	}
	return nil
}

// produce writes values, in order, to one partition, as one produce call.
func (e *env) produce(ctx context.Context, topic string, partition int32, values ...string) error {
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	return e.kcl.ProduceSync(ctx, recs...).FirstErr()
}

// produceBatch writes values with the given timestamps to one partition in one record batch, so
// that a timestamp lookup has to look inside the batch.
func (e *env) produceBatch(ctx context.Context, topic string, partition int32, values []string, ts []time.Time) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v), Timestamp: ts[i]}
	}
	// Given at once and lingered on, the records go in one batch.
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// txn writes values to one partition in one transaction, committed or aborted.
func (e *env) txn(ctx context.Context, id, topic string, partition int32, commit bool, values ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(id))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("transactional produce: %w", err)
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// consumed reads one partition from its start until it has n records, with franz-go.
func (e *env) consumed(ctx context.Context, topic string, partition int32, n int, readCommitted bool) ([]*kgo.Record, error) {
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("read %s/%d: %d of %d records by the deadline", topic, partition, len(got), n)
		}
		if err := fs.Err0(); err != nil {
			return got, fmt.Errorf("read %s/%d: %w", topic, partition, err)
		}
		got = append(got, fs.Records()...)
	}
	return got, nil
}

// expectValues checks that topic/partition holds exactly values at offsets 0..n-1.
func (e *env) expectValues(ctx context.Context, topic string, partition int32, values []string) error {
	recs, err := e.consumed(ctx, topic, partition, len(values), false)
	if err != nil {
		return err
	}
	var got []string
	for i, r := range recs {
		if r.Offset != int64(i) {
			return mismatch(fmt.Sprintf("offset of record %d", i), i, r.Offset)
		}
		got = append(got, string(r.Value))
	}
	if !slices.Equal(got, values) {
		return mismatch("values", values, got)
	}
	return nil
}

// seq returns prefix-0, prefix-1, ... prefix-(n-1).
func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// tsBase is the timestamp of the first record of the timestamp checks; record i has tsBase+i s.
var tsBase = time.UnixMilli(1_700_000_000_000)

// tsRecords is what offsets-by-timestamp produces: 10 records a second apart, in one batch.
func (e *env) tsRecords(ctx context.Context, topic string) error {
	if err := e.topic(ctx, topic, 1, nil); err != nil {
		return err
	}
	ts := make([]time.Time, 10)
	for i := range ts {
		ts[i] = tsBase.Add(time.Duration(i) * time.Second)
	}
	return e.produceBatch(ctx, topic, 0, seq("ts", 10), ts)
}

// tsLookups are the lookups of offsets-by-timestamp and the offsets Kafka answers: a record's own
// timestamp finds it, one between two records finds the later, one past the last finds none (-1).
var tsLookups = []struct {
	at   time.Time
	want int64
}{
	{tsBase.Add(3 * time.Second), 3},
	{tsBase.Add(4500 * time.Millisecond), 5},
	{tsBase.Add(time.Hour), -1},
}

// txnRecords prepares what read-committed reads: an aborted transaction of 3 records, then a
// committed one of 2, in partition 0 of topic.
func (e *env) txnRecords(ctx context.Context, topic string) error {
	if err := e.topic(ctx, topic, 1, nil); err != nil {
		return err
	}
	if err := e.txn(ctx, "kgo-"+topic, topic, 0, false, seq("aborted", 3)...); err != nil {
		return fmt.Errorf("aborted transaction: %w", err)
	}
	if err := e.txn(ctx, "kgo-"+topic, topic, 0, true, seq("committed", 2)...); err != nil {
		return fmt.Errorf("committed transaction: %w", err)
	}
	return nil
}

// expectCommittedOnly checks what the transactional checks wrote: read_committed sees only the
// committed values, read_uncommitted every value.
func (e *env) expectCommittedOnly(ctx context.Context, topic string, committed []string, all int) error {
	recs, err := e.consumed(ctx, topic, 0, len(committed), true)
	if err != nil {
		return err
	}
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	if !slices.Equal(got, committed) {
		return mismatch("read_committed values", committed, got)
	}
	if recs, err = e.consumed(ctx, topic, 0, all, false); err != nil {
		return err
	}
	if len(recs) != all {
		return mismatch("read_uncommitted records", all, len(recs))
	}
	return nil
}

// groupOffsets returns the committed offset of each partition of topic in group.
func (e *env) groupOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resp, err := e.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, o.Err
		}
		out[p] = o.At
	}
	return out, nil
}

package interop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// rec is a record as a client under test consumed it.
type rec struct {
	partition int32
	offset    int64
	value     string
}

// ops are what a client under test can do, each through the client's own API. A nil op is a
// check the client has no API for; na says why.
type ops struct {
	// metadata returns how many brokers the cluster has and how many partitions "seeded" has.
	metadata func(ctx context.Context) (brokers, seededPartitions int, err error)
	// createTopic creates a topic, replication factor 1; partitions counts a topic's partitions.
	createTopic func(ctx context.Context, name string, partitions int32) error
	partitions  func(ctx context.Context, topic string) (int, error)
	// produce writes values in order to one partition, compressed with codec (none, gzip,
	// snappy, lz4, zstd), and returns once every one is acknowledged.
	produce func(ctx context.Context, topic string, partition int32, codec string, values []string) error
	// read consumes one partition from its start, without a group, until it has n records.
	read func(ctx context.Context, topic string, partition int32, n int, readCommitted bool) ([]rec, error)
	// eof reads one partition from its start until the client reports its end, and returns the
	// offset the client reports the end at.
	eof func(ctx context.Context, topic string, partition int32) (int64, error)
	// groupConsume joins group (protocol "classic" or "consumer", KIP-848) subscribed to topic,
	// consumes n records, commits what it consumed, and leaves.
	groupConsume func(ctx context.Context, protocol, group, topic string, n int) ([]rec, error)
	// listGroups returns each group's protocol type; describeGroup a group's state.
	listGroups    func(ctx context.Context) (map[string]string, error)
	describeGroup func(ctx context.Context, group string) (string, error)
	deleteGroup   func(ctx context.Context, group string) error
	// listOffsets returns a partition's earliest and latest offsets.
	listOffsets func(ctx context.Context, topic string, partition int32) (earliest, latest int64, err error)
	// offsetForTime returns the offset of the first record at or after at, -1 for none.
	offsetForTime func(ctx context.Context, topic string, partition int32, at time.Time) (int64, error)
	// deleteRecords deletes the records of a partition below before.
	deleteRecords func(ctx context.Context, topic string, partition int32, before int64) error
	// describeConfig returns a topic config's value.
	describeConfig func(ctx context.Context, topic, key string) (string, error)
	// txnProduce writes values to one partition in one transaction, committed or aborted.
	txnProduce func(ctx context.Context, id, topic string, partition int32, commit bool, values []string) error
}

// newClient builds a client's checks from its ops; na must give the reason for every nil op.
func newClient(name string, o ops, na map[string]string) client {
	c := client{name: name, checks: map[string]func(context.Context, *env) error{}, na: na}
	add := func(check string, have bool, run func(context.Context, *env) error) {
		if have {
			c.checks[check] = run
		}
	}
	add("metadata", o.metadata != nil, func(ctx context.Context, e *env) error {
		brokers, parts, err := o.metadata(ctx)
		if err != nil {
			return err
		}
		if brokers != 3 || parts != 3 {
			return mismatch("brokers and partitions of seeded", "3 3", fmt.Sprint(brokers, " ", parts))
		}
		return nil
	})
	add("create-topic", o.createTopic != nil, func(ctx context.Context, e *env) error {
		if err := o.createTopic(ctx, "created", 4); err != nil {
			return err
		}
		// Metadata may lag a creation by a moment on a real cluster; poll as a client would.
		return waitFor(ctx, func() error {
			n, err := o.partitions(ctx, "created")
			if err == nil && n != 4 {
				err = mismatch("partitions of created", 4, n)
			}
			return err
		})
	})
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		add("produce-"+codec, o.produce != nil, func(ctx context.Context, e *env) error {
			topic := "produce-" + codec
			if err := e.topic(ctx, topic, 1, nil); err != nil {
				return err
			}
			values := seq(codec, 10)
			if err := o.produce(ctx, topic, 0, codec, values); err != nil {
				return err
			}
			return e.expectValues(ctx, topic, 0, values)
		})
	}
	add("consume-partition", o.read != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "by-partition", 2, nil); err != nil {
			return err
		}
		values := seq("p1", 5)
		if err := e.produce(ctx, "by-partition", 1, values...); err != nil {
			return err
		}
		got, err := o.read(ctx, "by-partition", 1, 5, false)
		if err != nil {
			return err
		}
		return expectRecs(got, 1, values)
	})
	add("partition-eof", o.eof != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "eof", 2, nil); err != nil {
			return err
		}
		// Partition 1 has data, partition 0 none: an answer that holds both, as a fetch of
		// both does, must still be read whole.
		if err := e.produce(ctx, "eof", 1, seq("eof", 5)...); err != nil {
			return err
		}
		at, err := o.eof(ctx, "eof", 1)
		if err != nil {
			return err
		}
		if at != 5 {
			return mismatch("end-of-partition offset", 5, at)
		}
		return nil
	})
	for _, proto := range []string{"classic", "consumer"} {
		check := "group-classic"
		if proto == "consumer" {
			check = "group-848"
		}
		add(check, o.groupConsume != nil && (proto == "classic" || na[check] == ""), func(ctx context.Context, e *env) error {
			topic, group := "group-"+proto, "group-"+proto+"-g"
			if err := e.topic(ctx, topic, 3, nil); err != nil {
				return err
			}
			var want []string
			for p := range int32(3) {
				values := seq(fmt.Sprintf("%s-p%d", proto, p), 10)
				want = append(want, values...)
				if err := e.produce(ctx, topic, p, values...); err != nil {
					return err
				}
			}
			got, err := o.groupConsume(ctx, proto, group, topic, 30)
			if err != nil {
				return err
			}
			var values []string
			for _, r := range got {
				values = append(values, r.value)
			}
			slices.Sort(values)
			slices.Sort(want)
			if !slices.Equal(values, want) {
				return mismatch("values consumed by the group", want, values)
			}
			offsets, err := e.groupOffsets(ctx, group, topic)
			if err != nil {
				return err
			}
			if wantOff := map[int32]int64{0: 10, 1: 10, 2: 10}; !maps.Equal(offsets, wantOff) {
				return mismatch("committed offsets", wantOff, offsets)
			}
			return nil
		})
	}
	add("resume-committed", o.groupConsume != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "resume", 1, nil); err != nil {
			return err
		}
		values := seq("resume", 20)
		if err := e.produce(ctx, "resume", 0, values...); err != nil {
			return err
		}
		first, err := o.groupConsume(ctx, "classic", "resume-g", "resume", 10)
		if err != nil {
			return fmt.Errorf("first consumer: %w", err)
		}
		if err := expectRecs(first, 0, values[:10]); err != nil {
			return fmt.Errorf("first consumer: %w", err)
		}
		second, err := o.groupConsume(ctx, "classic", "resume-g", "resume", 1)
		if err != nil {
			return fmt.Errorf("second consumer: %w", err)
		}
		if len(second) != 1 || second[0].offset != 10 || second[0].value != values[10] {
			return mismatch("first record of the second consumer", rec{0, 10, values[10]}, second)
		}
		return nil
	})
	add("group-admin", o.listGroups != nil, func(ctx context.Context, e *env) error {
		// The group of group-classic, empty since its consumer left.
		const group = "group-classic-g"
		groups, err := o.listGroups(ctx)
		if err != nil {
			return err
		}
		if pt, ok := groups[group]; !ok || pt != "consumer" {
			return mismatch("listed groups", group+" of protocol type consumer", groups)
		}
		state, err := o.describeGroup(ctx, group)
		if err != nil {
			return err
		}
		if state != "Empty" {
			return mismatch("state of "+group, "Empty", state)
		}
		if err := o.deleteGroup(ctx, group); err != nil {
			return err
		}
		if groups, err = o.listGroups(ctx); err != nil {
			return err
		}
		if _, ok := groups[group]; ok {
			return fmt.Errorf("%s still listed after its deletion: %v", group, groups)
		}
		return nil
	})
	add("list-offsets", o.listOffsets != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "offsets", 1, nil); err != nil {
			return err
		}
		if err := e.produce(ctx, "offsets", 0, seq("o", 7)...); err != nil {
			return err
		}
		first, last, err := o.listOffsets(ctx, "offsets", 0)
		if err != nil {
			return err
		}
		if first != 0 || last != 7 {
			return mismatch("earliest and latest", "0 7", fmt.Sprint(first, " ", last))
		}
		return nil
	})
	add("offsets-by-timestamp", o.offsetForTime != nil, func(ctx context.Context, e *env) error {
		if err := e.tsRecords(ctx, "by-time"); err != nil {
			return err
		}
		for _, l := range tsLookups {
			got, err := o.offsetForTime(ctx, "by-time", 0, l.at)
			if err != nil {
				return err
			}
			if got != l.want {
				return mismatch(fmt.Sprintf("offset for %s after the first record", l.at.Sub(tsBase)), l.want, got)
			}
		}
		return nil
	})
	add("delete-records", o.deleteRecords != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "deleted", 1, nil); err != nil {
			return err
		}
		if err := e.produce(ctx, "deleted", 0, seq("d", 10)...); err != nil {
			return err
		}
		if err := o.deleteRecords(ctx, "deleted", 0, 4); err != nil {
			return err
		}
		first, last, err := e.offsets(ctx, "deleted")
		if err != nil {
			return err
		}
		if first != 4 || last != 10 {
			return mismatch("earliest and latest after deleting below 4", "4 10", fmt.Sprint(first, " ", last))
		}
		return nil
	})
	add("describe-configs", o.describeConfig != nil, func(ctx context.Context, e *env) error {
		v := "12345"
		if err := e.topic(ctx, "configured", 1, map[string]*string{"retention.ms": &v}); err != nil {
			return err
		}
		got, err := o.describeConfig(ctx, "configured", "retention.ms")
		if err != nil {
			return err
		}
		if got != v {
			return mismatch("retention.ms", v, got)
		}
		return nil
	})
	add("txn-commit", o.txnProduce != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "txn-commit", 1, nil); err != nil {
			return err
		}
		values := seq("committed", 3)
		if err := o.txnProduce(ctx, name+"-commit", "txn-commit", 0, true, values); err != nil {
			return err
		}
		return e.expectCommittedOnly(ctx, "txn-commit", values, 3)
	})
	add("txn-abort", o.txnProduce != nil, func(ctx context.Context, e *env) error {
		if err := e.topic(ctx, "txn-abort", 1, nil); err != nil {
			return err
		}
		id := name + "-abort"
		if err := o.txnProduce(ctx, id, "txn-abort", 0, false, seq("aborted", 3)); err != nil {
			return fmt.Errorf("aborted transaction: %w", err)
		}
		values := seq("committed", 2)
		if err := o.txnProduce(ctx, id, "txn-abort", 0, true, values); err != nil {
			return fmt.Errorf("committed transaction: %w", err)
		}
		return e.expectCommittedOnly(ctx, "txn-abort", values, 5)
	})
	add("read-committed", o.read != nil && na["read-committed"] == "", func(ctx context.Context, e *env) error {
		if err := e.txnRecords(ctx, "read-committed"); err != nil {
			return fmt.Errorf("prepare with franz-go: %w", err)
		}
		got, err := o.read(ctx, "read-committed", 0, 2, true)
		if err != nil {
			return err
		}
		var values []string
		for _, r := range got {
			values = append(values, r.value)
		}
		if want := seq("committed", 2); !slices.Equal(values, want) {
			return mismatch("values read_committed", want, values)
		}
		return nil
	})
	return c
}

// expectRecs checks records read from one partition: values at offsets 0..n-1.
func expectRecs(got []rec, partition int32, values []string) error {
	if len(got) != len(values) {
		return mismatch("records", len(values), len(got))
	}
	for i, r := range got {
		if want := (rec{partition, int64(i), values[i]}); r != want {
			return mismatch(fmt.Sprintf("record %d", i), want, r)
		}
	}
	return nil
}

// offsets returns a single-partition topic's earliest and latest offsets, asked with franz-go.
func (e *env) offsets(ctx context.Context, topic string) (int64, int64, error) {
	start, err := e.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	end, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	s, _ := start.Lookup(topic, 0)
	en, _ := end.Lookup(topic, 0)
	if s.Err != nil {
		return 0, 0, s.Err
	}
	if en.Err != nil {
		return 0, 0, en.Err
	}
	return s.Offset, en.Offset, nil
}

// sortRecs orders records by partition, then offset.
func sortRecs(rs []rec) []rec {
	slices.SortFunc(rs, func(a, b rec) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
	return rs
}

package interop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluentClient is confluent-kafka-go with the librdkafka it bundles (2.6): the client every
// librdkafka-based one (Python, .NET, Node) shares its protocol code with.
func confluentClient(seeds []string) client {
	c := confluentOps{seeds: strings.Join(seeds, ",")}
	return newClient("confluent-kafka-go", ops{
		metadata:       c.metadata,
		createTopic:    c.createTopic,
		partitions:     c.partitions,
		produce:        c.produce,
		read:           c.read,
		eof:            c.eof,
		groupConsume:   c.groupConsume,
		listGroups:     c.listGroups,
		describeGroup:  c.describeGroup,
		deleteGroup:    c.deleteGroup,
		listOffsets:    c.listOffsets,
		offsetForTime:  c.offsetForTime,
		deleteRecords:  c.deleteRecords,
		describeConfig: c.describeConfig,
		txnProduce:     c.txnProduce,
	}, nil)
}

type confluentOps struct{ seeds string }

func (c confluentOps) config(kv ...any) *kafka.ConfigMap {
	// log_level 4: librdkafka's warnings (a Fetch it cannot parse) and worse, not its info lines.
	cm := &kafka.ConfigMap{"bootstrap.servers": c.seeds, "client.id": "interop-librdkafka", "log_level": 4}
	for i := 0; i < len(kv); i += 2 {
		(*cm)[kv[i].(string)] = kv[i+1]
	}
	return cm
}

func (c confluentOps) admin() (*kafka.AdminClient, error) { return kafka.NewAdminClient(c.config()) }

// ms is what is left of ctx's time in milliseconds, for librdkafka's calls that take a timeout.
func ms(ctx context.Context) int {
	if d, ok := ctx.Deadline(); ok {
		return max(int(time.Until(d).Milliseconds()), 1)
	}
	return 10_000
}

func (c confluentOps) metadata(ctx context.Context) (int, int, error) {
	adm, err := c.admin()
	if err != nil {
		return 0, 0, err
	}
	defer adm.Close()
	topic := "seeded"
	md, err := adm.GetMetadata(&topic, false, ms(ctx))
	if err != nil {
		return 0, 0, err
	}
	return len(md.Brokers), len(md.Topics[topic].Partitions), nil
}

func (c confluentOps) createTopic(ctx context.Context, name string, partitions int32) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: name, NumPartitions: int(partitions), ReplicationFactor: 1}})
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return r.Error
		}
	}
	return nil
}

func (c confluentOps) partitions(ctx context.Context, topic string) (int, error) {
	adm, err := c.admin()
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	md, err := adm.GetMetadata(&topic, false, ms(ctx))
	if err != nil {
		return 0, err
	}
	t := md.Topics[topic]
	if t.Error.Code() != kafka.ErrNoError {
		return 0, t.Error
	}
	return len(t.Partitions), nil
}

func (c confluentOps) produce(ctx context.Context, topic string, partition int32, codec string, values []string) error {
	p, err := kafka.NewProducer(c.config("compression.type", codec, "acks", "all", "linger.ms", 5))
	if err != nil {
		return err
	}
	defer p.Close()
	return produceAll(ctx, p, topic, partition, values)
}

// produceAll produces values in order and waits for every delivery report.
func produceAll(ctx context.Context, p *kafka.Producer, topic string, partition int32, values []string) error {
	reports := make(chan kafka.Event, len(values))
	for _, v := range values {
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition}, Value: []byte(v)}
		if err := p.Produce(m, reports); err != nil {
			return err
		}
	}
	for range values {
		select {
		case ev := <-reports:
			if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
		case <-ctx.Done():
			return fmt.Errorf("delivery reports: %w", ctx.Err())
		}
	}
	return nil
}

// assigned is a consumer given one partition from its start, without subscribing; librdkafka
// wants a group id all the same, which it uses for nothing here.
func (c confluentOps) assigned(topic string, partition int32, kv ...any) (*kafka.Consumer, error) {
	cons, err := kafka.NewConsumer(c.config(append([]any{"group.id", "interop-unused", "enable.auto.commit", false}, kv...)...))
	if err != nil {
		return nil, err
	}
	if err := cons.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: partition, Offset: kafka.OffsetBeginning}}); err != nil {
		cons.Close()
		return nil, err
	}
	return cons, nil
}

func (c confluentOps) read(ctx context.Context, topic string, partition int32, n int, readCommitted bool) ([]rec, error) {
	iso := "read_uncommitted"
	if readCommitted {
		iso = "read_committed"
	}
	cons, err := c.assigned(topic, partition, "isolation.level", iso)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	var got []rec
	for len(got) < n {
		if ctx.Err() != nil {
			return got, fmt.Errorf("read %d of %d records: %w", len(got), n, ctx.Err())
		}
		switch ev := cons.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, rec{ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset), string(ev.Value)})
		case kafka.Error:
			return got, ev
		}
	}
	return got, nil
}

func (c confluentOps) eof(ctx context.Context, topic string, partition int32) (int64, error) {
	cons, err := c.assigned(topic, partition, "enable.partition.eof", true)
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	for ctx.Err() == nil {
		switch ev := cons.Poll(100).(type) {
		case kafka.PartitionEOF:
			return int64(ev.Offset), nil
		case kafka.Error:
			return 0, ev
		}
	}
	return 0, fmt.Errorf("no end of partition reported: %w", ctx.Err())
}

func (c confluentOps) groupConsume(ctx context.Context, protocol, group, topic string, n int) ([]rec, error) {
	kv := []any{"group.id", group, "auto.offset.reset", "earliest", "enable.auto.commit", false, "group.protocol", protocol}
	if protocol == "classic" {
		kv = append(kv, "heartbeat.interval.ms", 200)
	}
	cons, err := kafka.NewConsumer(c.config(kv...))
	if err != nil {
		return nil, err
	}
	var got []rec
	err = cons.Subscribe(topic, nil)
	for err == nil && len(got) < n {
		if ctx.Err() != nil {
			err = fmt.Errorf("consumed %d of %d records: %w", len(got), n, ctx.Err())
			break
		}
		switch ev := cons.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, rec{ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset), string(ev.Value)})
			_, err = cons.CommitMessage(ev)
		case kafka.Error:
			err = ev
		}
	}
	return sortRecs(got), errors.Join(err, cons.Close()) // Close leaves the group
}

func (c confluentOps) listGroups(ctx context.Context) (map[string]string, error) {
	adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	res, err := adm.ListConsumerGroups(ctx)
	if err != nil {
		return nil, err
	}
	if len(res.Errors) > 0 {
		return nil, errors.Join(res.Errors...)
	}
	// librdkafka reports no protocol type, only whether a group is "simple" (has none).
	out := map[string]string{}
	for _, g := range res.Valid {
		out[g.GroupID] = "consumer"
		if g.IsSimpleConsumerGroup {
			out[g.GroupID] = ""
		}
	}
	return out, nil
}

func (c confluentOps) describeGroup(ctx context.Context, group string) (string, error) {
	adm, err := c.admin()
	if err != nil {
		return "", err
	}
	defer adm.Close()
	res, err := adm.DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		return "", err
	}
	if len(res.ConsumerGroupDescriptions) != 1 {
		return "", fmt.Errorf("describe %s: %+v", group, res)
	}
	d := res.ConsumerGroupDescriptions[0]
	if d.Error.Code() != kafka.ErrNoError {
		return "", d.Error
	}
	return d.State.String(), nil
}

func (c confluentOps) deleteGroup(ctx context.Context, group string) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	res, err := adm.DeleteConsumerGroups(ctx, []string{group})
	if err != nil {
		return err
	}
	for _, r := range res.ConsumerGroupResults {
		if r.Error.Code() != kafka.ErrNoError {
			return r.Error
		}
	}
	return nil
}

// listOffset asks the admin client for one partition's offset by spec.
func (c confluentOps) listOffset(ctx context.Context, topic string, partition int32, spec kafka.OffsetSpec) (int64, error) {
	adm, err := c.admin()
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	res, err := adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{{Topic: &topic, Partition: partition}: spec})
	if err != nil {
		return 0, err
	}
	for _, info := range res.ResultInfos { // keyed by a *string: one entry, read by iterating
		if info.Error.Code() != kafka.ErrNoError {
			return 0, info.Error
		}
		return int64(info.Offset), nil
	}
	return 0, fmt.Errorf("no result for %s/%d", topic, partition)
}

func (c confluentOps) listOffsets(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	first, err := c.listOffset(ctx, topic, partition, kafka.EarliestOffsetSpec)
	if err != nil {
		return 0, 0, err
	}
	last, err := c.listOffset(ctx, topic, partition, kafka.LatestOffsetSpec)
	return first, last, err
}

func (c confluentOps) offsetForTime(ctx context.Context, topic string, partition int32, at time.Time) (int64, error) {
	return c.listOffset(ctx, topic, partition, kafka.NewOffsetSpecForTimestamp(at.UnixMilli()))
}

func (c confluentOps) deleteRecords(ctx context.Context, topic string, partition int32, before int64) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	res, err := adm.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: partition, Offset: kafka.Offset(before)}})
	if err != nil {
		return err
	}
	for _, r := range res.DeleteRecordsResults {
		if r.TopicPartition.Error != nil {
			return r.TopicPartition.Error
		}
		if got := int64(r.DeletedRecords.LowWatermark); got != before {
			return mismatch("low watermark after DeleteRecords", before, got)
		}
	}
	return nil
}

func (c confluentOps) describeConfig(ctx context.Context, topic, key string) (string, error) {
	adm, err := c.admin()
	if err != nil {
		return "", err
	}
	defer adm.Close()
	res, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		return "", err
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return "", r.Error
		}
		if e, ok := r.Config[key]; ok {
			return e.Value, nil
		}
	}
	return "", fmt.Errorf("%s not in %+v", key, res)
}

func (c confluentOps) txnProduce(ctx context.Context, id, topic string, partition int32, commit bool, values []string) error {
	p, err := kafka.NewProducer(c.config("transactional.id", id, "linger.ms", 5))
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		return fmt.Errorf("InitTransactions: %w", err)
	}
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	if err := produceAll(ctx, p, topic, partition, values); err != nil {
		return err
	}
	if commit {
		return p.CommitTransaction(ctx)
	}
	return p.AbortTransaction(ctx)
}

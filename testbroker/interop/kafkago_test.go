package interop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// kafkaGoClient is segmentio/kafka-go: its Client for admin requests, Writer and Reader for data.
func kafkaGoClient(seeds []string) client {
	k := kafkaGoOps{seeds: seeds}
	return newClient("kafka-go", ops{
		metadata:       k.metadata,
		createTopic:    k.createTopic,
		partitions:     k.partitions,
		produce:        k.produce,
		read:           k.read,
		groupConsume:   k.groupConsume,
		listGroups:     k.listGroups,
		describeGroup:  k.describeGroup,
		deleteGroup:    k.deleteGroup,
		listOffsets:    k.listOffsets,
		offsetForTime:  k.offsetForTime,
		describeConfig: k.describeConfig,
	}, map[string]string{
		"partition-eof":  "no end-of-partition event",
		"group-848":      "classic consumer groups only",
		"delete-records": "no DeleteRecords API",
		"read-committed": "the Reader sends read_committed but does not drop aborted records (it reads them from kfake too)",
		"txn-commit":     "no transactional producer (only the raw InitProducerId/AddPartitionsToTxn/EndTxn requests)",
		"txn-abort":      "no transactional producer (only the raw InitProducerId/AddPartitionsToTxn/EndTxn requests)",
	})
}

type kafkaGoOps struct{ seeds []string }

// client returns a Client on a transport of its own, as each op is a new program. kafka-go's
// default transport is shared by the whole process and caches metadata (a topic created a moment
// ago is unknown to it, and produce fails at once with UNKNOWN_TOPIC_OR_PARTITION); the caller
// closes the transport's connections.
func (k kafkaGoOps) client() (*kafka.Client, func()) {
	tr := &kafka.Transport{}
	return &kafka.Client{Addr: kafka.TCP(k.seeds...), Timeout: 5 * time.Second, Transport: tr}, tr.CloseIdleConnections
}

func (k kafkaGoOps) topicMetadata(ctx context.Context, topic string) (*kafka.MetadataResponse, kafka.Topic, error) {
	cl, done := k.client()
	defer done()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, kafka.Topic{}, err
	}
	for _, t := range md.Topics {
		if t.Name == topic {
			return md, t, t.Error
		}
	}
	return md, kafka.Topic{}, fmt.Errorf("topic %s not in metadata", topic)
}

func (k kafkaGoOps) metadata(ctx context.Context) (int, int, error) {
	md, t, err := k.topicMetadata(ctx, "seeded")
	if err != nil {
		return 0, 0, err
	}
	return len(md.Brokers), len(t.Partitions), nil
}

func (k kafkaGoOps) createTopic(ctx context.Context, name string, partitions int32) error {
	cl, done := k.client()
	defer done()
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: name, NumPartitions: int(partitions), ReplicationFactor: 1},
	}})
	if err != nil {
		return err
	}
	return resp.Errors[name]
}

func (k kafkaGoOps) partitions(ctx context.Context, topic string) (int, error) {
	_, t, err := k.topicMetadata(ctx, topic)
	return len(t.Partitions), err
}

var kafkaGoCodecs = map[string]kafka.Compression{
	"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd,
}

func (k kafkaGoOps) produce(ctx context.Context, topic string, partition int32, codec string, values []string) error {
	w := &kafka.Writer{
		Addr:         kafka.TCP(k.seeds...),
		Topic:        topic,
		Balancer:     kafka.BalancerFunc(func(kafka.Message, ...int) int { return int(partition) }),
		Compression:  compress.Compression(kafkaGoCodecs[codec]),
		RequiredAcks: kafka.RequireAll,
		BatchSize:    len(values),
		BatchTimeout: 10 * time.Millisecond,
		Transport:    &kafka.Transport{},
	}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	return w.WriteMessages(ctx, msgs...)
}

func (k kafkaGoOps) read(ctx context.Context, topic string, partition int32, n int, readCommitted bool) ([]rec, error) {
	iso := kafka.ReadUncommitted
	if readCommitted {
		iso = kafka.ReadCommitted
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: k.seeds, Topic: topic, Partition: int(partition),
		MaxWait: 200 * time.Millisecond, IsolationLevel: iso,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		return nil, err
	}
	var got []rec
	for len(got) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return got, fmt.Errorf("read %d of %d records: %w", len(got), n, err)
		}
		got = append(got, rec{int32(m.Partition), m.Offset, string(m.Value)})
	}
	return got, nil
}

func (k kafkaGoOps) groupConsume(ctx context.Context, _ string, group, topic string, n int) ([]rec, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: k.seeds, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, JoinGroupBackoff: 100 * time.Millisecond,
	})
	var got []rec
	var err error
	for len(got) < n {
		var m kafka.Message
		if m, err = r.FetchMessage(ctx); err != nil {
			err = fmt.Errorf("consumed %d of %d records: %w", len(got), n, err)
			break
		}
		got = append(got, rec{int32(m.Partition), m.Offset, string(m.Value)})
		if err = r.CommitMessages(ctx, m); err != nil {
			break
		}
	}
	return sortRecs(got), errors.Join(err, r.Close()) // Close leaves the group
}

func (k kafkaGoOps) listGroups(ctx context.Context) (map[string]string, error) {
	cl, done := k.client()
	defer done()
	resp, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	out := map[string]string{}
	for _, g := range resp.Groups {
		out[g.GroupID] = g.ProtocolType
	}
	return out, nil
}

func (k kafkaGoOps) describeGroup(ctx context.Context, group string) (string, error) {
	cl, done := k.client()
	defer done()
	resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return "", err
	}
	if len(resp.Groups) != 1 {
		return "", fmt.Errorf("describe %s: %+v", group, resp.Groups)
	}
	return resp.Groups[0].GroupState, resp.Groups[0].Error
}

func (k kafkaGoOps) deleteGroup(ctx context.Context, group string) error {
	cl, done := k.client()
	defer done()
	resp, err := cl.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return err
	}
	return resp.Errors[group]
}

// listOffsets asks for each offset in a request of its own: two lookups of one partition in one
// request got NOT_LEADER_FOR_PARTITION from both brokers here, and kafka-go files each answer
// by the answer's timestamp field, not by the lookup it answers.
func (k kafkaGoOps) listOffsets(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	cl, done := k.client()
	defer done()
	var out [2]int64
	for i, req := range []kafka.OffsetRequest{kafka.FirstOffsetOf(int(partition)), kafka.LastOffsetOf(int(partition))} {
		resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {req}}})
		if err != nil {
			return 0, 0, err
		}
		ps := resp.Topics[topic]
		if len(ps) != 1 || ps[0].Error != nil {
			return 0, 0, fmt.Errorf("list offsets of %s/%d: %+v", topic, partition, ps)
		}
		out[i] = kafkaGoAnswer(ps[0])
	}
	return out[0], out[1], nil
}

// kafkaGoAnswer is the offset of a request's single lookup. kafka-go files an answer by the
// timestamp in it, not by the lookup: timestamp -2 or -1 as FirstOffset or LastOffset, any
// other in Offsets (offset to timestamp).
func kafkaGoAnswer(p kafka.PartitionOffsets) int64 {
	for off := range p.Offsets {
		return off
	}
	if p.LastOffset != -1 {
		return p.LastOffset
	}
	return p.FirstOffset
}

func (k kafkaGoOps) offsetForTime(ctx context.Context, topic string, partition int32, at time.Time) (int64, error) {
	cl, done := k.client()
	defer done()
	resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		topic: {kafka.TimeOffsetOf(int(partition), at)},
	}})
	if err != nil {
		return 0, err
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition != int(partition) {
			continue
		}
		if p.Error != nil {
			return 0, p.Error
		}
		return kafkaGoAnswer(p), nil
	}
	return 0, fmt.Errorf("partition %d not in %+v", partition, resp.Topics)
}

func (k kafkaGoOps) describeConfig(ctx context.Context, topic, key string) (string, error) {
	cl, done := k.client()
	defer done()
	resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{key}},
	}})
	if err != nil {
		return "", err
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return "", r.Error
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == key {
				return e.ConfigValue, nil
			}
		}
	}
	return "", fmt.Errorf("%s not in %+v", key, resp.Resources)
}

package interop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// saramaClient is IBM/sarama at its default protocol version (2.1), as a new user gets it, except
// where a check needs more (transactions and read_committed need 0.11, which 2.1 is above).
func saramaClient(seeds []string) client {
	s := saramaOps{seeds}
	return newClient("sarama", ops{
		metadata:       s.metadata,
		createTopic:    s.createTopic,
		partitions:     s.partitions,
		produce:        s.produce,
		read:           s.read,
		groupConsume:   s.groupConsume,
		listGroups:     s.listGroups,
		describeGroup:  s.describeGroup,
		deleteGroup:    s.deleteGroup,
		listOffsets:    s.listOffsets,
		offsetForTime:  s.offsetForTime,
		deleteRecords:  s.deleteRecords,
		describeConfig: s.describeConfig,
		txnProduce:     s.txnProduce,
	}, map[string]string{
		"partition-eof": "no end-of-partition event (a PartitionConsumer only exposes the high watermark)",
		"group-848":     "classic consumer groups only",
	})
}

// saramaOps runs each op with a client of its own.
type saramaOps struct{ seeds []string }

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "interop-sarama"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

func (s saramaOps) admin(context.Context) (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin(s.seeds, saramaConfig())
}

func (s saramaOps) metadata(ctx context.Context) (int, int, error) {
	cl, err := sarama.NewClient(s.seeds, saramaConfig())
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	parts, err := cl.Partitions("seeded")
	return len(cl.Brokers()), len(parts), err
}

func (s saramaOps) createTopic(ctx context.Context, name string, partitions int32) error {
	adm, err := s.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
}

func (s saramaOps) partitions(ctx context.Context, topic string) (int, error) {
	adm, err := s.admin(ctx)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		return 0, err
	}
	if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) {
		return 0, fmt.Errorf("describe %s: %v", topic, md)
	}
	return len(md[0].Partitions), nil
}

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func (s saramaOps) produce(ctx context.Context, topic string, partition int32, codec string, values []string) error {
	cfg := saramaConfig()
	cfg.Producer.Compression = saramaCodecs[codec]
	p, err := sarama.NewSyncProducer(s.seeds, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(values))
	for i, v := range values {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(v)}
	}
	return p.SendMessages(msgs)
}

func (s saramaOps) read(ctx context.Context, topic string, partition int32, n int, readCommitted bool) ([]rec, error) {
	cfg := saramaConfig()
	if readCommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	c, err := sarama.NewConsumer(s.seeds, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	var got []rec
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, rec{m.Partition, m.Offset, string(m.Value)})
		case err := <-pc.Errors():
			return got, err
		case <-ctx.Done():
			return got, fmt.Errorf("read %d of %d records: %w", len(got), n, ctx.Err())
		}
	}
	return got, nil
}

// saramaHandler consumes until it has n records, committing each one, then cancels the session.
type saramaHandler struct {
	n      int
	got    chan rec
	cancel context.CancelFunc
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		select {
		case h.got <- rec{m.Partition, m.Offset, string(m.Value)}:
		default:
			return nil // already n records: leave this one uncommitted
		}
		sess.MarkMessage(m, "")
		sess.Commit()
		if len(h.got) == h.n {
			h.cancel()
		}
	}
	return nil
}

func (s saramaOps) groupConsume(ctx context.Context, _ string, group, topic string, n int) ([]rec, error) {
	cfg := saramaConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	g, err := sarama.NewConsumerGroup(s.seeds, group, cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &saramaHandler{n: n, got: make(chan rec, n), cancel: cancel}
	errc := make(chan error, 1)
	go func() {
		for cctx.Err() == nil {
			if err := g.Consume(cctx, []string{topic}, h); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	select {
	case err = <-errc:
	case <-cctx.Done():
		err = <-errc
	}
	cerr := g.Close() // leaves the group
	close(h.got)
	var got []rec
	for r := range h.got {
		got = append(got, r)
	}
	if err == nil && len(got) < n {
		err = fmt.Errorf("consumed %d of %d records: %w", len(got), n, ctx.Err())
	}
	return sortRecs(got), errors.Join(err, cerr)
}

func (s saramaOps) listGroups(ctx context.Context) (map[string]string, error) {
	adm, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	return adm.ListConsumerGroups()
}

func (s saramaOps) describeGroup(ctx context.Context, group string) (string, error) {
	adm, err := s.admin(ctx)
	if err != nil {
		return "", err
	}
	defer adm.Close()
	ds, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil {
		return "", err
	}
	if len(ds) != 1 || !errors.Is(ds[0].Err, sarama.ErrNoError) {
		return "", fmt.Errorf("describe %s: %+v", group, ds)
	}
	return ds[0].State, nil
}

func (s saramaOps) deleteGroup(ctx context.Context, group string) error {
	adm, err := s.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.DeleteConsumerGroup(group)
}

func (s saramaOps) listOffsets(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	cl, err := sarama.NewClient(s.seeds, saramaConfig())
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	first, err := cl.GetOffset(topic, partition, sarama.OffsetOldest)
	if err != nil {
		return 0, 0, err
	}
	last, err := cl.GetOffset(topic, partition, sarama.OffsetNewest)
	return first, last, err
}

func (s saramaOps) offsetForTime(ctx context.Context, topic string, partition int32, at time.Time) (int64, error) {
	cl, err := sarama.NewClient(s.seeds, saramaConfig())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return cl.GetOffset(topic, partition, at.UnixMilli())
}

func (s saramaOps) deleteRecords(ctx context.Context, topic string, partition int32, before int64) error {
	adm, err := s.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.DeleteRecords(topic, map[int32]int64{partition: before})
}

func (s saramaOps) describeConfig(ctx context.Context, topic, key string) (string, error) {
	adm, err := s.admin(ctx)
	if err != nil {
		return "", err
	}
	defer adm.Close()
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{key}})
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name == key {
			return e.Value, nil
		}
	}
	return "", fmt.Errorf("%s not in %+v", key, entries)
}

func (s saramaOps) txnProduce(ctx context.Context, id, topic string, partition int32, commit bool, values []string) error {
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = id
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(s.seeds, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		return err
	}
	msgs := make([]*sarama.ProducerMessage, len(values))
	for i, v := range values {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(v)}
	}
	if err := p.SendMessages(msgs); err != nil {
		return err
	}
	if commit {
		return p.CommitTxn()
	}
	return p.AbortTxn()
}

package shareconsumer

import (
	"context"
	stderrors "errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
)

// The headers a dead-letter record carries, beside the original record's own, every value UTF-8
// text, numbers in decimal. The first six are KIP-1191's (Kafka's broker-side dead-letter queue
// for share groups, in Kafka's trunk for 4.4), so that tools written for Kafka's dead-letter
// records read ours. Kafka has no header for the times; the last two are kshare's own, named
// outside KIP-1191's __dlq.errors. prefix so that a later Kafka header cannot clash with them.
const (
	HeaderDeadLetterTopic         = "__dlq.errors.topic"          // the record's topic
	HeaderDeadLetterPartition     = "__dlq.errors.partition"      // its partition
	HeaderDeadLetterOffset        = "__dlq.errors.offset"         // its offset
	HeaderDeadLetterGroup         = "__dlq.errors.group"          // the share group
	HeaderDeadLetterDeliveryCount = "__dlq.errors.delivery.count" // its delivery count when it failed
	HeaderDeadLetterMessage       = "__dlq.errors.message"        // the error's text
	// HeaderDeadLetterTimestamp is when the record was dead-lettered, in milliseconds since the
	// Unix epoch (as Kafka's record timestamps count).
	HeaderDeadLetterTimestamp = "kshare.dlq.timestamp"
	// HeaderDeadLetterRecordTimestamp is the original record's timestamp (Record.Timestamp),
	// in milliseconds since the Unix epoch; the copy's own timestamp is when it was produced.
	HeaderDeadLetterRecordTimestamp = "kshare.dlq.record.timestamp"
)

// deadLetterHeaders are the header keys the consumer sets on a dead-letter record; an original
// header with one of these keys (a record read from a dead-letter topic) is left out.
var deadLetterHeaders = []string{HeaderDeadLetterTopic, HeaderDeadLetterPartition, HeaderDeadLetterOffset,
	HeaderDeadLetterGroup, HeaderDeadLetterDeliveryCount, HeaderDeadLetterMessage, HeaderDeadLetterTimestamp,
	HeaderDeadLetterRecordTimestamp}

// Delivery count limits: Kafka's broker default (group.share.delivery.count.limit), and how long
// the consumer trusts the limit it read.
const (
	defaultDeliveryCountLimit = 5
	// minDeliveryCountLimit is the least limit Kafka allows: while the limit cannot be read,
	// a record failing on this delivery or a later one might be on its last.
	minDeliveryCountLimit = 2
	deliveryLimitMaxAge   = 10 * time.Second
	deliveryLimitRetry    = time.Second // after a failed read
	// deadLetterTimeout bounds one dead-letter produce, retries included
	// (kgo.RecordDeliveryTimeout).
	deadLetterTimeout = 30 * time.Second
)

// DeadLetterOpt is an option of New and of Process alike.
type DeadLetterOpt interface {
	Opt
	ProcessOpt
}

type deadLetterTopic string

func (t deadLetterTopic) apply(c *cfg) { c.deadLetterTopic, c.deadLetterSet = string(t), true }
func (t deadLetterTopic) applyProcess(c *processCfg) {
	c.deadLetterTopic, c.deadLetterSet, c.deadLetterOff = string(t), true, false
}

// NoDeadLetterTopic turns the DeadLetterTopic given to New off for one Process call: its
// handlers' failing records are released, and archived by the broker at their last delivery,
// as without the option; errors.DeadLetter rejects.
func NoDeadLetterTopic() ProcessOpt {
	return processOpt(func(c *processCfg) { c.deadLetterTopic, c.deadLetterSet, c.deadLetterOff = "", false, true })
}

// DeadLetterTopic names the topic that records which keep failing are copied to, given to New
// (for Consumer.DeadLetter, and as Process's default; NoDeadLetterTopic turns it off for one
// Process call) or to Process (for that call).
//
// With it, when a Process handler fails a record (an error or a panic) on its last allowed
// delivery, its DeliveryCount having reached the group's share.delivery.count.limit (see
// Consumer.DeliveryCountLimit), or returns errors.DeadLetter(err) whatever the delivery count
// (a poison record), Process first produces a copy of the record to topic: its key, value and
// headers, plus the Header* headers of this package naming where it came from, the group, the
// delivery count, the error's text and the times. The copy goes to the partition numbered the
// record's partition modulo the topic's partition count, as KIP-1191 places them, through a
// producer of the consumer's own (the ClientOpts' transport, TLS, SASL and logger; acks=all,
// not idempotent, so that it needs WRITE on topic and nothing else). Only once the produce is
// acknowledged does Process accept the record, so that the broker does not archive it as
// failed (docs/semantics.md says why ACCEPT). While the produce runs, the record's lock is
// renewed as while its handler ran; a record whose lock ran out before its handler returned
// gets no copy (another member may have it). If the produce fails, the record is released:
// delivered again if deliveries are left, archived by the broker if that was its last (the
// failure is logged, counted in ProcessStats.DeadLetterFailures and told to the hooks, and
// RecordOutcome.DeadLetterErr has it).
//
// errors.Reject still rejects, without a copy (Kafka's broker-side dead-letter queue copies
// rejected records too; here the handler chooses). The topic must exist: the producer does not
// create it. It must not be one the consumer reads (its copies would come back to it): New
// refuses one of its Topics, Subscribe a subscription with New's topic, and Process (when it
// starts) a subscription with its own. A copy is larger than its
// record (the headers), so a record near the limit fails with MESSAGE_TOO_LARGE unless topic's
// max.message.bytes (and the producer's kgo.ProducerBatchMaxBytes) allow larger records than
// the source topic's. Handlers that fail on every record fill it, so watch DeadLettered. New
// and Process refuse an empty or illegal name with Kafka's messages (Topic.validate's rules).
func DeadLetterTopic(topic string) DeadLetterOpt { return deadLetterTopic(topic) }

// validateDeadLetterTopic checks a DeadLetterTopic name as Kafka checks topic names.
func validateDeadLetterTopic(set bool, topic string) error {
	if !set {
		return nil
	}
	switch {
	case topic == "":
		return fmt.Errorf("shareconsumer: DeadLetterTopic(\"\"): Topic name is illegal, it can't be empty")
	case topic == "." || topic == "..":
		return fmt.Errorf("shareconsumer: DeadLetterTopic(%q): Topic name cannot be \".\" or \"..\"", topic)
	case len(topic) > 249:
		return fmt.Errorf("shareconsumer: DeadLetterTopic(%q): Topic name is illegal, it can't be longer than 249 characters, topic name: %s", topic, topic)
	}
	if strings.Trim(topic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return fmt.Errorf("shareconsumer: DeadLetterTopic(%q): Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", topic, topic)
	}
	return nil
}

// deadLetterLoop refuses a dead-letter topic among topics, those the consumer reads: each copy
// would be delivered to it again.
func deadLetterLoop(topic string, topics []string) error {
	if topic != "" && slices.Contains(topics, topic) {
		return fmt.Errorf("shareconsumer: DeadLetterTopic(%q) is a topic the consumer reads: its copies would be delivered again; use another topic", topic)
	}
	return nil
}

// deadLetters is what the consumer keeps for dead-lettering: the producer, made on first use
// and closed by Close, and the group's delivery count limit.
type deadLetters struct {
	mu     sync.Mutex
	cl     *kgo.Client
	closed bool
	limit  deliveryLimit
}

// deadLetterProducer returns the dead-letter producer, made on first use.
func (c *Consumer) deadLetterProducer() (*kgo.Client, error) {
	d := &c.dlq
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.ErrClosed
	}
	if d.cl == nil {
		// Not idempotent: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE
		// on some topic before its first produce, and kgo keeps a refused InitProducerId for
		// good, so a dead-letter path refused once would stay broken after the ACL is fixed.
		// The copy is at least once anyway.
		opts := append(c.cfg.kgoOpts(),
			kgo.DisableIdempotentWrite(),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			kgo.RecordPartitioner(deadLetterPartitioner{}),
			kgo.RecordDeliveryTimeout(deadLetterTimeout),
		)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("shareconsumer: the dead-letter producer: %w", err)
		}
		d.cl = cl
	}
	return d.cl, nil
}

// closeDeadLetters closes the producer, failing the produces still on their way; none starts
// after it.
func (c *Consumer) closeDeadLetters() {
	d := &c.dlq
	d.mu.Lock()
	cl := d.cl
	d.closed, d.cl = true, nil
	d.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// produceDeadLetter produces the dead-letter copy of r to topic, cause its failure, and waits
// for the acknowledgement (acks=all) or ctx's end; the hooks are told. The error is a
// *errors.DeadLetterError.
func (c *Consumer) produceDeadLetter(ctx context.Context, topic string, r *Record, cause error) error {
	start := time.Now()
	err := c.produceDeadLetterRecord(ctx, topic, r, cause, start)
	if err != nil {
		err = &errors.DeadLetterError{DeadLetterTopic: topic, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
		c.log(kgo.LogLevelError, "producing a record to the dead-letter topic failed; the record is not acknowledged for it", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "dead_letter_topic", topic, "err", err)
	}
	if len(c.hooks.deadLetter) > 0 {
		ev := DeadLetterEvent{Record: r, DeadLetterTopic: topic, Cause: cause, Err: err, Latency: time.Since(start)}
		for _, h := range c.hooks.deadLetter {
			h.OnDeadLetter(ev)
		}
	}
	return err
}

func (c *Consumer) produceDeadLetterRecord(ctx context.Context, topic string, r *Record, cause error, now time.Time) error {
	cl, err := c.deadLetterProducer()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	cl.Produce(ctx, deadLetterRecord(topic, r, c.cfg.group, cause, now), func(_ *kgo.Record, err error) { done <- err })
	select {
	case err = <-done:
		if stderrors.Is(err, kgo.ErrClientClosed) {
			return fmt.Errorf("%w: %w", errors.ErrClosed, err) // Close closed the producer
		}
		return err
	case <-ctx.Done():
		// The record may still be produced: kgo cannot take back a request in flight.
		return context.Cause(ctx)
	}
}

// deadLetterRecord is the copy of r for topic: r's key, value and headers (but for headers
// with the dead-letter keys), and the dead-letter headers.
func deadLetterRecord(topic string, r *Record, group string, cause error, now time.Time) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+len(deadLetterHeaders))
	for _, h := range r.Headers {
		if !slices.Contains(deadLetterHeaders, h.Key) {
			hs = append(hs, h)
		}
	}
	msg := errors.ErrDeadLetter.Error()
	if cause != nil {
		msg = cause.Error()
	}
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderDeadLetterTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: HeaderDeadLetterPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: HeaderDeadLetterOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		kgo.RecordHeader{Key: HeaderDeadLetterGroup, Value: []byte(group)},
		kgo.RecordHeader{Key: HeaderDeadLetterDeliveryCount, Value: strconv.AppendInt(nil, int64(r.DeliveryCount), 10)},
		kgo.RecordHeader{Key: HeaderDeadLetterMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: HeaderDeadLetterTimestamp, Value: strconv.AppendInt(nil, now.UnixMilli(), 10)},
		kgo.RecordHeader{Key: HeaderDeadLetterRecordTimestamp, Value: strconv.AppendInt(nil, r.Timestamp.UnixMilli(), 10)},
	)
	// Partition is the source partition, for deadLetterPartitioner.
	return &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: hs}
}

// deadLetterPartitioner places a dead-letter record as KIP-1191 does: on the partition numbered
// the source partition (the record's Partition, as deadLetterRecord sets it) modulo the topic's
// partition count.
type deadLetterPartitioner struct{}

func (deadLetterPartitioner) ForTopic(string) kgo.TopicPartitioner { return deadLetterPartitioner{} }

func (deadLetterPartitioner) RequiresConsistency(*kgo.Record) bool { return true }

func (deadLetterPartitioner) Partition(r *kgo.Record, n int) int { return int(r.Partition) % n }

// DeliveryCountLimit returns the share group's delivery count limit: how many times the
// brokers deliver a record before they archive it. It is the group config
// share.delivery.count.limit (Kafka 4.3+: DescribeConfigs on the GROUP resource, which answers
// the group's value or the broker default); when the broker answers for the group without it
// (Kafka 4.2), the broker config group.share.delivery.count.limit of any broker; when neither
// has it, Kafka's default, 5. Reading it needs DESCRIBE_CONFIGS on the group (and, on Kafka
// 4.2, DESCRIBE_CONFIGS on the cluster).
//
// When the read fails (the request failed, or the broker answered with an error such as
// GROUP_AUTHORIZATION_FAILED or REQUEST_TIMED_OUT) it returns the limit last read, 0 when none
// was, with the error; the failure is logged and the read is tried again a second later. The
// broker config is never read in place of a group config that could not be. Process then
// counts a failing record as on its last delivery, and dead-letters it, from the last limit
// read, or from delivery 2 (the least limit Kafka allows) before any was read: a copy may be
// made a delivery early, but none is missed.
//
// The consumer reads it again when it is more than 10 seconds old; Process also reads it at
// once when a failing record was delivered more times than it allows (the limit was raised).
// A Poll user may see a raised limit up to 10 seconds late, and so dead-letter a record a
// delivery early.
func (c *Consumer) DeliveryCountLimit(ctx context.Context) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.deliveryCountLimit(ctx, 0)
}

// deadLetter decides what becomes of a record its Process handler failed with err, and
// produces its copy when it is to be dead-lettered. It reports whether the copy was produced,
// and the produce's failure. ctx is the task's: it ends when the lock is lost or shutdown
// stops the handler.
func (p *pool) deadLetter(ctx context.Context, r *Record, err error) (bool, error) {
	topic := p.cfg.deadLetterTopic
	poison := errors.Is(err, errors.ErrDeadLetter)
	if topic == "" {
		if poison {
			p.c.log(kgo.LogLevelWarn, "a handler returned errors.DeadLetter with no dead-letter topic configured (DeadLetterTopic); the record is rejected", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		}
		return false, nil
	}
	if !poison {
		if errors.Is(err, errors.ErrReject) {
			return false, nil
		}
		limit, lerr := p.c.deliveryCountLimit(ctx, r.DeliveryCount)
		if lerr != nil && ctx.Err() != nil {
			return false, nil // the lock is gone or Process is stopping: nothing will be acknowledged
		}
		if lerr != nil && limit == 0 {
			// Never read: this may be the last delivery, and a copy one delivery early is
			// better than a record archived with none.
			limit = minDeliveryCountLimit
		}
		if int(r.DeliveryCount) < limit {
			return false, nil
		}
	}
	if perr := p.c.produceDeadLetter(ctx, topic, r, err); perr != nil {
		p.stats.deadLetterFailures.Add(1)
		return false, perr
	}
	p.stats.deadLettered.Add(1)
	return true, nil
}

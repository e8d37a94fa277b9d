package shareconsumer

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Opt configures a Consumer. Options are applied in order, a later one replacing an earlier one
// of the same kind (ClientOpts adds to the earlier ones), and New checks them all in one place.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

// Defaults, as Kafka's share consumer configs have them.
const (
	defaultMaxPollRecords = 500
	defaultFetchMaxWait   = 500 * time.Millisecond
	defaultFetchMinBytes  = 1
	defaultFetchMaxBytes  = 50 << 20
	// defaultConnIdleTimeout replaces kgo's 30 seconds: the broker ties a share session to the
	// connection that opened it and releases the member's records when that connection closes,
	// so an application that processes records for a while between polls must not lose its
	// connection to idleness. Nine minutes is the Java client's connections.max.idle.ms.
	defaultConnIdleTimeout = 9 * time.Minute
	// defaultMaxPollInterval is Kafka's max.poll.interval.ms.
	defaultMaxPollInterval = 5 * time.Minute
)

type cfg struct {
	group           string
	topics          []string
	topicsSet       bool
	clientOpts      []kgo.Opt
	explicit        bool
	maxPollRecords  int
	recordLimit     bool
	fetchMaxWait    time.Duration
	fetchMinBytes   int32
	fetchMaxBytes   int32
	fetchAhead      bool
	onCommit        func(AcknowledgementCommit)
	maxPollInterval time.Duration
	hooks           []Hook
	lagInterval     time.Duration
	// deadLetterTopic is DeadLetterTopic's (dlq.go).
	deadLetterTopic string
	deadLetterSet   bool
}

func defaultCfg() cfg {
	return cfg{
		maxPollRecords:  defaultMaxPollRecords,
		fetchMaxWait:    defaultFetchMaxWait,
		fetchMinBytes:   defaultFetchMinBytes,
		fetchMaxBytes:   defaultFetchMaxBytes,
		maxPollInterval: defaultMaxPollInterval,
	}
}

// Group sets the share group to join (required). Kafka creates the group when its first member
// joins. Offset reset and isolation are group configs (share.auto.offset.reset, default
// "latest", and share.isolation.level), set on the group, not on the consumer.
func Group(id string) Opt { return opt(func(c *cfg) { c.group = id }) }

// Topics sets the topics the consumer subscribes to when it is created, as Subscribe would
// after New. Without it the consumer starts unsubscribed and Poll returns ErrNotSubscribed until
// Subscribe is called.
func Topics(topics ...string) Opt {
	return opt(func(c *cfg) { c.topics, c.topicsSet = slices.Clone(topics), true })
}

// ClientOpts passes options to the kgo.Client the consumer sends its requests through: seed
// brokers (kgo.SeedBrokers, required), TLS (kgo.DialTLSConfig), SASL (kgo.SASL), a dialer,
// logging (kgo.WithLogger), the client id (kgo.ClientID), the rack sent to the group
// coordinator (kgo.Rack), version caps (kgo.MaxVersions), decompression (kgo.WithDecompressor)
// and CRC checking (kgo.DisableFetchCRCValidation). Options that make kgo consume on its own
// (kgo.ConsumeTopics, kgo.ConsumePartitions, kgo.ConsumeRegex, kgo.ConsumerGroup, kgo.ShareGroup)
// fail New; other consumer options of kgo have no effect, since the consumer's own options
// replace them.
//
// The consumer sets kgo.ConnIdleTimeout to nine minutes unless given one: brokers release a
// member's acquired records when the connection that opened its share session closes.
func ClientOpts(opts ...kgo.Opt) Opt {
	return opt(func(c *cfg) { c.clientOpts = append(c.clientOpts, opts...) })
}

// kgoOpts are the options of the consumer's kgo clients (its own and the dead-letter
// producer): kshare's defaults, then ClientOpts, which may override them.
func (c *cfg) kgoOpts() []kgo.Opt {
	return append([]kgo.Opt{
		kgo.ConnIdleTimeout(defaultConnIdleTimeout),
		kgo.SoftwareNameAndVersion("kshare", softwareVersion()),
	}, c.clientOpts...)
}

// ExplicitAcknowledgement makes the application acknowledge every record itself, with
// Acknowledge. Poll then refuses to go on (ErrUnacknowledgedRecords) while any record the
// previous Poll returned is unacknowledged. The default is implicit acknowledgement: the next
// Poll, CommitSync or CommitAsync accepts every record the application left unacknowledged, and
// Acknowledge fails with ErrImplicitMode. Only explicit mode can release or reject, except
// that a record given to Consumer.DeadLetter is held released until its copy is in (and stays
// released if the copy fails).
func ExplicitAcknowledgement() Opt { return opt(func(c *cfg) { c.explicit = true }) }

// MaxPollRecords caps the records one Poll returns (default 500, at least 1). It is also what
// each ShareFetch asks for (MaxRecords and BatchSize): in the default batch-optimized acquire
// mode the broker acquires whole record batches, so a fetch may bring more; the surplus is
// held for the next Poll.
//
// Each ShareFetch is a round trip the poll loop may wait for, so with small records the
// default costs CPU per record: at 16 B, over 4M records, 500 records per fetch cost kshare
// about 1.5-2.1x the CPU per record of 10,000 (docs/benchmarks.md). A broker acquires no more
// than the group's share.partition.max.record.locks (2000 by default) of a partition at once,
// so asking for more per fetch needs that raised too.
func MaxPollRecords(n int) Opt { return opt(func(c *cfg) { c.maxPollRecords = n }) }

// RecordLimitAcquire makes the broker acquire at most MaxPollRecords records per fetch,
// splitting record batches if it must (Kafka's share.acquire.mode=record_limit), and makes the
// consumer fetch from one partition leader at a time. It needs ShareFetch v2 (Kafka 4.2) on
// every leader: Poll fails with errors.ErrRecordLimitUnsupported for a leader without it.
func RecordLimitAcquire() Opt { return opt(func(c *cfg) { c.recordLimit = true }) }

// FetchMaxWait sets how long a broker may hold a ShareFetch while it has less than
// FetchMinBytes to return (default 500ms; 0 answers at once; whole milliseconds, at most
// math.MaxInt32 of them). The wait runs on the broker's clock.
func FetchMaxWait(d time.Duration) Opt { return opt(func(c *cfg) { c.fetchMaxWait = d }) }

// FetchMinBytes sets how many bytes of records a broker waits for, up to FetchMaxWait, before
// answering a ShareFetch (default 1; at least 0).
func FetchMinBytes(n int32) Opt { return opt(func(c *cfg) { c.fetchMinBytes = n }) }

// FetchMaxBytes caps the bytes of records one ShareFetch returns (default 50 MiB; at least 1).
// A broker still returns a first record batch larger than this, so that the consumer can make
// progress.
func FetchMaxBytes(n int32) Opt { return opt(func(c *cfg) { c.fetchMaxBytes = n }) }

// FetchAhead makes the consumer send the next ShareFetch to each leader as soon as a Poll
// returns records, while the application works on them, instead of waiting for the next Poll
// (the default, as Kafka's Java client does). The fetch carries the acknowledgements waiting
// for that leader, so that a busy poll loop sends one request per Poll and leader, and its
// records are ready when the next Poll comes.
//
// The price is acquisition-lock time: records fetched ahead are locked while they wait, for at
// most one fetch per leader per Poll, and only while fewer than MaxPollRecords records are
// held. A consumer that stops polling keeps at most that much locked until the locks expire or
// Close releases them; records whose lock ran out by the local estimate are dropped, not
// returned. Use it when throughput matters and the time between polls is well below the
// group's share.record.lock.duration.ms.
func FetchAhead() Opt { return opt(func(c *cfg) { c.fetchAhead = true }) }

// OnAcknowledgementCommit sets a function called with the outcome of acknowledgements: once per
// partition per completed request (a ShareFetch carrying acknowledgements, a ShareAcknowledge
// of CommitSync, CommitAsync or Close), after any retries. It runs on the goroutine calling
// Poll, CommitSync, CommitAsync, Close or Process, one call at a time, never while the consumer
// holds a lock. It may call the consumer's methods, as any goroutine may (Acknowledge,
// CommitAsync, Wakeup, Subscription); the outcomes such calls produce are given to it after it
// returns. A Poll from inside it fails with ErrConcurrentPoll when Poll called it. A panic inside it is
// recovered and logged through the kgo logger (kgo.WithLogger), as Kafka's client logs and
// swallows a callback's exception. nil (the default) sets no callback.
func OnAcknowledgementCommit(fn func(AcknowledgementCommit)) Opt {
	return opt(func(c *cfg) { c.onCommit = fn })
}

// MaxPollInterval sets how long the application may go without a Poll before the member leaves
// the group (Kafka's max.poll.interval.ms; default 5 minutes; whole milliseconds, at least 1ms
// and at most math.MaxInt32 of them). The time counts from the end of the last Poll; a Poll
// that waits counts as polling all along, and so does Process while it runs, since it takes
// records whenever a worker is free. Past it the consumer logs why, leaves the group
// (ShareGroupHeartbeat with MemberEpoch -1), stops fetching, and closes its share sessions, with
// the acknowledgements recorded so far, so that the brokers release its other records at once;
// records fetched and not yet returned go back. Status reports StateLeft and
// errors.ReasonLeftGroup. The next Poll (or Process) rejoins, as a new member epoch; the
// acknowledgements of records returned before the leave fail, since their session is closed.
func MaxPollInterval(d time.Duration) Opt { return opt(func(c *cfg) { c.maxPollInterval = d }) }

// validate checks every option; each message names the option and says what it takes.
func (c *cfg) validate() error {
	if c.group == "" {
		return fmt.Errorf("shareconsumer: a group is required: use Group(id)")
	}
	for _, t := range c.topics {
		if t == "" {
			return fmt.Errorf("shareconsumer: Topics: a topic name is empty")
		}
	}
	if c.topicsSet && len(c.topics) == 0 {
		return fmt.Errorf("shareconsumer: Topics: no topic given; leave the option out to start unsubscribed")
	}
	if c.maxPollRecords < 1 || c.maxPollRecords > math.MaxInt32 {
		return fmt.Errorf("shareconsumer: MaxPollRecords(%d): must be between 1 and %d", c.maxPollRecords, math.MaxInt32)
	}
	if c.fetchMaxWait < 0 || c.fetchMaxWait/time.Millisecond > math.MaxInt32 {
		return fmt.Errorf("shareconsumer: FetchMaxWait(%v): must be between 0 and %v", c.fetchMaxWait, time.Duration(math.MaxInt32)*time.Millisecond)
	}
	if c.fetchMaxWait%time.Millisecond != 0 {
		return fmt.Errorf("shareconsumer: FetchMaxWait(%v): must be whole milliseconds", c.fetchMaxWait)
	}
	if c.fetchMinBytes < 0 {
		return fmt.Errorf("shareconsumer: FetchMinBytes(%d): must be at least 0", c.fetchMinBytes)
	}
	if c.fetchMaxBytes < 1 {
		return fmt.Errorf("shareconsumer: FetchMaxBytes(%d): must be at least 1", c.fetchMaxBytes)
	}
	if c.maxPollInterval < time.Millisecond || c.maxPollInterval/time.Millisecond > math.MaxInt32 {
		return fmt.Errorf("shareconsumer: MaxPollInterval(%v): must be between 1ms and %v", c.maxPollInterval, time.Duration(math.MaxInt32)*time.Millisecond)
	}
	if c.maxPollInterval%time.Millisecond != 0 {
		return fmt.Errorf("shareconsumer: MaxPollInterval(%v): must be whole milliseconds", c.maxPollInterval)
	}
	if c.lagInterval < 0 || c.lagInterval > 0 && c.lagInterval < time.Millisecond {
		return fmt.Errorf("shareconsumer: LagInterval(%v): must be 0 (off) or at least 1ms", c.lagInterval)
	}
	if err := validateDeadLetterTopic(c.deadLetterSet, c.deadLetterTopic); err != nil {
		return err
	}
	if err := deadLetterLoop(c.deadLetterTopic, c.topics); err != nil {
		return err
	}
	if c.fetchMinBytes > c.fetchMaxBytes {
		return fmt.Errorf("shareconsumer: FetchMinBytes(%d) is above FetchMaxBytes(%d)", c.fetchMinBytes, c.fetchMaxBytes)
	}
	return nil
}

// validateClient refuses kgo options that would make the client consume by itself.
func validateClient(cl *kgo.Client) error {
	if ts, _ := cl.OptValue(kgo.ConsumeTopics).([]string); len(ts) > 0 {
		return fmt.Errorf("shareconsumer: ClientOpts: kgo.ConsumeTopics cannot be used with a share consumer: use Topics or Subscribe")
	}
	if ps, ok := cl.OptValue(kgo.ConsumePartitions).(map[string]map[int32]kgo.Offset); ok && len(ps) > 0 {
		return fmt.Errorf("shareconsumer: ClientOpts: kgo.ConsumePartitions cannot be used with a share consumer: use Topics or Subscribe")
	}
	if re, _ := cl.OptValue(kgo.ConsumeRegex).(bool); re {
		return fmt.Errorf("shareconsumer: ClientOpts: kgo.ConsumeRegex cannot be used with a share consumer: use Topics or Subscribe")
	}
	if g, _ := cl.OptValue(kgo.ConsumerGroup).(string); g != "" {
		return fmt.Errorf("shareconsumer: ClientOpts: kgo.ConsumerGroup cannot be used with a share consumer: use Group")
	}
	if g, _ := cl.OptValue(kgo.ShareGroup).(string); g != "" {
		return fmt.Errorf("shareconsumer: ClientOpts: kgo.ShareGroup cannot be used with this share consumer: use Group")
	}
	return nil
}

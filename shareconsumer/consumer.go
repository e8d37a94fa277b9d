package shareconsumer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/renewbuffer"
)

// retryBackoff is the pause after a request failed or a broker answered with nothing but
// errors, before the same broker is asked again.
const retryBackoff = 100 * time.Millisecond

// idlePause is the pause between ShareFetches that came back empty with FetchMaxWait(0).
const idlePause = 10 * time.Millisecond

// Consumer is a member of a Kafka share group. Create it with New, call Poll in a loop on one
// goroutine, and Close it when done.
//
// Poll, CommitSync, Subscribe, Unsubscribe and Close are meant for one goroutine, the
// application's poll loop. Acknowledge, AcknowledgeOffset, CommitAsync, Wakeup, Subscription, Status
// and AcquisitionLockTimeoutMs are safe from any goroutine, also while Poll runs; a second Poll
// running at the same time fails with ErrConcurrentPoll. After Close every method returns
// ErrClosed.
type Consumer struct {
	cfg      cfg
	cl       *kgo.Client
	logger   kgo.Logger
	memberID string
	rack     *string
	dec      decoder
	versions apiversions.Registry
	caps     *kversion.Versions

	// ctx is the context of every request; it ends when Close gives up waiting.
	ctx     context.Context
	cancel  context.CancelFunc
	closing chan struct{} // closed when Close starts
	closed  atomic.Bool
	wg      sync.WaitGroup // every goroutine of the consumer
	hbStop  chan struct{}  // closed to make the heartbeat loop leave the group and return
	// hbCtx is the context of heartbeats other than the leave; it ends when Close starts, so
	// that a heartbeat or coordinator lookup that hangs does not hold Close up.
	hbCtx    context.Context
	hbCancel context.CancelFunc
	hbDone   chan struct{} // closed when the heartbeat loop returned

	polling    atomic.Bool
	processing atomic.Bool   // Process runs
	wakeup     chan struct{} // one token per Wakeup not yet seen by Poll
	notify     chan struct{} // wakes a waiting Poll
	hbWake     chan struct{} // wakes the heartbeat loop (subscription changed)

	// cbMu is held by the goroutine draining completions into the callback. Others that find
	// it held leave the draining to it (TryLock), so that a consumer method called from inside
	// the callback never waits for the callback to end.
	cbMu sync.Mutex

	mu sync.Mutex
	// stopped: Close is tearing down; no goroutine may start.
	stopped bool

	// Membership: the subscription, and the assignment the coordinator gave (by topic id).
	subscription []string
	assignment   map[[16]byte][]int32
	fatal        error   // a *errors.FatalError; Poll returns it from now on
	pollErrs     []error // errors for the next Poll, each returned once

	// Metadata: topic ids, names and partition leaders of the subscribed and assigned topics.
	topics      map[[16]byte]*topicMeta
	byName      map[string][16]byte
	metaRunning bool
	metaAgain   bool

	// assigned is the assignment resolved through metadata: what the consumer fetches.
	assigned map[TopicPartition]*assignedPart

	nodes       map[int32]*node
	nodeOrder   []*node // nodes sorted by id; nil when a node was added since (sortedNodesLocked)
	leadersBuf  []int32 // assignedLeadersLocked's answer, reused from call to call
	pollWaiting bool    // a Poll waits for records: fetches may be sent
	pollSeq     uint64  // counts Polls; node.fetchedPoll compares with it
	returned    uint64  // counts Polls that returned records; node.fetchedAhead compares with it
	limitNode   int32   // RecordLimitAcquire: the one leader fetched at a time; -1 none yet

	buffer     []bufItem // acquired records not yet returned, in arrival order
	bufRecords int

	inflight    inflight
	completions []AcknowledgementCommit // for the callback

	// renews holds the records the application renewed, from the Poll or commit that took the
	// renew until a Poll returns them again.
	renews renewbuffer.Buffer[*renewEntry]

	// lockShown is the lock duration AcquisitionLockTimeoutMs shows (ms 0: not known yet);
	// lockNext, one an acknowledgement's answer reported, shown from the next Poll. Reports are
	// numbered (lockSeq), so that an older one never replaces a newer one.
	lockShown lockReport
	lockNext  lockReport
	lockSeq   uint64

	// pool is the state of the running Process, nil when none runs; procStats counts what
	// every Process did.
	pool      *pool
	procStats processCounters
	// poolOut counts Process's acknowledgements not answered yet: their records are still
	// locked at the broker, and admission counts them.
	poolOut int

	// health is what the consumer knows of why records do or do not come (status.go).
	health health
	// lastPoll is when the last Poll or Process returned (New, before the first): the member
	// leaves the group when no Poll runs for MaxPollInterval after it.
	lastPoll time.Time
}

// lockReport is a lock duration a broker reported, numbered in the order the answers came.
type lockReport struct {
	ms  int32
	seq uint64
}

// reportLockLocked numbers a lock duration a broker reported; the zero report for none.
func (c *Consumer) reportLockLocked(ms int32) lockReport {
	if ms <= 0 {
		return lockReport{}
	}
	c.lockSeq++
	return lockReport{ms, c.lockSeq}
}

// showLockLocked makes AcquisitionLockTimeoutMs show r, unless it shows a newer report.
func (c *Consumer) showLockLocked(r lockReport) {
	if r.ms > 0 && r.seq > c.lockShown.seq {
		c.lockShown = r
	}
}

// topicMeta is what metadata says of one topic.
type topicMeta struct {
	name    string
	id      [16]byte
	leaders map[int32]leaderInfo
}

type leaderInfo struct {
	node  int32
	epoch int32
}

// assignedPart is one partition of the assignment, resolved.
type assignedPart struct {
	tp TopicPartition
	id [16]byte
}

// New creates a consumer. It checks the options, creates the kgo.Client, and, when Topics was
// given, starts joining the group in the background; it does not wait for the network, so a
// bad address shows up in Poll's error (an *errors.PollTimeoutError with ReasonNoBroker and the
// dial error, with the address), in Status and in the kgo log rather than here.
func New(opts ...Opt) (*Consumer, error) {
	cfg := defaultCfg()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:       cfg,
		memberID:  newMemberID(),
		closing:   make(chan struct{}),
		hbStop:    make(chan struct{}),
		hbDone:    make(chan struct{}),
		wakeup:    make(chan struct{}, 1),
		notify:    make(chan struct{}, 1),
		hbWake:    make(chan struct{}, 1),
		topics:    make(map[[16]byte]*topicMeta),
		byName:    make(map[string][16]byte),
		assigned:  make(map[TopicPartition]*assignedPart),
		nodes:     make(map[int32]*node),
		limitNode: -1,
		inflight:  inflight{parts: make(map[TopicPartition]*curPart)},
		lastPoll:  time.Now(),
	}
	kopts := []kgo.Opt{
		kgo.ConnIdleTimeout(defaultConnIdleTimeout),
		kgo.SoftwareNameAndVersion("kshare", softwareVersion()),
	}
	kopts = append(kopts, cfg.clientOpts...)
	kopts = append(kopts, kgo.WithHooks(connectHook{c}))
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("shareconsumer: ClientOpts: %w", err)
	}
	if err := validateClient(cl); err != nil {
		cl.Close()
		return nil, err
	}
	c.cl = cl
	c.logger, _ = cl.OptValue(kgo.WithLogger).(kgo.Logger)
	if rack, _ := cl.OptValue(kgo.Rack).(string); rack != "" {
		c.rack = &rack
	}
	c.caps, _ = cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	c.dec.decompressor, _ = cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	if c.dec.decompressor == nil {
		c.dec.decompressor = kgo.DefaultDecompressor()
	}
	noCRC, _ := cl.OptValue(kgo.DisableFetchCRCValidation).(bool)
	c.dec.checkCRC = !noCRC
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hbCtx, c.hbCancel = context.WithCancel(c.ctx)
	if cfg.topicsSet {
		c.subscription = normalizeTopics(cfg.topics)
	}
	c.wg.Add(1)
	go c.heartbeatLoop()
	if len(c.subscription) > 0 {
		c.mu.Lock()
		c.triggerMetadataLocked()
		c.mu.Unlock()
	}
	return c, nil
}

// connectHook makes the consumer read a broker's ApiVersions again before its next ShareFetch
// whenever kgo connects to it anew: the broker may have been upgraded or downgraded in place.
// What was read before stays in use until then. A failed connect is kept, with the address,
// for Status and Poll's error, until a connect succeeds.
type connectHook struct{ c *Consumer }

func (h connectHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.health.dialErr = fmt.Errorf("dialing %s: %w", net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), err)
		c.errLocked(c.health.dialErr)
		c.noteLocked()
		return
	}
	c.health.dialErr = nil
	if n := c.nodes[meta.NodeID]; n != nil {
		n.unsupported = nil
		n.versionsStale = true
	}
	c.noteLocked()
}

// maxPollErrs caps the errors kept for Polls that do not come.
const maxPollErrs = 16

// addPollErrLocked keeps err for the next Poll, and wakes a waiting one.
func (c *Consumer) addPollErrLocked(err error) {
	if len(c.pollErrs) >= maxPollErrs {
		c.pollErrs = c.pollErrs[1:]
	}
	c.pollErrs = append(c.pollErrs, err)
	c.wake()
}

// newMemberID returns a random UUID as Kafka prints one (Uuid.toString: URL-safe base64, no
// padding), which is how Kafka's client names itself in a share group.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// softwareVersion is the module's version as brokers accept it in ApiVersions (letters, digits,
// '.' and '-'), or "devel" when the binary was not built from a tagged module.
func softwareVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		versions := []string{}
		if bi.Main.Path == "github.com/kshare/kshare" {
			versions = append(versions, bi.Main.Version)
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/kshare/kshare" {
				versions = append(versions, d.Version)
			}
		}
		for _, v := range versions {
			v = strings.TrimPrefix(v, "v")
			if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == "" &&
				!strings.HasPrefix(v, "-") && !strings.HasSuffix(v, "-") && !strings.HasPrefix(v, ".") && !strings.HasSuffix(v, ".") {
				return v
			}
		}
	}
	return "devel"
}

// normalizeTopics returns the topics sorted, without duplicates.
func normalizeTopics(topics []string) []string {
	ts := slices.Clone(topics)
	slices.Sort(ts)
	return slices.Compact(ts)
}

// check returns ErrClosed after Close.
func (c *Consumer) check() error {
	if c.closed.Load() {
		return errors.ErrClosed
	}
	return nil
}

// wake wakes a waiting Poll.
func (c *Consumer) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// log logs through the kgo client's logger, if it has one.
func (c *Consumer) log(level kgo.LogLevel, msg string, keyvals ...any) {
	if c.logger != nil && c.logger.Level() >= level {
		c.logger.Log(level, "shareconsumer: "+msg, append([]any{"group", c.cfg.group, "member", c.memberID}, keyvals...)...)
	}
}

// Subscribe replaces the subscription with topics, taking effect at the group coordinator with
// the next heartbeat, which is sent at once. Subscribing to no topics is Unsubscribe. Records
// already acquired from topics no longer subscribed may still be returned and acknowledged. It
// does not block.
func (c *Consumer) Subscribe(topics ...string) error {
	if err := c.check(); err != nil {
		return err
	}
	if len(topics) == 0 {
		return c.Unsubscribe()
	}
	for _, t := range topics {
		if t == "" {
			return fmt.Errorf("shareconsumer: Subscribe: a topic name is empty")
		}
	}
	ts := normalizeTopics(topics)
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(ts, c.subscription) {
		return nil
	}
	c.subscription = ts
	c.triggerMetadataLocked()
	c.wakeHeartbeat()
	return nil
}

// Unsubscribe leaves the group: the consumer stops fetching at once and its heartbeat loop
// sends the leave (MemberEpoch -1) in the background. Records acquired but not yet returned by
// Poll are released at once; records Poll returned may still be acknowledged and committed.
// Poll then returns ErrNotSubscribed until Subscribe is called. It does not block.
func (c *Consumer) Unsubscribe() error {
	if err := c.check(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.subscription) == 0 {
		return nil
	}
	c.subscription = nil
	c.setAssignmentLocked(nil)
	c.releaseBufferLocked()
	c.releaseRenewedLocked()
	c.flushAllLocked()
	c.wakeHeartbeat()
	return nil
}

// Subscription returns the topics the consumer is subscribed to, sorted; nil when it is not
// subscribed, or closed.
func (c *Consumer) Subscription() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.subscription)
}

// Poll returns the next records the consumer acquired, at most MaxPollRecords of them, waiting
// until some arrive, ctx ends, Wakeup is called (ErrWokenUp) or the consumer is closed
// (ErrClosed).
//
// When ctx ends first, the error is a *errors.PollTimeoutError wrapping ctx.Err(), so that
// errors.Is(err, context.DeadlineExceeded) (or context.Canceled) holds, with why nothing came
// (its Reason and Detail: no broker reachable and the last dial error with its address, no
// coordinator, a subscribed topic unknown, no partitions assigned, nothing available in the
// assigned ones); Status reports the same without polling.
//
// A Poll keeps the member in the group for MaxPollInterval after it returns; the first Poll
// after the member left for want of Polls rejoins the group.
//
// It first finishes with the records the previous Poll returned: implicit mode accepts every
// one the application left unacknowledged; explicit mode fails with ErrUnacknowledgedRecords,
// consuming nothing, while any is unacknowledged. Acknowledgements then travel on the ShareFetch
// this Poll sends to each record's partition leader; a Poll that sends none to a leader sends
// that leader's acknowledgements in a ShareAcknowledge. Their outcome goes to the
// OnAcknowledgementCommit callback, never to Poll's error.
//
// Records are fetched only for a waiting Poll: it sends one ShareFetch to each leader of the
// assigned partitions (one leader at a time with RecordLimitAcquire) and returns as soon as
// any records are in. Records beyond MaxPollRecords, and those that fetches still on their way
// bring in after it returned, are held for the next Poll, which returns them without fetching.
// A consumer that stops polling acquires nothing more. Held records whose lock has run out by
// the local estimate (Record.LockDeadline) are dropped rather than returned.
//
// Other errors: a *errors.FatalError once the coordinator refused the member for good, or does
// not serve share groups at all (kerr.UnsupportedVersion; close the consumer); ErrNotSubscribed;
// ErrConcurrentPoll; ErrProcessRunning; errors.ErrRecordLimitUnsupported, wrapped. Each of these
// is returned once, by the Poll after it happened: a *errors.CorruptBatchError, a
// *errors.PartitionError or a *errors.BrokerError for a ShareFetch the broker refused, and a
// *errors.KafkaError for TOPIC_AUTHORIZATION_FAILED from the group coordinator.
func (c *Consumer) Poll(ctx context.Context) ([]*Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.processing.Load() {
		return nil, errors.ErrProcessRunning
	}
	if !c.polling.CompareAndSwap(false, true) {
		return nil, errors.ErrConcurrentPoll
	}
	defer c.polling.Store(false)
	defer c.pollEnded()
	c.runCallbacks()
	recs, err := c.poll(ctx)
	c.runCallbacks()
	return recs, err
}

func (c *Consumer) poll(ctx context.Context) ([]*Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rejoinIfLeftLocked()
	if c.cfg.explicit {
		if c.inflight.unacked > 0 {
			return nil, errors.ErrUnacknowledgedRecords
		}
	} else {
		c.acceptAllLocked()
	}
	c.moveAckedLocked()
	if c.lockShown.ms > 0 {
		c.showLockLocked(c.lockNext)
	}
	c.pollSeq++
	defer c.flushUnfetchedLocked()
	if c.fatal != nil {
		return nil, c.fatal
	}
	select {
	case <-c.wakeup:
		return nil, errors.ErrWokenUp
	default:
	}
	if len(c.subscription) == 0 {
		return nil, errors.ErrNotSubscribed
	}
	c.pollWaiting = true
	defer func() { c.pollWaiting = false }()
	for {
		switch {
		case c.closed.Load():
			return nil, errors.ErrClosed
		case c.fatal != nil:
			return nil, c.fatal
		}
		recs, err := c.drainLocked()
		if len(recs) > 0 {
			c.returned++
		}
		if len(recs) > 0 || err != nil {
			return recs, err
		}
		if len(c.pollErrs) > 0 {
			err := c.pollErrs[0]
			c.pollErrs = c.pollErrs[1:]
			return nil, err
		}
		if err := c.unsupportedLocked(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, c.pollTimeoutLocked(err) // no fetch for a Poll that cannot wait for it
		}
		if err := c.awaitRecordsLocked(ctx, c.wakeup); err != nil {
			// Records that arrived meanwhile are not lost: they wait for the next Poll.
			return nil, c.pollTimeoutLocked(err)
		}
	}
}

// awaitRecordsLocked sends the fetches wanted and waits, without the lock, until something a
// waiting Poll or Process cares about happened (records, errors), or ctx ends (ctx.Err()),
// wakeup fires (ErrWokenUp; nil never fires) or Close starts (ErrClosed).
func (c *Consumer) awaitRecordsLocked(ctx context.Context, wakeup <-chan struct{}) error {
	c.kickLocked()
	c.mu.Unlock()
	defer c.mu.Lock()
	select {
	case <-c.notify:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-wakeup:
		return errors.ErrWokenUp
	case <-c.closing:
		return errors.ErrClosed
	}
}

// Acknowledge records how the application dealt with r, one of the records the last Poll
// returned: acktype.Accept, Release or Reject, which are final, or acktype.Renew. The
// acknowledgement is sent with the next Poll (on the ShareFetch to r's leader) or commit; until
// then a later call for the same record replaces it. It fails with ErrImplicitMode unless the
// consumer was created with ExplicitAcknowledgement, with ErrCannotAcknowledge for a record this
// consumer is not holding (not returned by Poll, or its acknowledgement already sent), and with
// errors.ErrInvalidAcknowledgeType for acktype.Gap or an unknown type.
//
// Renew (KIP-1222) says "I need more time": the record stays this consumer's. The next Poll
// sends the renew (a ShareFetch with IsRenewAck, which brings no records) or the next commit
// does (a ShareAcknowledge with IsRenewAck), with any other acknowledgements for the same
// leader. Once the broker has renewed the lock, a Poll returns r again, the same *Record with the
// same DeliveryCount and a LockDeadline counted from when the renew was sent; until the
// application acknowledges it with a final type it comes back after every renew. A Poll with
// renewed records ready returns them first, and a Poll waiting for a renew's answer returns as
// soon as the answer is in. A failed renew (INVALID_RECORD_STATE because the lock had expired
// or renewing is disabled for the group, a session reset, a leader move) reaches the callback
// and CommitSync's result with its offset, and the record is never returned again: the broker
// delivers it anew, to this or another consumer.
//
// From Acknowledge(r, acktype.Renew) until a Poll returns r again, r belongs to the consumer:
// that Poll sets r.LockDeadline, so other goroutines must not read or write r meanwhile.
// Unsubscribe releases renewed records instead of returning them.
//
// Renew fails at once with errors.ErrUnsupportedAcknowledgeType, recording nothing, when r's
// partition leader does not support ShareFetch v2 and ShareAcknowledge v2 (Kafka 4.1 and
// older, by its ApiVersions, capped by kgo.MaxVersions); Accept, Release and Reject still work
// for r. Kafka's Java client fails such a renew only later, in the callback.
func (c *Consumer) Acknowledge(r *Record, t acktype.Type) error {
	if err := c.checkAck(t); err != nil {
		return err
	}
	if r == nil {
		return errors.ErrCannotAcknowledge
	}
	return c.acknowledge(TopicPartition{r.Topic, r.Partition}, r.Offset, t, false)
}

// AcknowledgeOffset acknowledges an offset Poll could not return as a record: one of the
// Offsets of a *errors.CorruptBatchError, which the consumer rejects on its own unless told
// otherwise here. Any other offset fails with ErrCannotAcknowledge, and acktype.Renew with
// errors.ErrInvalidAcknowledgeType, since there is no record to return again. Otherwise it
// behaves as Acknowledge.
func (c *Consumer) AcknowledgeOffset(topic string, partition int32, offset int64, t acktype.Type) error {
	if err := c.checkAck(t); err != nil {
		return err
	}
	if t == acktype.Renew {
		return fmt.Errorf("%w: an offset Poll could not return as a record cannot be renewed; accept, release or reject it", errors.ErrInvalidAcknowledgeType)
	}
	return c.acknowledge(TopicPartition{topic, partition}, offset, t, true)
}

func (c *Consumer) checkAck(t acktype.Type) error {
	if err := c.check(); err != nil {
		return err
	}
	if !c.cfg.explicit {
		return errors.ErrImplicitMode
	}
	if !t.Valid() {
		return fmt.Errorf("%w: %v", errors.ErrInvalidAcknowledgeType, t)
	}
	return nil
}

func (c *Consumer) acknowledge(tp TopicPartition, offset int64, t acktype.Type, undecodable bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.inflight.get(tp)
	if cp == nil {
		return errors.ErrCannotAcknowledge
	}
	rec := cp.find(offset)
	if rec == nil || rec.undecodable != undecodable {
		return errors.ErrCannotAcknowledge
	}
	if t == acktype.Renew {
		if err := c.gateRenewAck(tp, rec.node); err != nil {
			return err
		}
	}
	if !rec.acked {
		rec.acked = true
		c.inflight.unacked--
	}
	rec.ty = t
	return nil
}

// CommitSync sends every acknowledgement not sent yet in a ShareAcknowledge to each partition
// leader, and waits for the outcome: one entry per partition that had acknowledgements, nil
// for success, else a *errors.AckError (errors.Is works with the kerr code). In implicit mode it
// first accepts every record the last Poll returned. Acknowledgements an earlier Poll or
// CommitAsync sent whose answer has not come yet (on a ShareFetch that waits at a broker, or
// queued behind one) are part of the commit: when CommitSync returns, every acknowledgement
// recorded before it has its outcome. With nothing to wait for it returns an empty map at once.
//
// A partition refused with a retriable error is sent again until ctx ends, except for
// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID
// (the records' locks are gone). Acknowledgements cannot go to a leader whose share session is
// not open, or to the old leader of a partition that moved: those fail with NETWORK_EXCEPTION
// and NOT_LEADER_OR_FOLLOWER without being sent, as with Kafka's client. When ctx ends first,
// the partitions still waiting report REQUEST_TIMED_OUT; their acknowledgements are still
// delivered and the callback reports the broker's answer.
//
// The error is ErrClosed when nothing was done; ctx's end shows in the map.
func (c *Consumer) CommitSync(ctx context.Context) (map[TopicPartition]error, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.commitSync(ctx), nil
}

func (c *Consumer) commitSync(ctx context.Context) map[TopicPartition]error {
	c.runCallbacks()
	c.mu.Lock()
	if !c.cfg.explicit {
		c.acceptAllLocked()
	}
	c.moveAckedLocked()
	w := &commitWait{ctx: ctx, results: make(map[TopicPartition]error), done: make(chan struct{})}
	for _, n := range c.sortedNodesLocked() {
		// Acknowledgements an earlier Poll or CommitAsync sent, or queued behind a request in
		// flight, become part of this commit.
		if j := n.piggyback; j != nil && j.commit == nil {
			c.adoptLocked(j, w)
		}
		if j := n.sending; j != nil && j.commit == nil && j.kind == jobAsync {
			c.adoptLocked(j, w)
		}
		for _, j := range n.jobs {
			if j.kind == jobAsync {
				j.kind = jobSync
				c.adoptLocked(j, w)
			}
		}
		if len(n.pending) > 0 {
			j := &ackJob{kind: jobSync, commit: w}
			j.parts = c.takeAcksLocked(n, j)
			c.enqueueLocked(n, j)
		}
	}
	c.kickLocked()
	finished := w.remaining == 0
	c.mu.Unlock()
	if !finished {
		select {
		case <-w.done:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	out := make(map[TopicPartition]error, len(w.results))
	for tp, err := range w.results {
		out[tp] = err
	}
	for tp, p := range w.waiting {
		if p > 0 {
			out[tp] = timedOut(tp, w.offsets[tp], ctx)
		}
	}
	w.abandoned = true
	c.mu.Unlock()
	c.runCallbacks()
	return out
}

// CommitAsync sends every acknowledgement not sent yet in a ShareAcknowledge to each partition
// leader, without waiting; in implicit mode it first accepts every record the last Poll
// returned. The outcome reaches only the OnAcknowledgementCommit callback, run by a later
// Poll, commit or Close (and by this call, for outcomes already in).
func (c *Consumer) CommitAsync() {
	if c.check() != nil {
		return
	}
	c.runCallbacks()
	c.mu.Lock()
	if !c.cfg.explicit {
		c.acceptAllLocked()
	}
	c.moveAckedLocked()
	c.flushAllLocked()
	c.mu.Unlock()
}

// Wakeup makes the Poll that is blocked, or else the next Poll, return ErrWokenUp. Each call
// wakes at most one Poll; calls before that Poll count once. It is safe from any goroutine.
func (c *Consumer) Wakeup() {
	select {
	case c.wakeup <- struct{}{}:
	default:
	}
}

// AcquisitionLockTimeoutMs returns how long the broker locks the records it hands to this
// consumer, in milliseconds: the latest value a broker reported, with the records a Poll
// returned (ShareFetch v1+) or in the answer to acknowledgements or renews (ShareAcknowledge
// v2+, a renew's ShareFetch). A value an answer to acknowledgements brings shows from the next
// Poll, or from the Poll that returns the renewed records, as with Kafka's client. It is false
// before any records were returned.
func (c *Consumer) AcquisitionLockTimeoutMs() (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lockShown.ms, c.lockShown.ms > 0
}

// Close leaves the group, waiting for the work to finish until ctx ends:
//
//  1. Acknowledgements recorded but not sent are sent, each leader's in a ShareAcknowledge with
//     epoch -1 that also closes the consumer's share session there (sent even with nothing to
//     acknowledge). As with Kafka's client, Close does not accept the records of the last Poll
//     in implicit mode, and sends only what was acknowledged in explicit mode: the broker
//     releases every other record when the session closes, keeping its delivery count.
//     A ShareFetch still waiting at a broker is waited for first: up to FetchMaxWait on the
//     broker's clock (a testbroker on a manual clock holds it until the test advances the
//     clock or produces to a fetched partition; FetchMaxWait(0) avoids the wait).
//  2. The member leaves the group (ShareGroupHeartbeat with MemberEpoch -1).
//  3. Every goroutine of the consumer ends and the kgo client is closed. When ctx ends first,
//     requests still on their way are abandoned and their acknowledgements fail.
//
// The callback runs for every outcome before Close returns (when Close is called from inside
// the callback, right after that callback call returns). Close returns ctx's error when ctx
// ended first, and ErrClosed when the consumer was already closed.
func (c *Consumer) Close(ctx context.Context) error {
	if !c.closed.CompareAndSwap(false, true) {
		return errors.ErrClosed
	}
	close(c.closing)
	var ctxErr error
	wait := func(ch <-chan struct{}) {
		if ctxErr != nil {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
	}

	c.mu.Lock()
	p := c.pool
	c.mu.Unlock()
	if p != nil {
		// Process shuts down first, as when its context ends, so that its acknowledgements
		// travel on the requests that close the sessions.
		p.cancelIntake()
		wait(p.shut)
		if ctxErr != nil {
			// Close cannot wait for the grace period: running handlers are stopped now.
			p.hurryOnce.Do(func() { close(p.hurry) })
		}
	}

	c.mu.Lock()
	c.pollWaiting = false
	c.unrenewLocked()
	c.moveAckedLocked() // what was acknowledged, and the consumer's own rejections
	w := &commitWait{results: make(map[TopicPartition]error), done: make(chan struct{})}
	for _, n := range c.sortedNodesLocked() {
		c.closeSessionLocked(n, w)
	}
	c.kickLocked()
	finished := w.remaining == 0
	c.mu.Unlock()
	if !finished {
		wait(w.done)
	}

	c.hbCancel()
	close(c.hbStop)
	wait(c.hbDone)

	c.mu.Lock()
	c.stopped = true
	c.subscription = nil
	c.mu.Unlock()
	c.cancel()
	c.cl.Close()
	c.wg.Wait()
	c.mu.Lock()
	c.failAllLocked()
	c.mu.Unlock()
	c.runCallbacks()
	if ctxErr != nil {
		return fmt.Errorf("shareconsumer: Close: %w", ctxErr)
	}
	return nil
}

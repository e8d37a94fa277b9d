package shareconsumer

import (
	"context"
	"crypto/rand"
	"crypto/tls"
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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
)

// retryBackoff is the pause after a request failed or a broker answered with nothing but
// errors, before the same broker is asked again.
const retryBackoff = 100 * time.Millisecond

// idlePause is the pause between ShareFetches that came back empty with FetchMaxWait(0).
const idlePause = 10 * time.Millisecond

// Consumer is a member of a Kafka share group. Create it with New, call Poll in a loop on one
// goroutine, and Close it when done.
//
// Poll, CommitSync, Subscribe, Unsubscribe, DeadLetter and Close are meant for one goroutine, the
// application's poll loop. Acknowledge, AcknowledgeOffset, CommitAsync, Wakeup, Subscription,
// Status, Lag, Group, ProcessStats, DeliveryCountLimit and AcquisitionLockTimeoutMs are safe from any goroutine,
// also while Poll runs; a second Poll running at the same time fails with ErrConcurrentPoll.
// After Close every method that talks to the cluster or changes the consumer returns
// ErrClosed.
//
// Inside, the consumer is a facade over types that each keep one concern (docs/internals.md):
// membership (the group, the assignment, metadata), one session per partition leader (share
// session epoch, acknowledgements waiting, requests), the ledger (every record handed out, to
// Poll or to Process's workers, with the lease that renews Process's locks), and admission
// (may a session fetch, and how many records). The locks, always taken in this order:
//
//  1. Consumer.mu guards membership, the sessions (but their inboxes), admission, the poll
//     state, outcomes, lock reports and health. No request is sent, no callback or handler
//     runs, and no channel send blocks while it is held.
//  2. worker.mu, one per Process worker, guards the worker's batch: the worker takes it to add
//     a record and to publish, never while a handler or hook runs; the lease loop's
//     acknowledgement flush takes it to publish the batch of a worker whose handler is slow.
//  3. ledger.mu guards the ledger. Acknowledge takes it alone; Process's workers take it alone,
//     and only to lose a record whose lock ran out (begin, loseOne) or to retire an
//     acquisition whose last record left; the lease loop takes it for the heap's events (due);
//     Process's shutdown takes it to stop the running handlers (eachRunning) and to retire
//     what it released.
//  4. ackInbox.mu, one per session, guards the acknowledgements Process hands over: a worker
//     takes it, once per session in each batch it publishes (under worker.mu); shutdown once per record it
//     releases from the queue.
//
// outcomes.cbMu is held only while the callback runs, never with another lock; deadLetters.mu
// (dlq*.go) only to make or close the dead-letter producer and to read or store the delivery
// count limit, never with another lock and never while a request is sent.
type Consumer struct {
	cfg      cfg
	cl       *kgo.Client
	logger   kgo.Logger
	dec      decoder
	versions apiversions.Registry
	caps     *kversion.Versions
	life     lifecycle

	mu       sync.Mutex
	member   membership
	sessions sessionSet
	ledger   ledger
	admit    admission
	poll     pollState
	acks     outcomes
	locks    lockReports
	health   health
	// taker is where fetched records go: the ledger's buffer for Poll (pollTaker), or the
	// running Process's pool.
	taker recordTaker
	// process is Process's state; only process*.go touches it.
	process processState
	// lag is the LagInterval goroutine's state; only lag.go touches it.
	lag lagLoop
	// dlq is the dead-letter producer and the group's delivery count limit; only dlq*.go
	// touches it, under its own lock.
	dlq deadLetters

	// hooks are the hooks by interface, fixed in New. memberTold is the membership they were
	// last told of (Consumer.mu); memberHookMu keeps their membership calls in order.
	hooks        hooks
	memberTold   memberSnapshot
	memberHookMu sync.Mutex
}

// lifecycle is the consumer's goroutines and how they stop.
type lifecycle struct {
	// ctx is the context of metadata requests, ApiVersions and the leave; it ends when Close
	// gives up waiting.
	ctx     context.Context
	cancel  context.CancelFunc
	closing chan struct{} // closed when Close starts
	closed  atomic.Bool
	stopped bool           // Close is tearing down: no goroutine may start (Consumer.mu)
	wg      sync.WaitGroup // every goroutine of the consumer
	hbStop  chan struct{}  // closed to make the heartbeat loop leave the group and return
	// hbCtx is the context of heartbeats other than the leave; it ends when Close starts, so
	// that a heartbeat or coordinator lookup that hangs does not hold Close up.
	hbCtx    context.Context
	hbCancel context.CancelFunc
	hbDone   chan struct{} // closed when the heartbeat loop returned
	hbWake   chan struct{} // wakes the heartbeat loop (subscription changed, Poll rejoining)
}

// pollState is what Poll and Process share of the application's side. Guarded by
// Consumer.mu, but for the flags and channels.
type pollState struct {
	polling    atomic.Bool   // a Poll or Process runs
	processing atomic.Bool   // Process runs
	wakeup     chan struct{} // one token per Wakeup not yet seen by Poll
	notify     chan struct{} // wakes a waiting Poll
	// errs are errors for the next Poll, each returned once.
	errs []error
	// lastPoll is when the last Poll or Process returned (New, before the first): the member
	// leaves the group when no Poll runs for MaxPollInterval after it.
	lastPoll time.Time
}

// lockReports are the lock durations brokers reported, numbered in the order the answers
// came. shown is what AcquisitionLockTimeoutMs shows (ms 0: not known yet); next, one an
// acknowledgement's answer reported, shown from the next Poll.
type lockReports struct {
	shown, next lockReport
	seq         uint64
}

// lockReport is a lock duration a broker reported, numbered.
type lockReport struct {
	ms  int32
	seq uint64
}

// report numbers a lock duration a broker reported; the zero report for none.
func (r *lockReports) report(ms int32) lockReport {
	if ms <= 0 {
		return lockReport{}
	}
	r.seq++
	return lockReport{ms, r.seq}
}

// show makes AcquisitionLockTimeoutMs show lr, unless it shows a newer report.
func (r *lockReports) show(lr lockReport) {
	if lr.ms > 0 && lr.seq > r.shown.seq {
		r.shown = lr
	}
}

// duration is the lock duration shown, 0 when none is known.
func (r *lockReports) duration() time.Duration { return time.Duration(r.shown.ms) * time.Millisecond }

// sessionSet is the consumer's share sessions, by leader, and where acknowledgements leaving
// the ledger go: the session of the leader each record came from. Guarded by Consumer.mu.
type sessionSet struct {
	byNode map[int32]*session
	order  []*session // sorted by node; nil when a session was added since
	renews renewer    // what the renews of Poll are for (pollRenews)
	last   *session   // the session ack found last: acknowledgements come in runs
}

// get returns the session with node, made on first use.
func (ss *sessionSet) get(node int32) *session {
	s := ss.byNode[node]
	if s == nil {
		s = newSession(node, ss.renews)
		ss.byNode[node] = s
		ss.order = nil
	}
	return s
}

// ack records acknowledgements of the offsets first to last, all t, for the session of the
// leader part came from.
func (ss *sessionSet) ack(part *heldPart, first, last int64, t acktype.Type) {
	s := ss.last
	if s == nil || s.node != part.node {
		s = ss.get(part.node)
		ss.last = s
	}
	s.addAcks(part, first, last, t)
}

// renewQueued counts a renew of Poll among the acknowledgements waiting for part's leader.
func (ss *sessionSet) renewQueued(part *heldPart) { ss.get(part.node).queuedRenews++ }

// flushAll queues every session's waiting acknowledgements in a ShareAcknowledge.
func (ss *sessionSet) flushAll(o *outcomes, now time.Time) {
	for _, s := range ss.sorted() {
		s.flush(o, now)
	}
}

// sorted returns the sessions sorted by node. The slice is shared and must not be changed; it
// stays valid while sessions are added (a new one makes a new slice), so a caller may add
// sessions while it ranges over it.
func (ss *sessionSet) sorted() []*session {
	if ss.order == nil {
		out := make([]*session, 0, len(ss.byNode))
		for _, s := range ss.byNode {
			out = append(out, s)
		}
		slices.SortFunc(out, func(a, b *session) int { return cmp64(int64(a.node), int64(b.node)) })
		ss.order = out
	}
	return ss.order
}

// New creates a consumer. It checks the options, creates the kgo.Client, and, when Topics was
// given, starts joining the group in the background; it does not wait for the network, so a
// bad address shows up in Poll's error (an *errors.PollTimeoutError with ReasonNoBroker and the
// dial error, with the address), in Status and in the kgo log rather than here. The
// HookNewConsumer hooks are called last, with the consumer, before New returns it.
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
	hs, err := sortHooks(cfg.hooks)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:   cfg,
		hooks: hs,
		life: lifecycle{
			closing: make(chan struct{}),
			hbStop:  make(chan struct{}),
			hbDone:  make(chan struct{}),
			hbWake:  make(chan struct{}, 1),
		},
		poll: pollState{
			wakeup:   make(chan struct{}, 1),
			notify:   make(chan struct{}, 1),
			lastPoll: time.Now(),
		},
		sessions: sessionSet{byNode: make(map[int32]*session)},
		admit:    newAdmission(cfg),
		acks:     outcomes{onCommit: cfg.onCommit},
	}
	kopts := append(cfg.kgoOpts(), kgo.WithHooks(connectHook{c}))
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
	var rack *string
	if r, _ := cl.OptValue(kgo.Rack).(string); r != "" {
		rack = &r
	}
	c.member = newMembership(cfg.group, newMemberID(), rack)
	c.caps, _ = cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	c.dec.decompressor, _ = cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	if c.dec.decompressor == nil {
		c.dec.decompressor = kgo.DefaultDecompressor()
	}
	noCRC, _ := cl.OptValue(kgo.DisableFetchCRCValidation).(bool)
	c.dec.checkCRC = !noCRC
	c.taker = pollTaker{c}
	c.sessions.renews = pollRenews{c}
	c.ledger.lease.epoch = time.Now().Add(-time.Hour)
	c.ledger.lease.hookLost = len(hs.lockLost) > 0
	c.ledger.hookRenew = len(hs.renew) > 0
	c.life.ctx, c.life.cancel = context.WithCancel(context.Background())
	c.life.hbCtx, c.life.hbCancel = context.WithCancel(c.life.ctx)
	if cfg.topicsSet {
		c.member.subscription = normalizeTopics(cfg.topics)
	}
	// The hooks are told of changes from here on, not of where the consumer starts.
	c.memberTold = memberSnapshot{told: true, state: c.member.state(false)}
	// Before any goroutine starts, so that no other hook comes before this one.
	for _, h := range hs.newConsumer {
		h.OnNewConsumer(c)
	}
	c.life.wg.Add(1)
	go c.heartbeatLoop()
	if len(c.member.subscription) > 0 {
		c.mu.Lock()
		c.triggerMetadataLocked()
		c.mu.Unlock()
	}
	c.startLag()
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
	now := time.Now()
	if err != nil {
		addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
		c.health.dialErr = fmt.Errorf("dialing %s: %w", addr, err)
		c.health.setErr(c.health.dialErr, now)
		c.health.authErr = nil
		if authFailure(err) {
			c.health.authErr = &errors.AuthenticationError{Broker: addr, Err: err}
			c.poll.addAuthErr(c.health.authErr)
		}
		c.noteLocked(now)
		return
	}
	c.health.dialErr, c.health.authErr = nil, nil
	c.poll.dropAuthErrs() // the credentials work now: no Poll needs to hear of a failure before
	if s := c.sessions.byNode[meta.NodeID]; s != nil {
		s.unsupported = nil
		s.versionsStale = true
	}
	c.noteLocked(now)
}

// authFailure reports whether err, from connecting to a broker, says that the broker refused
// the client's credentials or the TLS handshake failed, as Kafka's AuthenticationException
// (SaslAuthenticationException, SslAuthenticationException) does: not a broker that cannot be
// reached.
func authFailure(err error) bool {
	var (
		verify *tls.CertificateVerificationError
		alert  tls.AlertError
		header tls.RecordHeaderError
	)
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) || errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &header)
}

// addAuthErr keeps err for the next Poll in place of an authentication error still waiting
// there: a Poll gets one for the last failed attempt, not one for each. Consumer.mu is held.
func (ps *pollState) addAuthErr(err *errors.AuthenticationError) {
	ps.dropAuthErrs()
	ps.addErr(err)
}

// dropAuthErrs forgets the authentication errors waiting for a Poll. Consumer.mu is held.
func (ps *pollState) dropAuthErrs() {
	ps.errs = slices.DeleteFunc(ps.errs, func(e error) bool {
		_, ok := e.(*errors.AuthenticationError)
		return ok
	})
}

// maxPollErrs caps the errors kept for Polls that do not come.
const maxPollErrs = 16

// addErr keeps err for the next Poll, and wakes a waiting one. Consumer.mu is held.
func (ps *pollState) addErr(err error) {
	if len(ps.errs) >= maxPollErrs {
		ps.errs = ps.errs[1:]
	}
	ps.errs = append(ps.errs, err)
	ps.wake()
}

// wake wakes a waiting Poll (or Process's watch).
func (ps *pollState) wake() {
	select {
	case ps.notify <- struct{}{}:
	default:
	}
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
	if c.life.closed.Load() {
		return errors.ErrClosed
	}
	return nil
}

// log logs through the kgo client's logger, if it has one.
func (c *Consumer) log(level kgo.LogLevel, msg string, keyvals ...any) {
	if c.logger != nil && c.logger.Level() >= level {
		c.logger.Log(level, "shareconsumer: "+msg, append([]any{"group", c.cfg.group, "member", c.member.memberID}, keyvals...)...)
	}
}

// runCallbacks gives the acknowledgement outcomes collected so far to the callback.
func (c *Consumer) runCallbacks() { c.acks.run(&c.mu, c.log) }

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
	if err := deadLetterLoop(c.cfg.deadLetterTopic, topics); err != nil {
		return err
	}
	ts := normalizeTopics(topics)
	defer c.lockMembership()()
	if slices.Equal(ts, c.member.subscription) {
		return nil
	}
	c.member.subscription = ts
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
	defer c.lockMembership()()
	if len(c.member.subscription) == 0 {
		return nil
	}
	c.member.subscription = nil
	c.assignmentChangedLocked(c.member.assign(nil))
	c.ledger.giveBack(&c.sessions, time.Now())
	c.sessions.flushAll(&c.acks, time.Now())
	c.kickLocked()
	c.wakeHeartbeat()
	return nil
}

// Group returns the share group the consumer was made for (the Group option), also after
// Close: for hooks that label what they export with it.
func (c *Consumer) Group() string { return c.cfg.group }

// MemberID returns the member ID the consumer heartbeats with: made by New (KIP-932 members
// choose their own), the same for the consumer's life, also after Close. It is the MemberID of
// the consumer's MembershipEvents and of the group's description, for a hook or a log that
// tells consumers apart.
func (c *Consumer) MemberID() string { return c.member.memberID }

// Subscription returns the topics the consumer is subscribed to, sorted; nil when it is not
// subscribed, or closed.
func (c *Consumer) Subscription() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.member.subscription)
}

// Wakeup makes the Poll that is blocked, or else the next Poll, return ErrWokenUp. Each call
// wakes at most one Poll; calls before that Poll count once. It is safe from any goroutine.
func (c *Consumer) Wakeup() {
	select {
	case c.poll.wakeup <- struct{}{}:
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
	return c.locks.shown.ms, c.locks.shown.ms > 0
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
// ended first, and ErrClosed when the consumer was already closed. The HookConsumerClosed hooks
// are called last, once, after every goroutine of the consumer ended; no hook is called after
// them.
func (c *Consumer) Close(ctx context.Context) error {
	if !c.life.closed.CompareAndSwap(false, true) {
		return errors.ErrClosed
	}
	close(c.life.closing)
	c.stopLag()
	var ctxErr error
	wait := func(ch <-chan struct{}) bool {
		if ctxErr != nil {
			return false
		}
		select {
		case <-ch:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		return ctxErr == nil
	}

	// Process shuts down first, as when its context ends, so that its acknowledgements travel
	// on the requests that close the sessions.
	c.closeProcess(wait)

	c.mu.Lock()
	now := time.Now()
	c.admit.waiting = false
	c.ledger.unrenew(now)
	c.ledger.moveAcked(&c.sessions) // what was acknowledged, and the consumer's own rejections
	w := newCommitWait(context.Background())
	for _, s := range c.sessions.sorted() {
		s.close(w, &c.acks, now)
	}
	c.kickLocked()
	finished := w.remaining == 0
	c.mu.Unlock()
	if !finished {
		wait(w.done)
	}

	c.life.hbCancel()
	close(c.life.hbStop)
	wait(c.life.hbDone)

	c.mu.Lock()
	c.life.stopped = true
	c.member.subscription = nil
	c.mu.Unlock()
	c.life.cancel()
	c.closeDeadLetters()
	c.cl.Close()
	c.life.wg.Wait()
	c.mu.Lock()
	now = time.Now()
	for _, s := range c.sessions.sorted() {
		s.failQueued(&c.acks, now)
	}
	c.mu.Unlock()
	c.runCallbacks()
	c.fireLockLost()
	for _, h := range c.hooks.closed {
		h.OnConsumerClosed(c)
	}
	if ctxErr != nil {
		return fmt.Errorf("shareconsumer: Close: %w", ctxErr)
	}
	return nil
}

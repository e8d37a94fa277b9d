package shareconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Hook is a value that implements one or more of the hook interfaces of this package
// (HookNewConsumer, HookConsumerClosed, HookShareFetch, HookPoll, HookProcessStart,
// HookProcessDone, HookAcknowledge, HookRenew, HookLockLost, HookMembership, HookLag,
// HookDeadLetter), as kgo's hooks are. The consumer calls each interface a hook implements at
// the moment its doc comment gives; a metrics or tracing library is one such value
// (shareconsumer/kshareotel, shareconsumer/kshareprom).
//
// Hooks run on the consumer's own goroutines (a session's, the heartbeat's, a Process worker's)
// or on the application's (Poll, Subscribe, Unsubscribe, Close), never with a lock of the
// consumer's state held (membership hooks alone run one at a time, under a lock of their own
// that keeps them in order), and they hold up what called them: a hook must be quick and must
// not call back into the consumer, except Status, Group, MemberID, Lag and
// AcquisitionLockTimeoutMs, which are safe from anywhere. Slices in an event belong to the event: a hook may keep them
// after it returns, but must not change them. The *Record values are the application's own,
// shared with Poll and the handler.
//
// With no hook set the consumer does no work for hooks: it builds no event (the benchmark
// BenchmarkHooks in this package measures both sides).
type Hook any

// Hooks adds hooks to the consumer. Like ClientOpts it adds to the hooks of earlier Hooks
// options; hooks are called in the order they were given. New refuses a value that implements
// none of the hook interfaces, and a nil one.
//
// kgo's hooks passed through ClientOpts see the consumer's broker requests and connections
// (kgo.HookBrokerWrite, HookBrokerRead, HookBrokerE2E, ...) but none of kgo's fetch or produce
// hooks: the consumer decodes ShareFetch answers itself. These hooks are the ones that see
// records.
func Hooks(hooks ...Hook) Opt {
	return opt(func(c *cfg) { c.hooks = append(c.hooks, hooks...) })
}

// HookNewConsumer is called when New has made a consumer, before New starts the consumer's
// goroutines and returns it, so before any other hook: for a hook that reads the consumer
// later (Status or Group, on a metrics scrape).
type HookNewConsumer interface {
	OnNewConsumer(*Consumer)
}

// HookConsumerClosed is called at the end of Close, after the consumer's goroutines ended,
// whatever Close returns: for a hook to stop what it started in OnNewConsumer.
type HookConsumerClosed interface {
	OnConsumerClosed(*Consumer)
}

// HookShareFetch is called when a ShareFetch was answered or failed, after its records were
// decoded and before they are handed out, on the goroutine of the session with that leader.
type HookShareFetch interface {
	OnShareFetch(ShareFetchEvent)
}

// ShareFetchEvent is one ShareFetch request and what came of it.
type ShareFetchEvent struct {
	// Leader is the node id of the partition leader the request went to.
	Leader int32
	// Partitions are the answer's partitions that acquired records or had an error, in the
	// answer's order; nil when the request failed as a whole.
	Partitions []FetchedPartition
	// Records is the number of records acquired for the application, over every partition:
	// what Poll or Process will get from this answer (not control records, not gaps).
	Records int
	// Bytes is the size of the answer's record batches, over every partition.
	Bytes int
	// AcquisitionLockTimeout is the lock duration the leader reported (0 when it reported
	// none, as before ShareFetch v1).
	AcquisitionLockTimeout time.Duration
	// Latency is from the moment the request was handed to the client to its answer; it
	// includes the time the broker held the request waiting for records (FetchMaxWait).
	Latency time.Duration
	// Err is the request's failure: a transport error, a context error at Close, or the
	// answer's top-level error code as a *errors.KafkaError; nil when it was answered.
	Err error
}

// FetchedPartition is one partition of a ShareFetch answer.
type FetchedPartition struct {
	TopicPartition
	Records int // records acquired for the application
	Bytes   int // size of the partition's record batches
	// Err is the partition's error code as a *errors.KafkaError (Kafka's message kept), or a
	// decoding error; nil when the partition had none.
	Err error
}

// HookPoll is called when Poll returns, with what it returns, on Poll's goroutine. It is not
// called for Process, nor for a Poll on a consumer already closed (ErrClosed at once).
type HookPoll interface {
	OnPoll(PollEvent)
}

// PollEvent is one return of Poll.
type PollEvent struct {
	// Records are the records Poll returns (the same slice), renewed records first.
	Records []*Record
	// Start is when Poll was called; Duration is how long it ran.
	Start    time.Time
	Duration time.Duration
	// Err is the error Poll returns, nil when it returned records or its context ended.
	Err error
}

// HookProcessStart is called on a Process worker's goroutine just before a record is handed to
// the handler. The context it returns becomes the handler's (hooks chain, each given the
// previous one's context); return ctx itself to leave it as it is. A tracing hook returns a
// context that carries the record's span. The context given is the handler's own: it ends when
// the record stops being the handler's, with the cause Process documents.
type HookProcessStart interface {
	OnProcessStart(ctx context.Context, r *Record) context.Context
}

// HookProcessDone is called once for every record Process acquired, when what became of it is
// known: after its handler returned and the acknowledgement was chosen, or when the record was
// lost or released before a handler had it. ctx is the context the HookProcessStart hooks made
// for the record, or context.Background() when no handler had it. It is called on a worker's
// goroutine, or on Process's own for records released at shutdown; with the same outcome
// OnRecordDone gets, just before OnRecordDone.
type HookProcessDone interface {
	OnProcessDone(ctx context.Context, o RecordOutcome)
}

// HookAcknowledge is called when acknowledgements were sent and answered (or failed), on the
// goroutine of the session with that leader: once per ShareFetch or ShareAcknowledge request
// that carried acknowledgements, including RENEW and the acknowledgements of Close. Poll's and
// Process's acknowledgements alike; the consumer's own (gaps, corrupt batches) too.
//
// It runs once the answer is applied and the lock let go, so it may run after CommitSync
// returned, or the OnAcknowledgementCommit callback ran, for the same outcome; Close waits for
// it. Acknowledgements that failed without being sent (their partition's leader moved, no share
// session was open, the consumer closed first) are in no event: the callback and CommitSync
// report them. A CommitSync retry is a request of its own, with an event of its own.
type HookAcknowledge interface {
	OnAcknowledge(AcknowledgeEvent)
}

// AcknowledgeEvent is the acknowledgements one request carried and what the leader said.
type AcknowledgeEvent struct {
	// Leader is the node id of the partition leader the request went to.
	Leader int32
	// Request is "ShareFetch" or "ShareAcknowledge", the request that carried them.
	Request string
	// Partitions are the acknowledgements by partition, in the request's order.
	Partitions []AcknowledgedPartition
	// Latency is from the moment the request was handed to the client to its answer.
	Latency time.Duration
	// Err is the request's failure (transport, context, top-level error code); when it is
	// set, every partition's Err is set too.
	Err error
}

// AcknowledgedPartition is one partition's acknowledgements in a request and their outcome.
type AcknowledgedPartition struct {
	TopicPartition
	// Records counts the acknowledged records by type: Records[acktype.Accept] and so on
	// (index 0, acktype.Gap, counts the offsets acknowledged as gaps).
	Records [5]int
	// Err is nil when the leader applied every acknowledgement of the partition, else the
	// *errors.AckError of AcknowledgementCommit.
	Err error
}

// Count returns the records acknowledged with type t.
func (p AcknowledgedPartition) Count(t acktype.Type) int {
	if int(t) < 0 || int(t) >= len(p.Records) {
		return 0
	}
	return p.Records[t]
}

// HookRenew is called when a leader answered a RENEW, with the records whose locks it
// renewed, on the session's goroutine: Process's lease renewals and Poll's
// Acknowledge(r, acktype.Renew) alike. Refused renews are in the HookAcknowledge event of the
// same request; in Process they also lose their records' locks (HookLockLost). There is no
// event when a renew is sent: every RENEW sent is counted, once answered or failed, in the
// HookAcknowledge event of its request (AcknowledgedPartition.Count(acktype.Renew)).
type HookRenew interface {
	OnRenew(RenewEvent)
}

// RenewEvent is one answered RENEW. A request that renewed records of Poll's and of Process's
// (their deadlines reckoned apart) gives one event for each.
type RenewEvent struct {
	// Leader is the node id of the partition leader that renewed the locks.
	Leader int32
	// Records are the records whose locks were renewed. For Process, those the consumer still
	// holds when the answer comes: a record whose acknowledgement was handed over meanwhile,
	// with the rest of its ShareFetch answer's records, is not among them.
	Records []*Record
	// LockDeadline is the records' new lock deadline, estimated as Record.LockDeadline is:
	// when the renew was sent plus the lock duration the answer reported.
	LockDeadline time.Time
}

// HookLockLost is called when Process lost a record's acquisition lock, with the reason: the
// record's handler's context ends with the same *errors.LockLostError. It is called soon
// after, once the locks are let go, on a goroutine of the consumer's: mostly the one that found
// the loss (a session's, the lease loop's, a worker's, the metadata goroutine's for a leader
// that moved), else another of those, or Process's own at shutdown; losses found together come
// in the order they were found. Poll's records have no such event: the consumer does not
// watch their locks.
type HookLockLost interface {
	OnLockLost(LockLostEvent)
}

// LockLostEvent is one record whose lock Process lost.
type LockLostEvent struct {
	Record *Record
	// Running says whether a handler had the record when its lock was lost (else it was
	// queued, or settled and its acknowledgement not yet sent).
	Running bool
	Err     *errors.LockLostError // Err.Reason says why
}

// HookMembership is called when the consumer's membership changes: its state, member epoch or
// assignment (by name: an assignment whose topics metadata has yet to name shows when they are
// named). It is called on the heartbeat's goroutine (which also tells what Poll's rejoin
// changed, and the close), the metadata goroutine's, or the application's in Subscribe and
// Unsubscribe; one call at a time, in the order of the changes. Changes made together (a
// heartbeat answer with a new epoch and assignment) are one event, and where the consumer
// starts (unsubscribed, or joining with Topics) is not told.
type HookMembership interface {
	OnMembership(MembershipEvent)
}

// MembershipEvent is the membership after a change.
type MembershipEvent struct {
	Group       string
	MemberID    string
	State       MemberState
	MemberEpoch int32
	// Assigned are the partitions assigned now, sorted.
	Assigned []TopicPartition
	// Err is the heartbeat's error that caused the change (fenced, unknown member, fatal),
	// nil for an ordinary one.
	Err error
}

// HookLag is called with the share group's lag every LagInterval, on a goroutine of the
// consumer's that ends with Close.
type HookLag interface {
	OnLag(LagEvent)
}

// LagEvent is one lag lookup.
type LagEvent struct {
	Lag GroupLag
	Err error // the lookup's failure; Lag is then empty
}

// HookDeadLetter is called when a record was dead-lettered (DeadLetterTopic), or its
// dead-letter produce failed: by Process on the worker's goroutine, after the handler returned
// and before HookProcessDone, and by Consumer.DeadLetter on its caller's, before it returns.
type HookDeadLetter interface {
	OnDeadLetter(DeadLetterEvent)
}

// DeadLetterEvent is one record's produce to the dead-letter topic.
type DeadLetterEvent struct {
	// Record is the record (its Topic, Partition, Offset and DeliveryCount).
	Record *Record
	// DeadLetterTopic is the topic its copy went to.
	DeadLetterTopic string
	// Cause is why it was dead-lettered: the handler's error (an errors.DeadLetter for a poison
	// record, a *errors.PanicError for a panic), or the cause given to Consumer.DeadLetter.
	Cause error
	// Err is nil when the copy was produced (acks=all), else the *errors.DeadLetterError: the
	// record was released (Process, and Consumer.DeadLetter in implicit mode), or left to the
	// caller (Consumer.DeadLetter in explicit mode).
	Err error
	// Latency is how long the produce took, until acknowledged or failed.
	Latency time.Duration
}

// hooks holds the configured hooks by interface, so that a call site with none does nothing
// but test a nil slice.
type hooks struct {
	newConsumer  []HookNewConsumer
	closed       []HookConsumerClosed
	shareFetch   []HookShareFetch
	poll         []HookPoll
	processStart []HookProcessStart
	processDone  []HookProcessDone
	acknowledge  []HookAcknowledge
	renew        []HookRenew
	lockLost     []HookLockLost
	membership   []HookMembership
	lag          []HookLag
	deadLetter   []HookDeadLetter
}

// sortHooks files each hook under every interface it implements, and refuses one that
// implements none.
func sortHooks(in []Hook) (hooks, error) {
	var h hooks
	for i, v := range in {
		if v == nil {
			return hooks{}, fmt.Errorf("shareconsumer: Hooks: hook %d is nil: pass values that implement hook interfaces (HookPoll, HookAcknowledge, ...)", i)
		}
		n := file(&h.newConsumer, v) + file(&h.closed, v) + file(&h.shareFetch, v) +
			file(&h.poll, v) + file(&h.processStart, v) + file(&h.processDone, v) +
			file(&h.acknowledge, v) + file(&h.renew, v) + file(&h.lockLost, v) +
			file(&h.membership, v) + file(&h.lag, v) + file(&h.deadLetter, v)
		if n == 0 {
			return hooks{}, fmt.Errorf("shareconsumer: Hooks: hook %d (%T) implements none of the hook interfaces (HookNewConsumer, HookPoll, HookAcknowledge, ...): check its methods' names and signatures", i, v)
		}
	}
	return h, nil
}

// file appends v to dst when v implements T, and says how many it appended (0 or 1).
func file[T any](dst *[]T, v Hook) int {
	x, ok := v.(T)
	if !ok {
		return 0
	}
	*dst = append(*dst, x)
	return 1
}

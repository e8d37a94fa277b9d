package renewbuffer

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// Key identifies a held record.
type Key struct {
	Topic     string
	Partition int32
	Offset    int64
}

// compareKeys orders keys by topic, partition and offset.
func compareKeys(a, b Key) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

// State is where a held record is in its renew.
type State uint8

// The states of a held record. The zero State is none of them: Get returns it for a key the
// Buffer does not hold.
const (
	Queued State = iota + 1 // the application renewed the record; the renew is not sent yet
	Sent                    // the renew is in a request, awaiting the answer
	Ready                   // the broker renewed the lock; the record waits for a Poll
)

// String returns the state's name in lower case ("queued", "sent", "ready"), or "none" for the
// zero State.
func (s State) String() string {
	switch s {
	case Queued:
		return "queued"
	case Sent:
		return "sent"
	case Ready:
		return "ready"
	case 0:
		return "none"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Ticket identifies one send of one renew: MarkSent issues it and Complete and Fail require it,
// so that the answer to a renew the application has since superseded (renewed again, before the
// answer came) is ignored. Tickets are unique within a Buffer; the zero Ticket is never issued.
type Ticket uint64

// Buffer holds renewed records, with values of type T, from the application's renew until a Take
// hands them back or they are dropped. The zero value is empty and ready to use. A Buffer is not
// safe for concurrent use.
//
// For n held records, every operation costs O(log n) amortised, or O(1); those that return
// several keys or values cost that per key or value returned (Take, RemovePartition), plus
// sorting them (RemovePartition, QueuedOffsets).
type Buffer[T any] struct {
	parts     map[partKey]*partition[T]
	n         int // held records
	queued    int // held records in Queued
	ready     int // held records in Ready
	handOut   handOut[T]
	deadlines deadlines[T]
	tickets   Ticket // the last Ticket issued
	round     uint64 // counts Takes; see Take
}

type partKey struct {
	topic     string
	partition int32
}

// partition holds one partition's records.
type partition[T any] struct {
	all    map[int64]*entry[T]
	queued map[int64]*entry[T] // the subset in Queued, so that building a request does not scan all
}

// entry is one held record. Once dropped or replaced its state is 0 for good, which marks any
// slot still naming it as stale; so Add over a held key makes a new entry rather than reusing the
// old one.
type entry[T any] struct {
	key      Key
	v        T
	state    State
	ticket   Ticket    // of the current send, while Sent
	sentAt   time.Time // while Sent or Ready
	deadline time.Time // while Ready
	round    uint64    // while Ready: the Take round in which the record became Ready
}

// Add records that the application renewed k, holding v, and puts k in Queued. An entry already
// held for k is replaced whatever its state, with its value: a Ready entry is no longer handed out
// by Take, and the Ticket of a Sent entry becomes stale, so the answer to that earlier send,
// whenever it comes, changes nothing (the renew must be sent again, as the new entry).
func (b *Buffer[T]) Add(k Key, v T) {
	p := b.partition(k, true)
	if old := p.all[k.Offset]; old != nil {
		b.leave(p, old)
		b.n--
	}
	e := &entry[T]{key: k, v: v, state: Queued}
	p.all[k.Offset] = e
	p.queued[k.Offset] = e
	b.n++
	b.queued++
	b.compact()
}

// MarkSent records that the renew of k left in a request sent at `at`, moving k from Queued to
// Sent, and returns the Ticket that Complete or Fail needs when the answer comes. It returns false,
// and changes nothing, when k is not held or not Queued (a renew already sent is not sent twice).
func (b *Buffer[T]) MarkSent(k Key, at time.Time) (Ticket, bool) {
	p, e := b.lookup(k)
	if e == nil || e.state != Queued {
		return 0, false
	}
	delete(p.queued, k.Offset)
	b.queued--
	b.tickets++
	e.state, e.ticket, e.sentAt = Sent, b.tickets, at
	return e.ticket, true
}

// Complete records that the broker renewed k's lock, answering the send identified by t: k
// becomes Ready, to be handed out by Take until its deadline, the send time plus lockTimeout.
// Counting from the send rather than from the answer keeps the deadline on the safe side of the
// broker's, which started its new timer in between. A non-positive lockTimeout gives a deadline at
// or before the send, which any later Take treats as passed; the caller passes the lock duration
// of the answer or, when the answer has none, the last one it knows.
//
// Complete returns false, and changes nothing, when k is not held, not Sent, or was sent again or
// renewed again since t was issued.
func (b *Buffer[T]) Complete(k Key, t Ticket, lockTimeout time.Duration) bool {
	_, e := b.lookup(k)
	if e == nil || e.state != Sent || e.ticket != t {
		return false
	}
	e.state, e.ticket = Ready, 0
	e.deadline = e.sentAt.Add(lockTimeout)
	e.round = b.round
	b.ready++
	b.handOut.fresh = append(b.handOut.fresh, e)
	b.deadlines.push(e)
	return true
}

// Fail records that the renew of k sent as t failed, and drops k: it is never handed out. It
// returns k's value. Like Complete, it returns false and changes nothing when k is not held, not
// Sent, or was renewed again since t was issued; a renew whose outcome is unknown (the request
// timed out, the connection broke) is reported as failed, as Kafka's Java client does, so that no
// record is left waiting for an answer that never comes.
func (b *Buffer[T]) Fail(k Key, t Ticket) (T, bool) {
	p, e := b.lookup(k)
	if e == nil || e.state != Sent || e.ticket != t {
		var zero T
		return zero, false
	}
	return b.drop(p, e), true
}

// Remove drops k whatever its state and returns its value, or false when k is not held. The
// consumer calls it when the application acknowledges the record finally, or when the broker
// delivers the offset again (the lock was lost, so the held record is stale). An answer arriving
// later for a renew of k finds nothing and changes nothing.
func (b *Buffer[T]) Remove(k Key) (T, bool) {
	p, e := b.lookup(k)
	if e == nil {
		var zero T
		return zero, false
	}
	v := b.drop(p, e)
	b.compact()
	return v, true
}

// RemovePartition drops every record of the partition, whatever its state, and returns their
// keys in offset order, or nil when it held none. The consumer calls it when it loses the
// partition: revoked, its leader moved, or the share session was reset.
func (b *Buffer[T]) RemovePartition(topic string, partition int32) []Key {
	pk := partKey{topic, partition}
	p := b.parts[pk]
	if p == nil {
		return nil
	}
	keys := make([]Key, 0, len(p.all))
	for _, e := range p.all {
		keys = append(keys, e.key)
		b.leave(p, e)
	}
	b.n -= len(p.all)
	delete(b.parts, pk)
	b.compact()
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Compare(a.Offset, b.Offset) })
	return keys
}

// Take removes up to limit Ready records whose deadline is after now and appends their values to
// dst, returning the extended slice. It hands records out in the order they became Ready, where
// all the records that became Ready between two Takes count as simultaneous and go by topic,
// partition and offset; so the order does not depend on the order in which the consumer processed
// the answers, and a record left behind by limit goes before any that became Ready after it.
//
// Before that, Take drops every Ready record whose deadline is at or before now, whatever limit is:
// its lock may have expired on the broker, so handing it out would let the application work on a
// record that is no longer its own. It returns their keys in expired, in the same order as the
// records handed out, or nil when none expired. Records in Queued or Sent are left alone. A limit
// below 1 hands nothing out and only drops expired records.
func (b *Buffer[T]) Take(now time.Time, limit int, dst []T) (out []T, expired []Key) {
	var gone []*entry[T]
	for e := b.deadlines.first(); e != nil && !e.deadline.After(now); e = b.deadlines.first() {
		gone = append(gone, e)
		b.drop(b.parts[partKey{e.key.Topic, e.key.Partition}], e)
	}
	if len(gone) > 0 {
		slices.SortFunc(gone, compareReady[T])
		expired = make([]Key, len(gone))
		for i, e := range gone {
			expired[i] = e.key
		}
	}
	// Records that become Ready from now on go after those already Ready.
	b.handOut.seal()
	b.round++
	for ; limit > 0; limit-- {
		e := b.handOut.pop()
		if e == nil {
			break
		}
		dst = append(dst, b.drop(b.parts[partKey{e.key.Topic, e.key.Partition}], e))
	}
	b.compact()
	return dst, expired
}

// Get returns k's value and state and, when k is Ready, its deadline (the zero time otherwise);
// ok is false when k is not held.
func (b *Buffer[T]) Get(k Key) (v T, s State, deadline time.Time, ok bool) {
	_, e := b.lookup(k)
	if e == nil {
		return v, 0, deadline, false
	}
	if e.state == Ready {
		deadline = e.deadline
	}
	return e.v, e.state, deadline, true
}

// QueuedOffsets appends the offsets of the partition's Queued records, in ascending order, to dst
// and returns the extended slice: the renews to put in the next request to the partition's leader.
func (b *Buffer[T]) QueuedOffsets(topic string, partition int32, dst []int64) []int64 {
	p := b.parts[partKey{topic, partition}]
	if p == nil || len(p.queued) == 0 {
		return dst
	}
	start := len(dst)
	for o := range p.queued {
		dst = append(dst, o)
	}
	slices.Sort(dst[start:])
	return dst
}

// Len returns the number of records held, in any state.
func (b *Buffer[T]) Len() int { return b.n }

// Ready returns the number of records in Ready, including any whose deadline has passed but that
// no Take has dropped yet.
func (b *Buffer[T]) Ready() int { return b.ready }

// Pending returns the number of records whose renew is not answered yet: those in Queued or Sent.
func (b *Buffer[T]) Pending() int { return b.n - b.ready }

// Queued returns the number of records in Queued: renews still to be sent.
func (b *Buffer[T]) Queued() int { return b.queued }

// NextDeadline returns the earliest deadline of the Ready records, or false when none is Ready.
// The consumer uses it to know when held records would expire if no Poll took them.
func (b *Buffer[T]) NextDeadline() (time.Time, bool) {
	e := b.deadlines.first()
	if e == nil {
		return time.Time{}, false
	}
	return e.deadline, true
}

// partition returns k's partition, creating it when create is set, or nil.
func (b *Buffer[T]) partition(k Key, create bool) *partition[T] {
	pk := partKey{k.Topic, k.Partition}
	p := b.parts[pk]
	if p == nil && create {
		if b.parts == nil {
			b.parts = make(map[partKey]*partition[T])
		}
		p = &partition[T]{all: make(map[int64]*entry[T]), queued: make(map[int64]*entry[T])}
		b.parts[pk] = p
	}
	return p
}

// lookup returns k's partition and entry, or nils.
func (b *Buffer[T]) lookup(k Key) (*partition[T], *entry[T]) {
	p := b.partition(k, false)
	if p == nil {
		return nil, nil
	}
	return p, p.all[k.Offset]
}

// leave takes e out of its state for good, leaving p.all and b.n to the caller. A Ready entry's
// slots become stale.
func (b *Buffer[T]) leave(p *partition[T], e *entry[T]) {
	switch e.state {
	case Queued:
		delete(p.queued, e.key.Offset)
		b.queued--
	case Ready:
		b.ready--
	}
	e.state = 0
	var zero T
	e.v = zero // a stale slot may keep e until the next compaction; it need not keep v
}

// drop forgets e entirely, and p with it when p becomes empty, and returns e's value.
func (b *Buffer[T]) drop(p *partition[T], e *entry[T]) T {
	v := e.v
	b.leave(p, e)
	delete(p.all, e.key.Offset)
	b.n--
	if len(p.all) == 0 {
		delete(b.parts, partKey{e.key.Topic, e.key.Partition})
	}
	return v
}

// compact drops stale slots once they outnumber the live ones.
func (b *Buffer[T]) compact() {
	b.handOut.compact(b.ready)
	b.deadlines.compact(b.ready)
}

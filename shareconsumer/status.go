package shareconsumer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
)

// MemberState is where the consumer stands in its share group.
type MemberState int8

const (
	// StateUnsubscribed: no subscription; the consumer is not a member.
	StateUnsubscribed MemberState = iota
	// StateJoining: subscribed, not a member yet (or again, after being fenced).
	StateJoining
	// StateStable: a member of the group, with a member epoch.
	StateStable
	// StateLeft: the member left the group because the application did not poll within
	// MaxPollInterval; the next Poll (or Process) rejoins.
	StateLeft
	// StateFatal: the coordinator refused the member for good; Poll returns the
	// *errors.FatalError.
	StateFatal
	// StateClosed: Close was called.
	StateClosed
)

var stateNames = [...]string{"unsubscribed", "joining", "stable", "left", "fatal", "closed"}

// String returns the state in lower case, for example "stable".
func (s MemberState) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// Status is what the consumer knows of its membership and of why records do or do not come.
type Status struct {
	State MemberState
	// Reason is why a Poll waiting now would get no records (errors.ReasonNone when nothing
	// stands in the way); Detail says more: an address, a Kafka error, counts.
	Reason errors.PollReason
	Detail string
	// Since is when Reason began.
	Since time.Time
	// MemberEpoch is the member epoch the coordinator gave; 0 while not a member.
	MemberEpoch int32
	// Assigned are the partitions the consumer fetches, sorted.
	Assigned []TopicPartition
	// TopicErrors are the subscribed or assigned topics the consumer cannot read now, each with
	// why: a *errors.TopicAuthorizationError for a topic a broker refused
	// (TOPIC_AUTHORIZATION_FAILED in a ShareFetch or Metadata answer), a *errors.KafkaError with
	// UNKNOWN_TOPIC_OR_PARTITION for a subscribed topic metadata says does not exist. The other
	// topics are consumed meanwhile. A topic leaves the map when a ShareFetch of it (or, for
	// one only metadata refused, a Metadata answer) succeeds. nil when there is none.
	TopicErrors map[string]error
	// LastErr is the last error the consumer met talking to the cluster (a failed dial,
	// request or heartbeat, an error code), at LastErrAt; nil when there was none.
	LastErr   error
	LastErrAt time.Time
	// Held is how many records the consumer holds now: acquired, and their acknowledgement not
	// yet taken for sending. For Poll, those fetched and not yet returned, those returned and
	// not yet acknowledged (or acknowledged since the last Poll or commit, which sends them),
	// and those renewed and waiting to be returned again; for Process, those queued or with a
	// handler (ProcessStats.Held, which counts a record a little longer than it is held, never
	// shorter). Offsets of corrupt batches are not records and do not count. A gauge read from
	// a metrics hook (HookNewConsumer keeps the consumer, a scrape calls Status).
	Held int
}

// health is what the consumer knows of why records do or do not come; guarded by Consumer.mu.
type health struct {
	dialErr       error           // the last failed connect, with its address; nil after a success
	coordErr      error           // why the last coordinator lookup or heartbeat found no coordinator
	unknownTopics map[string]bool // subscribed topics metadata says do not exist
	members       int             // members of the group by the last ShareGroupDescribe; 0 unknown
	// authErr is the last connect's failure to authenticate; nil after a connect that did not
	// fail so.
	authErr *errors.AuthenticationError
	// denied are the topics a broker refused (TOPIC_AUTHORIZATION_FAILED), by name.
	denied map[string]deniedTopic
	// hbDenied is a heartbeat's TOPIC_AUTHORIZATION_FAILED, until a heartbeat succeeds.
	hbDenied  *errors.TopicAuthorizationError
	lastErr   error
	lastErrAt time.Time

	reason errors.PollReason // the reason last noted (and logged)
	detail string
	since  time.Time
}

// Status returns the consumer's state and why a Poll would get no records now, without
// polling. It is safe from any goroutine, also while Poll or Process runs.
func (c *Consumer) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteLocked(time.Now())
	s := Status{
		State:       c.member.state(c.life.closed.Load()),
		Reason:      c.health.reason,
		Detail:      c.health.detail,
		Since:       c.health.since,
		MemberEpoch: c.member.epoch,
		LastErr:     c.health.lastErr,
		LastErrAt:   c.health.lastErrAt,
		Held:        c.ledger.held() + max(0, int(c.ledger.lease.held.Load())),
	}
	for tp := range c.member.assigned {
		s.Assigned = append(s.Assigned, tp)
	}
	slices.SortFunc(s.Assigned, compareTP)
	s.TopicErrors = c.health.topicErrors(&c.member)
	return s
}

// deniedTopic is a topic a broker refused: err is the *errors.TopicAuthorizationError; byFetch,
// that a ShareFetch said so (READ denied), not only Metadata (DESCRIBE denied), so that only a
// ShareFetch of the topic clears it.
type deniedTopic struct {
	err     error
	byFetch bool
}

// deny records that topic may not be read; it reports whether that is news.
func (h *health) deny(topic string, err error, byFetch bool) bool {
	if h.denied == nil {
		h.denied = make(map[string]deniedTopic)
	}
	d, known := h.denied[topic]
	h.denied[topic] = deniedTopic{err: err, byFetch: byFetch || d.byFetch}
	return !known
}

// allow forgets that topic was refused; byFetch says a ShareFetch of it succeeded, which clears
// any refusal, where a Metadata answer clears only Metadata's.
func (h *health) allow(topic string, byFetch bool) {
	if d, ok := h.denied[topic]; ok && (byFetch || !d.byFetch) {
		delete(h.denied, topic)
	}
}

// deniedOf returns the topics of names that were refused, sorted.
func (h *health) deniedOf(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := h.denied[n]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// topicErrors is Status.TopicErrors: of the topics m subscribes to or is assigned, those
// metadata does not know and those a broker refused.
func (h *health) topicErrors(m *membership) map[string]error {
	var out map[string]error
	add := func(t string, err error) {
		if !m.interestedIn(t) {
			return
		}
		if out == nil {
			out = make(map[string]error)
		}
		out[t] = err
	}
	for t := range h.unknownTopics {
		add(t, &errors.KafkaError{Code: kerr.UnknownTopicOrPartition.Code})
	}
	for t, d := range h.denied {
		add(t, d.err)
	}
	return out
}

// interestedIn reports whether topic is subscribed to or assigned.
func (m *membership) interestedIn(topic string) bool {
	if slices.Contains(m.subscription, topic) {
		return true
	}
	for tp := range m.assigned {
		if tp.Topic == topic {
			return true
		}
	}
	return false
}

// state is where the member stands (closed: the consumer is).
func (m *membership) state(closed bool) MemberState {
	switch {
	case closed:
		return StateClosed
	case m.fatal != nil:
		return StateFatal
	case len(m.subscription) == 0:
		return StateUnsubscribed
	case m.left:
		return StateLeft
	case m.epoch > 0:
		return StateStable
	}
	return StateJoining
}

// topicsSeen records which subscribed topics metadata says do not exist, which it refuses
// (denied, each with Kafka's error), and which it knows. It returns the topics refused that
// were not before, sorted.
func (h *health) topicsSeen(unknown, known []string, denied map[string]error) (newlyDenied []string) {
	for _, t := range unknown {
		if h.unknownTopics == nil {
			h.unknownTopics = make(map[string]bool)
		}
		h.unknownTopics[t] = true
	}
	for t, err := range denied {
		delete(h.unknownTopics, t)
		if h.deny(t, &errors.TopicAuthorizationError{Topics: []string{t}, Err: err}, false) {
			newlyDenied = append(newlyDenied, t)
		}
	}
	for _, t := range known {
		delete(h.unknownTopics, t)
		h.allow(t, false)
	}
	slices.Sort(newlyDenied)
	return newlyDenied
}

// setErr records err as the last error met, at now.
func (h *health) setErr(err error, now time.Time) {
	h.lastErr, h.lastErrAt = err, now
}

// reasonInputs is what says why a waiting Poll would get no records: the consumer's state, read
// under Consumer.mu.
type reasonInputs struct {
	closed          bool
	maxPollInterval time.Duration
	m               *membership
	h               *health
	pv              pollView
	sessions        *sessionSet
}

// reason works out why a waiting Poll would get no records now.
func (in reasonInputs) reason() (errors.PollReason, string) {
	h, m, pv := in.h, in.m, in.pv
	switch {
	case in.closed || m.fatal != nil || len(m.subscription) == 0:
		return errors.ReasonNone, ""
	case m.left:
		return errors.ReasonLeftGroup, fmt.Sprintf("max.poll.interval.ms is %v", in.maxPollInterval)
	case pv.anyBuffered || pv.renewsReady > 0:
		return errors.ReasonNone, ""
	case h.authErr != nil:
		return errors.ReasonAuthentication, h.authErr.Error()
	case m.epoch <= 0:
		switch {
		case h.hbDenied != nil:
			return errors.ReasonTopicAuthorization, h.hbDenied.Error()
		case h.dialErr != nil:
			return errors.ReasonNoBroker, h.dialErr.Error()
		case h.coordErr != nil:
			return errors.ReasonNoCoordinator, h.coordErr.Error()
		}
		return errors.ReasonJoining, ""
	case len(m.assignment) == 0:
		var unknown []string
		for _, t := range m.subscription {
			if h.unknownTopics[t] {
				unknown = append(unknown, t)
			}
		}
		if len(unknown) > 0 {
			return errors.ReasonUnknownTopic, "UNKNOWN_TOPIC_OR_PARTITION for " + strings.Join(unknown, ", ")
		}
		if denied := h.deniedOf(m.subscription); len(denied) > 0 {
			return errors.ReasonTopicAuthorization, "TOPIC_AUTHORIZATION_FAILED for " + strings.Join(denied, ", ")
		}
		// How many members share the subscribed topics' partitions, as far as metadata and the
		// last ShareGroupDescribe tell.
		if h.members > 0 {
			return errors.ReasonNoPartitions, fmt.Sprintf("%d members share %d partitions", h.members, m.subscribedPartitions())
		}
		return errors.ReasonNoPartitions, fmt.Sprintf("the subscribed topics have %d partitions", m.subscribedPartitions())
	}
	leaders := m.leaders()
	if len(m.assigned) < m.assignedCount() || len(leaders) == 0 {
		return errors.ReasonJoining, "looking up the assigned partitions' leaders"
	}
	empty := 0
	for _, l := range leaders {
		s := in.sessions.byNode[l]
		switch {
		case s == nil:
		case s.fetchErr != nil:
			if h.dialErr != nil {
				return errors.ReasonNoBroker, h.dialErr.Error()
			}
			return errors.ReasonNoBroker, fmt.Sprintf("broker %d: %v", l, s.fetchErr)
		case s.fetchedEmpty:
			empty++
		}
	}
	if len(h.denied) > 0 {
		names := slices.Clone(m.subscription)
		for tp := range m.assigned {
			names = append(names, tp.Topic)
		}
		if denied := h.deniedOf(names); len(denied) > 0 {
			return errors.ReasonTopicAuthorization, "TOPIC_AUTHORIZATION_FAILED for " + strings.Join(denied, ", ") + "; the other topics are fetched"
		}
	}
	if empty == len(leaders) {
		return errors.ReasonNothingAvailable, fmt.Sprintf("%d assigned partitions fetched from %d brokers", len(m.assigned), len(leaders))
	}
	return errors.ReasonFetching, ""
}

// noteLocked works out the reason and, when it changed, records since when (now) and logs it: at
// warn level for what the application or operator should look at, at info for a member that
// has nothing to do, and once at info when records flow again after either.
func (c *Consumer) noteLocked(now time.Time) {
	r, detail := reasonInputs{c.life.closed.Load(), c.cfg.maxPollInterval, &c.member, &c.health, c.ledger.pollView(), &c.sessions}.reason()
	h := &c.health
	if r == h.reason && detail == h.detail {
		return
	}
	prev := h.reason
	changed := r != prev
	h.reason, h.detail = r, detail
	if !changed {
		return
	}
	h.since = now
	switch r {
	case errors.ReasonNoBroker, errors.ReasonNoCoordinator, errors.ReasonUnknownTopic, errors.ReasonAuthentication, errors.ReasonTopicAuthorization:
		c.log(kgo.LogLevelWarn, "no records can come: "+r.String(), "detail", detail)
	case errors.ReasonNoPartitions:
		c.log(kgo.LogLevelInfo, "no records can come: "+r.String(), "detail", detail)
	case errors.ReasonNothingAvailable:
		c.log(kgo.LogLevelDebug, r.String(), "detail", detail)
	case errors.ReasonNone, errors.ReasonFetching:
		switch prev {
		case errors.ReasonNoBroker, errors.ReasonNoCoordinator, errors.ReasonUnknownTopic, errors.ReasonNoPartitions, errors.ReasonLeftGroup,
			errors.ReasonAuthentication, errors.ReasonTopicAuthorization:
			c.log(kgo.LogLevelInfo, "fetching again", "was", prev.String())
		}
	}
}

// pollTimeoutLocked wraps the error of a Poll's context that ended before records came with
// why they did not.
func (c *Consumer) pollTimeoutLocked(err error) error {
	if err != context.DeadlineExceeded && err != context.Canceled {
		return err
	}
	c.noteLocked(time.Now())
	return &errors.PollTimeoutError{Reason: c.health.reason, Detail: c.health.detail, Err: err}
}

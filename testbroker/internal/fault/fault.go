// Package fault holds the fake cluster's injected faults: rules that match requests by API
// key, broker, topic or group and answer them with an error code, hold them for a while, or
// drop the connection, optionally only a limited number of times.
package fault

import (
	"slices"
	"sync"
	"time"
)

// Rule says which requests a fault applies to and what it does to them. Empty fields match
// any request: no Keys means every API, no Brokers every broker; a non-empty Topic or Group
// matches only requests that name that topic or group.
type Rule struct {
	Keys    []int16
	Brokers []int32
	Topic   string
	Group   string

	// ErrorCode, when non-zero, answers the request with this Kafka error code in every
	// error field of the response instead of processing it.
	ErrorCode int16
	// Delay holds the request for this long on the cluster clock before it is processed
	// (or answered with ErrorCode, or dropped).
	Delay time.Duration
	// Drop closes the connection instead of answering.
	Drop bool
	// Times limits how many requests the rule applies to; 0 means every matching request.
	Times int
}

// ID identifies an added rule.
type ID uint64

// Action is what a matched rule asks for.
type Action struct {
	ErrorCode int16
	Delay     time.Duration
	Drop      bool
	// Taken, called once the request holds the action (after its Delay is on the clock),
	// removes a rule whose Times ran out, so that Len counts it until then: a test that saw
	// the rule go may advance the clock past the Delay.
	Taken func()
}

// Request is what a rule is matched against.
type Request struct {
	Key    int16
	Broker int32
	Topics []string
	Groups []string
}

type entry struct {
	id   ID
	rule Rule
	left int // remaining applications when rule.Times > 0; at 0 the rule only waits for Taken
}

// Set is a concurrency-safe, ordered set of rules. The first matching rule wins.
type Set struct {
	mu    sync.Mutex
	next  ID
	rules []*entry
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Add appends a rule and returns its id.
func (s *Set) Add(r Rule) ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.rules = append(s.rules, &entry{id: s.next, rule: r, left: r.Times})
	return s.next
}

// Remove deletes a rule; it reports whether the rule was still present.
func (s *Set) Remove(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.rules {
		if e.id == id {
			s.rules = slices.Delete(s.rules, i, i+1)
			return true
		}
	}
	return false
}

// Clear deletes every rule.
func (s *Set) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Len returns how many rules are active: an exhausted rule counts until its last request
// has taken its action (Action.Taken).
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rules)
}

// Match finds the first rule matching req, uses up one of its applications and returns its
// action. A rule whose Times run out matches no more requests and is removed when the caller
// calls the action's Taken, which it must.
func (s *Set) Match(req Request) (Action, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.rules {
		if (e.rule.Times > 0 && e.left == 0) || !e.rule.matches(req) {
			continue
		}
		taken := func() {}
		if e.rule.Times > 0 {
			e.left--
			if e.left == 0 {
				taken = func() { s.remove(e) }
			}
		}
		return Action{ErrorCode: e.rule.ErrorCode, Delay: e.rule.Delay, Drop: e.rule.Drop, Taken: taken}, true
	}
	return Action{}, false
}

func (s *Set) remove(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.rules, e); i >= 0 {
		s.rules = slices.Delete(s.rules, i, i+1)
	}
}

func (r *Rule) matches(req Request) bool {
	if len(r.Keys) > 0 && !slices.Contains(r.Keys, req.Key) {
		return false
	}
	if len(r.Brokers) > 0 && !slices.Contains(r.Brokers, req.Broker) {
		return false
	}
	if r.Topic != "" && !slices.Contains(req.Topics, r.Topic) {
		return false
	}
	if r.Group != "" && !slices.Contains(req.Groups, r.Group) {
		return false
	}
	return true
}

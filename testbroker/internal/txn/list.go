package txn

import (
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is a transactional id as DescribeTransactions reports it.
type Description struct {
	State         State
	ProducerID    int64
	ProducerEpoch int16
	TimeoutMs     int32
	// StartTimeMs is when the running transaction began (its first partition), -1 for none.
	StartTimeMs int64
	Partitions  []TopicPartition // sorted
}

// Describe returns id's transaction; TRANSACTIONAL_ID_NOT_FOUND for an id no producer has
// initialised.
func (c *Coordinator) Describe(id string) (Description, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.txns[id]
	if m == nil {
		return Description{}, kerr.TransactionalIDNotFound
	}
	d := Description{State: m.state, ProducerID: m.producerID, ProducerEpoch: m.epoch,
		TimeoutMs: int32(m.timeout / time.Millisecond), StartTimeMs: -1, Partitions: sortedPartitions(m.partitions)}
	if !m.start.IsZero() {
		d.StartTimeMs = m.start.UnixMilli()
	}
	return d, nil
}

// Listing is a transactional id as ListTransactions reports it.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// ListFilter selects the transactions ListTransactions reports; empty fields select all.
type ListFilter struct {
	States      []string
	ProducerIDs []int64
	// MinDurationMs (v1+) keeps the transactions that started more than this long ago; -1 keeps all.
	MinDurationMs int64
	// IDPattern (v2+) is a regular expression the whole transactional id must match; nil keeps all.
	IDPattern *string
	// Coordinates keeps the ids the asking broker coordinates; nil keeps all.
	Coordinates func(id string) bool
}

// List returns the transactions f selects, by transactional id, and the state names of
// f.States that name no state (ListTransactions' UnknownStateFilters). A pattern that does not
// compile is INVALID_REQUEST.
func (c *Coordinator) List(f ListFilter) ([]Listing, []string, error) {
	var re *regexp.Regexp
	if f.IDPattern != nil && *f.IDPattern != "" {
		var err error
		if re, err = regexp.Compile("^(?:" + *f.IDPattern + ")$"); err != nil {
			return nil, nil, kerr.InvalidRequest
		}
	}
	var states []State
	var unknown []string
	for _, name := range f.States {
		if s, ok := ParseState(name); ok {
			states = append(states, s)
		} else {
			unknown = append(unknown, name)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock.Now()
	var out []Listing
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		m := c.txns[id]
		switch {
		case f.Coordinates != nil && !f.Coordinates(id),
			len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.producerID),
			len(f.States) > 0 && !slices.Contains(states, m.state),
			f.MinDurationMs >= 0 && now.Sub(m.start).Milliseconds() <= f.MinDurationMs,
			re != nil && !re.MatchString(id):
			continue
		}
		out = append(out, Listing{TransactionalID: id, ProducerID: m.producerID, State: m.state})
	}
	return out, unknown, nil
}

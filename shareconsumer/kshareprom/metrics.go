package kshareprom

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
)

// Metrics are a consumer's Prometheus metrics: a shareconsumer hook (pass it with
// shareconsumer.Hooks) and a prometheus.Collector. Its methods are safe from any goroutine.
type Metrics struct {
	cfg cfg

	// Counted in the hooks.
	fetchRequests        *prometheus.CounterVec   // node_id
	fetchErrors          *prometheus.CounterVec   // node_id
	fetchDuration        *prometheus.HistogramVec // node_id
	fetchRecords         *prometheus.CounterVec   // topic, partition
	fetchBytes           *prometheus.CounterVec   // topic, partition
	fetchPartitionErrs   *prometheus.CounterVec   // topic, partition
	pollRecords          *prometheus.CounterVec   // topic
	pollErrors           prometheus.Counter
	processed            *prometheus.CounterVec   // topic, outcome
	processDuration      *prometheus.HistogramVec // topic
	acknowledged         *prometheus.CounterVec   // topic, type, outcome
	renewed              *prometheus.CounterVec   // topic
	locksLost            *prometheus.CounterVec   // topic, reason
	deadLetters          *prometheus.CounterVec   // topic, outcome
	lagErrors            prometheus.Counter
	counters             []prometheus.Collector
	topics               sync.Map // topic -> *topicMetrics
	heldDesc, lockDesc   *prometheus.Desc
	stateDesc, epochDesc *prometheus.Desc
	assignedDesc         *prometheus.Desc
	lagDesc              *prometheus.Desc

	// Read at Collect. consumer and lockTimeout are written under mu, so that an event checked
	// against the attached consumer is kept or dropped as one step with attaching and closing.
	consumer    atomic.Pointer[shareconsumer.Consumer]
	lockTimeout atomic.Int64 // nanoseconds; 0 when no answer reported one
	mu          sync.Mutex
	membership  *shareconsumer.MembershipEvent // the attached consumer's last one; nil before any
	lag         []shareconsumer.PartitionLag   // from its group's last lag lookup that succeeded

	gatherer prometheus.Gatherer
}

// topicMetrics are Process's children of one topic, looked up once per topic rather than
// hashing label values for every record.
type topicMetrics struct {
	accepted, released, rejected, lost prometheus.Counter
	duration                           prometheus.Observer
}

// The label names.
const (
	lTopic     = "topic"
	lPartition = "partition"
	lNode      = "node_id"
	lOutcome   = "outcome"
	lType      = "type"
	lReason    = "reason"
	lState     = "state"
)

var ownLabels = []string{lTopic, lPartition, lNode, lOutcome, lType, lReason, lState}

// New returns the metrics of a consumer, registered with a registry of their own unless the
// Registerer option says otherwise; each metric's name begins with namespace_ (and the
// Subsystem's). Pass the Metrics to shareconsumer.New with shareconsumer.Hooks(m), one Metrics
// per consumer.
//
// New panics when an option is invalid (a bucket list not increasing, a const label named
// like one of the metrics' own labels) or when the Registerer refuses the Metrics, as
// prometheus.MustRegister does.
func New(namespace string, opts ...Opt) *Metrics {
	c := cfg{namespace: namespace, processBuckets: DefaultProcessDurationBuckets, fetchBuckets: DefaultFetchDurationBuckets}
	for _, o := range opts {
		o.apply(&c)
	}
	for _, l := range ownLabels {
		if _, ok := c.constLabels[l]; ok {
			panic(fmt.Sprintf("kshareprom: ConstLabels: %q is a label of the metrics themselves: choose another name", l))
		}
	}
	for name, b := range map[string][]float64{"ProcessDurationBuckets": c.processBuckets, "FetchDurationBuckets": c.fetchBuckets} {
		for i := 1; i < len(b); i++ {
			if !(b[i] > b[i-1]) {
				panic(fmt.Sprintf("kshareprom: %s: the bounds must increase: %v", name, b))
			}
		}
	}
	m := &Metrics{cfg: c}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels,
		}, labels)
		m.counters = append(m.counters, v)
		return v
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: c.namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels, Buckets: buckets,
		}, labels)
		m.counters = append(m.counters, v)
		return v
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(c.namespace, c.subsystem, name), help, labels, c.constLabels)
	}

	m.fetchRequests = counter("fetch_requests_total", "ShareFetch requests answered or failed, by partition leader.", lNode)
	m.fetchErrors = counter("fetch_request_errors_total", "ShareFetch requests that failed as a whole (transport, top-level error code, context at close), by partition leader.", lNode)
	m.fetchDuration = histogram("fetch_request_duration_seconds", "Time from sending a ShareFetch to its answer, including the broker's wait for records, of the answered requests, by partition leader.", c.fetchBuckets, lNode)
	m.fetchRecords = counter("fetch_records_total", "Records acquired by ShareFetch for the application (not control records, not gaps), by partition.", lTopic, lPartition)
	m.fetchBytes = counter("fetch_bytes_total", "Size of the record batches ShareFetch answers carried, by partition.", lTopic, lPartition)
	m.fetchPartitionErrs = counter("fetch_partition_errors_total", "Partitions of ShareFetch answers that had an error code or could not be decoded.", lTopic, lPartition)
	m.pollRecords = counter("poll_records_total", "Records Poll returned, renewed records returned again included, by topic.", lTopic)
	pollErrors := counter("poll_errors_total", "Polls that returned an error other than the end of their context.")
	m.pollErrors = pollErrors.WithLabelValues()
	m.processed = counter("processed_records_total", "Records Process acquired, by what became of them: outcome accept, release or reject (what was acknowledged), dead_letter (copied to the dead-letter topic, then accepted), or lost (the lock was lost first).", lTopic, lOutcome)
	m.processDuration = histogram("process_duration_seconds", "How long Process's handler ran, per record a handler had, by topic.", c.processBuckets, lTopic)
	m.acknowledged = counter("acknowledged_records_total", "Records acknowledged to a partition leader, by type (accept, release, reject, renew, gap: offsets) and outcome (ok or error).", lTopic, lType, lOutcome)
	m.renewed = counter("renewed_records_total", "Records whose acquisition lock a leader renewed, by topic.", lTopic)
	m.locksLost = counter("locks_lost_total", "Records whose acquisition lock Process lost, by reason.", lTopic, lReason)
	m.deadLetters = counter("dead_letter_records_total", "Records produced to the dead-letter topic (outcome ok) or whose produce there failed (outcome error), by the record's topic.", lTopic, lOutcome)
	lagErrors := counter("lag_lookup_errors_total", "Share-group lag lookups that failed.")
	m.lagErrors = lagErrors.WithLabelValues()

	m.heldDesc = desc("held_records", "Records the consumer holds now: acquired and not yet acknowledged to their leader (read from Consumer.Status at scrape).")
	m.lockDesc = desc("acquisition_lock_timeout_seconds", "The acquisition lock duration the last ShareFetch answer reported.")
	m.stateDesc = desc("member_state", "1 for the consumer's membership state in its share group, 0 for the others (from the last membership change).", lState)
	m.epochDesc = desc("member_epoch", "The member epoch the group coordinator gave; 0 while not a member (from the last membership change).")
	m.assignedDesc = desc("assigned_partitions", "Partitions assigned to the consumer, by topic (from the last membership change).", lTopic)
	m.lagDesc = desc("lag_records", "The share group's lag by partition from the last lag lookup that succeeded: records not yet delivered or acknowledged.", lTopic, lPartition)

	reg := prometheus.Registerer(prometheus.NewRegistry())
	if c.registererSet {
		reg = c.registerer
	}
	if reg != nil {
		reg.MustRegister(m)
	}
	m.gatherer = c.gatherer
	if m.gatherer == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			m.gatherer = g
		} else {
			own := prometheus.NewRegistry()
			own.MustRegister(m)
			m.gatherer = own
		}
	}
	return m
}

// Handler returns an http.Handler that serves the metrics of the Gatherer (by default the
// registry the Metrics are registered with) in Prometheus's exposition format, for /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, m.cfg.handlerOpts)
}

// topic returns Process's children of topic t, making them on its first use.
func (m *Metrics) topic(t string) *topicMetrics {
	if v, ok := m.topics.Load(t); ok {
		return v.(*topicMetrics)
	}
	tm := &topicMetrics{
		accepted: m.processed.WithLabelValues(t, "accept"),
		released: m.processed.WithLabelValues(t, "release"),
		rejected: m.processed.WithLabelValues(t, "reject"),
		lost:     m.processed.WithLabelValues(t, "lost"),
		duration: m.processDuration.WithLabelValues(t),
	}
	v, _ := m.topics.LoadOrStore(t, tm)
	return v.(*topicMetrics)
}

// Describe sends the descriptions of every metric (prometheus.Collector).
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.counters {
		c.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{m.heldDesc, m.lockDesc, m.stateDesc, m.epochDesc, m.assignedDesc, m.lagDesc} {
		ch <- d
	}
}

// Collect sends the metrics' values (prometheus.Collector): the counters and histograms as the
// hooks counted them, and the gauges as they are at the call.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.counters {
		c.Collect(ch)
	}
	if c := m.consumer.Load(); c != nil {
		ch <- prometheus.MustNewConstMetric(m.heldDesc, prometheus.GaugeValue, float64(c.Status().Held))
	}
	if d := m.lockTimeout.Load(); d > 0 {
		ch <- prometheus.MustNewConstMetric(m.lockDesc, prometheus.GaugeValue, float64(d)/1e9)
	}
	m.mu.Lock()
	ev, lag := m.membership, m.lag
	m.mu.Unlock()
	if ev != nil {
		for s := shareconsumer.StateUnsubscribed; s <= shareconsumer.StateClosed; s++ {
			v := 0.0
			if s == ev.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(m.stateDesc, prometheus.GaugeValue, v, s.String())
		}
		ch <- prometheus.MustNewConstMetric(m.epochDesc, prometheus.GaugeValue, float64(max(ev.MemberEpoch, 0)))
		// Assigned is sorted by topic: count each run.
		for i := 0; i < len(ev.Assigned); {
			j := i + 1
			for j < len(ev.Assigned) && ev.Assigned[j].Topic == ev.Assigned[i].Topic {
				j++
			}
			ch <- prometheus.MustNewConstMetric(m.assignedDesc, prometheus.GaugeValue, float64(j-i), ev.Assigned[i].Topic)
			i = j
		}
	}
	for _, p := range lag {
		if p.Lag < 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, float64(p.Lag), p.Topic, strconv.Itoa(int(p.Partition)))
	}
}

// OnNewConsumer attaches the Metrics to c, whose Status the scrape reads, and forgets what the
// gauges showed of a consumer attached before (shareconsumer.HookNewConsumer).
func (m *Metrics) OnNewConsumer(c *shareconsumer.Consumer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.consumer.Store(c)
	m.forgetLocked()
}

// OnConsumerClosed detaches c when it is the consumer the Metrics are attached to, and forgets
// what the gauges report: held_records, acquisition_lock_timeout_seconds, the membership
// gauges and lag_records are no longer exported. Counters and histograms keep their values
// (shareconsumer.HookConsumerClosed). A consumer closing that is not the attached one (a
// second consumer given the same Metrics) changes nothing.
func (m *Metrics) OnConsumerClosed(c *shareconsumer.Consumer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c == nil || m.consumer.Load() != c {
		return
	}
	m.consumer.Store(nil)
	m.forgetLocked()
}

// forgetLocked drops the gauges' values of the consumer attached until now.
func (m *Metrics) forgetLocked() {
	m.lockTimeout.Store(0)
	m.membership, m.lag = nil, nil
}

// OnShareFetch counts the request, its records and bytes by partition, and notes the lock
// duration it reported while a consumer is attached (shareconsumer.HookShareFetch).
func (m *Metrics) OnShareFetch(e shareconsumer.ShareFetchEvent) {
	node := strconv.Itoa(int(e.Leader))
	m.fetchRequests.WithLabelValues(node).Inc()
	if e.Err != nil {
		m.fetchErrors.WithLabelValues(node).Inc()
	} else {
		m.fetchDuration.WithLabelValues(node).Observe(e.Latency.Seconds())
	}
	if d := int64(e.AcquisitionLockTimeout); d > 0 && d != m.lockTimeout.Load() {
		m.mu.Lock()
		if m.consumer.Load() != nil {
			m.lockTimeout.Store(d)
		}
		m.mu.Unlock()
	}
	for _, p := range e.Partitions {
		part := strconv.Itoa(int(p.Partition))
		if p.Records > 0 {
			m.fetchRecords.WithLabelValues(p.Topic, part).Add(float64(p.Records))
		}
		if p.Bytes > 0 {
			m.fetchBytes.WithLabelValues(p.Topic, part).Add(float64(p.Bytes))
		}
		if p.Err != nil {
			m.fetchPartitionErrs.WithLabelValues(p.Topic, part).Inc()
		}
	}
}

// OnPoll counts the records Poll returned by topic, and its errors (shareconsumer.HookPoll).
func (m *Metrics) OnPoll(e shareconsumer.PollEvent) {
	if e.Err != nil {
		m.pollErrors.Inc()
	}
	// Count runs of one topic: a poll's records come a partition at a time.
	for i := 0; i < len(e.Records); {
		j := i + 1
		for j < len(e.Records) && e.Records[j].Topic == e.Records[i].Topic {
			j++
		}
		m.pollRecords.WithLabelValues(e.Records[i].Topic).Add(float64(j - i))
		i = j
	}
}

// OnProcessDone counts the record by outcome and observes its handler's duration, when a
// handler had it (shareconsumer.HookProcessDone).
func (m *Metrics) OnProcessDone(ctx context.Context, o shareconsumer.RecordOutcome) {
	tm := m.topic(o.Record.Topic)
	switch {
	case o.DeadLettered && o.Ack != 0:
		// Rare, and exported from the first: looked up each time.
		m.processed.WithLabelValues(o.Record.Topic, "dead_letter").Inc()
	case o.Ack == acktype.Accept:
		tm.accepted.Inc()
	case o.Ack == acktype.Release:
		tm.released.Inc()
	case o.Ack == acktype.Reject:
		tm.rejected.Inc()
	default:
		tm.lost.Inc()
	}
	// The hook gets context.Background() for a record no handler had (released from the
	// queue at shutdown, lost while queued); a handler's context is never that one.
	if ctx != context.Background() {
		tm.duration.Observe(o.HandlerTime.Seconds())
	}
}

// OnDeadLetter counts a produce to the dead-letter topic, Process's or Consumer.DeadLetter's,
// by the record's topic and outcome (shareconsumer.HookDeadLetter).
func (m *Metrics) OnDeadLetter(e shareconsumer.DeadLetterEvent) {
	outcome := "ok"
	if e.Err != nil {
		outcome = "error"
	}
	m.deadLetters.WithLabelValues(e.Record.Topic, outcome).Inc()
}

// ackTypes are the acknowledgement types by index of AcknowledgedPartition.Records, as the
// type label names them.
var ackTypes = [5]string{acktype.Gap: "gap", acktype.Accept: "accept", acktype.Release: "release", acktype.Reject: "reject", acktype.Renew: "renew"}

// OnAcknowledge counts the acknowledged records by topic, type and outcome
// (shareconsumer.HookAcknowledge).
func (m *Metrics) OnAcknowledge(e shareconsumer.AcknowledgeEvent) {
	for _, p := range e.Partitions {
		outcome := "ok"
		if p.Err != nil {
			outcome = "error"
		}
		for t, n := range p.Records {
			if n > 0 {
				m.acknowledged.WithLabelValues(p.Topic, ackTypes[t], outcome).Add(float64(n))
			}
		}
	}
}

// OnRenew counts the records whose locks were renewed, by topic (shareconsumer.HookRenew).
func (m *Metrics) OnRenew(e shareconsumer.RenewEvent) {
	for i := 0; i < len(e.Records); {
		j := i + 1
		for j < len(e.Records) && e.Records[j].Topic == e.Records[i].Topic {
			j++
		}
		m.renewed.WithLabelValues(e.Records[i].Topic).Add(float64(j - i))
		i = j
	}
}

// OnLockLost counts the lost lock by topic and reason (shareconsumer.HookLockLost).
func (m *Metrics) OnLockLost(e shareconsumer.LockLostEvent) {
	reason := "unknown"
	if e.Err != nil {
		reason = e.Err.Reason.String()
	}
	m.locksLost.WithLabelValues(e.Record.Topic, reason).Inc()
}

// OnMembership keeps the membership of the attached consumer for the scrape
// (shareconsumer.HookMembership); another consumer's (a second one given the same Metrics,
// leaving as it closes) changes nothing.
func (m *Metrics) OnMembership(e shareconsumer.MembershipEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.consumer.Load(); c != nil && c.MemberID() == e.MemberID {
		m.membership = &e
	}
}

// OnLag keeps the lag of a lookup that succeeded for the scrape, when it is of the attached
// consumer's group, and counts those that failed (shareconsumer.HookLag).
func (m *Metrics) OnLag(e shareconsumer.LagEvent) {
	if e.Err != nil {
		m.lagErrors.Inc()
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.consumer.Load(); c != nil && c.Group() == e.Lag.Group {
		m.lag = e.Lag.Partitions
	}
}

// The hook interfaces Metrics implements.
var (
	_ shareconsumer.HookNewConsumer    = (*Metrics)(nil)
	_ shareconsumer.HookConsumerClosed = (*Metrics)(nil)
	_ shareconsumer.HookShareFetch     = (*Metrics)(nil)
	_ shareconsumer.HookPoll           = (*Metrics)(nil)
	_ shareconsumer.HookProcessDone    = (*Metrics)(nil)
	_ shareconsumer.HookAcknowledge    = (*Metrics)(nil)
	_ shareconsumer.HookRenew          = (*Metrics)(nil)
	_ shareconsumer.HookLockLost       = (*Metrics)(nil)
	_ shareconsumer.HookMembership     = (*Metrics)(nil)
	_ shareconsumer.HookLag            = (*Metrics)(nil)
	_ prometheus.Collector             = (*Metrics)(nil)
)

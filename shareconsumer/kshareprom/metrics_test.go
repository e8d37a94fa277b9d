package kshareprom_test

import (
	"context"
	stderrors "errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
)

// newMetrics returns Metrics registered nowhere, with small buckets so that expected
// histograms stay short.
func newMetrics(opts ...kshareprom.Opt) *kshareprom.Metrics {
	opts = append([]kshareprom.Opt{
		kshareprom.Registerer(nil),
		kshareprom.FetchDurationBuckets([]float64{0.01, 0.1}),
		kshareprom.ProcessDurationBuckets([]float64{0.001, 0.01}),
	}, opts...)
	return kshareprom.New("kshare", opts...)
}

// attach makes a consumer of group that m is attached to (New calls m.OnNewConsumer), with no
// subscription and no reachable broker: membership and lag events in these tests are given by
// hand, with its member ID and group. Closed at the test's end unless the test closed it.
func attach(t *testing.T, m *kshareprom.Metrics, group string) *shareconsumer.Consumer {
	t.Helper()
	c, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers("127.0.0.1:1")),
		shareconsumer.Group(group),
		shareconsumer.Hooks(m),
	)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); !stderrors.Is(err, errors.ErrClosed) {
			assert.NoError(t, err)
		}
	})
	return c
}

func tp(topic string, p int32) shareconsumer.TopicPartition {
	return shareconsumer.TopicPartition{Topic: topic, Partition: p}
}

func rec(topic string, p int32, offset int64) *shareconsumer.Record {
	return &shareconsumer.Record{Topic: topic, Partition: p, Offset: offset}
}

func compare(t *testing.T, m prometheus.Collector, want string, names ...string) {
	t.Helper()
	for i, n := range names {
		names[i] = "kshare_" + n
	}
	assert.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(want), names...))
}

func TestShareFetch(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	attach(t, m, "g")
	m.OnShareFetch(shareconsumer.ShareFetchEvent{
		Leader: 1,
		Partitions: []shareconsumer.FetchedPartition{
			{TopicPartition: tp("orders", 0), Records: 3, Bytes: 300},
			{TopicPartition: tp("orders", 1), Records: 2, Bytes: 150},
			{TopicPartition: tp("audit", 0), Err: &errors.KafkaError{Code: 6}},
		},
		Records: 5, Bytes: 450, AcquisitionLockTimeout: 30 * time.Second, Latency: 5 * time.Millisecond,
	})
	m.OnShareFetch(shareconsumer.ShareFetchEvent{
		Leader:     1,
		Partitions: []shareconsumer.FetchedPartition{{TopicPartition: tp("orders", 0), Records: 1, Bytes: 90}},
		Records:    1, Bytes: 90, AcquisitionLockTimeout: 15 * time.Second, Latency: 50 * time.Millisecond,
	})
	m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 2, Latency: time.Second, Err: stderrors.New("broken pipe")})
	// An answer with no lock duration (ShareFetch v0) leaves the last one.
	m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 2, Latency: 500 * time.Millisecond})

	compare(t, m, `
# HELP kshare_fetch_records_total Records acquired by ShareFetch for the application (not control records, not gaps), by partition.
# TYPE kshare_fetch_records_total counter
kshare_fetch_records_total{partition="0",topic="orders"} 4
kshare_fetch_records_total{partition="1",topic="orders"} 2
# HELP kshare_fetch_bytes_total Size of the record batches ShareFetch answers carried, by partition.
# TYPE kshare_fetch_bytes_total counter
kshare_fetch_bytes_total{partition="0",topic="orders"} 390
kshare_fetch_bytes_total{partition="1",topic="orders"} 150
# HELP kshare_fetch_partition_errors_total Partitions of ShareFetch answers that had an error code or could not be decoded.
# TYPE kshare_fetch_partition_errors_total counter
kshare_fetch_partition_errors_total{partition="0",topic="audit"} 1
# HELP kshare_fetch_requests_total ShareFetch requests answered or failed, by partition leader.
# TYPE kshare_fetch_requests_total counter
kshare_fetch_requests_total{node_id="1"} 2
kshare_fetch_requests_total{node_id="2"} 2
# HELP kshare_fetch_request_errors_total ShareFetch requests that failed as a whole (transport, top-level error code, context at close), by partition leader.
# TYPE kshare_fetch_request_errors_total counter
kshare_fetch_request_errors_total{node_id="2"} 1
# HELP kshare_fetch_request_duration_seconds Time from sending a ShareFetch to its answer, including the broker's wait for records, of the answered requests, by partition leader.
# TYPE kshare_fetch_request_duration_seconds histogram
kshare_fetch_request_duration_seconds_bucket{node_id="1",le="0.01"} 1
kshare_fetch_request_duration_seconds_bucket{node_id="1",le="0.1"} 2
kshare_fetch_request_duration_seconds_bucket{node_id="1",le="+Inf"} 2
kshare_fetch_request_duration_seconds_sum{node_id="1"} 0.055
kshare_fetch_request_duration_seconds_count{node_id="1"} 2
kshare_fetch_request_duration_seconds_bucket{node_id="2",le="0.01"} 0
kshare_fetch_request_duration_seconds_bucket{node_id="2",le="0.1"} 0
kshare_fetch_request_duration_seconds_bucket{node_id="2",le="+Inf"} 1
kshare_fetch_request_duration_seconds_sum{node_id="2"} 0.5
kshare_fetch_request_duration_seconds_count{node_id="2"} 1
# HELP kshare_acquisition_lock_timeout_seconds The acquisition lock duration the last ShareFetch answer reported.
# TYPE kshare_acquisition_lock_timeout_seconds gauge
kshare_acquisition_lock_timeout_seconds 15
`, "fetch_records_total", "fetch_bytes_total", "fetch_partition_errors_total", "fetch_requests_total",
		"fetch_request_errors_total", "fetch_request_duration_seconds", "acquisition_lock_timeout_seconds")
}

func TestNoLockTimeoutBeforeAnAnswerReportsOne(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	attach(t, m, "g")
	assert.Equal(t, 0, testutil.CollectAndCount(m, "kshare_acquisition_lock_timeout_seconds"))
	m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 1})
	assert.Equal(t, 0, testutil.CollectAndCount(m, "kshare_acquisition_lock_timeout_seconds"))
}

func TestPoll(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{
		rec("orders", 0, 1), rec("orders", 0, 2), rec("audit", 0, 7), rec("orders", 1, 1),
	}})
	m.OnPoll(shareconsumer.PollEvent{Err: errors.ErrProcessStopped})
	m.OnPoll(shareconsumer.PollEvent{}) // the context ended: no records, no error
	compare(t, m, `
# HELP kshare_poll_records_total Records Poll returned, renewed records returned again included, by topic.
# TYPE kshare_poll_records_total counter
kshare_poll_records_total{topic="audit"} 1
kshare_poll_records_total{topic="orders"} 3
# HELP kshare_poll_errors_total Polls that returned an error other than the end of their context.
# TYPE kshare_poll_errors_total counter
kshare_poll_errors_total 1
`, "poll_records_total", "poll_errors_total")
}

func TestProcessDone(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	handled, cancel := context.WithCancel(context.Background())
	defer cancel()
	outcomes := []struct {
		ctx context.Context
		o   shareconsumer.RecordOutcome
	}{
		{handled, shareconsumer.RecordOutcome{Record: rec("orders", 0, 1), Ack: acktype.Accept, HandlerTime: 500 * time.Microsecond}},
		{handled, shareconsumer.RecordOutcome{Record: rec("orders", 0, 2), Ack: acktype.Accept, HandlerTime: 5 * time.Millisecond}},
		{handled, shareconsumer.RecordOutcome{Record: rec("orders", 0, 3), Ack: acktype.Release, Err: stderrors.New("retry"), HandlerTime: 2 * time.Second}},
		{handled, shareconsumer.RecordOutcome{Record: rec("orders", 1, 3), Ack: acktype.Reject, Err: stderrors.New("bad"), HandlerTime: time.Millisecond}},
		{handled, shareconsumer.RecordOutcome{Record: rec("orders", 1, 4), Ack: acktype.Accept, Err: stderrors.New("poison"), DeadLettered: true, HandlerTime: time.Millisecond}},
		// Lost while its handler ran: observed.
		{handled, shareconsumer.RecordOutcome{Record: rec("audit", 0, 9), Err: &errors.LockLostError{Reason: errors.LockDeadlinePassed}, HandlerTime: 20 * time.Millisecond}},
		// No handler had these two: released at shutdown, lost in the queue. Not observed.
		{context.Background(), shareconsumer.RecordOutcome{Record: rec("orders", 0, 4), Ack: acktype.Release}},
		{context.Background(), shareconsumer.RecordOutcome{Record: rec("orders", 0, 5), Err: &errors.LockLostError{Reason: errors.LockSessionReset}}},
	}
	for _, o := range outcomes {
		m.OnProcessDone(o.ctx, o.o)
	}
	compare(t, m, `
# HELP kshare_processed_records_total Records Process acquired, by what became of them: outcome accept, release or reject (what was acknowledged), dead_letter (copied to the dead-letter topic, then accepted), or lost (the lock was lost first).
# TYPE kshare_processed_records_total counter
kshare_processed_records_total{outcome="accept",topic="audit"} 0
kshare_processed_records_total{outcome="accept",topic="orders"} 2
kshare_processed_records_total{outcome="dead_letter",topic="orders"} 1
kshare_processed_records_total{outcome="lost",topic="audit"} 1
kshare_processed_records_total{outcome="lost",topic="orders"} 1
kshare_processed_records_total{outcome="reject",topic="audit"} 0
kshare_processed_records_total{outcome="reject",topic="orders"} 1
kshare_processed_records_total{outcome="release",topic="audit"} 0
kshare_processed_records_total{outcome="release",topic="orders"} 2
# HELP kshare_process_duration_seconds How long Process's handler ran, per record a handler had, by topic.
# TYPE kshare_process_duration_seconds histogram
kshare_process_duration_seconds_bucket{topic="audit",le="0.001"} 0
kshare_process_duration_seconds_bucket{topic="audit",le="0.01"} 0
kshare_process_duration_seconds_bucket{topic="audit",le="+Inf"} 1
kshare_process_duration_seconds_sum{topic="audit"} 0.02
kshare_process_duration_seconds_count{topic="audit"} 1
kshare_process_duration_seconds_bucket{topic="orders",le="0.001"} 3
kshare_process_duration_seconds_bucket{topic="orders",le="0.01"} 4
kshare_process_duration_seconds_bucket{topic="orders",le="+Inf"} 5
kshare_process_duration_seconds_sum{topic="orders"} 2.0075
kshare_process_duration_seconds_count{topic="orders"} 5
`, "processed_records_total", "process_duration_seconds")
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.OnDeadLetter(shareconsumer.DeadLetterEvent{Record: rec("orders", 0, 1), DeadLetterTopic: "dlq"})
	m.OnDeadLetter(shareconsumer.DeadLetterEvent{Record: rec("orders", 0, 2), DeadLetterTopic: "dlq"})
	m.OnDeadLetter(shareconsumer.DeadLetterEvent{Record: rec("audit", 0, 2), DeadLetterTopic: "dlq", Err: &errors.DeadLetterError{}})
	compare(t, m, `
# HELP kshare_dead_letter_records_total Records produced to the dead-letter topic (outcome ok) or whose produce there failed (outcome error), by the record's topic.
# TYPE kshare_dead_letter_records_total counter
kshare_dead_letter_records_total{outcome="error",topic="audit"} 1
kshare_dead_letter_records_total{outcome="ok",topic="orders"} 2
`, "dead_letter_records_total")
}

func TestAcknowledge(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	var accept3, mixed shareconsumer.AcknowledgedPartition
	accept3.TopicPartition = tp("orders", 0)
	accept3.Records[acktype.Accept] = 3
	mixed.TopicPartition = tp("orders", 1)
	mixed.Records[acktype.Accept] = 1
	mixed.Records[acktype.Release] = 2
	mixed.Records[acktype.Reject] = 1
	mixed.Records[acktype.Gap] = 4
	mixed.Records[acktype.Renew] = 5
	m.OnAcknowledge(shareconsumer.AcknowledgeEvent{Leader: 1, Request: "ShareFetch", Partitions: []shareconsumer.AcknowledgedPartition{accept3, mixed}})
	failed := accept3
	failed.Err = &errors.AckError{Topic: "orders", Offsets: []int64{1, 2, 3}, Err: stderrors.New("x")}
	m.OnAcknowledge(shareconsumer.AcknowledgeEvent{Leader: 1, Request: "ShareAcknowledge", Partitions: []shareconsumer.AcknowledgedPartition{failed}, Err: stderrors.New("x")})
	compare(t, m, `
# HELP kshare_acknowledged_records_total Records acknowledged to a partition leader, by type (accept, release, reject, renew, gap: offsets) and outcome (ok or error).
# TYPE kshare_acknowledged_records_total counter
kshare_acknowledged_records_total{outcome="error",topic="orders",type="accept"} 3
kshare_acknowledged_records_total{outcome="ok",topic="orders",type="accept"} 4
kshare_acknowledged_records_total{outcome="ok",topic="orders",type="gap"} 4
kshare_acknowledged_records_total{outcome="ok",topic="orders",type="reject"} 1
kshare_acknowledged_records_total{outcome="ok",topic="orders",type="release"} 2
kshare_acknowledged_records_total{outcome="ok",topic="orders",type="renew"} 5
`, "acknowledged_records_total")
}

func TestRenewAndLocksLost(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.OnRenew(shareconsumer.RenewEvent{Leader: 1, Records: []*shareconsumer.Record{rec("orders", 0, 1), rec("orders", 0, 2), rec("audit", 1, 1)}})
	m.OnRenew(shareconsumer.RenewEvent{Leader: 1, Records: []*shareconsumer.Record{rec("orders", 0, 1)}})
	lost := func(topic string, r errors.LockLostReason) shareconsumer.LockLostEvent {
		return shareconsumer.LockLostEvent{Record: rec(topic, 0, 1), Err: &errors.LockLostError{Topic: topic, Reason: r}}
	}
	m.OnLockLost(lost("orders", errors.LockRenewRefused))
	m.OnLockLost(lost("orders", errors.LockRenewRefused))
	m.OnLockLost(lost("orders", errors.LockMaxHoldReached))
	m.OnLockLost(lost("audit", errors.LockLeaderMoved))
	compare(t, m, `
# HELP kshare_renewed_records_total Records whose acquisition lock a leader renewed, by topic.
# TYPE kshare_renewed_records_total counter
kshare_renewed_records_total{topic="audit"} 1
kshare_renewed_records_total{topic="orders"} 3
# HELP kshare_locks_lost_total Records whose acquisition lock Process lost, by reason.
# TYPE kshare_locks_lost_total counter
kshare_locks_lost_total{reason="leader_moved",topic="audit"} 1
kshare_locks_lost_total{reason="max_hold_reached",topic="orders"} 1
kshare_locks_lost_total{reason="renew_refused",topic="orders"} 2
`, "renewed_records_total", "locks_lost_total")
}

func TestMembership(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	c := attach(t, m, "g")
	// Nothing before the first change.
	assert.Equal(t, 0, testutil.CollectAndCount(m, "kshare_member_state", "kshare_member_epoch", "kshare_assigned_partitions"))

	stable := `
# HELP kshare_member_state 1 for the consumer's membership state in its share group, 0 for the others (from the last membership change).
# TYPE kshare_member_state gauge
kshare_member_state{state="closed"} 0
kshare_member_state{state="fatal"} 0
kshare_member_state{state="joining"} 0
kshare_member_state{state="left"} 0
kshare_member_state{state="stable"} 1
kshare_member_state{state="unsubscribed"} 0
# HELP kshare_member_epoch The member epoch the group coordinator gave; 0 while not a member (from the last membership change).
# TYPE kshare_member_epoch gauge
kshare_member_epoch 7
# HELP kshare_assigned_partitions Partitions assigned to the consumer, by topic (from the last membership change).
# TYPE kshare_assigned_partitions gauge
kshare_assigned_partitions{topic="audit"} 1
kshare_assigned_partitions{topic="orders"} 3
`
	m.OnMembership(shareconsumer.MembershipEvent{
		Group: "g", MemberID: c.MemberID(), State: shareconsumer.StateStable, MemberEpoch: 7,
		Assigned: []shareconsumer.TopicPartition{tp("audit", 0), tp("orders", 0), tp("orders", 2), tp("orders", 5)},
	})
	compare(t, m, stable, "member_state", "member_epoch", "assigned_partitions")

	// Another consumer given the same Metrics (not the attached one), leaving as it closes,
	// changes nothing.
	m.OnMembership(shareconsumer.MembershipEvent{Group: "g", MemberID: "another", State: shareconsumer.StateClosed})
	compare(t, m, stable, "member_state", "member_epoch", "assigned_partitions")
	m.OnMembership(shareconsumer.MembershipEvent{Group: "h", MemberID: "another", State: shareconsumer.StateLeft})
	compare(t, m, stable, "member_state", "member_epoch", "assigned_partitions")

	// Fenced: joining again with epoch -1 (reported as 0), no partitions; audit goes away.
	m.OnMembership(shareconsumer.MembershipEvent{Group: "g", MemberID: c.MemberID(), State: shareconsumer.StateJoining, MemberEpoch: -1, Err: errors.ErrProcessStopped})
	compare(t, m, `
# HELP kshare_member_state 1 for the consumer's membership state in its share group, 0 for the others (from the last membership change).
# TYPE kshare_member_state gauge
kshare_member_state{state="closed"} 0
kshare_member_state{state="fatal"} 0
kshare_member_state{state="joining"} 1
kshare_member_state{state="left"} 0
kshare_member_state{state="stable"} 0
kshare_member_state{state="unsubscribed"} 0
# HELP kshare_member_epoch The member epoch the group coordinator gave; 0 while not a member (from the last membership change).
# TYPE kshare_member_epoch gauge
kshare_member_epoch 0
`, "member_state", "member_epoch", "assigned_partitions")
}

// TestGaugesFollowTheAttachedConsumer feeds the gauges' events with no consumer attached, then
// with a, then with b made after a (one Metrics given to both), then after b's Close: only the
// attached consumer's state is shown, a new consumer starts from nothing, and a closed one
// leaves nothing even when another consumer's events keep coming.
func TestGaugesFollowTheAttachedConsumer(t *testing.T) {
	t.Parallel()
	gauges := []string{"kshare_member_state", "kshare_member_epoch", "kshare_assigned_partitions", "kshare_lag_records", "kshare_acquisition_lock_timeout_seconds"}
	feed := func(m *kshareprom.Metrics, group, member string) {
		m.OnMembership(shareconsumer.MembershipEvent{Group: group, MemberID: member, State: shareconsumer.StateStable, MemberEpoch: 3, Assigned: []shareconsumer.TopicPartition{tp("orders", 0)}})
		m.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: group, Partitions: []shareconsumer.PartitionLag{{TopicPartition: tp("orders", 0), Lag: 4}}}})
		m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 1, AcquisitionLockTimeout: 30 * time.Second})
	}
	m := newMetrics()
	feed(m, "g", "before-any-consumer")
	assert.Equal(t, 0, testutil.CollectAndCount(m, gauges...), "no consumer attached")

	a := attach(t, m, "g")
	feed(m, "g", a.MemberID())
	// 6 states, the epoch, one assigned topic, one lagging partition, the lock duration.
	assert.Equal(t, 10, testutil.CollectAndCount(m, gauges...), "a's gauges")

	b := attach(t, m, "h")
	assert.Equal(t, 0, testutil.CollectAndCount(m, gauges...), "b attached: a's state forgotten")
	feed(m, "g", a.MemberID())
	assert.Equal(t, 1, testutil.CollectAndCount(m, gauges...), "a's membership and lag left out; its lock duration kept")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Close(ctx))
	assert.Equal(t, 0, testutil.CollectAndCount(m, gauges...), "b closed")
	feed(m, "g", a.MemberID())
	assert.Equal(t, 0, testutil.CollectAndCount(m, gauges...), "a's events after b's Close")
	assert.Equal(t, 0, testutil.CollectAndCount(m, "kshare_held_records"))
}

func TestLag(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	attach(t, m, "g")
	lag := func(ps ...shareconsumer.PartitionLag) shareconsumer.LagEvent {
		return shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "g", Partitions: ps}}
	}
	pl := func(topic string, p int32, n int64) shareconsumer.PartitionLag {
		return shareconsumer.PartitionLag{TopicPartition: tp(topic, p), StartOffset: 0, EndOffset: -1, Lag: n, FromBroker: true}
	}
	m.OnLag(lag(pl("audit", 0, 0), pl("orders", 0, 12), pl("orders", 1, 3), pl("orders", 2, -1)))
	const head = `
# HELP kshare_lag_records The share group's lag by partition from the last lag lookup that succeeded: records not yet delivered or acknowledged.
# TYPE kshare_lag_records gauge
`
	compare(t, m, head+`
kshare_lag_records{partition="0",topic="audit"} 0
kshare_lag_records{partition="0",topic="orders"} 12
kshare_lag_records{partition="1",topic="orders"} 3
# HELP kshare_lag_lookup_errors_total Share-group lag lookups that failed.
# TYPE kshare_lag_lookup_errors_total counter
kshare_lag_lookup_errors_total 0
`, "lag_records", "lag_lookup_errors_total")

	// A failed lookup keeps the last figures and is counted.
	m.OnLag(shareconsumer.LagEvent{Err: stderrors.New("coordinator not available")})
	compare(t, m, head+`
kshare_lag_records{partition="0",topic="audit"} 0
kshare_lag_records{partition="0",topic="orders"} 12
kshare_lag_records{partition="1",topic="orders"} 3
# HELP kshare_lag_lookup_errors_total Share-group lag lookups that failed.
# TYPE kshare_lag_lookup_errors_total counter
kshare_lag_lookup_errors_total 1
`, "lag_records", "lag_lookup_errors_total")

	// The lag of another group (a consumer of it given the same Metrics) changes nothing.
	m.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: "h", Partitions: []shareconsumer.PartitionLag{pl("orders", 0, 99)}}})
	compare(t, m, head+`
kshare_lag_records{partition="0",topic="audit"} 0
kshare_lag_records{partition="0",topic="orders"} 12
kshare_lag_records{partition="1",topic="orders"} 3
`, "lag_records")

	// Partitions missing from the next lookup go away.
	m.OnLag(lag(pl("orders", 1, 1)))
	compare(t, m, head+`
kshare_lag_records{partition="1",topic="orders"} 1
`, "lag_records")
	m.OnLag(lag())
	assert.Equal(t, 0, testutil.CollectAndCount(m, "kshare_lag_records"))
}

// allEvents feeds m one event of every kind, so that every metric has a value; membership and
// lag as c's.
func allEvents(m *kshareprom.Metrics, c *shareconsumer.Consumer) {
	m.OnShareFetch(shareconsumer.ShareFetchEvent{
		Leader:                 1,
		Partitions:             []shareconsumer.FetchedPartition{{TopicPartition: tp("orders", 0), Records: 1, Bytes: 10, Err: stderrors.New("x")}},
		Records:                1,
		Bytes:                  10,
		AcquisitionLockTimeout: time.Second,
		Latency:                time.Millisecond,
	})
	m.OnShareFetch(shareconsumer.ShareFetchEvent{Leader: 1, Err: stderrors.New("x")})
	m.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{rec("orders", 0, 1)}, Err: stderrors.New("x")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.OnProcessDone(ctx, shareconsumer.RecordOutcome{Record: rec("orders", 0, 1), Ack: acktype.Accept})
	var p shareconsumer.AcknowledgedPartition
	p.TopicPartition = tp("orders", 0)
	p.Records[acktype.Accept] = 1
	m.OnAcknowledge(shareconsumer.AcknowledgeEvent{Leader: 1, Partitions: []shareconsumer.AcknowledgedPartition{p}})
	m.OnRenew(shareconsumer.RenewEvent{Records: []*shareconsumer.Record{rec("orders", 0, 1)}})
	m.OnLockLost(shareconsumer.LockLostEvent{Record: rec("orders", 0, 1), Err: &errors.LockLostError{Reason: errors.LockRenewRefused}})
	m.OnMembership(shareconsumer.MembershipEvent{Group: c.Group(), MemberID: c.MemberID(), State: shareconsumer.StateStable, MemberEpoch: 1, Assigned: []shareconsumer.TopicPartition{tp("orders", 0)}})
	m.OnLag(shareconsumer.LagEvent{Lag: shareconsumer.GroupLag{Group: c.Group(), Partitions: []shareconsumer.PartitionLag{{TopicPartition: tp("orders", 0), Lag: 2}}}})
	m.OnLag(shareconsumer.LagEvent{Err: stderrors.New("x")})
}

func TestLint(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	allEvents(m, attach(t, m, "g"))
	problems, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	assert.Empty(t, problems)
	// Every metric has a value, and the pedantic registry agrees with Describe.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, strings.TrimPrefix(mf.GetName(), "kshare_"))
	}
	assert.ElementsMatch(t, []string{
		"fetch_requests_total", "fetch_request_errors_total", "fetch_request_duration_seconds",
		"fetch_records_total", "fetch_bytes_total", "fetch_partition_errors_total",
		"poll_records_total", "poll_errors_total",
		"processed_records_total", "process_duration_seconds",
		"acknowledged_records_total", "renewed_records_total", "locks_lost_total",
		"lag_lookup_errors_total", "lag_records",
		"acquisition_lock_timeout_seconds", "member_state", "member_epoch", "assigned_partitions",
		"held_records",
	}, names)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := kshareprom.New("app", kshareprom.Registerer(reg), kshareprom.Subsystem("orders"),
		kshareprom.ConstLabels(prometheus.Labels{"group": "g1"}))
	m.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{rec("orders", 0, 1)}})
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP app_orders_poll_records_total Records Poll returned, renewed records returned again included, by topic.
# TYPE app_orders_poll_records_total counter
app_orders_poll_records_total{group="g1",topic="orders"} 1
`), "app_orders_poll_records_total"))

	// A second Metrics alike is refused; one with other const labels is not.
	assert.Panics(t, func() {
		kshareprom.New("app", kshareprom.Registerer(reg), kshareprom.Subsystem("orders"), kshareprom.ConstLabels(prometheus.Labels{"group": "g1"}))
	})
	assert.NotPanics(t, func() {
		kshareprom.New("app", kshareprom.Registerer(reg), kshareprom.Subsystem("orders"), kshareprom.ConstLabels(prometheus.Labels{"group": "g2"}))
	})
	assert.PanicsWithValue(t, `kshareprom: ConstLabels: "topic" is a label of the metrics themselves: choose another name`, func() {
		kshareprom.New("app", kshareprom.ConstLabels(prometheus.Labels{"topic": "x"}))
	})
	assert.Panics(t, func() { kshareprom.New("app", kshareprom.ProcessDurationBuckets([]float64{1, 0.5})) })
}

func TestHandler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []kshareprom.Opt
	}{
		{"own registry", nil},
		{"registry given", []kshareprom.Opt{kshareprom.Registerer(prometheus.NewRegistry())}},
		{"registered nowhere", []kshareprom.Opt{kshareprom.Registerer(nil)}},
		{"registerer that is no gatherer", []kshareprom.Opt{kshareprom.Registerer(prometheus.WrapRegistererWith(prometheus.Labels{"x": "y"}, prometheus.NewRegistry()))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := kshareprom.New("kshare", tc.opts...)
			m.OnPoll(shareconsumer.PollEvent{Records: []*shareconsumer.Record{rec("orders", 0, 1)}})
			srv := httptest.NewServer(m.Handler())
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Contains(t, string(body), `kshare_poll_records_total{topic="orders"} 1`)
		})
	}
	// A Gatherer given is what the handler serves.
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "other"}))
	m := kshareprom.New("kshare", kshareprom.Gatherer(other))
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "other 0")
	assert.NotContains(t, string(body), "kshare_")
}

// Package kshareprom exports a shareconsumer.Consumer's metrics to Prometheus.
//
// New returns Metrics, a value that is both a shareconsumer hook and a prometheus.Collector:
//
//	m := kshareprom.New("kshare", kshareprom.ConstLabels(prometheus.Labels{"group": "orders"}))
//	c, err := shareconsumer.New(
//		shareconsumer.ClientOpts(kgo.SeedBrokers(brokers...)),
//		shareconsumer.Group("orders"),
//		shareconsumer.Topics("orders"),
//		shareconsumer.Hooks(m),
//	)
//	...
//	http.Handle("/metrics", m.Handler())
//
// By default New registers the Metrics with a registry of their own, which Handler serves.
// Registerer(reg) registers them with reg instead (prometheus.DefaultRegisterer, or an
// application's registry: Handler then serves reg when it is a Gatherer); Registerer(nil)
// registers them nowhere, for an application that registers the Collector itself.
//
// # Metrics
//
// Every name begins with the namespace given to New, then the Subsystem's, if any; every
// metric carries the ConstLabels. Below, ns_ stands for that prefix.
//
// Counters and histograms, counted in the hooks as the events come (a Prometheus counter is an
// atomic add; Process's children of a topic are looked up once and kept, so that a record
// costs no hashing of label values; the other hooks look their children up once per partition
// or per run of records of one topic):
//
//	ns_fetch_requests_total{node_id}            counter    ShareFetch requests answered or failed (HookShareFetch)
//	ns_fetch_request_errors_total{node_id}      counter    those that failed as a whole: ShareFetchEvent.Err
//	ns_fetch_request_duration_seconds{node_id}  histogram  ShareFetchEvent.Latency of the answered ones
//	ns_fetch_records_total{topic,partition}     counter    records acquired: FetchedPartition.Records
//	ns_fetch_bytes_total{topic,partition}       counter    record batch bytes: FetchedPartition.Bytes
//	ns_fetch_partition_errors_total{topic,partition} counter partitions with an error: FetchedPartition.Err
//	ns_poll_records_total{topic}                counter    records Poll returned (HookPoll)
//	ns_poll_errors_total                        counter    Polls that returned an error (PollEvent.Err)
//	ns_processed_records_total{topic,outcome}   counter    Process's records by outcome (HookProcessDone)
//	ns_process_duration_seconds{topic}          histogram  RecordOutcome.HandlerTime, records a handler had
//	ns_acknowledged_records_total{topic,type,outcome} counter acknowledgements sent (HookAcknowledge)
//	ns_renewed_records_total{topic}             counter    records whose locks were renewed, still held at the answer (HookRenew)
//	ns_locks_lost_total{topic,reason}           counter    locks Process lost (HookLockLost)
//	ns_dead_letter_records_total{topic,outcome} counter    produces to the dead-letter topic (HookDeadLetter)
//	ns_lag_lookup_errors_total                  counter    lag lookups that failed (LagEvent.Err)
//
// Gauges, made when Prometheus scrapes, from the last event of their kind or from the consumer:
//
//	ns_held_records                             gauge  Consumer.Status().Held, read at the scrape
//	ns_acquisition_lock_timeout_seconds         gauge  the last ShareFetchEvent.AcquisitionLockTimeout
//	ns_member_state{state}                      gauge  1 for MembershipEvent.State, 0 for the others
//	ns_member_epoch                             gauge  MembershipEvent.MemberEpoch (0 when negative)
//	ns_assigned_partitions{topic}               gauge  MembershipEvent.Assigned counted by topic
//	ns_lag_records{topic,partition}             gauge  PartitionLag.Lag of the last lag lookup that succeeded
//
// The label values: node_id is the partition leader's node id; partition is the partition
// number in decimal; outcome of processed_records_total is accept, release or reject (what
// Process acknowledged: RecordOutcome.Ack), dead_letter (RecordOutcome.DeadLettered: copied to
// the dead-letter topic, then accepted) or lost (the lock was lost before an acknowledgement
// was chosen, RecordOutcome.Ack 0); outcome of dead_letter_records_total is ok or error
// (DeadLetterEvent.Err), Process's produces and Consumer.DeadLetter's alike; type of acknowledged_records_total is
// accept, release, reject, renew or gap (gap counts offsets, not records), its outcome ok or
// error (AcknowledgedPartition.Err); reason of locks_lost_total is errors.LockLostReason's
// String (renew_refused, invalid_record_state, session_reset, leader_moved, deadline_passed,
// max_hold_reached); state of member_state is shareconsumer.MemberState's String (unsubscribed,
// joining, stable, left, fatal, closed).
//
// # How the figures relate to ProcessStats
//
// For a consumer that only runs Process, the processed_records_total outcomes add up to
// ProcessStats.Delivered once Process returned; accept, release, reject and dead_letter equal
// ProcessStats.Accepted, Released, Rejected and DeadLettered (a record whose lock was lost
// after its copy was produced counts as lost there, and in DeadLettered);
// dead_letter_records_total's ok and error equal ProcessStats.DeadLettered and
// DeadLetterFailures; process_duration_seconds counts what
// ProcessStats.HandlerTime counts; locks_lost_total by reason equals ProcessStats.LocksLostBy.
// renewed_records_total is at most ProcessStats.Renewed; equal when no record finished between
// a renew's send and its answer: RenewEvent.Records lists the renewed records the consumer
// still holds when the answer comes, where ProcessStats.Renewed counts every offset renewed (a
// consumer that also polls renews Poll's records too, which count here only). The counters of
// HookAcknowledge, HookRenew and HookLockLost may catch up just after Process returned, those
// hooks running once the answer is applied; Close waits for them.
// The lost outcome is not ProcessStats.LocksLost: a record whose lock was lost after its
// acknowledgement was chosen, before it was sent, counts as that acknowledgement in
// processed_records_total and in locks_lost_total too.
//
// # Edge cases
//
//   - One Metrics per consumer. Counters of two consumers given one Metrics add up, but the
//     gauges show the membership, lag and held records of the consumer made last (the
//     attached one: membership events of another member ID and lag of another group are left
//     out; a consumer of the same group looks up the same lag), its lock duration as any of
//     them reports it, and go away when that one closes, even while the others run. Two
//     Metrics in one registry need different ConstLabels (or Subsystems): New panics when the
//     Registerer refuses a second one alike, as prometheus.MustRegister does.
//   - The group is a label only when given: put it in ConstLabels, as above. Metrics do not
//     take it from Consumer.Group in OnNewConsumer: a metric's labels are fixed when New makes
//     and registers it, before the consumer exists, so a group learnt then would have to be a
//     variable label on every metric, always with the one value a Metrics (one per consumer)
//     ever sees; and whoever calls New knows the group, having to give it to
//     shareconsumer.Group. Without ConstLabels the metrics carry no group label.
//   - A series exists from its first event: before the first fetch no fetch_records_total
//     series is exported, and a counter whose topic is no longer consumed stays at its last
//     value, as counters do. Counters without labels (poll_errors_total,
//     lag_lookup_errors_total) are exported at 0 from the start; the four outcomes of
//     processed_records_total but dead_letter from a topic's first record in Process,
//     dead_letter from its first record dead-lettered.
//   - The membership gauges are absent until the first membership change;
//     acquisition_lock_timeout_seconds until an answer reports a lock duration (ShareFetch
//     v1+); held_records while no consumer is attached (before New returns).
//   - After Close no gauge is exported: OnConsumerClosed detaches the consumer and forgets
//     its membership, lag and lock duration, so that held_records, member_state, member_epoch,
//     assigned_partitions, lag_records and acquisition_lock_timeout_seconds go away (as
//     kshareotel's gauges do). The counters and histograms keep their values, as counters do.
//   - lag_records shows the last lag lookup that succeeded: a failed one leaves it as it was
//     and counts in lag_lookup_errors_total; a partition the next lookup does not list goes
//     away; a partition whose Lag is -1 (unknown, PartitionLag.Err) is left out. Lag is looked
//     up only with shareconsumer.LagInterval set.
//   - fetch_request_duration_seconds observes answered requests only: a failed request's
//     latency (a dial timeout, a request abandoned at Close) would say nothing of the broker.
//     It includes the broker's wait for records (FetchMaxWait), so on a quiet topic it sits at
//     that wait.
//   - A record Poll returns again after a renew counts again in poll_records_total.
//   - process_duration_seconds observes the records a handler had, lost while it ran
//     included; records released from the queue at shutdown or lost while queued are counted
//     in processed_records_total only. The hook tells them apart by its context, which is
//     context.Background() for a record no handler had.
//   - Acknowledgements of Poll and of Process alike, the consumer's own (gaps) and Close's,
//     count in acknowledged_records_total; a request that failed as a whole counts every
//     acknowledgement it carried as error.
//
// # Cost
//
// Metrics start no goroutine. A scrape calls Consumer.Status once, which takes the consumer's
// lock briefly. The hooks never block: counters are atomic, the membership and lag are kept
// under a mutex held only to swap a pointer, and the event's slices are kept, not copied (the
// consumer gives them to the hook).
package kshareprom

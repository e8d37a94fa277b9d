// Package kshareotel traces and measures kshare share consumers with OpenTelemetry, through
// shareconsumer's hooks:
//
//	o := kshareotel.New(kshareotel.TracerProvider(tp), kshareotel.MeterProvider(mp))
//	c, err := shareconsumer.New(shareconsumer.Group("billing"), shareconsumer.Topics("orders"),
//		shareconsumer.Hooks(o), ...)
//
// Names follow the OpenTelemetry semantic conventions for messaging (semconv v1.43.0, the
// newest the otel module ships; the tracer and meter carry its schema URL). What the
// conventions do not name is kshare's own, in the kshare.* namespace: the conventions reserve
// messaging.* for the names they define. docs/observability.md lists every span, attribute,
// event and metric with its unit and source.
//
// # Traces
//
// Process: each record a handler gets has a span "process <topic>", kind CONSUMER, started in
// OnProcessStart just before the handler runs; the handler's context carries it, so spans the
// handler starts are its children. The span's parent is the producer's span context, read from
// the record's headers with the propagator (see TextMapPropagator); with LinkSpans the
// producer's span context is a link instead, and the parent is whatever span the handler's
// context carried (the context Process was called with), if any. A record whose headers carry
// no trace context gets a span with no parent (or that one) and no link. The span ends when
// the record's outcome is known (OnProcessDone): accepted, it ends with its status unset;
// released (the handler's error), rejected (errors.Reject) or panicked, it ends with an error
// status whose description is the handler's error, error.type "release", "reject" or "panic",
// and the error recorded as an exception event; dead-lettered (shareconsumer.DeadLetterTopic:
// copied to the dead-letter topic, then accepted), it ends the same way with error.type
// "dead_letter", after an event "dead lettered" naming the topic; a record whose lock was lost ends with an error
// status and error.type "lock_lost". While the span is open each renew of the record's lock
// adds an event "lock renewed", and a lost lock an event "lock lost" with the reason, and makes
// the status an error at once (the handler is still running, its context cancelled).
//
// Records Process acquired but lost or released before any handler had them (in the queue, at
// shutdown) get no span: they were never processed. Their renews and lost locks are still
// counted by the metrics. A lost lock's hook may run after the handler it cancelled returned
// (the session that found the loss calls it, the worker ends the span): the span then gets
// the "lock lost" event when it ends, once either way.
//
// Poll: each Poll that returned records has one span "poll <topic>" (just "poll" when the
// records come from several topics), kind CONSUMER, messaging.operation.type "receive", from
// when Poll was called to when it returned, linked to the producer span of each record that
// carries one. shareconsumer.PollEvent carries no context, so the span is the root of a trace
// of its own; an application that processes Poll's records starts its own spans, with
// Extract for the producer's context. A Poll that returned no records, or an error, has no span.
//
// Spans the tracer provider does not record (sampled out) cost a span start and nothing else:
// the package keeps state only for recording spans.
//
// # Metrics
//
// The semantic conventions' messaging.client.consumed.messages counts the records pulled from
// the broker, once per delivery, as the conventions ask of a pull-based client: the records
// each ShareFetch answer acquired for the application (ShareFetchEvent's partitions, operation
// name "ShareFetch"), for Poll and Process alike. A record Poll returns again after a renew was
// fetched once and counts once; a record the broker delivers again counts again. Under Process
// the count equals ProcessStats.Delivered, records lost or released before a handler had them
// included. messaging.process.duration is the handler's run time of each record a handler had
// (RecordOutcome.HandlerTime). messaging.client.operation.duration times the requests to
// partition leaders: every ShareFetch as operation type "receive" (name "ShareFetch"), and
// every request that carried acknowledgements as "settle" (name "ShareFetch" or
// "ShareAcknowledge": a ShareFetch that carried acknowledgements is measured once as each).
//
// kshare's own: kshare.acknowledged.messages (records acknowledged to leaders, by type, with
// error.type where the leader did not apply them), kshare.renewed.messages (locks renewed, one
// per record per renew), kshare.locks_lost.messages (by reason), kshare.held.messages (records
// the consumers hold now, Poll's and Process's: shareconsumer.Status.Held, read on collection),
// kshare.acquisition_lock.timeout (the lock duration the last ShareFetch answer reported) and
// kshare.lag (per partition, from the last lag lookup that succeeded; see
// shareconsumer.LagInterval).
//
// Every measurement has messaging.system "kafka" and messaging.consumer.group.name: the
// consumer's group (shareconsumer.Consumer.Group), which the Otel reads when New gives it the
// consumer (OnNewConsumer, before New returns), or the one ConsumerGroup sets instead.
//
// # Several consumers
//
// One Otel may be given to several consumers of one group: counters and histograms add up
// their events, kshare.held.messages sums their held records, and the gauges report the last
// event of any of them. Events carry no consumer, so an Otel shared by consumers of different
// groups labels everything with one group, the last consumer's; give each group its own Otel.
// When the last consumer closes, the gauges stop reporting until new events come.
//
// # Edge cases
//
//   - A record key that is not valid UTF-8 is left out of messaging.kafka.message.key, as the
//     conventions ask for keys with no canonical string form; a null key is always left out.
//     A null value (tombstone) sets messaging.kafka.message.tombstone and a body size of 0.
//   - The W3C fallback: without TextMapPropagator the global propagator is read at each record;
//     while it propagates nothing (no otel.SetTextMapPropagator call), W3C Trace Context's
//     traceparent and tracestate headers are read instead, so that a producer instrumented with
//     the W3C default is followed with no setup.
//   - The lock deadline in "lock renewed" events is the consumer's estimate
//     (shareconsumer.RenewEvent.LockDeadline), on the local clock.
//   - Hooks run on the consumer's goroutines; this package's hooks take no lock while calling
//     the tracer or meter, except a short one around the gauges' state, and start no goroutine.
package kshareotel

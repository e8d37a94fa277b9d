package kshareotel

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
)

// The names of kshare's own metrics (the semantic conventions' are messagingconv's).
const (
	MetricAcknowledged = "kshare.acknowledged.messages"
	MetricRenewed      = "kshare.renewed.messages"
	MetricLocksLost    = "kshare.locks_lost.messages"
	MetricDeadLettered = "kshare.dead_lettered.messages"
	MetricHeld         = "kshare.held.messages"
	MetricLockTimeout  = "kshare.acquisition_lock.timeout"
	MetricLag          = "kshare.lag"
)

// durationBuckets are the bucket boundaries the semantic conventions advise for
// messaging.process.duration and messaging.client.operation.duration, in seconds.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

type instruments struct {
	consumed          metric.Int64Counter
	processDuration   metric.Float64Histogram
	operationDuration metric.Float64Histogram
	acknowledged      metric.Int64Counter
	renewed           metric.Int64Counter
	locksLost         metric.Int64Counter
	deadLettered      metric.Int64Counter
	held              metric.Int64ObservableUpDownCounter
	lockTimeout       metric.Float64ObservableGauge
	lag               metric.Int64ObservableGauge
}

// observed is what the observable instruments report, as the last events left it.
type observed struct {
	lockTimeout time.Duration // the last one a ShareFetch answer reported; 0 none yet
	lag         shareconsumer.GroupLag
	haveLag     bool
}

func newInstruments(m metric.Meter) instruments {
	var in instruments
	check := func(err error) {
		if err != nil {
			otel.Handle(err)
		}
	}
	consumed, err := messagingconv.NewClientConsumedMessages(m)
	check(err)
	in.consumed = consumed.Inst()
	pd, err := messagingconv.NewProcessDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	check(err)
	in.processDuration = pd.Inst()
	od, err := messagingconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	check(err)
	in.operationDuration = od.Inst()

	noops := noop.Meter{}
	if in.acknowledged, err = m.Int64Counter(MetricAcknowledged, metric.WithUnit("{message}"),
		metric.WithDescription("Records acknowledged to a partition leader, by acknowledgement type; error.type is set for those the leader did not apply.")); err != nil {
		check(err)
		in.acknowledged, _ = noops.Int64Counter(MetricAcknowledged)
	}
	if in.renewed, err = m.Int64Counter(MetricRenewed, metric.WithUnit("{message}"),
		metric.WithDescription("Acquisition locks a partition leader renewed, one per record per renew.")); err != nil {
		check(err)
		in.renewed, _ = noops.Int64Counter(MetricRenewed)
	}
	if in.locksLost, err = m.Int64Counter(MetricLocksLost, metric.WithUnit("{message}"),
		metric.WithDescription("Records whose acquisition lock Process lost, by reason.")); err != nil {
		check(err)
		in.locksLost, _ = noops.Int64Counter(MetricLocksLost)
	}
	if in.deadLettered, err = m.Int64Counter(MetricDeadLettered, metric.WithUnit("{message}"),
		metric.WithDescription("Records produced to the dead-letter topic; error.type is set for those whose produce failed.")); err != nil {
		check(err)
		in.deadLettered, _ = noops.Int64Counter(MetricDeadLettered)
	}
	if in.held, err = m.Int64ObservableUpDownCounter(MetricHeld, metric.WithUnit("{message}"),
		metric.WithDescription("Acquired records the consumers hold now.")); err != nil {
		check(err)
		in.held, _ = noops.Int64ObservableUpDownCounter(MetricHeld)
	}
	if in.lockTimeout, err = m.Float64ObservableGauge(MetricLockTimeout, metric.WithUnit("s"),
		metric.WithDescription("The acquisition lock duration the last ShareFetch answer reported.")); err != nil {
		check(err)
		in.lockTimeout, _ = noops.Float64ObservableGauge(MetricLockTimeout)
	}
	if in.lag, err = m.Int64ObservableGauge(MetricLag, metric.WithUnit("{message}"),
		metric.WithDescription("The share group's lag per partition: records not yet delivered or acknowledged, by the last lag lookup that succeeded.")); err != nil {
		check(err)
		in.lag, _ = noops.Int64ObservableGauge(MetricLag)
	}
	return in
}

// metricOpt wraps attributes for Add and Record.
func metricOpt(a []attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(a...))
}

// partitionAttrs returns the attributes of a measurement of one partition; group and operation
// are left out when "".
func partitionAttrs(group, operation, topic string, partition int32) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 7)
	a = append(a,
		semconv.MessagingSystemKafka,
		semconv.MessagingDestinationName(topic),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(int(partition))),
	)
	if group != "" {
		a = append(a, semconv.MessagingConsumerGroupName(group))
	}
	if operation != "" {
		a = append(a, semconv.MessagingOperationName(operation))
	}
	return a
}

// partitionKey identifies the attributes of a measurement of one partition: partitionAttrs's
// arguments, and the error.type ("" none).
type partitionKey struct {
	group, operation, topic string
	partition               int32
	errorType               string
}

// partitionOpts keeps the measurement option of each partitionKey measured: the attribute set
// is the same for every record of a partition with one outcome, and making it is most of a
// measurement's cost. It holds one entry per group, operation, partition and error.type
// measured, as the meter provider keeps one aggregation per attribute set.
type partitionOpts struct {
	mu   sync.RWMutex
	opts map[partitionKey]metric.MeasurementOption
}

// get returns k's measurement option, made on its first use.
func (c *partitionOpts) get(k partitionKey) metric.MeasurementOption {
	c.mu.RLock()
	opt, ok := c.opts[k]
	c.mu.RUnlock()
	if ok {
		return opt
	}
	a := partitionAttrs(k.group, k.operation, k.topic, k.partition)
	if k.errorType != "" {
		a = append(a, semconv.ErrorTypeKey.String(k.errorType))
	}
	opt = metricOpt(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts == nil {
		c.opts = make(map[partitionKey]metric.MeasurementOption)
	}
	c.opts[k] = opt
	return opt
}

// errorType returns the error.type of a request's or partition's error: Kafka's error code name
// (such as "INVALID_RECORD_STATE") when Kafka sent one, "context_canceled" or
// "context_deadline_exceeded" for a context's end, else "_OTHER".
func errorType(err error) string {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, context.Canceled):
		return "context_canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context_deadline_exceeded"
	}
	return "_OTHER"
}

// operationAttrs returns the attributes of messaging.client.operation.duration.
func operationAttrs(group, name string, typ attribute.KeyValue, err error) []attribute.KeyValue {
	a := []attribute.KeyValue{semconv.MessagingSystemKafka, semconv.MessagingOperationName(name), typ}
	if group != "" {
		a = append(a, semconv.MessagingConsumerGroupName(group))
	}
	if err != nil {
		a = append(a, semconv.ErrorTypeKey.String(errorType(err)))
	}
	return a
}

// OnShareFetch counts the records the answer delivered, records the request's latency, and
// keeps the lock duration the leader reported.
func (o *Otel) OnShareFetch(e shareconsumer.ShareFetchEvent) {
	group := o.groupName()
	ctx := context.Background()
	o.m.operationDuration.Record(ctx, e.Latency.Seconds(),
		metricOpt(operationAttrs(group, "ShareFetch", semconv.MessagingOperationTypeReceive, e.Err)))
	for _, p := range e.Partitions {
		if p.Records > 0 {
			o.m.consumed.Add(ctx, int64(p.Records), o.partOpts.get(partitionKey{group: group, operation: "ShareFetch", topic: p.Topic, partition: p.Partition}))
		}
	}
	if e.AcquisitionLockTimeout > 0 {
		o.mu.Lock()
		o.state.lockTimeout = e.AcquisitionLockTimeout
		o.mu.Unlock()
	}
}

// OnAcknowledge counts the acknowledged records by type and outcome, and records the request's
// latency as a settle operation.
func (o *Otel) OnAcknowledge(e shareconsumer.AcknowledgeEvent) {
	group := o.groupName()
	ctx := context.Background()
	o.m.operationDuration.Record(ctx, e.Latency.Seconds(),
		metricOpt(operationAttrs(group, e.Request, semconv.MessagingOperationTypeSettle, e.Err)))
	for _, p := range e.Partitions {
		for t, n := range p.Records {
			if n == 0 {
				continue
			}
			a := partitionAttrs(group, "", p.Topic, p.Partition)
			a = append(a, AcknowledgeTypeKey.String(acktype.Type(t).String()))
			if p.Err != nil {
				a = append(a, semconv.ErrorTypeKey.String(errorType(p.Err)))
			}
			o.m.acknowledged.Add(ctx, int64(n), metricOpt(a))
		}
	}
}

// OnLag keeps a successful lookup's lag for kshare.lag.
func (o *Otel) OnLag(e shareconsumer.LagEvent) {
	if e.Err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.state.lag, o.state.haveLag = e.Lag, true
}

// observe reports the observable instruments.
func (o *Otel) observe(_ context.Context, obs metric.Observer) error {
	o.mu.Lock()
	st := o.state
	consumers := make([]*shareconsumer.Consumer, 0, len(o.consumers))
	for c := range o.consumers {
		consumers = append(consumers, c)
	}
	o.mu.Unlock()

	group := o.groupName()
	base := []attribute.KeyValue{semconv.MessagingSystemKafka}
	if group != "" {
		base = append(base, semconv.MessagingConsumerGroupName(group))
	}
	if len(consumers) > 0 {
		held := 0
		for _, c := range consumers {
			held += c.Status().Held
		}
		obs.ObserveInt64(o.m.held, int64(held), metric.WithAttributes(base...))
	}
	if st.lockTimeout > 0 {
		obs.ObserveFloat64(o.m.lockTimeout, st.lockTimeout.Seconds(), metric.WithAttributes(base...))
	}
	if st.haveLag {
		lagGroup := group // ConsumerGroup's name, when it set one, as on every measurement
		if lagGroup == "" {
			lagGroup = st.lag.Group
		}
		for _, p := range st.lag.Partitions {
			if p.Lag < 0 {
				continue
			}
			a := partitionAttrs(lagGroup, "", p.Topic, p.Partition)
			obs.ObserveInt64(o.m.lag, p.Lag, metricOpt(a))
		}
	}
	return nil
}

package shareconsumer

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// The configs that bound a record's deliveries: the group's (Kafka 4.3+) and the broker's
// default for every group (the only one in Kafka 4.2).
const (
	groupDeliveryLimitConfig  = "share.delivery.count.limit"
	brokerDeliveryLimitConfig = "group.share.delivery.count.limit"
)

// deliveryLimit is the group's delivery count limit as the consumer last read it. One read runs
// at a time; callers that need it meanwhile wait for that read.
type deliveryLimit struct {
	value   int       // 0 until read
	readAt  time.Time // when value was read
	reading chan struct{}
	readErr error // the last read's failure, nil when it read a config
	// maxAge is how long value is trusted (deliveryLimitMaxAge; tests shorten it).
	maxAge time.Duration
}

// deliveryCountLimit returns the group's delivery count limit, read again when it is older than
// its max age, never read, or below seen, a delivery count a broker sent (the limit was
// raised). When a read fails it returns the last value read, or Kafka's default before any,
// with the read's error.
func (c *Consumer) deliveryCountLimit(ctx context.Context, seen int16) (int, error) {
	d := &c.dlq
	for {
		d.mu.Lock()
		l := &d.limit
		maxAge := l.maxAge
		if maxAge == 0 {
			maxAge = deliveryLimitMaxAge
		}
		if l.value > 0 && time.Since(l.readAt) < maxAge && int(seen) <= l.value {
			v, err := l.value, l.readErr
			d.mu.Unlock()
			return v, err
		}
		if ch := l.reading; ch != nil {
			d.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return c.lastDeliveryLimit(), context.Cause(ctx)
			}
			// The read that ended may have started before seen was delivered; its answer
			// is the freshest there is, and a broker's count above it is its own affair.
			d.mu.Lock()
			v, err := l.value, l.readErr
			d.mu.Unlock()
			if v > 0 {
				return v, err
			}
			continue
		}
		ch := make(chan struct{})
		l.reading = ch
		d.mu.Unlock()

		v, source, err := c.readDeliveryLimit(ctx)
		d.mu.Lock()
		l.reading = nil
		close(ch)
		switch {
		case err == nil:
			if v != l.value && l.value != 0 {
				c.log(kgo.LogLevelInfo, "the share group's delivery count limit changed", "limit", v, "was", l.value, "from", source)
			}
			l.value, l.readAt, l.readErr = v, time.Now(), nil
		case ctx.Err() != nil:
			// The caller gave up: the next caller reads again.
		default:
			if l.value == 0 {
				l.value = defaultDeliveryCountLimit
			}
			l.readAt, l.readErr = time.Now(), err
			c.log(kgo.LogLevelWarn, "reading the share group's delivery count limit failed; using the last one read, or Kafka's default", "limit", l.value, "err", err)
		}
		v = l.value
		if v == 0 {
			v = defaultDeliveryCountLimit
		}
		d.mu.Unlock()
		return v, err
	}
}

// lastDeliveryLimit returns the limit last read, or Kafka's default.
func (c *Consumer) lastDeliveryLimit() int {
	c.dlq.mu.Lock()
	defer c.dlq.mu.Unlock()
	if v := c.dlq.limit.value; v > 0 {
		return v
	}
	return defaultDeliveryCountLimit
}

// readDeliveryLimit reads the group's delivery count limit: the group config, else the broker
// config of any broker, else Kafka's default. It fails only when the cluster could not be
// asked at all (a request failed).
func (c *Consumer) readDeliveryLimit(ctx context.Context) (int, string, error) {
	v, groupRefusal, err := describeIntConfig(ctx, c.cl, kmsg.ConfigResourceTypeGroupConfig, c.cfg.group, groupDeliveryLimitConfig)
	if err != nil {
		return 0, "", err
	}
	if v > 0 {
		return v, "group config " + groupDeliveryLimitConfig, nil
	}
	// A broker's config is read from that broker, named by its id.
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{}
	mresp, err := meta.RequestWith(ctx, c.cl)
	if err != nil {
		return 0, "", fmt.Errorf("Metadata: %w", err)
	}
	var brokerRefusal error
	if len(mresp.Brokers) > 0 {
		v, brokerRefusal, err = describeIntConfig(ctx, c.cl, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(mresp.Brokers[0].NodeID)), brokerDeliveryLimitConfig)
		if err != nil {
			return 0, "", err
		}
		if v > 0 {
			return v, "broker config " + brokerDeliveryLimitConfig, nil
		}
	}
	if groupRefusal != nil || brokerRefusal != nil {
		c.log(kgo.LogLevelWarn, "the brokers refused to describe the delivery count limit; assuming Kafka's default (grant DESCRIBE_CONFIGS on the group)", "limit", defaultDeliveryCountLimit, "group_err", groupRefusal, "broker_err", brokerRefusal)
	}
	return defaultDeliveryCountLimit, "Kafka's default", nil
}

// describeIntConfig reads config name of a resource with DescribeConfigs: its value, 0 when the
// broker refused the resource (refusal is its error: an old broker without GROUP resources, a
// missing DESCRIBE_CONFIGS permission) or does not have the config, or has no value for it.
// err is the request's failure.
func describeIntConfig(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name string) (v int, refusal, err error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, resource, []string{name}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, nil, fmt.Errorf("DescribeConfigs %s %q: %w", typ, resource, err)
	}
	for _, rr := range resp.Resources {
		if code := kerr.ErrorForCode(rr.ErrorCode); code != nil {
			return 0, errors.FromKafka(rr.ErrorCode, rr.ErrorMessage), nil
		}
		for _, cfg := range rr.Configs {
			if cfg.Name != name || cfg.Value == nil {
				continue
			}
			if v, err := strconv.Atoi(*cfg.Value); err == nil && v > 0 {
				return v, nil, nil
			}
		}
	}
	return 0, nil, nil
}

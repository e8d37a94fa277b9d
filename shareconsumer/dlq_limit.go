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
	// readErr is the last read's failure, nil when it read the limit; failedAt is when it
	// failed. A failed read moves neither value nor readAt, and the next is not tried before
	// retryAfter has passed since failedAt.
	readErr  error
	failedAt time.Time
	// maxAge is how long value is trusted (deliveryLimitMaxAge), retryAfter how long after a
	// failed read the next is tried (deliveryLimitRetry); tests change them.
	maxAge, retryAfter time.Duration
}

// fresh reports whether the limit needs no read for a record delivered seen times: it was read
// less than its max age ago and seen does not pass it, or the last read failed less than
// retryAfter ago (the caller gets that failure again).
func (l *deliveryLimit) fresh(seen int16) bool {
	if l.readErr != nil {
		retry := l.retryAfter
		if retry == 0 {
			retry = deliveryLimitRetry
		}
		return time.Since(l.failedAt) < retry
	}
	maxAge := l.maxAge
	if maxAge == 0 {
		maxAge = deliveryLimitMaxAge
	}
	return l.value > 0 && time.Since(l.readAt) < maxAge && int(seen) <= l.value
}

// deliveryCountLimit returns the group's delivery count limit, read again when it is older than
// its max age, never read, or below seen, a delivery count a broker sent (the limit was
// raised). When a read fails it returns the last value read (0 before any) with the read's
// error, and the next read is tried after deliveryLimitRetry.
func (c *Consumer) deliveryCountLimit(ctx context.Context, seen int16) (int, error) {
	d := &c.dlq
	for {
		d.mu.Lock()
		l := &d.limit
		if l.fresh(seen) {
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
			if v > 0 || err != nil {
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
			l.readErr, l.failedAt = err, time.Now()
			msg := "reading the share group's delivery count limit failed; a failing record counts as on its last delivery from the last limit read, or from delivery 2 before any"
			if errors.Is(err, kerr.GroupAuthorizationFailed) {
				msg = "reading the share group's delivery count limit was refused: grant DESCRIBE_CONFIGS on the group; a failing record counts as on its last delivery from the last limit read, or from delivery 2 before any"
			}
			c.log(kgo.LogLevelWarn, msg, "group", c.cfg.group, "last_limit", l.value, "err", err)
		}
		v = l.value
		d.mu.Unlock()
		return v, err
	}
}

// lastDeliveryLimit returns the limit last read, 0 before any.
func (c *Consumer) lastDeliveryLimit() int {
	c.dlq.mu.Lock()
	defer c.dlq.mu.Unlock()
	return c.dlq.limit.value
}

// readDeliveryLimit reads the group's delivery count limit: the group config, else (a broker
// that answers for the group without it: Kafka 4.2) the broker config of any broker, else
// Kafka's default when neither broker nor group has it. A request that fails, or a resource
// the broker answers with an error (GROUP_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS on the
// group, REQUEST_TIMED_OUT), fails the read.
func (c *Consumer) readDeliveryLimit(ctx context.Context) (int, string, error) {
	v, err := describeIntConfig(ctx, c.cl, kmsg.ConfigResourceTypeGroupConfig, c.cfg.group, groupDeliveryLimitConfig)
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
	if len(mresp.Brokers) > 0 {
		v, err = describeIntConfig(ctx, c.cl, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(mresp.Brokers[0].NodeID)), brokerDeliveryLimitConfig)
		if err != nil {
			return 0, "", err
		}
		if v > 0 {
			return v, "broker config " + brokerDeliveryLimitConfig, nil
		}
	}
	return defaultDeliveryCountLimit, "Kafka's default", nil
}

// describeIntConfig reads config name of a resource with DescribeConfigs: its value, 0 when
// the broker does not have the config or has no value for it. err is the request's failure or
// the broker's error for the resource.
func describeIntConfig(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name string) (int, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, resource, []string{name}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("DescribeConfigs %s %q: %w", typ, resource, err)
	}
	for _, rr := range resp.Resources {
		if err := errors.FromKafka(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return 0, fmt.Errorf("DescribeConfigs %s %q: %w", typ, resource, err)
		}
		for _, cfg := range rr.Configs {
			if cfg.Name != name || cfg.Value == nil {
				continue
			}
			if v, err := strconv.Atoi(*cfg.Value); err == nil && v > 0 {
				return v, nil
			}
		}
	}
	return 0, nil
}

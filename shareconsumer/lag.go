package shareconsumer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// GroupLag is a share group's lag: per partition, the records not yet delivered or
// acknowledged.
type GroupLag struct {
	Group string
	// Partitions are every partition the group has share state for, by topic then partition;
	// empty for a group that has none (an unknown group, a group of another type, a share group
	// that has not fetched yet).
	Partitions []PartitionLag
	// Total is the sum of the partitions' Lag, those with Lag -1 left out.
	Total int64
	// At is when the lookup was answered (its last answer, when the end offsets were asked for).
	At time.Time
}

// PartitionLag is one partition of a share group's lag.
type PartitionLag struct {
	TopicPartition
	// StartOffset is the share-partition start offset (SPSO): every record below it is done
	// with. -1 when the group has no share state for the partition.
	StartOffset int64
	// EndOffset is the partition's high watermark when the lag was computed from it (Lag is
	// then EndOffset - StartOffset); -1 when the broker answered the lag itself, or when the
	// end offset was not asked for or could not be had.
	EndOffset int64
	// Lag is the records not yet delivered or acknowledged: the broker's own figure
	// (KIP-1226, DescribeShareGroupOffsets v1, which also leaves out the records at or after
	// the start offset that are done with), or EndOffset - StartOffset, at least 0, from an
	// older broker. -1 when it could not be known: StartOffset is -1, or Err says why.
	Lag int64
	// FromBroker says whether Lag is the broker's figure (KIP-1226).
	FromBroker bool
	// Err is the partition's error: a *errors.KafkaError for a code Kafka sent (in the
	// DescribeShareGroupOffsets or the ListOffsets answer, Kafka's message kept), or the error
	// of the ListOffsets request that was to give the partition's end offset; nil when it had
	// none.
	Err error
}

// Lag returns the consumer's share group's lag, as GroupLagOf does, through the consumer's
// client: the group's, not only this member's partitions. It needs no membership, so it works
// before the first Poll and while the consumer is not subscribed. It is safe from any
// goroutine, hooks included, and blocks until ctx ends at the longest. After Close it returns
// errors.ErrClosed; while Close runs it may fail with kgo.ErrClientClosed.
func (c *Consumer) Lag(ctx context.Context) (GroupLag, error) {
	if err := c.check(); err != nil {
		return GroupLag{}, err
	}
	return GroupLagOf(ctx, c.cl, c.cfg.group)
}

// GroupLagOf returns the lag of share group group, for an application (or a tool) that has a
// kgo.Client but no consumer of the group. It asks the group's coordinator (found with
// FindCoordinator and cached by cl) with DescribeShareGroupOffsets for every partition the
// group has share state for, and takes each partition's lag from the answer when the broker
// sends one (DescribeShareGroupOffsets v1, KIP-1226, Kafka 4.2); for the others (a Kafka 4.1
// broker, or a cl capped below v1 with kgo.MaxVersions, or a partition whose lag the broker
// did not know) it asks the partition leaders for their high watermarks (ListOffsets, one
// request per leader) and counts the lag as the high watermark minus the start offset. That
// figure is higher than the broker's: it also counts records past the start offset that are
// already acknowledged or archived.
//
// An unknown group, or a group of another type, has no share state: the lag has no partitions
// and no error, as Kafka answers. A partition's error code (and a ListOffsets failure for
// its leader) goes in that partition's Err. The group's error code is returned as a
// *errors.KafkaError with Kafka's message (GROUP_AUTHORIZATION_FAILED, for one), but
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS, which cl retries
// as it retries every group request and which GroupLagOf retries after that until ctx ends.
// When ctx ends first, the error wraps ctx's cause (errors.Is(err, context.DeadlineExceeded)
// holds for a deadline), with the last retriable error when there was one; so a cluster that
// cannot be reached fails with ctx, and does not hang beyond it.
func GroupLagOf(ctx context.Context, cl *kgo.Client, group string) (GroupLag, error) {
	if group == "" {
		return GroupLag{}, fmt.Errorf("shareconsumer: lag: a group is required")
	}
	lag, err := groupLag(ctx, cl, group)
	if err != nil {
		return GroupLag{}, fmt.Errorf("shareconsumer: lag of share group %q: %w", group, err)
	}
	return lag, nil
}

func groupLag(ctx context.Context, cl *kgo.Client, group string) (GroupLag, error) {
	rg, version, err := describeShareOffsets(ctx, cl, group)
	if err != nil {
		return GroupLag{}, err
	}
	lag := GroupLag{Group: group}
	var fallback []int // indexes into lag.Partitions of those that need their end offset
	for _, rt := range rg.Topics {
		for _, rp := range rt.Partitions {
			p := PartitionLag{
				TopicPartition: TopicPartition{Topic: rt.Topic, Partition: rp.Partition},
				StartOffset:    rp.StartOffset,
				EndOffset:      -1,
				Lag:            -1,
				Err:            errors.FromKafka(rp.ErrorCode, rp.ErrorMessage),
			}
			switch {
			case p.Err != nil, p.StartOffset < 0:
			case version >= 1 && rp.Lag >= 0:
				p.Lag, p.FromBroker = rp.Lag, true
			default:
				fallback = append(fallback, len(lag.Partitions))
			}
			lag.Partitions = append(lag.Partitions, p)
		}
	}
	if len(fallback) > 0 {
		if err := endOffsets(ctx, cl, lag.Partitions, fallback); err != nil {
			return GroupLag{}, err
		}
	}
	lag.At = time.Now()
	// Kafka lists topics in no promised order (kfake in a map's).
	slices.SortFunc(lag.Partitions, func(a, b PartitionLag) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, p := range lag.Partitions {
		if p.Lag >= 0 {
			lag.Total += p.Lag
		}
	}
	return lag, nil
}

// describeShareOffsets asks group's coordinator for the share-partition start offsets of every
// partition the group has share state for (null topics), and returns the group's answer and
// the version it came in. The client routes the request to the coordinator and retries the
// coordinator errors a while; past that, this retries them with a backoff until ctx ends.
func describeShareOffsets(ctx context.Context, cl *kgo.Client, group string) (kmsg.DescribeShareGroupOffsetsResponseGroup, int16, error) {
	var last error
	for failures := 0; ; failures++ {
		if err := pause(ctx, failures); err != nil {
			if last != nil {
				return kmsg.DescribeShareGroupOffsetsResponseGroup{}, 0, fmt.Errorf("%w, after %w", err, last)
			}
			return kmsg.DescribeShareGroupOffsetsResponseGroup{}, 0, err
		}
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group // Topics nil: every partition with share state
		req.Groups = append(req.Groups, rg)
		kresp, err := cl.Request(ctx, req)
		if err == nil {
			resp := kresp.(*kmsg.DescribeShareGroupOffsetsResponse)
			i := slices.IndexFunc(resp.Groups, func(g kmsg.DescribeShareGroupOffsetsResponseGroup) bool { return g.GroupID == group })
			if i < 0 {
				return kmsg.DescribeShareGroupOffsetsResponseGroup{}, 0, fmt.Errorf("DescribeShareGroupOffsets: the answer has no entry for the group")
			}
			if err = errors.FromKafka(resp.Groups[i].ErrorCode, resp.Groups[i].ErrorMessage); err == nil {
				return resp.Groups[i], resp.Version, nil
			}
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The client may report what ctx cut short (a dial, say) rather than ctx itself.
			err = fmt.Errorf("%w, after %w", context.Cause(ctx), err)
		}
		if !retriableCoordinatorError(err) || ctx.Err() != nil {
			return kmsg.DescribeShareGroupOffsetsResponseGroup{}, 0, err
		}
		last = err
	}
}

// endOffsets sets the EndOffset and Lag of ps[idx...] from their leaders' high watermarks
// (ListOffsets for the latest offset, read_uncommitted, which the client sends to each
// leader). A partition the answer failed or left out gets the error; only ctx's end fails the
// whole lookup.
func endOffsets(ctx context.Context, cl *kgo.Client, ps []PartitionLag, idx []int) error {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, i := range idx {
		p := ps[i].TopicPartition
		ti := slices.IndexFunc(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return t.Topic == p.Topic })
		if ti < 0 {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = p.Topic
			req.Topics = append(req.Topics, rt)
			ti = len(req.Topics) - 1
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p.Partition, -1 // latest: the high watermark
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	// With several leaders the client merges the answers it had, and returns the first failure.
	kresp, reqErr := cl.Request(ctx, req)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	answered := map[TopicPartition]kmsg.ListOffsetsResponseTopicPartition{}
	if resp, ok := kresp.(*kmsg.ListOffsetsResponse); ok {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				answered[TopicPartition{rt.Topic, rp.Partition}] = rp
			}
		}
	}
	for _, i := range idx {
		p := &ps[i]
		rp, ok := answered[p.TopicPartition]
		switch {
		case !ok && reqErr != nil:
			p.Err = fmt.Errorf("ListOffsets: %w", reqErr)
		case !ok:
			p.Err = fmt.Errorf("ListOffsets: the answer has no entry for the partition")
		case rp.ErrorCode != 0:
			p.Err = errors.FromKafka(rp.ErrorCode, nil)
		default:
			p.EndOffset, p.Lag = rp.Offset, max(0, rp.Offset-p.StartOffset)
		}
	}
	return nil
}

// LagInterval makes the consumer look its share group's lag up every d (Consumer.Lag) and
// give each lookup to the HookLag hooks, on a goroutine of its own: for metrics (the
// kshareotel and kshareprom plugins export it). 0, the default, turns it off; otherwise d must
// be at least 1ms. The first lookup is d after New. One lookup runs at a time: after a lookup
// slower than d the next one starts at once, and the ticks it overlapped beyond that are
// dropped. A lookup costs a DescribeShareGroupOffsets to
// the group's coordinator, plus, from a broker older than Kafka 4.2, a ListOffsets to each
// leader of the group's partitions.
//
// With no HookLag hook (Hooks) the option does nothing: no goroutine, no request. Close ends
// the lookup under way as it begins, and the goroutine before it returns; no hook is called
// for a lookup that Close cut short, nor after Close returned. A failed lookup is given to the
// hooks too (LagEvent.Err), and the next one is tried d later.
func LagInterval(d time.Duration) Opt { return opt(func(c *cfg) { c.lagInterval = d }) }

// lagLoop is the LagInterval goroutine's part of the consumer.
type lagLoop struct {
	// cancel ends the loop's context; nil when no loop runs. Set by New, called by Close.
	cancel context.CancelFunc
}

// startLag starts the LagInterval goroutine, when LagInterval is set and a hook takes its
// lookups. New calls it last, once nothing can fail.
func (c *Consumer) startLag() {
	hooks := c.hooks.lag
	if c.cfg.lagInterval <= 0 || len(hooks) == 0 {
		return
	}
	// Not a child of c.life.ctx: that one lives until Close has sent its acknowledgements and
	// left the group, and a lookup must not hold up Close that long.
	ctx, cancel := context.WithCancel(context.Background())
	c.lag.cancel = cancel
	c.life.wg.Add(1)
	go c.lagLoop(ctx, hooks, time.NewTicker(c.cfg.lagInterval))
}

// stopLag ends the LagInterval goroutine's lookup and makes it return; Close calls it as it
// begins, and waits for the goroutine with the others.
func (c *Consumer) stopLag() {
	if c.lag.cancel != nil {
		c.lag.cancel()
	}
}

// lagLoop looks the lag up on every tick and gives it to hooks, until ctx ends.
func (c *Consumer) lagLoop(ctx context.Context, hooks []HookLag, tick *time.Ticker) {
	defer c.life.wg.Done()
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		lag, err := GroupLagOf(ctx, c.cl, c.cfg.group)
		if ctx.Err() != nil {
			return // Close began: the lookup was cut short, and hooks get nothing more
		}
		ev := LagEvent{Lag: lag, Err: err}
		for _, h := range hooks {
			h.OnLag(ev)
		}
	}
}

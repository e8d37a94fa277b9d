package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
)

// fleet is the consumers of one share group, all in this process.
type fleet struct {
	cons []*shareconsumer.Consumer
	held [][]*shareconsumer.Record // per consumer: records acquired and not acknowledged yet

	ackMu    sync.Mutex
	ackErrs  int
	firstErr error
}

func newFleet(n int, seed, topic, group string, fetchAhead bool) (*fleet, error) {
	f := &fleet{cons: make([]*shareconsumer.Consumer, 0, n), held: make([][]*shareconsumer.Record, n)}
	for i := range n {
		opts := []shareconsumer.Opt{
			shareconsumer.ClientOpts(kgo.SeedBrokers(seed), kgo.ClientID(fmt.Sprintf("load-%d", i))),
			shareconsumer.Group(group),
			shareconsumer.Topics(topic),
			shareconsumer.ExplicitAcknowledgement(),
			shareconsumer.OnAcknowledgementCommit(f.onCommit),
		}
		if fetchAhead {
			opts = append(opts, shareconsumer.FetchAhead())
		}
		c, err := shareconsumer.New(opts...)
		if err != nil {
			f.close()
			return nil, err
		}
		f.cons = append(f.cons, c)
	}
	return f, nil
}

func (f *fleet) onCommit(ac shareconsumer.AcknowledgementCommit) {
	if ac.Err == nil {
		return
	}
	f.ackMu.Lock()
	defer f.ackMu.Unlock()
	f.ackErrs++
	if f.firstErr == nil {
		f.firstErr = ac.Err
	}
}

func (f *fleet) ackErr() error {
	f.ackMu.Lock()
	defer f.ackMu.Unlock()
	if f.ackErrs == 0 {
		return nil
	}
	return fmt.Errorf("%d acknowledgement commits failed, first: %w", f.ackErrs, f.firstErr)
}

func (f *fleet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range f.cons {
		wg.Go(func() { _ = c.Close(ctx) })
	}
	wg.Wait()
}

// each runs fn for every consumer in a goroutine of its own until all return; the first error
// cancels the others' context.
func (f *fleet) each(ctx context.Context, fn func(ctx context.Context, i int, c *shareconsumer.Consumer) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i, c := range f.cons {
		wg.Go(func() {
			if err := fn(ctx, i, c); err != nil {
				once.Do(func() { firstErr = err })
				cancel()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// idle polls every consumer until ctx ends; no record is expected (the topic is empty), and
// one that comes is an error. A Poll that ends with the context is not.
func (f *fleet) idle(ctx context.Context) error {
	return f.each(ctx, func(ctx context.Context, _ int, c *shareconsumer.Consumer) error {
		for ctx.Err() == nil {
			recs, err := c.Poll(ctx)
			if err != nil && ctx.Err() == nil {
				return err
			}
			if len(recs) > 0 {
				return fmt.Errorf("%d records on a topic that should be empty", len(recs))
			}
		}
		return nil
	})
}

// hold polls every consumer until it holds records, which it keeps unacknowledged; it stops
// once each consumer holds records or finds every record of its partitions held by others. It
// returns how many records the consumers hold, each marked in held.
//
// A consumer may get none, and must not wait for some. A ShareFetch sent just before its
// member's assignment changed still fetches the partitions of the old assignment, and may
// acquire the records of partitions now assigned to another member. As in Kafka, those stay
// the first member's until it acknowledges them or their acquisition lock expires (30 s by
// default): the member they are assigned to now cannot acquire them meanwhile. Waiting for them
// outlasted the lock; the records then came to a second consumer while the first still held
// them in its count, and its acceptances failed with INVALID_RECORD_STATE. A record that comes
// to a second consumer is therefore an error.
//
// A consumer without records polls on even when the others hold all of its partitions' records:
// a fetch of its own may still bring records of other partitions, which another consumer then
// waits for.
func (f *fleet) hold(ctx context.Context, held *offsetSet) (int, error) {
	hctx, settled := context.WithCancel(ctx)
	defer settled()
	var mu sync.Mutex
	holds := make([]bool, len(f.cons))
	err := f.each(hctx, func(pctx context.Context, i int, c *shareconsumer.Consumer) error {
		for len(f.held[i]) == 0 {
			recs, err := c.Poll(pctx)
			if err != nil {
				if hctx.Err() != nil && ctx.Err() == nil {
					return nil // settled
				}
				return fmt.Errorf("Poll: %w", err)
			}
			f.held[i] = recs
		}
		for _, r := range f.held[i] {
			if _, again := held.mark(r.Partition, r.Offset); again {
				return fmt.Errorf("record %d/%d came to a second consumer: the first one no longer held it (its acquisition lock ran out)", r.Partition, r.Offset)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		holds[i] = true
		for j, c := range f.cons {
			if !holds[j] && !held.hasAll(c.Status().Assigned) {
				return nil
			}
		}
		settled()
		return nil
	})
	return held.count(), err
}

// consume accepts the held records and then every record polled until seen counts records
// distinct records, and commits the acknowledgements of every consumer.
func (f *fleet) consume(ctx context.Context, seen *offsetSet, records int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	accept := func(c *shareconsumer.Consumer, recs []*shareconsumer.Record) error {
		for _, r := range recs {
			if err := c.Acknowledge(r, acktype.Accept); err != nil {
				return fmt.Errorf("Acknowledge %d/%d: %w", r.Partition, r.Offset, err)
			}
			if seen.add(r.Partition, r.Offset) == records {
				cancel()
			}
		}
		return nil
	}
	err := f.each(ctx, func(ctx context.Context, i int, c *shareconsumer.Consumer) error {
		held := f.held[i]
		f.held[i] = nil
		if err := accept(c, held); err != nil {
			return err
		}
		for ctx.Err() == nil {
			recs, err := c.Poll(ctx)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return fmt.Errorf("Poll: %w", err)
			}
			if err := accept(c, recs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if n := seen.count(); n < records {
		return fmt.Errorf("consumed %d of %d records", n, records)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	if err := f.each(cctx, func(ctx context.Context, _ int, c *shareconsumer.Consumer) error {
		res, err := c.CommitSync(ctx)
		if err != nil {
			return fmt.Errorf("CommitSync: %w", err)
		}
		for tp, err := range res {
			if err != nil {
				return fmt.Errorf("CommitSync %s/%d: %w", tp.Topic, tp.Partition, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return f.ackErr()
}

// offsetSet counts distinct (partition, offset) pairs of a topic whose partitions hold offsets
// 0 up to perPartition-1.
type offsetSet struct {
	perPartition int
	bits         []atomic.Bool
	n            atomic.Int64
	perPart      []atomic.Int64 // marked pairs by partition
}

func newOffsetSet(partitions, perPartition int) *offsetSet {
	return &offsetSet{perPartition: perPartition, bits: make([]atomic.Bool, partitions*perPartition), perPart: make([]atomic.Int64, partitions)}
}

// add marks partition/offset and returns the number of distinct pairs marked so far; an
// offset outside the topic is not counted.
func (s *offsetSet) add(partition int32, offset int64) int {
	n, _ := s.mark(partition, offset)
	return n
}

// mark is add that also reports whether partition/offset was marked already.
func (s *offsetSet) mark(partition int32, offset int64) (n int, again bool) {
	if partition < 0 || offset < 0 || offset >= int64(s.perPartition) || int(partition) >= len(s.bits)/s.perPartition {
		return int(s.n.Load()), false
	}
	if s.bits[int(partition)*s.perPartition+int(offset)].CompareAndSwap(false, true) {
		s.perPart[partition].Add(1)
		return int(s.n.Add(1)), false
	}
	return int(s.n.Load()), true
}

// hasAll reports whether every offset of each of the partitions is marked; partitions outside
// the topic are ignored.
func (s *offsetSet) hasAll(tps []shareconsumer.TopicPartition) bool {
	for _, tp := range tps {
		if tp.Partition >= 0 && int(tp.Partition) < len(s.perPart) && s.perPart[tp.Partition].Load() < int64(s.perPartition) {
			return false
		}
	}
	return true
}

func (s *offsetSet) count() int { return int(s.n.Load()) }

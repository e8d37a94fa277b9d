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

// hold polls every consumer until it has received records once and keeps them unacknowledged;
// it returns how many records the consumers hold.
func (f *fleet) hold(ctx context.Context) (int, error) {
	var total atomic.Int64
	err := f.each(ctx, func(ctx context.Context, i int, c *shareconsumer.Consumer) error {
		for len(f.held[i]) == 0 {
			recs, err := c.Poll(ctx)
			if err != nil {
				return fmt.Errorf("Poll: %w", err)
			}
			f.held[i] = recs
		}
		total.Add(int64(len(f.held[i])))
		return nil
	})
	return int(total.Load()), err
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
}

func newOffsetSet(partitions, perPartition int) *offsetSet {
	return &offsetSet{perPartition: perPartition, bits: make([]atomic.Bool, partitions*perPartition)}
}

// add marks partition/offset and returns the number of distinct pairs marked so far; an
// offset outside the topic is not counted.
func (s *offsetSet) add(partition int32, offset int64) int {
	if partition < 0 || offset < 0 || offset >= int64(s.perPartition) || int(partition) >= len(s.bits)/s.perPartition {
		return int(s.n.Load())
	}
	if s.bits[int(partition)*s.perPartition+int(offset)].CompareAndSwap(false, true) {
		return int(s.n.Add(1))
	}
	return int(s.n.Load())
}

func (s *offsetSet) count() int { return int(s.n.Load()) }

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runFranz runs a worker pool over franz-go's share consumer until end is closed or ctx ends,
// and returns when FlushAcks returned: every acknowledgement answered.
//
// One poll loop hands the records of each poll to the workers over a channel; a worker runs the
// handler, then accepts the record with Record.Ack. The loop polls again only once every record
// of the last poll was acknowledged, because franz-go's next poll accepts every record the last
// one returned that is still unacknowledged.
func (cr clientRun) runFranz(ctx context.Context, end <-chan struct{}, t *tally, errs *ackErrs, taps *tapCounts, m *meter, r *result) (time.Time, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cr.seeds...),
		kgo.ConsumeTopics(cr.sc.topic),
		kgo.ShareGroup(cr.group),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			for _, res := range rs {
				if res.Err != nil {
					errs.add(fmt.Errorf("%s/%d: %w", res.Topic, res.Partition, res.Err))
				}
			}
		}),
	}
	if taps != nil {
		opts = append(opts, kgo.Dialer(taps.dialer()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return time.Time{}, err
	}
	defer cl.Close()

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-end:
		case <-pctx.Done():
		}
		cancel()
	}()

	sc := cr.sc
	jobs := make(chan *kgo.Record, sc.workers)
	var unacked sync.WaitGroup // records of the last poll not acknowledged yet
	var workers sync.WaitGroup
	for range sc.workers {
		workers.Go(func() {
			for rec := range jobs {
				if sc.handle(pctx, t, int(rec.DeliveryCount())) {
					rec.Ack(kgo.AckAccept)
					t.acceptedOne(rec.Partition, rec.Offset)
				} else {
					rec.Ack(kgo.AckRelease) // stopped before the work was done
				}
				unacked.Done()
			}
		})
	}
	var pollErr error
	for pctx.Err() == nil {
		var fs kgo.Fetches
		if cr.franzPoll > 0 {
			fs = cl.PollRecords(pctx, cr.franzPoll)
		} else {
			fs = cl.PollFetches(pctx)
		}
		if pctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			if pollErr == nil {
				pollErr = fmt.Errorf("polling %s/%d: %w", topic, p, err)
			}
		})
		if pollErr != nil {
			break
		}
		unacked.Add(fs.NumRecords())
		fs.EachRecord(func(rec *kgo.Record) { jobs <- rec })
		unacked.Wait()
	}
	close(jobs)
	workers.Wait()
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer fcancel()
	flushErr := cl.FlushAcks(fctx)
	stop, mErr := m.stop(r)
	return stop, errors.Join(pollErr, flushErr, mErr)
}

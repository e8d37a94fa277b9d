package main

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
)

// shareFetchV1 is kgo's stable versions with ShareFetch capped at v1: every leader then looks
// like Kafka 4.1 to the consumer, which acquires whole record batches (batch-optimized) and, with
// no ShareFetch v2, does not renew locks.
func shareFetchV1() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.ShareFetch), 1)
	return v
}

// runKshare runs shareconsumer.Process with the scenario's workers until end is closed or ctx
// ends, and returns when Process returned: every acknowledgement answered.
func (cr clientRun) runKshare(ctx context.Context, end <-chan struct{}, t *tally, errs *ackErrs, taps *tapCounts, m *meter, r *result) (time.Time, error) {
	kopts := []kgo.Opt{kgo.SeedBrokers(cr.seeds...)}
	if taps != nil {
		kopts = append(kopts, kgo.Dialer(taps.dialer()))
	}
	if cr.acquire == acquireBatch {
		kopts = append(kopts, kgo.MaxVersions(shareFetchV1()))
	}
	cons, err := shareconsumer.New(
		shareconsumer.ClientOpts(kopts...),
		shareconsumer.Group(cr.group),
		shareconsumer.Topics(cr.sc.topic),
		shareconsumer.OnAcknowledgementCommit(func(ac shareconsumer.AcknowledgementCommit) {
			if ac.Err != nil {
				errs.add(ac.Err)
			}
		}),
	)
	if err != nil {
		return time.Time{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = cons.Close(cctx)
	}()

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
	h := func(hctx context.Context, rec *shareconsumer.Record) error {
		if !sc.handle(hctx, t, int(rec.DeliveryCount)) {
			return errors.New("stopped before the work was done") // released
		}
		return nil
	}
	popts := []shareconsumer.ProcessOpt{
		shareconsumer.Workers(sc.workers),
		shareconsumer.OnRecordDone(func(o shareconsumer.RecordOutcome) {
			if o.Ack == acktype.Accept {
				t.acceptedOne(o.Record.Partition, o.Record.Offset)
			}
		}),
	}
	if cr.queue >= 0 {
		popts = append(popts, shareconsumer.QueueSize(cr.queue))
	}
	err = cons.Process(pctx, h, popts...)
	stop, mErr := m.stop(r)
	stats := cons.ProcessStats()
	r.stats = &stats
	return stop, errors.Join(err, mErr)
}

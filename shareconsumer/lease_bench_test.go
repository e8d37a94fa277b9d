package shareconsumer

import (
	"fmt"
	"testing"
	"time"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// Benchmarks of the lease's cost per record as the records held grow: it should not grow with
// them (lease.go: "a record settled, a renew answered or an event costs O(log n) in the number of
// groups and acquisitions, or O(1), never a walk of every record held").
//
//	go test ./shareconsumer -run '^$' -bench Lease -benchmem

// lbSizes are the records held.
var lbSizes = []int{100, 10_000, 100_000}

const (
	lbPerAcq = 100 // records per acquisition (one ShareFetch answer)
	lbParts  = 10  // partitions, lbPerAcq/lbParts records of each per acquisition
)

type lbNoHolder struct{}

func (lbNoHolder) lockLost(*errors.LockLostError) {}

// lbLease is a ledger holding records of one leader for Process, in acquisitions of lbPerAcq
// records over lbParts partitions, offsets rising in each partition.
type lbLease struct {
	l     *ledger
	parts []*heldPart
	inbox *ackInbox
	next  int64 // the next offset of every partition
	now   time.Time
	acqs  [][]entry // acquired, oldest first
	spare [][]*Record
}

func lbNew(held int) *lbLease {
	lb := &lbLease{l: &ledger{}, inbox: &ackInbox{}, now: ltT0}
	lb.l.lease.epoch = ltT0.Add(-time.Hour)
	for p := range lbParts {
		lb.parts = append(lb.parts, &heldPart{tp: TopicPartition{"t", int32(p)}, id: [16]byte{1}, node: 1, inbox: lb.inbox, hi: -1})
	}
	for range held / lbPerAcq {
		lb.acquire()
	}
	return lb
}

// acquire acquires lbPerAcq more records, using again the records of a retired acquisition.
func (lb *lbLease) acquire() {
	var recs []*Record
	if n := len(lb.spare); n > 0 {
		recs, lb.spare = lb.spare[n-1], lb.spare[:n-1]
	} else {
		recs = make([]*Record, lbPerAcq)
		for i := range recs {
			recs[i] = &Record{Topic: "t"}
		}
	}
	per := lbPerAcq / lbParts
	pps := make([]poolPart, lbParts)
	for p := range pps {
		pps[p] = poolPart{part: lb.parts[p], recs: recs[p*per : (p+1)*per]}
		for i, r := range pps[p].recs {
			r.Partition, r.Offset = int32(p), lb.next+int64(i)
		}
	}
	lb.next += int64(per)
	lb.now = lb.now.Add(time.Microsecond)
	es := lb.l.acquire(1, pps, lb.now, 30*time.Second, true, lb.now, func(es []entry) {
		for i := range es {
			es[i].holder = lbNoHolder{}
		}
	})
	lb.acqs = append(lb.acqs, es)
}

// BenchmarkLeaseComplete measures one record's way through the lease as a worker takes it: begin,
// finish, its share of a publish (every publishEvery records), and the acquisitions retired and
// acquired to keep the records held steady.
func BenchmarkLeaseComplete(b *testing.B) {
	for _, held := range lbSizes {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			lb := lbNew(held)
			l := lb.l
			now := l.lease.mono(lb.now)
			var w workerBatch
			i, n := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				es := lb.acqs[0]
				e := &es[i]
				if !l.begin(e, now) || !l.finish(e) {
					b.Fatal("a record's lock was lost")
				}
				w.unqueued++
				w.left++
				w.settled++
				w.acks = append(w.acks, inboxAck{e.part, e.rec.Offset, acktype.Accept, e.rec.DeliveryCount})
				w.leave(l, e)
				if n++; n == publishEvery {
					l.publish(&w)
					lb.inbox.swap(nil)
					n = 0
				}
				if i++; i == len(es) {
					// The acquisition is done (retired at the next publish): a ShareFetch brings
					// as many records again.
					recs := make([]*Record, len(es))
					for k := range es {
						recs[k] = es[k].rec
					}
					lb.spare = append(lb.spare, recs)
					lb.acqs[0] = nil
					lb.acqs = lb.acqs[1:]
					i = 0
					lb.acquire()
				}
			}
			l.publish(&w)
			b.StopTimer()
			if got := int(l.lease.held.Load()); got <= held-lbPerAcq || got > held {
				b.Fatalf("held %d records, want about %d", got, held)
			}
			if g := len(l.lease.timers); g > held/lbPerAcq+1 {
				b.Fatalf("%d timers for %d acquisitions", g, held/lbPerAcq)
			}
		})
	}
}

// BenchmarkLeaseRenewAnswered measures the answer to a renew of every record held (lbParts
// parts): the lease takes the new deadline and counts the renewed records.
func BenchmarkLeaseRenewAnswered(b *testing.B) {
	for _, held := range lbSizes {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			lb := lbNew(held)
			sent := lb.now.Add(24 * time.Second)
			parts := lb.l.renewParts(1, sent)
			if len(parts) != lbParts {
				b.Fatalf("%d parts", len(parts))
			}
			g := parts[0].renewOf.(*leaseRenew).g
			answered := sent.Add(time.Millisecond)
			b.ReportAllocs()
			for b.Loop() {
				g.renewing.Store(true) // as a new renew of the same records
				for _, p := range parts {
					p.offsets = nil // a new answer's part: its offsets not listed yet
					p.renewOf.renewAnswered(p, nil, 0, answered)
				}
			}
			b.StopTimer()
			if got := lb.acqs[0][0].deadline(); !got.Equal(sent.Add(30 * time.Second)) {
				b.Fatalf("deadline %v", got)
			}
		})
	}
}

// BenchmarkLeaseAcquireRedelivered is a ShareFetch answer that brings back one offset released
// earlier (a handler's error), with held records held: the lease looks for an earlier delivery
// in the partition's runs only, never in everything held, so the cost grows with the
// acquisitions held from that partition.
func BenchmarkLeaseAcquireRedelivered(b *testing.B) {
	for _, held := range lbSizes {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			lb := lbNew(held)
			part := lb.parts[0]
			b.ReportAllocs()
			for b.Loop() {
				r := &Record{Topic: "t", Partition: 0, Offset: 0, DeliveryCount: 2}
				lb.now = lb.now.Add(time.Microsecond)
				es := lb.l.acquire(1, []poolPart{{part, []*Record{r}}}, lb.now, 30*time.Second, true, lb.now, func(es []entry) {
					for i := range es {
						es[i].holder = lbNoHolder{}
					}
				})
				// Settled at once, as a fast handler's.
				e := &es[0]
				lb.l.begin(e, lb.l.lease.mono(lb.now))
				lb.l.finish(e)
				var w workerBatch
				w.unqueued, w.left = 1, 1
				w.leave(lb.l, e)
				lb.l.publish(&w)
			}
		})
	}
}

package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/wiretap"
)

// renewType is the acknowledgement type RENEW on the wire (KIP-1222).
const renewType = 4

// tapCounts counts the share requests a client writes, by broker address, decoded off its
// connections: how many carry IsRenewAck, and when each of those was written.
type tapCounts struct {
	mu     sync.Mutex
	byHost map[string]*hostCount
	bad    int64 // share requests that could not be decoded
}

type hostCount struct {
	fetches, acks int64       // ShareFetch and ShareAcknowledge requests
	renews        []time.Time // requests with IsRenewAck, when written
	renewed       int64       // offsets acknowledged with type Renew (4)
}

func newTapCounts() *tapCounts { return &tapCounts{byHost: make(map[string]*hostCount)} }

// dialer is a kgo.Dialer whose connections report to t, each under the address it dialed.
func (t *tapCounts) dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		return wiretap.Dialer(func(r wiretap.Request, err error) { t.add(host, r, err) })(ctx, network, host)
	}
}

func (t *tapCounts) add(host string, r wiretap.Request, err error) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.bad++
		return
	}
	h := t.byHost[host]
	if h == nil {
		h = &hostCount{}
		t.byHost[host] = h
	}
	if r.Key == kmsg.ShareFetch {
		h.fetches++
	} else {
		h.acks++
	}
	if !r.IsRenewAck {
		return
	}
	h.renews = append(h.renews, now)
	for _, b := range r.Batches {
		if len(b.Types) == 1 { // one type for the whole range
			if b.Types[0] == renewType {
				h.renewed += b.LastOffset - b.FirstOffset + 1
			}
			continue
		}
		for _, typ := range b.Types {
			if typ == renewType {
				h.renewed++
			}
		}
	}
}

// renewStats are the renew requests of a run.
type renewStats struct {
	requests int64
	renewed  int64           // offsets renewed
	brokers  int             // brokers that got any renew request
	interval []time.Duration // between consecutive renew requests to one broker
}

func (t *tapCounts) stats() renewStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s renewStats
	for _, h := range t.byHost {
		if len(h.renews) > 0 {
			s.brokers++
		}
		s.requests += int64(len(h.renews))
		s.renewed += h.renewed
		for i := 1; i < len(h.renews); i++ {
			s.interval = append(s.interval, h.renews[i].Sub(h.renews[i-1]))
		}
	}
	slices.Sort(s.interval)
	return s
}

// requests returns the ShareFetch and ShareAcknowledge requests written, over every broker.
func (t *tapCounts) requests() (fetches, acks int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.byHost {
		fetches += h.fetches
		acks += h.acks
	}
	return fetches, acks
}

// median returns the median of sorted, the upper middle one for an even count, 0 for none. It
// is not benchkit.Median, which takes the lower middle one: the renew intervals have kept this
// figure since the first run of the slow scenario.
func median(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)/2]
}

func (t *tapCounts) String() string {
	t.mu.Lock()
	hosts := make([]string, 0, len(t.byHost))
	for h := range t.byHost {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	parts := make([]string, 0, len(hosts))
	for _, host := range hosts {
		h := t.byHost[host]
		parts = append(parts, fmt.Sprintf("%s: %d ShareFetch, %d ShareAcknowledge, %d with IsRenewAck (%d offsets)", host, h.fetches, h.acks, len(h.renews), h.renewed))
	}
	bad := t.bad
	t.mu.Unlock()
	s := strings.Join(parts, "; ")
	if bad > 0 {
		s += fmt.Sprintf("; %d undecodable", bad)
	}
	return s
}

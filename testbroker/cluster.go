package testbroker

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/fault"
	"github.com/kshare/kshare/testbroker/internal/memnet"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/server"
)

// Cluster is a running fake cluster.
type Cluster struct {
	s      *server.Cluster
	manual *ManualClock
	mem    *memnet.Network // nil on TCP
	tls    *clusterTLS     // nil without TLS
}

// Clock is the cluster clock: every timer of the cluster runs on it.
type Clock = clock.Clock

// ManualClock is a clock that moves only when Advance or Set is called; due timers fire inside
// the call, in deadline order. WaitPending lets a test wait until the cluster has parked a
// request on the clock before it advances.
type ManualClock = clock.Manual

// Start starts a cluster. It fails on invalid options or when a listener cannot be opened.
func Start(opts ...Opt) (*Cluster, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	sc, manual, ct, err := c.validate()
	if err != nil {
		return nil, err
	}
	var mem *memnet.Network
	if c.inMemory {
		mem = new(memnet.Network)
		sc.Listen = func(addr string) (net.Listener, error) { return mem.Listen(addr) }
		sc.Dial = mem.DialContext
	}
	s, err := server.Start(sc)
	if err != nil {
		return nil, err
	}
	return &Cluster{s: s, manual: manual, mem: mem, tls: ct}, nil
}

// StartT starts a cluster for a test and closes it when the test ends; it fails the test if the
// cluster cannot start.
func StartT(t testing.TB, opts ...Opt) *Cluster {
	t.Helper()
	c, err := Start(opts...)
	if err != nil {
		t.Fatalf("testbroker: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// MustStart starts a cluster and panics if it cannot; for examples and programs.
func MustStart(opts ...Opt) *Cluster {
	c, err := Start(opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// Addrs returns the brokers' host:port addresses, by node id; pass them to kgo.SeedBrokers.
func (c *Cluster) Addrs() []string { return c.s.Addrs() }

// DialContext connects to address, with the signature of net.Dialer.DialContext, so that
// kgo.Dialer(c.DialContext) makes a client reach the cluster whichever network it runs on. On
// an InMemoryNetwork cluster it connects on that network, without waiting (ctx matters only if
// it is done already), and accepts only network "tcp", "tcp4" or "tcp6"; a dial to an address
// where no broker of the cluster listens, and every dial after Close, is refused with a
// *net.OpError wrapping syscall.ECONNREFUSED, as TCP refuses it (errors.Is works); a connection
// made while Close runs is closed by it. On a TCP cluster it dials any address with a zero
// net.Dialer, and the refusals are the operating system's.
func (c *Cluster) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if c.mem != nil {
		return c.mem.DialContext(ctx, network, address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// Close closes every listener and connection and waits until every goroutine of the cluster
// has returned. It is safe to call more than once.
func (c *Cluster) Close() { c.s.Close() }

// Clock returns the cluster clock.
func (c *Cluster) Clock() Clock { return c.s.Clock() }

// ManualClock returns the manual clock, or nil when the cluster runs on the real clock.
func (c *Cluster) ManualClock() *ManualClock { return c.manual }

// ClusterID returns the id the cluster reports to clients.
func (c *Cluster) ClusterID() string { return c.s.ClusterID() }

// CreateTopic creates a topic, with the same validation and errors as CreateTopics. configs may
// be nil.
func (c *Cluster) CreateTopic(name string, partitions int32, configs map[string]string) error {
	return c.s.CreateTopic(metadata.TopicSpec{Name: name, Partitions: partitions, Configs: configs})
}

// DropConnections closes every client connection of broker, or of every broker when broker
// is negative. Clients see a network error and reconnect.
func (c *Cluster) DropConnections(broker int32) { c.s.DropConnections(broker) }

// Fault is an injected failure. It applies to requests that match every non-empty field of its
// match part, and does what its action part says: hold the request for Delay on the cluster
// clock, then drop the connection (DropConnection), answer every error field of the response
// with Err instead of processing the request, or, with neither, process it normally.
type Fault struct {
	// APIs limits the fault to these API keys (kmsg.Produce, kmsg.Fetch, ...).
	APIs []kmsg.Key
	// Brokers limits the fault to requests sent to these node ids.
	Brokers []int32
	// Topic limits the fault to requests that name this topic.
	Topic string
	// Group limits the fault to requests that name this group.
	Group string

	// Err is the Kafka error to answer with (e.g. kerr.NotLeaderOrFollower).
	Err *kerr.Error
	// Delay holds each matching request this long on the cluster clock first.
	Delay time.Duration
	// DropConnection closes the connection instead of answering.
	DropConnection bool
	// Times limits how many requests the fault applies to; 0 means no limit.
	Times int
}

// FaultID identifies an injected fault.
type FaultID uint64

// ErrEmptyFault is returned by InjectFault for a fault that does nothing.
var ErrEmptyFault = errors.New("testbroker: fault has no Err, Delay or DropConnection")

// InjectFault adds a fault; faults are tried in the order they were added and the first match
// applies. Each fault uses up one of its Times per matching request.
func (c *Cluster) InjectFault(f Fault) (FaultID, error) {
	if f.Err == nil && f.Delay <= 0 && !f.DropConnection {
		return 0, ErrEmptyFault
	}
	r := fault.Rule{Brokers: f.Brokers, Topic: f.Topic, Group: f.Group, Delay: f.Delay, Drop: f.DropConnection, Times: f.Times}
	for _, k := range f.APIs {
		r.Keys = append(r.Keys, int16(k))
	}
	if f.Err != nil {
		r.ErrorCode = f.Err.Code
	}
	return FaultID(c.s.Faults().Add(r)), nil
}

// RemoveFault removes a fault; it reports whether the fault was still active.
func (c *Cluster) RemoveFault(id FaultID) bool { return c.s.Faults().Remove(fault.ID(id)) }

// ClearFaults removes every fault.
func (c *Cluster) ClearFaults() { c.s.Faults().Clear() }

// ActiveFaults returns how many faults are still active. A fault whose Times ran out counts
// until its last request has taken it (with a Delay: is waiting on the cluster clock), so a
// test that sees it gone may advance a manual clock past the Delay.
func (c *Cluster) ActiveFaults() int { return c.s.Faults().Len() }

// SetGroupConfig sets a group config (share.auto.offset.reset, share.record.lock.duration.ms,
// share.delivery.count.limit, ...) as an IncrementalAlterConfigs SET on the GROUP resource
// would, with the same validation and Kafka's messages. The group need not exist yet.
func (c *Cluster) SetGroupConfig(group, key, value string) error {
	return c.s.SetGroupConfig(group, key, value)
}

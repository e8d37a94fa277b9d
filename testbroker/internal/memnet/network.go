package memnet

import (
	"context"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Name is what Addr.Network returns and what the Net field of this package's errors says.
const Name = "memnet"

// dialerHost is the host of every dialing end; its ports tell the connections apart.
const dialerHost = "client.memnet.invalid"

// bufferBytes is how much each direction of a connection buffers before a Write waits, about
// what a loopback TCP socket buffers.
const bufferBytes = 1 << 20

// Addr is a host:port on a Network.
type Addr struct {
	Host string
	Port int
}

// Network returns Name.
func (Addr) Network() string { return Name }

func (a Addr) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

func parseAddr(address string) (Addr, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return Addr{}, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return Addr{}, &net.AddrError{Err: "invalid port", Addr: address}
	}
	return Addr{Host: host, Port: port}, nil
}

// Network is a set of listeners by address. The zero value is an empty network, ready to use.
type Network struct {
	mu        sync.Mutex
	listeners map[Addr]*Listener
	dials     int
}

// Listen starts listening on address, a host:port whose host is any name. It fails with a
// *net.OpError wrapping syscall.EADDRINUSE if a listener of this network is open there.
func (n *Network) Listen(address string) (*Listener, error) {
	a, err := parseAddr(address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: Name, Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[a]; ok {
		return nil, &net.OpError{Op: "listen", Net: Name, Addr: a, Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	if n.listeners == nil {
		n.listeners = make(map[Addr]*Listener)
	}
	l := &Listener{n: n, addr: a}
	l.cond.L = &l.mu
	n.listeners[a] = l
	return l, nil
}

// DialContext connects to the listener at address, with the signature of
// net.Dialer.DialContext. network must be "tcp", "tcp4" or "tcp6", the networks this one stands
// in for. The connection is queued for the listener's Accept, as a TCP connection is in the
// backlog, so DialContext never waits and ctx matters only if it is done already. With no
// listener at address, or one that closes before accepting the connection, the error is a
// *net.OpError wrapping syscall.ECONNREFUSED, as from TCP (errors.Is works).
func (n *Network) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	a, err := parseAddr(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: Name, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: Name, Addr: a, Err: err}
	}
	n.mu.Lock()
	l := n.listeners[a]
	n.dials++
	local := Addr{Host: dialerHost, Port: n.dials}
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: Name, Source: local, Addr: a, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if l == nil {
		return nil, refused
	}
	client, server := newPipe(local, a, bufferBytes)
	if !l.enqueue(server) {
		return nil, refused
	}
	return client, nil
}

// Listener is a net.Listener on a Network. Connections dialed to it wait for Accept in an
// unbounded queue.
type Listener struct {
	n    *Network
	addr Addr

	mu     sync.Mutex
	cond   sync.Cond // signalled when a connection is queued and when the listener closes
	queue  []*conn
	closed bool
}

func (l *Listener) enqueue(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queue = append(l.queue, c)
	l.cond.Signal()
	return true
}

// Accept waits for the next connection dialed to the listener. Once the listener is closed it
// fails with a *net.OpError wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.queue) == 0 && !l.closed {
		l.cond.Wait()
	}
	if l.closed {
		return nil, &net.OpError{Op: "accept", Net: Name, Addr: l.addr, Err: net.ErrClosed}
	}
	c := l.queue[0]
	l.queue[0] = nil
	l.queue = l.queue[1:]
	return c, nil
}

// Close stops listening: the address is free for Listen again, later dials are refused, pending
// and future Accepts fail, and connections dialed but not yet accepted are closed, so that their
// dialers read io.EOF. Connections already accepted stay open. Closing again fails with
// net.ErrClosed.
func (l *Listener) Close() error {
	l.n.mu.Lock()
	if l.n.listeners[l.addr] == l {
		delete(l.n.listeners, l.addr)
	}
	l.n.mu.Unlock()

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &net.OpError{Op: "close", Net: Name, Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	pending := l.queue
	l.queue = nil
	l.cond.Broadcast()
	l.mu.Unlock()
	for _, c := range pending {
		c.Close()
	}
	return nil
}

// Addr returns the listener's address, an Addr.
func (l *Listener) Addr() net.Addr { return l.addr }

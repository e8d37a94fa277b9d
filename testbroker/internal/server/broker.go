package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// Broker is one node of the cluster: a listener and the connections it accepted.
type Broker struct {
	c    *Cluster
	id   int32
	ln   net.Listener
	addr string
	host string
	port int32

	mu     sync.Mutex
	conns  map[*conn]struct{}
	perIP  map[string]int // open connections by client host, for max.connections.per.ip
	closed bool
	wg     sync.WaitGroup
	served chan struct{} // closed when the current listener's accept loop has ended
}

// newBroker makes broker id of c on ln, advertising ln's address: a TCP listener's, or any other
// whose Addr().String() is a host:port.
func newBroker(c *Cluster, id int32, ln net.Listener) (*Broker, error) {
	addr := ln.Addr().String()
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listener address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("listener address %q: bad port: %w", addr, err)
	}
	return &Broker{
		c:      c,
		id:     id,
		ln:     ln,
		addr:   addr,
		host:   host,
		port:   int32(port),
		conns:  make(map[*conn]struct{}),
		perIP:  make(map[string]int),
		served: make(chan struct{}),
	}, nil
}

// ID returns the broker's node id.
func (b *Broker) ID() int32 { return b.id }

func (b *Broker) serve() {
	defer close(b.served)
	defer b.wg.Wait()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			return
		}
		host := remoteHost(nc)
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			nc.Close()
			return
		}
		// As Kafka's ConnectionQuotas: the connection that would go over the limit is closed at
		// once, before it is read from.
		if max := b.c.configs.Snapshot().Connections.MaxFrom(host); b.perIP[host] >= max {
			b.mu.Unlock()
			b.c.logger.Info("rejected connection", "broker", b.id, "remote", nc.RemoteAddr().String(),
				"reason", fmt.Sprintf("Rejected connection from %s, address already has the configured maximum of %d connections.", host, max))
			nc.Close()
			continue
		}
		b.perIP[host]++
		cn := newConn(b, nc)
		b.conns[cn] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			cn.serve()
			b.mu.Lock()
			delete(b.conns, cn)
			if b.perIP[host]--; b.perIP[host] == 0 {
				delete(b.perIP, host)
			}
			b.mu.Unlock()
		}()
	}
}

// remoteHost is the host part of a connection's remote address, what max.connections.per.ip
// counts by.
func remoteHost(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

func (b *Broker) close() {
	b.mu.Lock()
	b.closed = true
	for cn := range b.conns {
		cn.close()
	}
	b.mu.Unlock()
	b.ln.Close()
}

// dropConnections closes every open connection of this broker (fault injection and tests).
func (b *Broker) dropConnections() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for cn := range b.conns {
		cn.close()
	}
}

// frames holds the response frames of all connections between responses. A frame's buffer
// holds what a response does not refer to (a fetch response refers to its record batches), so
// it stays small; one that grew past maxPooledFrame is dropped rather than kept.
var frames = sync.Pool{New: func() any { return new(wire.Frame) }}

const maxPooledFrame = 1 << 20

// conn is one client connection. Requests are handled one at a time, in order, the way Kafka
// processes a connection's requests (a long-polling Fetch holds back the requests behind it).
type conn struct {
	b      *Broker
	nc     net.Conn
	id     string
	r      *bufio.Reader
	done   chan struct{} // closed when the connection is closed, by either side
	once   sync.Once
	onDone []func() // run once when the connection closes (session cleanup)
	mu     sync.Mutex

	// clientID is the client id of the request being handled, from its header ("" for null).
	clientID string
	// sasl is the connection's SASL state, nil when the cluster requires no SASL.
	sasl *saslConn
	// principal is the authenticated principal ("User:name"), "" before or without SASL; under
	// mu (Principal).
	principal string
	// sslPrincipalName is the principal of the TLS handshake's client certificate, under mu; ""
	// without one, or over SASL_SSL. A SASL principal takes precedence.
	sslPrincipalName string
	// closeAfterWrite closes the connection once the response being written is sent (a failed
	// SASL exchange).
	closeAfterWrite bool

	// Read by the connection's limits (connReader), on the real clock: the last time bytes
	// moved either way, and when the frame being read started to arrive (zero between frames).
	lastIO     time.Time
	frameStart time.Time
	// interrupted makes reads fail at once (interruptRead), under readMu.
	readMu      sync.Mutex
	interrupted bool
}

var connSeq struct {
	sync.Mutex
	n uint64
}

func newConn(b *Broker, nc net.Conn) *conn {
	connSeq.Lock()
	connSeq.n++
	n := connSeq.n
	connSeq.Unlock()
	cn := &conn{
		b:      b,
		nc:     nc,
		id:     nc.RemoteAddr().String() + "-" + strconv.FormatUint(n, 10),
		done:   make(chan struct{}),
		lastIO: time.Now(),
	}
	cn.r = bufio.NewReaderSize(connReader{cn}, 64<<10)
	if b.c.cfg.SASL != nil {
		cn.sasl = &saslConn{}
	}
	return cn
}

// connReader reads a connection under its limits: every read of the socket has a deadline at
// connections.max.idle.ms after the last I/O and, while a frame is arriving, at
// testbroker.request.read.timeout.ms after its first byte. The deadlines are the socket's, on
// the real clock (the bubble's under testing/synctest), so that they add no timer to the
// cluster clock and a test's manual clock never closes its connections.
type connReader struct{ cn *conn }

func (r connReader) Read(p []byte) (int, error) {
	cn := r.cn
	cn.readMu.Lock()
	d := cn.readDeadline()
	if cn.interrupted {
		d = time.Unix(1, 0)
	}
	err := cn.nc.SetReadDeadline(d)
	cn.readMu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := cn.nc.Read(p)
	if n > 0 {
		cn.lastIO = time.Now()
	}
	return n, err
}

// interruptRead makes the read under way, and any until resumeRead, fail at once with a
// timeout, for a watcher of the connection (watchDrop) that must stop reading.
func (cn *conn) interruptRead() {
	cn.readMu.Lock()
	defer cn.readMu.Unlock()
	cn.interrupted = true
	_ = cn.nc.SetReadDeadline(time.Unix(1, 0)) // in the past
}

// resumeRead undoes interruptRead; the next read sets its own deadline.
func (cn *conn) resumeRead() {
	cn.readMu.Lock()
	defer cn.readMu.Unlock()
	cn.interrupted = false
}

// readDeadline is the earliest of the connection's limits, or the zero time for none.
func (cn *conn) readDeadline() time.Time {
	lim := cn.b.c.configs.Snapshot().Connections
	var d time.Time
	if lim.MaxIdle >= 0 {
		d = cn.lastIO.Add(lim.MaxIdle)
	}
	if !cn.frameStart.IsZero() {
		if end := cn.frameStart.Add(lim.RequestReadTimeout); d.IsZero() || end.Before(d) {
			d = end
		}
	}
	return d
}

// readFrame reads the next request frame, noting when its first byte arrives.
func (cn *conn) readFrame() ([]byte, error) {
	cn.frameStart = time.Time{}
	if _, err := cn.r.Peek(1); err != nil {
		return nil, err
	}
	cn.frameStart = time.Now()
	return wire.ReadFrame(cn.r, cn.b.c.cfg.MaxFrameBytes)
}

// logReadError logs why reading a request ended, unless the client hung up or the
// connection was closed here.
func (cn *conn) logReadError(err error) {
	c := cn.b.c
	remote := cn.nc.RemoteAddr().String()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.Is(err, os.ErrDeadlineExceeded):
		lim := c.configs.Snapshot().Connections
		if !cn.frameStart.IsZero() && !time.Now().Before(cn.frameStart.Add(lim.RequestReadTimeout)) {
			c.logger.Warn("closing connection", "broker", cn.b.id, "remote", remote, "reason",
				fmt.Sprintf("request frame not complete after testbroker.request.read.timeout.ms (%d ms)", lim.RequestReadTimeout.Milliseconds()))
			return
		}
		c.logger.Info("closing connection", "broker", cn.b.id, "remote", remote, "reason",
			fmt.Sprintf("idle for connections.max.idle.ms (%d ms)", lim.MaxIdle.Milliseconds()))
	default:
		c.logger.Warn("closing connection", "broker", cn.b.id, "remote", remote, "reason", err.Error())
	}
}

// OnClose registers f to run once when the connection closes.
func (cn *conn) OnClose(f func()) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.onDone = append(cn.onDone, f)
}

// close closes the connection and wakes whatever waits on done (a delayed or long-polling
// request), so that a dropped connection releases its parked request at once.
func (cn *conn) close() {
	cn.once.Do(func() {
		cn.nc.Close()
		close(cn.done)
	})
}

func (cn *conn) serve() {
	defer func() {
		cn.close()
		cn.mu.Lock()
		fs := cn.onDone
		cn.onDone = nil
		cn.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}()
	if tc, ok := cn.nc.(*tls.Conn); ok && !cn.handshake(tc) {
		return
	}
	c := cn.b.c
	for {
		frame, err := cn.readFrame()
		if err != nil {
			cn.logReadError(err)
			return
		}
		if cn.sasl != nil && cn.sasl.raw {
			out, keep := cn.handleRawSaslToken(frame)
			if !keep {
				return
			}
			if _, err := cn.nc.Write(out); err != nil {
				return
			}
			continue
		}
		req, err := wire.ParseRequest(frame)
		if err != nil && !errors.Is(err, wire.ErrUnsupportedVersion) {
			c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
			return
		}
		cn.clientID = ""
		if req.ClientID != nil {
			cn.clientID = *req.ClientID
		}
		resp, keep := cn.b.handle(cn, req)
		if !keep {
			return
		}
		select {
		case <-c.closed: // a request woken by Close is not answered: its connection closes
			return
		default:
		}
		if resp == nil { // acks=0 produce: no response
			continue
		}
		f := frames.Get().(*wire.Frame)
		f.AppendResponse(req.Key, req.CorrelationID, resp)
		_, err = f.WriteTo(cn.nc)
		cn.lastIO = time.Now()
		f.Reset()
		if cap(f.B) <= maxPooledFrame {
			frames.Put(f)
		}
		if err != nil || cn.closeAfterWrite {
			return
		}
	}
}

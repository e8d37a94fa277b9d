package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

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
		cn := newConn(b, nc)
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			nc.Close()
			return
		}
		b.conns[cn] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			cn.serve()
			b.mu.Lock()
			delete(b.conns, cn)
			b.mu.Unlock()
		}()
	}
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
	return &conn{
		b:    b,
		nc:   nc,
		id:   nc.RemoteAddr().String() + "-" + strconv.FormatUint(n, 10),
		r:    bufio.NewReaderSize(nc, 64<<10),
		done: make(chan struct{}),
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
	c := cn.b.c
	for {
		frame, err := wire.ReadFrame(cn.r, c.cfg.MaxFrameBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
			}
			return
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
		if resp == nil { // acks=0 produce: no response
			continue
		}
		f := frames.Get().(*wire.Frame)
		f.AppendResponse(req.Key, req.CorrelationID, resp)
		_, err = f.WriteTo(cn.nc)
		f.Reset()
		if cap(f.B) <= maxPooledFrame {
			frames.Put(f)
		}
		if err != nil {
			return
		}
	}
}

package memnet

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// newPipe returns the two ends of a connection between addresses a and b, each direction
// buffering up to size bytes.
func newPipe(a, b Addr, size int) (*conn, *conn) {
	ab, ba := newHalf(size), newHalf(size)
	return &conn{local: a, remote: b, in: ba, out: ab}, &conn{local: b, remote: a, in: ab, out: ba}
}

// conn is one end of a connection: it reads from in and writes to out, and its peer the other
// way round.
type conn struct {
	local, remote Addr
	in, out       *half
}

// half is one direction of a connection. One mutex and one condition variable guard all of it,
// and every change of state broadcasts, so each waiter re-checks what it waits for.
type half struct {
	mu   sync.Mutex
	cond sync.Cond
	buf  bytes.Buffer
	size int

	readerClosed bool // the reading end was closed: writes fail, buffered bytes are dropped
	writerClosed bool // the writing end was closed: reads drain the buffer, then see io.EOF
	writing      bool // a Write is under way; the next one waits, so Writes do not interleave

	readDeadline, writeDeadline deadline
}

func newHalf(size int) *half {
	h := &half{size: size}
	h.cond.L = &h.mu
	return h
}

// deadline is one of a half's deadlines; its timer wakes the waiters when it passes.
type deadline struct {
	timer   *time.Timer
	expired bool
}

// set moves d to t (the zero time: none), with h.mu held. expired is set by the timer rather
// than by comparing with time.Now, so that waking and re-checking always agree.
func (h *half) set(d *deadline, t time.Time) {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.expired = false
	if !t.IsZero() {
		if wait := time.Until(t); wait <= 0 {
			d.expired = true
		} else {
			var tm *time.Timer
			tm = time.AfterFunc(wait, func() {
				h.mu.Lock()
				defer h.mu.Unlock()
				if d.timer == tm { // not replaced by a later set
					d.expired = true
					h.cond.Broadcast()
				}
			})
			d.timer = tm
		}
	}
	h.cond.Broadcast()
}

// stop cancels d's timer, with h.mu held, so that a closed connection leaves no timer behind.
func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: Name, Source: c.local, Addr: c.remote, Err: err}
}

// Read reads what the peer wrote, waiting until there is something to read. It fails with
// net.ErrClosed once this end is closed and with os.ErrDeadlineExceeded once the read deadline
// has passed (both in a *net.OpError), and returns io.EOF once the peer has closed and every byte
// it wrote has been read.
func (c *conn) Read(p []byte) (int, error) {
	h := c.in
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		switch {
		case h.readerClosed:
			return 0, c.opErr("read", net.ErrClosed)
		case h.readDeadline.expired:
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		case len(p) == 0:
			return 0, nil
		case h.buf.Len() > 0:
			n, _ := h.buf.Read(p)
			h.cond.Broadcast()
			return n, nil
		case h.writerClosed:
			return 0, io.EOF
		}
		h.cond.Wait()
	}
}

// Write buffers p for the peer, waiting while the buffer is full. It fails with net.ErrClosed
// once this end is closed, with os.ErrDeadlineExceeded once the write deadline has passed, and
// with syscall.EPIPE once the peer has closed (each in a *net.OpError), having written the
// returned count of bytes. Concurrent Writes do not interleave.
func (c *conn) Write(p []byte) (int, error) {
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	n, owner := 0, false
	defer func() {
		if owner {
			h.writing = false
			h.cond.Broadcast()
		}
	}()
	for {
		switch {
		case h.writerClosed:
			return n, c.opErr("write", net.ErrClosed)
		case h.writeDeadline.expired:
			return n, c.opErr("write", os.ErrDeadlineExceeded)
		case h.readerClosed:
			return n, c.opErr("write", os.NewSyscallError("write", syscall.EPIPE))
		case n == len(p):
			return n, nil
		case !owner && h.writing: // another Write is under way: wait for it
		default:
			owner, h.writing = true, true
			if room := h.size - h.buf.Len(); room > 0 {
				m := min(room, len(p)-n)
				h.buf.Write(p[n : n+m])
				n += m
				h.cond.Broadcast()
				continue
			}
		}
		h.cond.Wait()
	}
}

// Close closes this end: its own pending and later calls fail with net.ErrClosed, the peer's
// reads return io.EOF once they have drained what this end wrote, and the peer's writes fail.
// Closing again fails with net.ErrClosed.
func (c *conn) Close() error {
	in := c.in
	in.mu.Lock()
	if in.readerClosed {
		in.mu.Unlock()
		return c.opErr("close", net.ErrClosed)
	}
	in.readerClosed = true
	in.buf = bytes.Buffer{}
	in.readDeadline.stop()
	in.cond.Broadcast()
	in.mu.Unlock()

	out := c.out
	out.mu.Lock()
	out.writerClosed = true
	out.writeDeadline.stop()
	out.cond.Broadcast()
	out.mu.Unlock()
	return nil
}

// LocalAddr returns this end's address, an Addr.
func (c *conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address, an Addr.
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both the read and the write deadline.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline makes pending and later Reads fail with os.ErrDeadlineExceeded once t has
// passed; the zero time removes the deadline, and a time already past fails them at once. It
// fails with net.ErrClosed once the connection is closed.
func (c *conn) SetReadDeadline(t time.Time) error {
	h := c.in
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readerClosed {
		return c.opErr("set", net.ErrClosed)
	}
	h.set(&h.readDeadline, t)
	return nil
}

// SetWriteDeadline is SetReadDeadline for Writes.
func (c *conn) SetWriteDeadline(t time.Time) error {
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writerClosed {
		return c.opErr("set", net.ErrClosed)
	}
	h.set(&h.writeDeadline, t)
	return nil
}

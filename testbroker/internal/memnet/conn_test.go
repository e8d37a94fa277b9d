package memnet

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPipe returns the two ends of a connection buffering size bytes each way, closed when the
// test ends.
func testPipe(t *testing.T, size int) (a, b net.Conn) {
	t.Helper()
	ca, cb := newPipe(Addr{"a.invalid", 1}, Addr{"b.invalid", 2}, size)
	t.Cleanup(func() {
		ca.Close()
		cb.Close()
	})
	return ca, cb
}

// result is what a Read or Write done in a goroutine returned.
type result struct {
	n   int
	err error
}

// async runs op in a goroutine; its result arrives on the returned channel.
func async(op func() (int, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		n, err := op()
		ch <- result{n, err}
	}()
	return ch
}

// requireBlocked checks, inside a bubble, that the operation behind ch is still waiting.
func requireBlocked(t *testing.T, ch <-chan result) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		t.Fatalf("want the call still waiting, it returned %d, %v", r.n, r.err)
	default:
	}
}

// requireDone checks, inside a bubble, that the operation behind ch has returned, and returns
// what it returned.
func requireDone(t *testing.T, ch <-chan result) result {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("want the call returned, it is still waiting")
		return result{}
	}
}

func TestReadWriteBothWays(t *testing.T) {
	a, b := testPipe(t, 64)
	_, err := a.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, err := b.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(buf[:n]))

	_, err = b.Write([]byte("pong"))
	require.NoError(t, err)
	n, err = a.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "pong", string(buf[:n]))

	assert.Equal(t, a.LocalAddr(), b.RemoteAddr())
	assert.Equal(t, a.RemoteAddr(), b.LocalAddr())
	assert.Equal(t, Name, a.LocalAddr().Network())
	assert.Equal(t, "a.invalid:1", a.LocalAddr().String())
}

func TestReadReturnsWhatIsBufferedAcrossWrites(t *testing.T) {
	a, b := testPipe(t, 64)
	for _, s := range []string{"ab", "cd", "ef"} {
		_, err := a.Write([]byte(s))
		require.NoError(t, err)
	}
	buf := make([]byte, 4)
	n, err := b.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "abcd", string(buf[:n]))
	n, err = b.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "ef", string(buf[:n]))
}

func TestEmptyReadAndWriteReturnAtOnce(t *testing.T) {
	a, b := testPipe(t, 4)
	n, err := b.Read(nil)
	assert.Zero(t, n)
	assert.NoError(t, err)
	_, err = a.Write([]byte("full"))
	require.NoError(t, err)
	n, err = a.Write(nil)
	assert.Zero(t, n)
	assert.NoError(t, err)
}

func TestWriteWaitsOnlyWhileTheBufferIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := testPipe(t, 4)
		// Fits: returns without a reader.
		r := requireDone(t, async(func() (int, error) { return a.Write([]byte("abc")) }))
		require.NoError(t, r.err)
		assert.Equal(t, 3, r.n)

		// Two bytes more than the room left: waits for the reader.
		w := async(func() (int, error) { return a.Write([]byte("defgh")) })
		requireBlocked(t, w)

		got := make([]byte, 0, 8)
		buf := make([]byte, 4)
		n, err := b.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
		r = requireDone(t, w)
		require.NoError(t, r.err)
		assert.Equal(t, 5, r.n)

		for len(got) < 8 {
			n, err := b.Read(buf)
			require.NoError(t, err)
			got = append(got, buf[:n]...)
		}
		assert.Equal(t, "abcdefgh", string(got))
	})
}

func TestReadWaitsForAWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := testPipe(t, 64)
		buf := make([]byte, 8)
		rd := async(func() (int, error) { return b.Read(buf) })
		requireBlocked(t, rd)
		_, err := a.Write([]byte("x"))
		require.NoError(t, err)
		r := requireDone(t, rd)
		require.NoError(t, r.err)
		assert.Equal(t, "x", string(buf[:r.n]))
	})
}

// requireTimeout checks that err is a deadline error as net.TCPConn reports it.
func requireTimeout(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
}

func TestReadDeadlineEndsAWaitingReadExactlyAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, b := testPipe(t, 64)
		start := time.Now()
		require.NoError(t, b.SetReadDeadline(start.Add(time.Second)))
		_, err := b.Read(make([]byte, 1))
		requireTimeout(t, err)
		assert.Equal(t, time.Second, time.Since(start))

		// Still past: fails again at once.
		_, err = b.Read(make([]byte, 1))
		requireTimeout(t, err)
	})
}

func TestReadDeadlineInThePastFailsEvenWithDataBuffered(t *testing.T) {
	a, b := testPipe(t, 64)
	_, err := a.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err = b.Read(make([]byte, 1))
	requireTimeout(t, err)

	require.NoError(t, b.SetReadDeadline(time.Time{}))
	buf := make([]byte, 1)
	n, err := b.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "x", string(buf[:n]))
}

func TestDeadlineMovedWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, b := testPipe(t, 64)
		start := time.Now()
		require.NoError(t, b.SetReadDeadline(start.Add(time.Second)))
		rd := async(func() (int, error) { return b.Read(make([]byte, 1)) })
		requireBlocked(t, rd)

		// Later: the first deadline's timer must not end the read.
		require.NoError(t, b.SetReadDeadline(start.Add(time.Minute)))
		time.Sleep(30 * time.Second)
		requireBlocked(t, rd)

		// Now, as kgo does to interrupt a read from another goroutine.
		require.NoError(t, b.SetDeadline(time.Now()))
		requireTimeout(t, requireDone(t, rd).err)
		assert.Equal(t, 30*time.Second, time.Since(start))
	})
}

func TestClearedDeadlineLetsAReadWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := testPipe(t, 64)
		require.NoError(t, b.SetReadDeadline(time.Now().Add(time.Second)))
		require.NoError(t, b.SetReadDeadline(time.Time{}))
		rd := async(func() (int, error) { return b.Read(make([]byte, 1)) })
		time.Sleep(time.Hour)
		requireBlocked(t, rd)
		_, err := a.Write([]byte("x"))
		require.NoError(t, err)
		assert.NoError(t, requireDone(t, rd).err)
	})
}

func TestWriteDeadlineEndsAWriteIntoAFullBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := testPipe(t, 4)
		start := time.Now()
		require.NoError(t, a.SetWriteDeadline(start.Add(time.Second)))
		n, err := a.Write([]byte("abcdef"))
		requireTimeout(t, err)
		assert.Equal(t, 4, n, "what fitted was written")
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestReadDeadlineDoesNotAffectWritesNorThePeer(t *testing.T) {
	a, b := testPipe(t, 64)
	require.NoError(t, a.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err := a.Write([]byte("x"))
	require.NoError(t, err)
	n, err := b.Read(make([]byte, 1))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestCloseLetsThePeerDrainThenSeeEOF(t *testing.T) {
	a, b := testPipe(t, 64)
	_, err := a.Write([]byte("last"))
	require.NoError(t, err)
	require.NoError(t, a.Close())
	got, err := io.ReadAll(b)
	require.NoError(t, err, "io.ReadAll stops at io.EOF")
	assert.Equal(t, "last", string(got))
	n, err := b.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.Equal(t, io.EOF, err, "io.EOF itself, as from a TCP connection")
}

func TestCloseFailsOwnCallsWithErrClosed(t *testing.T) {
	a, _ := testPipe(t, 64)
	require.NoError(t, a.Close())
	_, err := a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, net.ErrClosed)
	_, err = a.Write([]byte("x"))
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.ErrorIs(t, a.SetDeadline(time.Now()), net.ErrClosed)
	assert.ErrorIs(t, a.SetWriteDeadline(time.Now()), net.ErrClosed)
	assert.ErrorIs(t, a.Close(), net.ErrClosed)
	var oe *net.OpError
	require.ErrorAs(t, a.Close(), &oe)
	assert.Equal(t, "close", oe.Op)
}

func TestCloseFailsThePeersWritesWithEPIPE(t *testing.T) {
	a, b := testPipe(t, 64)
	require.NoError(t, a.Close())
	_, err := b.Write([]byte("x"))
	assert.ErrorIs(t, err, syscall.EPIPE)
}

func TestCloseUnblocksWaitingReadsOnBothEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := testPipe(t, 4)
		own := async(func() (int, error) { return a.Read(make([]byte, 1)) })
		peer := async(func() (int, error) { return b.Read(make([]byte, 1)) })
		requireBlocked(t, own)
		requireBlocked(t, peer)

		require.NoError(t, a.Close())
		assert.ErrorIs(t, requireDone(t, own).err, net.ErrClosed)
		assert.Equal(t, io.EOF, requireDone(t, peer).err)
	})
}

func TestCloseUnblocksThePeersWriteIntoAFullBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := testPipe(t, 4)
		w := async(func() (int, error) { return b.Write([]byte("more than four")) })
		requireBlocked(t, w)

		require.NoError(t, a.Close())
		r := requireDone(t, w)
		assert.ErrorIs(t, r.err, syscall.EPIPE)
		assert.Equal(t, 4, r.n)
	})
}

// TestCloseStopsDeadlineTimers looks inside: a timer left behind would do no harm a test could
// see, only keep the connection alive until it fires.
func TestCloseStopsDeadlineTimers(t *testing.T) {
	a, _ := testPipe(t, 64)
	require.NoError(t, a.SetDeadline(time.Now().Add(time.Hour)))
	require.NoError(t, a.Close())
	c := a.(*conn)
	assert.Nil(t, c.in.readDeadline.timer)
	assert.Nil(t, c.out.writeDeadline.timer)
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	a, b := testPipe(t, 7)
	const writers, size = 4, 1000
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			_, err := a.Write(bytes.Repeat([]byte{byte('a' + i)}, size))
			assert.NoError(t, err)
		})
	}
	got := make([]byte, writers*size)
	_, err := io.ReadFull(b, got)
	require.NoError(t, err)
	wg.Wait()
	for i := 0; i < len(got); i += size {
		assert.Equal(t, bytes.Repeat(got[i:i+1], size), got[i:i+size], "block at %d", i)
	}
}

// TestRacingCallsOnTheRealRuntime is for the race detector: every method at once from several
// goroutines, on the real clock, until both ends are closed.
func TestRacingCallsOnTheRealRuntime(t *testing.T) {
	a, b := testPipe(t, 16)
	var wg sync.WaitGroup
	for _, c := range []net.Conn{a, b} {
		wg.Go(func() {
			for {
				if _, err := c.Write([]byte("0123456789")); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						continue
					}
					return
				}
			}
		})
		wg.Go(func() {
			buf := make([]byte, 5)
			for {
				if _, err := c.Read(buf); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						continue
					}
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				if c.SetDeadline(time.Now().Add(time.Duration(i%3)*time.Millisecond)) != nil {
					return
				}
			}
			c.SetDeadline(time.Time{})
		})
	}
	time.AfterFunc(20*time.Millisecond, func() {
		a.Close()
		b.Close()
	})
	wg.Wait()
}

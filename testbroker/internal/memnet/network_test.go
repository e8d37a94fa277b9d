package memnet

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func listen(t *testing.T, n *Network, address string) *Listener {
	t.Helper()
	l, err := n.Listen(address)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, n *Network, address string) net.Conn {
	t.Helper()
	c, err := n.DialContext(context.Background(), "tcp", address)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// requireRefused checks that err is a dial error as TCP reports a refused connection, naming
// address.
func requireRefused(t *testing.T, err error, address string) {
	t.Helper()
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "dial", oe.Op)
	assert.Contains(t, err.Error(), address)
}

func TestDialAndAccept(t *testing.T) {
	var n Network
	l := listen(t, &n, "broker-0.example.invalid:9092")
	assert.Equal(t, "broker-0.example.invalid:9092", l.Addr().String())
	assert.Equal(t, Name, l.Addr().Network())

	client := dial(t, &n, "broker-0.example.invalid:9092")
	server, err := l.Accept()
	require.NoError(t, err)
	defer server.Close()

	assert.Equal(t, l.Addr(), client.RemoteAddr())
	assert.Equal(t, l.Addr(), server.LocalAddr())
	assert.Equal(t, client.LocalAddr(), server.RemoteAddr())

	_, err = client.Write([]byte("hello"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf))
}

func TestEveryConnectionHasItsOwnClientAddress(t *testing.T) {
	var n Network
	l := listen(t, &n, "b.invalid:1")
	seen := map[string]bool{}
	for range 3 {
		c := dial(t, &n, "b.invalid:1")
		s, err := l.Accept()
		require.NoError(t, err)
		defer s.Close()
		assert.Equal(t, c.LocalAddr(), s.RemoteAddr())
		assert.False(t, seen[c.LocalAddr().String()], "address %s reused", c.LocalAddr())
		seen[c.LocalAddr().String()] = true
	}
}

func TestAcceptWaitsForADial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n Network
		l := listen(t, &n, "b.invalid:1")
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			assert.NoError(t, err)
			accepted <- c
		}()
		synctest.Wait()
		require.Empty(t, accepted)
		c := dial(t, &n, "b.invalid:1")
		s := <-accepted
		defer s.Close()
		assert.Equal(t, c.LocalAddr(), s.RemoteAddr())
	})
}

func TestDialUnknownAddressIsRefused(t *testing.T) {
	var n Network
	listen(t, &n, "b.invalid:1")
	_, err := n.DialContext(context.Background(), "tcp", "b.invalid:2")
	requireRefused(t, err, "b.invalid:2")
	_, err = n.DialContext(context.Background(), "tcp", "other.invalid:1")
	requireRefused(t, err, "other.invalid:1")
}

func TestDialBadInput(t *testing.T) {
	var n Network
	_, err := n.DialContext(context.Background(), "tcp", "no-port")
	var ae *net.AddrError
	assert.ErrorAs(t, err, &ae)

	_, err = n.DialContext(context.Background(), "udp", "b.invalid:1")
	var ue net.UnknownNetworkError
	assert.ErrorAs(t, err, &ue)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	listen(t, &n, "b.invalid:1")
	_, err = n.DialContext(ctx, "tcp", "b.invalid:1")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestListenOnAnAddressInUse(t *testing.T) {
	var n Network
	l := listen(t, &n, "b.invalid:1")
	_, err := n.Listen("b.invalid:1")
	assert.ErrorIs(t, err, syscall.EADDRINUSE)

	require.NoError(t, l.Close())
	listen(t, &n, "b.invalid:1")
}

func TestListenerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n Network
		l := listen(t, &n, "b.invalid:1")
		accepted := dial(t, &n, "b.invalid:1")
		s, err := l.Accept()
		require.NoError(t, err)
		defer s.Close()

		// An Accept waiting when the listener closes.
		acceptErr := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			acceptErr <- err
		}()
		synctest.Wait()

		require.NoError(t, l.Close())
		assert.ErrorIs(t, <-acceptErr, net.ErrClosed)
		_, err = l.Accept()
		assert.ErrorIs(t, err, net.ErrClosed)
		assert.ErrorIs(t, l.Close(), net.ErrClosed)

		_, err = n.DialContext(context.Background(), "tcp", "b.invalid:1")
		requireRefused(t, err, "b.invalid:1")

		// An accepted connection stays open.
		_, err = accepted.Write([]byte("x"))
		assert.NoError(t, err)
		buf := make([]byte, 1)
		_, err = s.Read(buf)
		assert.NoError(t, err)
	})
}

func TestListenerCloseClosesConnectionsNotAccepted(t *testing.T) {
	var n Network
	l := listen(t, &n, "b.invalid:1")
	queued := dial(t, &n, "b.invalid:1")
	require.NoError(t, l.Close())
	_, err := queued.Read(make([]byte, 1))
	assert.Equal(t, io.EOF, err)
	_, err = queued.Write([]byte("x"))
	assert.ErrorIs(t, err, syscall.EPIPE)
}

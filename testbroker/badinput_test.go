package testbroker_test

import (
	"encoding/binary"
	"io"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// These tests run on the in-memory network inside a synctest bubble: the connection limits are
// socket deadlines, on the bubble's clock, so waits of minutes take no real time.

// readErr reads from rc in the background and sends the error that ends the read: io.EOF when
// the cluster closes the connection.
func readErr(rc *rawConn) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := rc.r.ReadByte()
		ch <- err
	}()
	return ch
}

// requireOpen asserts that nothing ended the read yet.
func requireOpen(t *testing.T, ended <-chan error, msg string) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-ended:
		t.Fatalf("%s: the connection ended: %v", msg, err)
	default:
	}
}

// stalledFrame is the size of a frame announcing n bytes and the first bytes of a header.
func stalledFrame(n uint32) []byte {
	return append(binary.BigEndian.AppendUint32(nil, n), 0, 3, 0, 12, 0, 0)
}

func TestMidFrameConnectionClosedAfterReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), loggerTo(&logs),
			testbroker.BrokerConfig("testbroker.request.read.timeout.ms", "5000"))
		rc := dialRawOn(t, c, c.Addrs()[0])
		good := dialRawOn(t, c, c.Addrs()[0])
		_, err := rc.nc.Write(stalledFrame(100 << 20))
		require.NoError(t, err)
		ended := readErr(rc)

		// Bytes that trickle in keep the connection from being idle, not the frame from ending.
		time.Sleep(2 * time.Second)
		_, err = rc.nc.Write([]byte{0})
		require.NoError(t, err)
		time.Sleep(3*time.Second - time.Millisecond)
		requireOpen(t, ended, "before the timeout")

		time.Sleep(time.Millisecond)
		assert.Equal(t, io.EOF, <-ended)
		assert.Contains(t, logs.String(), "closing connection")
		assert.Contains(t, logs.String(), "request frame not complete after testbroker.request.read.timeout.ms (5000 ms)")
		request[*kmsg.MetadataResponse](t, good, metadataRequest()) // other connections are unaffected
	})
}

func TestIdleConnectionClosedAfterMaxIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), loggerTo(&logs))
		rc := dialRawOn(t, c, c.Addrs()[0])
		time.Sleep(9 * time.Minute)
		request[*kmsg.MetadataResponse](t, rc, metadataRequest()) // I/O restarts the idle time
		ended := readErr(rc)

		time.Sleep(10*time.Minute - time.Millisecond)
		requireOpen(t, ended, "idle for less than connections.max.idle.ms")
		time.Sleep(time.Millisecond)
		assert.Equal(t, io.EOF, <-ended)
		assert.Contains(t, logs.String(), "idle for connections.max.idle.ms (600000 ms)")
	})
}

// A request that waits (a long-polling fetch) does not make its connection idle.
func TestWaitingRequestIsNotIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("t", 1),
			testbroker.BrokerConfig("connections.max.idle.ms", "1000"))
		rc := dialRawOn(t, c, c.Addrs()[0])
		req := fetchRequest("t", 0, 0)
		req.MaxWaitMillis, req.MinBytes = 5000, 1
		got := startFetch(t, rc, req)
		time.Sleep(5 * time.Second)
		r := <-got
		require.NoError(t, r.err)
		assert.Zero(t, r.resp.ErrorCode)
	})
}

func TestNegativeMaxIdleKeepsConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.BrokerConfig("connections.max.idle.ms", "-1"))
		rc := dialRawOn(t, c, c.Addrs()[0])
		time.Sleep(24 * time.Hour)
		request[*kmsg.MetadataResponse](t, rc, metadataRequest())
	})
}

func TestMaxConnectionsPerIP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), loggerTo(&logs), testbroker.BrokerConfig("max.connections.per.ip", "2"))
		addr := c.Addrs()[0]
		first, second := dialRawOn(t, c, addr), dialRawOn(t, c, addr)
		request[*kmsg.MetadataResponse](t, first, metadataRequest())
		request[*kmsg.MetadataResponse](t, second, metadataRequest())

		third := dialRawOn(t, c, addr)
		_, err := third.r.ReadByte()
		assert.Equal(t, io.EOF, err, "the third connection is closed at once")
		assert.Contains(t, logs.String(), "Rejected connection from client.memnet.invalid, address already has the configured maximum of 2 connections.")

		require.NoError(t, first.nc.Close())
		synctest.Wait() // the broker sees the close
		fourth := dialRawOn(t, c, addr)
		request[*kmsg.MetadataResponse](t, fourth, metadataRequest())
		request[*kmsg.MetadataResponse](t, second, metadataRequest())
	})
}

func TestMaxConnectionsPerIPOverrides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(),
			testbroker.BrokerConfig("max.connections.per.ip", "0"),
			testbroker.BrokerConfig("max.connections.per.ip.overrides", "client.memnet.invalid:1"))
		addr := c.Addrs()[0]
		rc := dialRawOn(t, c, addr)
		request[*kmsg.MetadataResponse](t, rc, metadataRequest())
		_, err := dialRawOn(t, c, addr).r.ReadByte()
		assert.Equal(t, io.EOF, err)
	})
}

// TestStalledFramesMemory is the attack of issue 12: forty connections announce 100 MiB frames
// and stall. The heap grows by what they sent and their buffers, not by 4 GB, and is back near
// where it started once the read timeout has closed them.
func TestStalledFramesMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.BrokerConfig("testbroker.request.read.timeout.ms", "30000"))
		const conns = 40
		start := heapInUse()
		var ended []<-chan error
		for range conns {
			rc := dialRawOn(t, c, c.Addrs()[0])
			_, err := rc.nc.Write(stalledFrame(100 << 20))
			require.NoError(t, err)
			ended = append(ended, readErr(rc))
		}
		synctest.Wait()
		held := heapInUse()
		t.Logf("heap: %.1f MiB at the start, %.1f MiB with %d stalled 100 MiB frames", mib(start), mib(held), conns)
		assert.Less(t, held-start, int64(16<<20), "the stalled frames hold a few MiB")

		time.Sleep(30 * time.Second)
		for _, e := range ended {
			assert.Equal(t, io.EOF, <-e)
		}
		synctest.Wait()
		after := heapInUse()
		t.Logf("heap: %.1f MiB after the read timeout closed them", mib(after))
		assert.Less(t, after-start, int64(2<<20), "back near the start")
	})
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

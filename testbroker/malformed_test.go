package testbroker_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

// rawKafkaConn speaks raw kmsg requests over one connection, for tests that need to see
// exactly what the cluster answers.
type rawKafkaConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

// rawIOTimeout bounds every read and write, so that a cluster that never answers fails the
// test instead of hanging it.
const rawIOTimeout = 10 * time.Second

func dialRawKafka(t testing.TB, addr string) *rawKafkaConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawIOTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawKafkaConn{t: t, nc: nc}
}

// writeBytes writes b as it is, framing included.
func (c *rawKafkaConn) writeBytes(b []byte) {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetWriteDeadline(time.Now().Add(rawIOTimeout)))
	_, err := c.nc.Write(b)
	require.NoError(c.t, err)
}

// send writes req and returns its correlation id.
func (c *rawKafkaConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	id := "raw-test"
	c.writeBytes(wire.AppendRequest(nil, c.corr, &id, req))
	return c.corr
}

// receive reads the response to the request with correlation id corr into resp, whose version
// must be set.
func (c *rawKafkaConn) receive(corr int32, resp kmsg.Response) {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(rawIOTimeout)))
	f, err := wire.ReadFrame(c.nc, 1<<30)
	require.NoError(c.t, err)
	require.GreaterOrEqual(c.t, len(f), 4)
	require.Equal(c.t, corr, int32(binary.BigEndian.Uint32(f)), "correlation id")
	body := f[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		require.NotEmpty(c.t, body)
		body = body[1:] // the empty tag section of response header v1
	}
	require.NoError(c.t, resp.ReadFrom(body))
}

// roundTrip sends req and returns the response, read at the request's version.
func (c *rawKafkaConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.receive(corr, resp)
	return resp
}

// requireClosed asserts that the cluster closes the connection without answering.
func (c *rawKafkaConn) requireClosed() {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(rawIOTimeout)))
	n, err := c.nc.Read(make([]byte, 1))
	require.Zero(c.t, n, "the cluster answered instead of closing the connection")
	require.Error(c.t, err)
	require.False(c.t, errors.Is(err, os.ErrDeadlineExceeded), "the connection is still open")
}

// requireAlive asserts that the connection still gets answers, to an ApiVersions v0 that any
// configuration accepts.
func (c *rawKafkaConn) requireAlive() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	require.Zero(c.t, resp.ErrorCode)
	require.NotEmpty(c.t, resp.ApiKeys)
}

// logBuffer collects the cluster's log lines; the cluster writes from its own goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func loggerTo(b *logBuffer) testbroker.Opt {
	return testbroker.Logger(slog.New(slog.NewTextHandler(b, nil)))
}

// frameOf sizes payload as one frame.
func frameOf(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// header returns a request header v1: key, version, correlation id 1 and a null client id.
func header(key, version int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	validProduce := kmsg.NewPtrProduceRequest()
	validProduce.Version = 7
	validProduce.Acks = -1
	validProduce.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 80)}}}}
	produceFrame := wire.AppendRequest(nil, 1, nil, validProduce)
	truncatedBody := frameOf(produceFrame[4 : len(produceFrame)-40])

	tests := []struct {
		name      string
		send      []byte
		closeSend bool // the client stops sending after this (half-close)
		wantLog   string
	}{
		{
			name:    "frame larger than MaxRequestBytes",
			send:    binary.BigEndian.AppendUint32(nil, 2048),
			wantLog: "frame larger than the maximum request size: 2048 bytes, the limit is 1024",
		},
		{
			name:    "negative frame size",
			send:    binary.BigEndian.AppendUint32(nil, 0xffffffff),
			wantLog: "negative or too small frame size: -1 bytes",
		},
		{
			name:    "frame too small for a header",
			send:    frameOf([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0}),
			wantLog: "malformed request header",
		},
		{
			name:    "client id longer than the frame",
			send:    frameOf([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0x7f, 0xff, 'a', 'b'}),
			wantLog: "malformed request header: client id length 32767",
		},
		{
			name:    "unterminated header tags",
			send:    frameOf(append(header(int16(kmsg.Metadata), 12), 0x80, 0x80)),
			wantLog: "malformed request header: bad varint in tagged fields",
		},
		{
			name:    "truncated body",
			send:    truncatedBody,
			wantLog: "malformed request body: Produce v7",
		},
		{
			name:    "garbage body for Produce",
			send:    frameOf(append(header(int16(kmsg.Produce), 9), 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xde, 0xad, 0xbe, 0xef)),
			wantLog: "malformed request body: Produce v9",
		},
		{
			name:    "unknown API key",
			send:    frameOf(append(header(9999, 0), 0, 0, 0, 0)),
			wantLog: "unknown API key 9999",
		},
		{
			name:    "API not implemented",
			send:    wire.AppendRequest(nil, 1, nil, kmsg.NewPtrLeaderAndISRRequest()),
			wantLog: "API LeaderAndISR is not implemented by testbroker",
		},
		{
			name:    "version no client can speak",
			send:    frameOf(append(header(int16(kmsg.Produce), 99), 0, 0, 0, 0)),
			wantLog: "unsupported version Produce v99",
		},
		{
			name:      "frame cut short by the client",
			send:      produceFrame[:len(produceFrame)-10],
			closeSend: true,
			wantLog:   "unexpected EOF",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs logBuffer
			c := testbroker.StartT(t, testbroker.Topic("orders", 1), testbroker.MaxRequestBytes(1024), loggerTo(&logs))
			addr := c.Addrs()[0]
			good := dialRawKafka(t, addr)
			good.requireAlive()

			bad := dialRawKafka(t, addr)
			bad.writeBytes(tt.send)
			if tt.closeSend {
				require.NoError(t, bad.nc.(*net.TCPConn).CloseWrite())
			}
			bad.requireClosed()

			good.requireAlive()
			dialRawKafka(t, addr).requireAlive()
			// The reason is logged before the connection closes.
			assert.Contains(t, logs.String(), "closing connection")
			assert.Contains(t, logs.String(), tt.wantLog)
		})
	}
}

// TestClientHangingUpIsNotLogged: a client closing its connection between requests is normal.
func TestClientHangingUpIsNotLogged(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := testbroker.StartT(t, loggerTo(&logs))
	conn := dialRawKafka(t, c.Addrs()[0])
	conn.requireAlive()
	require.NoError(t, conn.nc.(*net.TCPConn).CloseWrite())
	conn.requireClosed()
	assert.NotContains(t, logs.String(), "closing connection")
}

// TestMalformedInputDoesNotDisturbInFlightClients runs a well-behaved client's requests while
// other connections send garbage.
func TestMalformedInputDoesNotDisturbInFlightClients(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("orders", 3))
	addr := c.Addrs()[0]
	good := dialRawKafka(t, addr)

	garbage := [][]byte{
		binary.BigEndian.AppendUint32(nil, 0x80000000),
		frameOf([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")),
		frameOf(append(header(int16(kmsg.Fetch), 12), bytes.Repeat([]byte{0xff}, 64)...)),
	}
	var wg sync.WaitGroup
	for _, g := range garbage {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, rawIOTimeout)
			if err != nil {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(rawIOTimeout))
			_, _ = nc.Write(g)
			_, _ = io.Copy(io.Discard, nc)
		}()
	}
	topic := "orders"
	for range 20 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		resp := good.roundTrip(req).(*kmsg.MetadataResponse)
		require.Len(t, resp.Topics, 1)
		assert.Zero(t, resp.Topics[0].ErrorCode)
		assert.Len(t, resp.Topics[0].Partitions, 3)
	}
	wg.Wait()
	good.requireAlive()
}

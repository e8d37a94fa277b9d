package server

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/sasl"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

// rawConn speaks the wire protocol by hand, with non-flexible versions only.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialSASLCluster(t *testing.T) (*Cluster, *rawConn) {
	t.Helper()
	store, err := sasl.NewStore([]string{sasl.Plain, sasl.ScramSHA256}, map[string]string{"alice": "secret"})
	require.NoError(t, err)
	c, err := Start(Config{Brokers: 1, ListenAddrs: []string{"127.0.0.1:0"}, SASL: store})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	nc, err := net.Dial("tcp", c.Addrs()[0])
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	return c, &rawConn{t: t, nc: nc}
}

func (r *rawConn) writeFrame(b []byte) {
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

// readFrame returns the next frame's payload, or nil when the broker closed the connection.
func (r *rawConn) readFrame() []byte {
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		require.ErrorIs(r.t, err, io.EOF)
		return nil
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r.nc, b)
	require.NoError(r.t, err)
	return b
}

// roundTrip sends req and decodes its response into resp; false when the connection closed
// instead.
func (r *rawConn) roundTrip(req kmsg.Request, resp kmsg.Response) bool {
	r.corr++
	r.writeFrame(wire.AppendRequest(nil, r.corr, nil, req))
	b := r.readFrame()
	if b == nil {
		return false
	}
	require.Equal(r.t, r.corr, int32(binary.BigEndian.Uint32(b)))
	resp.SetVersion(req.GetVersion())
	require.NoError(r.t, resp.ReadFrom(b[4:]))
	return true
}

func (r *rawConn) closed() bool {
	_, err := r.nc.Read(make([]byte, 1))
	return err == io.EOF
}

func handshake(version int16, mechanism string) *kmsg.SASLHandshakeRequest {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = version
	hs.Mechanism = mechanism
	return hs
}

func metadataV1() *kmsg.MetadataRequest {
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 1
	return m
}

func onlyConn(t *testing.T, c *Cluster) *conn {
	b := c.brokers[0]
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Len(t, b.conns, 1)
	for cn := range b.conns {
		return cn
	}
	return nil
}

// A request other than ApiVersions and SaslHandshake before the handshake closes the connection
// unanswered, as SaslServerAuthenticator.handleKafkaRequest does.
func TestSASLMetadataBeforeHandshakeCloses(t *testing.T) {
	_, r := dialSASLCluster(t)
	assert.False(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
}

// After a SaslHandshake v1, a request other than SaslAuthenticate is answered with
// ILLEGAL_SASL_STATE, then the connection is closed (handleSaslToken).
func TestSASLMetadataDuringAuthenticationIllegalState(t *testing.T) {
	_, r := dialSASLCluster(t)
	av := kmsg.NewPtrApiVersionsRequest()
	avResp := kmsg.NewPtrApiVersionsResponse()
	require.True(t, r.roundTrip(av, avResp))
	require.Zero(t, avResp.ErrorCode)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(1, sasl.Plain), hsResp))
	assert.Zero(t, hsResp.ErrorCode)
	assert.Equal(t, []string{sasl.Plain, sasl.ScramSHA256}, hsResp.SupportedMechanisms)
	md := kmsg.NewPtrMetadataResponse()
	require.True(t, r.roundTrip(metadataV1(), md))
	assert.True(t, r.closed())
}

// A SaslHandshake v0 is followed by the bare PLAIN token (KIP-43 framing); after it the
// connection serves requests, with the principal kept, and a SaslAuthenticate gets KafkaApis's
// ILLEGAL_SASL_STATE.
func TestSASLHandshakeV0RawToken(t *testing.T) {
	c, r := dialSASLCluster(t)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(0, sasl.Plain), hsResp))
	require.Zero(t, hsResp.ErrorCode)
	token := []byte("\x00alice\x00secret")
	r.writeFrame(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	assert.Equal(t, []byte{}, r.readFrame())
	assert.Equal(t, "User:alice", onlyConn(t, c).Principal())

	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	authResp := kmsg.NewPtrSASLAuthenticateResponse()
	require.True(t, r.roundTrip(auth, authResp))
	assert.Equal(t, kerr.IllegalSaslState.Code, authResp.ErrorCode)
	if assert.NotNil(t, authResp.ErrorMessage) {
		assert.Equal(t, "SaslAuthenticate request received after successful authentication", *authResp.ErrorMessage)
	}
}

// A wrong raw PLAIN token closes the connection unanswered.
func TestSASLHandshakeV0WrongPassword(t *testing.T) {
	_, r := dialSASLCluster(t)
	require.True(t, r.roundTrip(handshake(0, sasl.Plain), kmsg.NewPtrSASLHandshakeResponse()))
	token := []byte("\x00alice\x00wrong")
	r.writeFrame(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	assert.Nil(t, r.readFrame())
}

// SaslAuthenticate v1 with a wrong password: SASL_AUTHENTICATION_FAILED with
// PlainSaslServer's message, then the connection closes.
func TestSASLAuthenticateWrongPasswordCloses(t *testing.T) {
	_, r := dialSASLCluster(t)
	require.True(t, r.roundTrip(handshake(1, sasl.Plain), kmsg.NewPtrSASLHandshakeResponse()))
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	require.True(t, r.roundTrip(auth, resp))
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	if assert.NotNil(t, resp.ErrorMessage) {
		assert.Equal(t, "Authentication failed: Invalid username or password", *resp.ErrorMessage)
	}
	assert.True(t, r.closed())
}

// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled ones, then closed.
func TestSASLHandshakeUnsupportedMechanismCloses(t *testing.T) {
	_, r := dialSASLCluster(t)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(1, "SCRAM-SHA-512"), resp))
	assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
	assert.Equal(t, []string{sasl.Plain, sasl.ScramSHA256}, resp.SupportedMechanisms)
	assert.True(t, r.closed())
}

// A SaslHandshake v0 with SCRAM: each bare token is answered with a bare frame carrying the
// server's message (server-first, then server-final), and the connection then serves.
func TestSASLHandshakeV0RawScram(t *testing.T) {
	store, err := sasl.NewStore([]string{sasl.ScramSHA256}, nil)
	require.NoError(t, err)
	c, err := Start(Config{Brokers: 1, ListenAddrs: []string{"127.0.0.1:0"}, SASL: store})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	nc, err := net.Dial("tcp", c.Addrs()[0])
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	r := &rawConn{t: t, nc: nc}

	require.True(t, r.roundTrip(handshake(0, sasl.ScramSHA256), kmsg.NewPtrSASLHandshakeResponse()))
	_, client := store.InterBroker()
	var fromServer []byte
	for range 2 {
		token, err := client.Step(fromServer)
		require.NoError(t, err)
		r.writeFrame(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		fromServer = r.readFrame()
		require.NotEmpty(t, fromServer)
	}
	assert.Contains(t, string(fromServer), "v=", "server-final-message")
	assert.Equal(t, "User:"+sasl.InterBrokerUser, onlyConn(t, c).Principal())
	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
}

package server

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/sasl"
)

// dialReauthCluster starts a one-broker PLAIN, OAUTHBEARER and SCRAM-SHA-256 cluster on a
// manual clock with connections.max.reauth.ms=60000, and dials it.
func dialReauthCluster(t *testing.T) (*Cluster, *clock.Manual, *rawConn) {
	t.Helper()
	store, err := sasl.NewStore([]string{sasl.Plain, sasl.OAuthBearer, sasl.ScramSHA256}, map[string]string{"alice": "secret", "bob": "secret"})
	require.NoError(t, err)
	mc := clock.NewManual(time.Unix(1_700_000_000, 0))
	c, err := Start(Config{Brokers: 1, ListenAddrs: []string{"127.0.0.1:0"}, SASL: store, Clock: mc,
		BrokerConfigs: map[string]string{"connections.max.reauth.ms": "60000"}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	nc, err := net.Dial("tcp", c.Addrs()[0])
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	return c, mc, &rawConn{t: t, nc: nc}
}

// authenticate runs SaslHandshake v1 and one SaslAuthenticate v1 with token.
func (r *rawConn) authenticate(mechanism string, token []byte) *kmsg.SASLAuthenticateResponse {
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(r.t, r.roundTrip(handshake(1, mechanism), hsResp))
	require.Zero(r.t, hsResp.ErrorCode)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	auth.SASLAuthBytes = token
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	require.True(r.t, r.roundTrip(auth, resp))
	return resp
}

func oauthToken(sub string, exp time.Time) []byte {
	return []byte("n,,\x01auth=Bearer " + sasl.UnsecuredToken(sub, exp) + "\x01\x01")
}

// The session lifetime is connections.max.reauth.ms; past it, any request but a SaslHandshake
// closes the connection unanswered (SocketServer's serverAuthenticationSessionExpired).
func TestReauthSessionExpiryCloses(t *testing.T) {
	_, mc, r := dialReauthCluster(t)
	resp := r.authenticate(sasl.Plain, []byte("\x00alice\x00secret"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int64(60000), resp.SessionLifetimeMillis)
	mc.Advance(60 * time.Second)
	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()), "at the expiry itself the session still serves")
	mc.Advance(time.Millisecond)
	assert.False(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
}

// An OAUTHBEARER session lasts the smaller of connections.max.reauth.ms and the token's
// remaining lifetime.
func TestReauthOAuthBearerLifetimeIsTheTokens(t *testing.T) {
	_, mc, r := dialReauthCluster(t)
	resp := r.authenticate(sasl.OAuthBearer, oauthToken("alice", mc.Now().Add(10*time.Second)))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int64(10000), resp.SessionLifetimeMillis)
	mc.Advance(10*time.Second + time.Millisecond)
	assert.False(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
}

// A re-authentication on the connection (after the session expired, too) renews the session
// and keeps the connection; a second one less than a second after the first is a plain
// SaslHandshake after authentication: ILLEGAL_SASL_STATE.
func TestReauthRenewsTheSession(t *testing.T) {
	c, mc, r := dialReauthCluster(t)
	require.Zero(t, r.authenticate(sasl.Plain, []byte("\x00alice\x00secret")).ErrorCode)
	cn := onlyConn(t, c)
	mc.Advance(61 * time.Second)
	resp := r.authenticate(sasl.Plain, []byte("\x00alice\x00secret"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int64(60000), resp.SessionLifetimeMillis)
	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
	assert.Same(t, cn, onlyConn(t, c))
	assert.Equal(t, "User:alice", cn.Principal())

	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(1, sasl.Plain), hsResp))
	assert.Equal(t, kerr.IllegalSaslState.Code, hsResp.ErrorCode)
	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
}

// A re-authentication as another principal fails with ensurePrincipalUnchanged's message and
// closes the connection; the connection kept its first principal meanwhile.
func TestReauthPrincipalChangeRefused(t *testing.T) {
	c, _, r := dialReauthCluster(t)
	require.Zero(t, r.authenticate(sasl.Plain, []byte("\x00alice\x00secret")).ErrorCode)
	cn := onlyConn(t, c)
	resp := r.authenticate(sasl.Plain, []byte("\x00bob\x00secret"))
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	if assert.NotNil(t, resp.ErrorMessage) {
		assert.Equal(t, "Cannot change principals during re-authentication from User.alice: User.bob", *resp.ErrorMessage)
	}
	assert.Equal(t, "User:alice", cn.Principal())
	assert.True(t, r.closed())
}

// A re-authentication with another mechanism: UNSUPPORTED_SASL_MECHANISM, then closed.
func TestReauthMechanismChangeRefused(t *testing.T) {
	_, _, r := dialReauthCluster(t)
	require.Zero(t, r.authenticate(sasl.Plain, []byte("\x00alice\x00secret")).ErrorCode)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(1, sasl.OAuthBearer), hsResp))
	assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, hsResp.ErrorCode)
	assert.True(t, r.closed())
}

// Without connections.max.reauth.ms a PLAIN session never expires and a SaslHandshake after
// authentication is ILLEGAL_SASL_STATE, the connection kept.
func TestReauthOffWithoutConfig(t *testing.T) {
	c, r := dialSASLCluster(t)
	resp := r.authenticate(sasl.Plain, []byte("\x00alice\x00secret"))
	require.Zero(t, resp.ErrorCode)
	assert.Zero(t, resp.SessionLifetimeMillis)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(1, sasl.Plain), hsResp))
	assert.Equal(t, kerr.IllegalSaslState.Code, hsResp.ErrorCode)
	require.True(t, r.roundTrip(metadataV1(), kmsg.NewPtrMetadataResponse()))
	assert.Equal(t, "User:alice", onlyConn(t, c).Principal())
}

// A re-authentication through SaslHandshake v0 and a bare token as another principal closes
// the connection unanswered, as Kafka's handleSaslToken does when ensurePrincipalUnchanged
// throws.
func TestReauthV0PrincipalChangeCloses(t *testing.T) {
	c, _, r := dialReauthCluster(t)
	require.Zero(t, r.authenticate(sasl.Plain, []byte("\x00alice\x00secret")).ErrorCode)
	cn := onlyConn(t, c)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(t, r.roundTrip(handshake(0, sasl.Plain), hsResp))
	require.Zero(t, hsResp.ErrorCode)
	token := []byte("\x00bob\x00secret")
	r.writeFrame(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	assert.Nil(t, r.readFrame())
	assert.Equal(t, "User:alice", cn.Principal())
}

// authenticateScram runs SaslHandshake v1 and SCRAM-SHA-256's SaslAuthenticate exchange as
// user with pass, and returns the last response: the first that fails, or the final one.
func (r *rawConn) authenticateScram(user, pass string) *kmsg.SASLAuthenticateResponse {
	session, token, err := scram.Auth{User: user, Pass: pass}.AsSha256Mechanism().Authenticate(context.Background(), "")
	require.NoError(r.t, err)
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	require.True(r.t, r.roundTrip(handshake(1, sasl.ScramSHA256), hsResp))
	require.Zero(r.t, hsResp.ErrorCode)
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version = 1
		auth.SASLAuthBytes = token
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		require.True(r.t, r.roundTrip(auth, resp))
		if resp.ErrorCode != 0 {
			return resp
		}
		var done bool
		done, token, err = session.Challenge(resp.SASLAuthBytes)
		require.NoError(r.t, err)
		if done {
			return resp
		}
	}
}

// A re-authentication with credentials that no longer hold gets SaslServerAuthenticator's
// re-authentication message for a SaslException, then the connection is closed; a mechanism's
// own message (PLAIN's) is the same as at the first authentication. bob's SCRAM password
// changes as AlterUserScramCredentials changes it, then he re-authenticates with the old one.
func TestReauthInvalidCredentials(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reauth func(c *Cluster, r *rawConn) *kmsg.SASLAuthenticateResponse
		msg    string
	}{
		{"SCRAM password changed", func(c *Cluster, r *rawConn) *kmsg.SASLAuthenticateResponse {
			salt := []byte("fresh-salt")
			salted, err := pbkdf2.Key(sha256.New, "changed", salt, 4096, sha256.Size)
			require.NoError(t, err)
			c.scram.SetScram("bob", sasl.ScramSHA256, salt, salted, 4096)
			return r.authenticateScram("bob", "secret")
		}, "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{"SCRAM wrong password", func(_ *Cluster, r *rawConn) *kmsg.SASLAuthenticateResponse {
			return r.authenticateScram("bob", "wrong")
		}, "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, r := dialReauthCluster(t)
			resp := r.authenticateScram("bob", "secret")
			require.Zero(t, resp.ErrorCode)
			require.Equal(t, int64(60000), resp.SessionLifetimeMillis)
			cn := onlyConn(t, c)
			resp = tc.reauth(c, r)
			assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
			if assert.NotNil(t, resp.ErrorMessage) {
				assert.Equal(t, tc.msg, *resp.ErrorMessage)
			}
			assert.Equal(t, "User:bob", cn.Principal())
			assert.True(t, r.closed())
		})
	}
	for _, tc := range []struct {
		name, mechanism string
		token           []byte
		msg             string
	}{
		{"PLAIN wrong password", sasl.Plain, []byte("\x00alice\x00wrong"), "Authentication failed: Invalid username or password"},
		{"OAUTHBEARER malformed", sasl.OAuthBearer, []byte("n,,\x01auth=Basic abc\x01\x01"),
			"Authentication failed during re-authentication due to invalid credentials with SASL mechanism OAUTHBEARER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, mc, r := dialReauthCluster(t)
			first := []byte("\x00alice\x00secret")
			if tc.mechanism == sasl.OAuthBearer {
				first = oauthToken("alice", mc.Now().Add(time.Hour))
			}
			require.Zero(t, r.authenticate(tc.mechanism, first).ErrorCode)
			resp := r.authenticate(tc.mechanism, tc.token)
			assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
			if assert.NotNil(t, resp.ErrorMessage) {
				assert.Equal(t, tc.msg, *resp.ErrorMessage)
			}
			assert.True(t, r.closed())
		})
	}
}

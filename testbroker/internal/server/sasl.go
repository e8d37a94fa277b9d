package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/sasl"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

func init() {
	register(17, 0, 1, (*Broker).handleSaslHandshake, failedSaslHandshake, noScope)
	register(36, 0, 2, (*Broker).handleSaslAuthenticate, failedSaslAuthenticate, noScope)
}

// saslState is where a connection is in SASL authentication, as SaslServerAuthenticator's
// states.
type saslState int8

const (
	saslHandshakeOrVersions saslState = iota // ApiVersions or SaslHandshake expected
	saslHandshake                            // after ApiVersions: SaslHandshake expected
	saslAuthenticate                         // after SaslHandshake: tokens expected
	saslComplete                             // authenticated
)

// saslConn is the SASL state of a connection of a cluster that requires SASL.
type saslConn struct {
	state     saslState
	mechanism string
	session   sasl.Session
	// raw is set after a SaslHandshake v0: the client sends its tokens as bare size-prefixed
	// frames, not in SaslAuthenticate requests.
	raw bool
	// expiry is when the authenticated session ends (KIP-368), the zero time for never: a
	// request other than a SaslHandshake that begins a re-authentication after it closes the
	// connection.
	expiry time.Time
	// reauthenticating is set from the SaslHandshake that begins a re-authentication until
	// it completes; lastReauth is when the last one began.
	reauthenticating bool
	lastReauth       time.Time
}

// minReauthInterval is KafkaChannel's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS: a connection may
// begin a re-authentication at most once a second.
const minReauthInterval = time.Second

// checkSession applies KafkaChannel and SocketServer's rule to a request of an authenticated
// connection: a SaslHandshake on a connection whose session has an expiry begins a
// re-authentication (unless one began less than a second ago: then it is handled as any
// SaslHandshake after authentication); any other request after the expiry closes the
// connection. It reports whether the request may go on.
func (b *Broker) checkSession(cn *conn, req *wire.Request) bool {
	s := cn.sasl
	if s.expiry.IsZero() {
		return true
	}
	now := b.c.clock.Now()
	if req.Key == int16(kmsg.SASLHandshake) && (s.lastReauth.IsZero() || now.Sub(s.lastReauth) >= minReauthInterval) {
		s.lastReauth = now
		s.reauthenticating = true
		s.state = saslHandshake
		return true
	}
	if now.After(s.expiry) {
		b.c.logger.Info("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
			"reason", "SASL session expired at "+s.expiry.UTC().Format(time.RFC3339Nano)+" (connections.max.reauth.ms or the credential's lifetime) and the client sent "+kmsg.NameForKey(req.Key)+" without re-authenticating")
		return false
	}
	return true
}

// handleBeforeAuth admits what Kafka's SaslServerAuthenticator admits before authentication:
// ApiVersions (once answered without error) and SaslHandshake, then SaslAuthenticate. Any other
// request during the handshake closes the connection unanswered; during authentication it is
// answered with ILLEGAL_SASL_STATE, then the connection is closed.
func (b *Broker) handleBeforeAuth(cn *conn, req *wire.Request) (kmsg.Response, bool) {
	st := cn.sasl.state
	switch {
	case st == saslHandshakeOrVersions && req.Key == wire.ApiVersionsKey:
		resp, keep := b.handleAuthenticated(cn, req)
		if av, ok := resp.(*kmsg.ApiVersionsResponse); ok && av.ErrorCode == 0 {
			cn.sasl.state = saslHandshake
		}
		return resp, keep
	case st != saslAuthenticate && req.Key == int16(kmsg.SASLHandshake),
		st == saslAuthenticate && req.Key == int16(kmsg.SASLAuthenticate):
		return b.handleAuthenticated(cn, req)
	case st == saslAuthenticate && req.Body != nil:
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
			"reason", "Unexpected Kafka request of type "+kmsg.NameForKey(req.Key)+" during SASL authentication.")
		cn.closeAfterWrite = true
		return b.errorReply(cn, req, kerr.IllegalSaslState.Code)
	}
	b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
		"reason", "Unexpected Kafka request of type "+kmsg.NameForKey(req.Key)+" during SASL handshake.")
	return nil, false
}

// handleRawSaslToken evaluates a token sent after a SaslHandshake v0, without Kafka framing, and
// returns the frame to answer with; keep false closes the connection unanswered, as Kafka does
// when such an exchange fails.
func (cn *conn) handleRawSaslToken(token []byte) (frame []byte, keep bool) {
	out, done, err := cn.sasl.session.Step(token)
	if err == nil && done {
		_, err = cn.authenticated()
	}
	if err != nil {
		cn.b.c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", cn.sasl.failure(err).Error())
		return nil, false
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(out))), out...), true
}

// failure is the error SaslServerAuthenticator answers a failed exchange with: the
// mechanism's own (a SaslAuthenticationException), or for invalid credentials, whose reason the
// client is not told, a message naming the mechanism and whether a re-authentication failed.
func (s *saslConn) failure(err error) error {
	if !errors.Is(err, sasl.ErrInvalidCredentials) {
		return err
	}
	during := "authentication"
	if s.reauthenticating {
		during = "re-authentication"
	}
	return kafkaerr.New(kerr.SaslAuthenticationFailed,
		"Authentication failed during %s due to invalid credentials with SASL mechanism %s", during, s.mechanism)
}

// authenticated completes an exchange. A re-authentication as another principal is refused
// with ReauthInfo.ensurePrincipalUnchanged's message, and the connection keeps its first
// principal until it closes. Otherwise the principal is set and the session's expiry computed
// as SaslServerAuthenticator's calcCompletionTimesAndReturnSessionLifetimeMs does, from
// connections.max.reauth.ms and the credential's own expiry; lifetimeMs is for
// SaslAuthenticate's SessionLifetimeMs, 0 for a session that never expires.
func (cn *conn) authenticated() (lifetimeMs int64, err error) {
	s := cn.sasl
	previous := cn.Principal()
	principal := "User:" + s.session.User()
	if s.reauthenticating && principal != previous {
		return 0, kafkaerr.New(kerr.SaslAuthenticationFailed,
			"Cannot change principals during re-authentication from %s: %s", dotted(previous), dotted(principal))
	}
	s.state = saslComplete
	s.raw = false
	s.reauthenticating = false
	now := cn.b.c.clock.Now()
	maxReauth := cn.b.c.configs.Snapshot().Connections.MaxReauth
	credential := s.session.Expires()
	s.expiry = time.Time{}
	if !credential.IsZero() || maxReauth > 0 {
		nowMs := now.UnixMilli()
		switch {
		case credential.IsZero():
			lifetimeMs = maxReauth.Milliseconds()
		case maxReauth <= 0:
			lifetimeMs = credential.UnixMilli() - nowMs
		default:
			lifetimeMs = min(credential.UnixMilli()-nowMs, maxReauth.Milliseconds())
		}
		lifetimeMs = max(lifetimeMs, 0)
		// In milliseconds: a token's lifetime can exceed what a Duration holds.
		s.expiry = time.UnixMilli(nowMs + lifetimeMs)
	}
	cn.mu.Lock()
	cn.principal = principal
	cn.mu.Unlock()
	return lifetimeMs, nil
}

// Principal returns the connection's authenticated principal ("User:name"), "" before
// authentication or on a cluster without SASL.
func (cn *conn) Principal() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.principal
}

func (b *Broker) handleSaslHandshake(cn *conn, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	store := b.c.cfg.SASL
	if store == nil || cn.sasl.state == saslComplete {
		// KafkaApis: a handshake on a listener without SASL, or after authentication.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	resp.SupportedMechanisms = store.Mechanisms()
	reason := ""
	switch {
	case !store.Enabled(req.Mechanism):
		reason = fmt.Sprintf("Unsupported SASL mechanism %s", req.Mechanism)
	case cn.sasl.reauthenticating && req.Mechanism != cn.sasl.mechanism:
		reason = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			req.Mechanism, cn.sasl.mechanism)
	}
	if reason != "" {
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(), "reason", reason)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		cn.closeAfterWrite = true
		return resp
	}
	cn.sasl.state = saslAuthenticate
	cn.sasl.mechanism = req.Mechanism
	cn.sasl.session = store.NewSession(req.Mechanism, b.c.clock.Now)
	cn.sasl.raw = req.Version == 0
	return resp
}

func failedSaslHandshake(r *kmsg.SASLHandshakeRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = code
	return resp
}

func (b *Broker) handleSaslAuthenticate(cn *conn, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if cn.sasl == nil || cn.sasl.state != saslAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return resp
	}
	out, done, err := cn.sasl.session.Step(req.SASLAuthBytes)
	var lifetimeMs int64
	if err == nil && done {
		lifetimeMs, err = cn.authenticated()
	}
	if err != nil {
		err = cn.sasl.failure(err)
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
		cn.closeAfterWrite = true
		return resp
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = lifetimeMs
	return resp
}

// dotted writes a principal as KafkaPrincipal's type and name joined by a dot ("User.alice"),
// the form of ensurePrincipalUnchanged's message.
func dotted(principal string) string {
	typ, name, _ := strings.Cut(principal, ":")
	return typ + "." + name
}

func failedSaslAuthenticate(r *kmsg.SASLAuthenticateRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = code
	return resp
}

// interBrokerAuth returns how the replica fetchers authenticate to their leaders on a cluster
// that requires SASL (as sasl.InterBrokerUser, with the first enabled mechanism), or nil.
func (c *Cluster) interBrokerAuth() func(func(kmsg.Request, kmsg.Response) error) error {
	store := c.cfg.SASL
	if store == nil {
		return nil
	}
	return func(roundTrip func(kmsg.Request, kmsg.Response) error) error {
		mechanism, client := store.InterBroker()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version = 1
		hs.Mechanism = mechanism
		hsResp := kmsg.NewPtrSASLHandshakeResponse()
		if err := roundTrip(hs, hsResp); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
			return err
		}
		var token []byte
		for {
			out, err := client.Step(token)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.Version = 1
			req.SASLAuthBytes = out
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			if err := roundTrip(req, resp); err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return err
			}
			if mechanism == sasl.Plain || mechanism == sasl.OAuthBearer || strings.HasPrefix(string(resp.SASLAuthBytes), "v=") {
				return nil
			}
			token = resp.SASLAuthBytes
		}
	}
}

package server

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	state   saslState
	session sasl.Session
	// raw is set after a SaslHandshake v0: the client sends its tokens as bare size-prefixed
	// frames, not in SaslAuthenticate requests.
	raw bool
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
	if err != nil {
		cn.b.c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
		return nil, false
	}
	if done {
		cn.authenticated(cn.sasl.session.User())
	}
	return binary.BigEndian.AppendUint32(nil, uint32(len(out))), true
}

func (cn *conn) authenticated(user string) {
	cn.sasl.state = saslComplete
	cn.sasl.raw = false
	cn.mu.Lock()
	cn.principal = "User:" + user
	cn.mu.Unlock()
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
	if !store.Enabled(req.Mechanism) {
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
			"reason", fmt.Sprintf("Unsupported SASL mechanism %s", req.Mechanism))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		cn.closeAfterWrite = true
		return resp
	}
	cn.sasl.state = saslAuthenticate
	cn.sasl.session = store.NewSession(req.Mechanism)
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
	if err != nil {
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		cn.closeAfterWrite = true
		return resp
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if done {
		cn.authenticated(cn.sasl.session.User())
	}
	// SessionLifetimeMillis stays 0: no re-authentication (connections.max.reauth.ms unset).
	return resp
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
			if mechanism == sasl.Plain || strings.HasPrefix(string(resp.SASLAuthBytes), "v=") {
				return nil
			}
			token = resp.SASLAuthBytes
		}
	}
}

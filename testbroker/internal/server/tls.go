package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/sasl"
	"github.com/kshare/kshare/testbroker/internal/sslprincipal"
)

// serverTLS returns the listeners' config: base, with client certificates asked for as
// ssl.client.auth says (a static config). A client
// certificate must be the replica fetchers' interBroker or verify against clientCAs for client
// authentication; base.ClientAuth is not used, and base.ClientCAs does not verify (Go still names
// its CAs to clients as the acceptable ones).
func serverTLS(base *tls.Config, clientCAs *x509.CertPool, interBroker *x509.Certificate, configs *config.Store) *tls.Config {
	srv := base.Clone()
	srv.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base
		if base.GetConfigForClient != nil {
			own, err := base.GetConfigForClient(hello)
			if err != nil {
				return nil, err
			}
			if own != nil {
				cfg = own
			}
		}
		cfg = cfg.Clone()
		cfg.GetConfigForClient = nil
		switch configs.Snapshot().Connections.SSLClientAuth {
		case "required":
			cfg.ClientAuth = tls.RequireAnyClientCert
		case "requested":
			cfg.ClientAuth = tls.RequestClientCert
		default:
			cfg.ClientAuth = tls.NoClientCert
			return cfg, nil
		}
		own := cfg.VerifyPeerCertificate
		cfg.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) error {
			if err := verifyClient(raw, clientCAs, interBroker); err != nil {
				return err
			}
			if own != nil {
				return own(raw, chains)
			}
			return nil
		}
		return cfg, nil
	}
	return srv
}

// verifyClient accepts no certificate (ClientAuth has refused that already if one is
// required), the replica fetchers' own, or one that chains to clientCAs for client
// authentication.
func verifyClient(raw [][]byte, clientCAs *x509.CertPool, interBroker *x509.Certificate) error {
	if len(raw) == 0 {
		return nil
	}
	if interBroker != nil && bytes.Equal(raw[0], interBroker.Raw) {
		return nil
	}
	if clientCAs == nil {
		return errors.New("testbroker: no CA verifies client certificates (TLS(cfg) without ClientCAs)")
	}
	leaf, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	intermediates := x509.NewCertPool()
	for _, r := range raw[1:] {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		intermediates.AddCert(c)
	}
	_, err = leaf.Verify(x509.VerifyOptions{
		Roots:         clientCAs,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err
}

// interBrokerCertificate makes the replica fetchers' client certificate, self-signed: brokers
// accept it by its bytes, whatever CA verifies clients.
func interBrokerCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: sasl.InterBrokerUser},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(100 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// tlsListen wraps listen so that every listener it opens, at Start and at StartBroker, is a
// TLS listener with the server config cfg. The handshake runs when the connection is served
// (conn.handshake), under a deadline.
func tlsListen(listen func(string) (net.Listener, error), cfg *tls.Config) func(string) (net.Listener, error) {
	return func(addr string) (net.Listener, error) {
		ln, err := listen(addr)
		if err != nil {
			return nil, err
		}
		return tls.NewListener(ln, cfg), nil
	}
}

// tlsDial wraps dial so that the replica fetchers reach the brokers' TLS listeners: the
// connection is handshaken with cfg, verifying the dialled host unless cfg names a server.
func tlsDial(dial func(context.Context, string, string) (net.Conn, error), cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		cc := cfg
		if cc.ServerName == "" {
			cc = cfg.Clone()
			if host, _, err := net.SplitHostPort(address); err == nil {
				cc.ServerName = host
			}
		}
		tc := tls.Client(nc, cc)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
}

// handshake runs a TLS connection's handshake before its first request is read. It is bounded
// by testbroker.request.read.timeout.ms, a socket deadline on the real clock as the read
// limits are, so that a client that sends nothing, or plain text, never holds the broker. As
// Kafka does when an SSL handshake fails, the connection is then closed and the failure logged.
func (cn *conn) handshake(tc *tls.Conn) bool {
	lim := cn.b.c.configs.Snapshot().Connections
	if err := tc.SetDeadline(time.Now().Add(lim.RequestReadTimeout)); err != nil {
		return false
	}
	err := tc.Handshake()
	if err == nil {
		err = tc.SetDeadline(time.Time{})
	}
	if err == nil {
		cn.lastIO = time.Now()
		return cn.sslPrincipal(tc.ConnectionState())
	}
	reason := "SSL handshake failed: " + err.Error()
	switch {
	case errors.Is(err, net.ErrClosed):
		return false // closed here (Close, StopBroker, DropConnections)
	case errors.Is(err, os.ErrDeadlineExceeded):
		reason = fmt.Sprintf("SSL handshake failed: not complete after testbroker.request.read.timeout.ms (%d ms)", lim.RequestReadTimeout.Milliseconds())
	}
	cn.b.c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", reason)
	return false
}

// sslPrincipal sets the principal of a TLS connection as DefaultKafkaPrincipalBuilder builds
// it: "User:" and the client certificate's subject in RFC 2253 form, mapped by
// ssl.principal.mapping.rules, or User:ANONYMOUS without a certificate or with SASL. The
// replica fetchers' certificate is sasl.InterBrokerUser's, a super user; any other certificate
// mapped to that name is refused (beyond Kafka, as SCRAM credentials for it are: the name is
// the fetchers' alone). A name no rule maps fails the authentication, as in Kafka: the
// connection is closed and the reason logged.
func (cn *conn) sslPrincipal(cs tls.ConnectionState) bool {
	// Over SASL_SSL the SASL principal is the connection's: as Kafka, which builds no SSL
	// principal there, the certificate is not mapped, so no rule can refuse it. Without a
	// certificate the connection stays User:ANONYMOUS (aclPrincipal).
	if len(cs.PeerCertificates) == 0 || cn.b.c.cfg.SASL != nil {
		return true
	}
	leaf := cs.PeerCertificates[0]
	name := sasl.InterBrokerUser
	if ib := cn.b.c.interBrokerCert; ib == nil || !bytes.Equal(leaf.Raw, ib.Raw) {
		var err error
		if name, err = cn.mapCertificate(leaf); err != nil {
			cn.b.c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", err.Error())
			return false
		}
	}
	cn.mu.Lock()
	cn.sslPrincipalName = "User:" + name
	cn.mu.Unlock()
	return true
}

// reservedPrincipal is why a client certificate mapped to the replica fetchers' name fails.
const reservedPrincipal = "Principal name " + sasl.InterBrokerUser + " is reserved for the cluster's replica fetchers"

// mapCertificate maps a client certificate's subject by ssl.principal.mapping.rules, with
// DefaultKafkaPrincipalBuilder's message when no rule applies; a replacement Java refuses is
// not wrapped, as Kafka's builder wraps only the mapper's IOException.
func (cn *conn) mapCertificate(leaf *x509.Certificate) (string, error) {
	dn, err := sslprincipal.DistinguishedName(leaf.RawSubject)
	if err != nil {
		return "", err
	}
	name, err := cn.b.c.configs.Snapshot().Connections.SSLPrincipalMapper.Name(dn)
	var nm *sslprincipal.NoMatchingRuleError
	switch {
	case errors.As(err, &nm):
		return "", fmt.Errorf("Failed to map name for '%s' based on SSL principal mapping rules.: %w", dn, err)
	case err == nil && name == sasl.InterBrokerUser:
		return "", errors.New(reservedPrincipal)
	}
	return name, err
}

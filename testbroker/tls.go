package testbroker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// TLS makes every broker listener a TLS listener serving config, a test's own server
// certificate (config.Certificates, or config.GetCertificate). Brokers restarted with
// StartBroker listen with TLS too. A connection whose handshake fails, or does not complete
// within testbroker.request.read.timeout.ms (a plain-text client's, for one), is closed and the
// reason logged. TLSCA and TLSCAPEM return nil (the test has its own CA); ClientTLS trusts the
// certificates of config.Certificates themselves. The replica fetchers between brokers check
// that a broker serves one of those certificates. With the broker config ssl.client.auth
// required or requested, config.ClientCAs verifies client certificates (see ClientCert);
// config.ClientAuth must be left tls.NoClientCert, Start fails otherwise. With a client
// certificate, config.VerifyPeerCertificate is called after testbroker verified it, with
// verifiedChains nil. Not with GeneratedTLS.
func TLS(config *tls.Config) Opt { return opt(func(c *cfg) { c.tls = config; c.tlsSet = true }) }

// GeneratedTLS makes every broker listener a TLS listener, with a certificate authority and a
// server certificate generated at Start: ECDSA P-256, valid from an hour before Start for
// seven days, for 127.0.0.1, ::1, localhost and the host of every listen address. Clients
// trust the CA through Cluster.ClientTLS (kgo.DialTLSConfig(c.ClientTLS())), Cluster.TLSCA or
// Cluster.TLSCAPEM. With the broker config ssl.client.auth required or requested, the CA
// verifies client certificates too, which Cluster.ClientCert makes. Not with TLS.
func GeneratedTLS() Opt { return opt(func(c *cfg) { c.generatedTLS = true }) }

// clusterTLS is what a TLS cluster serves and what its clients trust.
type clusterTLS struct {
	server      *tls.Config
	interBroker *tls.Config
	client      *tls.Config    // ClientTLS
	ca          *x509.CertPool // nil with TLS(cfg)
	caPEM       []byte
	clientCAs   *x509.CertPool // verify client certificates: ca, or TLS(cfg)'s ClientCAs
	// caCert and caKey sign ClientCert's certificates; nil with TLS(cfg).
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// TLSCA returns the generated CA as a pool for a client's RootCAs, or nil unless the cluster
// runs with GeneratedTLS.
func (c *Cluster) TLSCA() *x509.CertPool {
	if c.tls == nil || c.tls.ca == nil {
		return nil
	}
	return c.tls.ca.Clone()
}

// TLSCAPEM returns the generated CA's certificate in PEM, for a client in another process, or
// nil unless the cluster runs with GeneratedTLS.
func (c *Cluster) TLSCAPEM() []byte {
	if c.tls == nil {
		return nil
	}
	return bytes.Clone(c.tls.caPEM)
}

// ClientTLS returns a new client config that trusts the cluster's certificate, for
// kgo.DialTLSConfig; the client verifies the host it dials, so the names must be those the
// certificate has (with GeneratedTLS, the listen hosts, 127.0.0.1, ::1 and localhost). It
// returns nil when the cluster does not run TLS. On an InMemoryNetwork, where kgo does not
// take both kgo.Dialer and kgo.DialTLSConfig, wrap c.DialContext's connection with tls.Client
// and this config, its ServerName set to the dialled host.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.client.Clone()
}

// ClientCert returns a client certificate for subject, signed by the CA of GeneratedTLS and
// valid as long as the server's, for mutual TLS when the broker config ssl.client.auth is
// required or requested. Its principal is "User:" and the subject in RFC 2253 form
// (pkix.Name{CommonName: "alice", Organization: []string{"acme"}} is User:CN=alice,O=acme),
// mapped by ssl.principal.mapping.rules. Give it to a client with the config of ClientTLS:
//
//	cert, err := c.ClientCert(pkix.Name{CommonName: "alice"})
//	cfg := c.ClientTLS()
//	cfg.Certificates = []tls.Certificate{cert}
//	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(cfg))
//
// It fails unless the cluster runs with GeneratedTLS: with TLS(cfg), the test signs its
// client certificates with a CA of cfg.ClientCAs.
func (c *Cluster) ClientCert(subject pkix.Name) (tls.Certificate, error) {
	if c.tls == nil || c.tls.caKey == nil {
		return tls.Certificate{}, errors.New("testbroker: ClientCert needs GeneratedTLS")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testbroker: ClientCert: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    c.tls.caCert.NotBefore,
		NotAfter:     c.tls.caCert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.tls.caCert, &key.PublicKey, c.tls.caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testbroker: ClientCert: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testbroker: ClientCert: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// buildTLS checks the TLS options and makes the cluster's TLS configs; nil when the cluster
// does not run TLS. hosts are the listen hosts, for the generated certificate.
func (c *cfg) buildTLS(hosts []string) (*clusterTLS, error) {
	switch {
	case c.tlsSet && c.generatedTLS:
		return nil, errors.New("testbroker: TLS(cfg) with GeneratedTLS: use one of the two")
	case c.tlsSet:
		return userTLS(c.tls)
	case c.generatedTLS:
		return generateTLS(hosts, time.Now())
	}
	return nil, nil
}

// userTLS makes the configs of TLS(cfg): clients and replica fetchers trust the certificates
// of cfg itself.
func userTLS(server *tls.Config) (*clusterTLS, error) {
	if server == nil {
		return nil, errors.New("testbroker: TLS(nil): give a config with a server certificate, or use GeneratedTLS")
	}
	if len(server.Certificates) == 0 && server.GetCertificate == nil && server.GetConfigForClient == nil {
		return nil, errors.New("testbroker: TLS(cfg): cfg has no server certificate: set Certificates or GetCertificate")
	}
	if server.ClientAuth != tls.NoClientCert {
		// Refused rather than ignored: a test asking for verified clients must not pass with none.
		return nil, errors.New("testbroker: TLS(cfg): set the broker config ssl.client.auth instead of cfg.ClientAuth")
	}
	pool := x509.NewCertPool()
	leaves := map[string]bool{}
	for i, cert := range server.Certificates {
		if len(cert.Certificate) == 0 {
			return nil, fmt.Errorf("testbroker: TLS(cfg): Certificates[%d] is empty", i)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("testbroker: TLS(cfg): Certificates[%d]: %w", i, err)
		}
		pool.AddCert(leaf) // a leaf in RootCAs verifies as a chain of its own
		leaves[string(cert.Certificate[0])] = true
	}
	// Replica fetchers dial the cluster's own listeners: they pin the served certificate
	// rather than trust a CA the cluster does not know (anything, with GetCertificate only).
	interBroker := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(leaves) == 0 || len(cs.PeerCertificates) > 0 && leaves[string(cs.PeerCertificates[0].Raw)] {
				return nil
			}
			return errors.New("testbroker: broker served a certificate that is not in TLS(cfg)")
		},
	}
	return &clusterTLS{
		server:      server,
		interBroker: interBroker,
		client:      &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		clientCAs:   server.ClientCAs,
	}, nil
}

// tlsValidity is how long a generated certificate is valid after Start.
const tlsValidity = 7 * 24 * time.Hour

// generateTLS makes a CA and a server certificate it signed, for GeneratedTLS.
func generateTLS(hosts []string, now time.Time) (*clusterTLS, error) {
	fail := func(err error) (*clusterTLS, error) {
		return nil, fmt.Errorf("testbroker: GeneratedTLS: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(tlsValidity)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"kshare testbroker"}, CommonName: "testbroker CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fail(err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"kshare testbroker"}, CommonName: "testbroker"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	seen := map[string]bool{}
	for _, h := range append([]string{"127.0.0.1", "::1", "localhost"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return fail(err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	client := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return &clusterTLS{
		server: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{{Certificate: [][]byte{der, caDER}, PrivateKey: key, Leaf: leaf}},
		},
		interBroker: client.Clone(),
		client:      client,
		ca:          pool,
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		clientCAs:   pool,
		caCert:      ca,
		caKey:       caKey,
	}, nil
}

// serial is a random certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

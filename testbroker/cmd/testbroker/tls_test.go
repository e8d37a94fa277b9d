package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// startRun runs the program with args until the test ends and returns the brokers' addresses
// once it has printed its ready line.
func startRun(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, w, io.Discard)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, out)
		assert.NoError(t, <-done)
	})
	sc := bufio.NewScanner(out)
	var addrs []string
	for sc.Scan() {
		line := sc.Text()
		if a, ok := strings.CutPrefix(line, "broker "); ok {
			_, addr, _ := strings.Cut(a, " listening on ")
			addrs = append(addrs, addr)
		}
		if strings.Contains(line, "ready") {
			break
		}
	}
	require.NotEmpty(t, addrs, "the program printed no broker line")
	return addrs
}

// listTopics lists the topics through a client with tlsCfg.
func listTopics(t *testing.T, addrs []string, tlsCfg *tls.Config) (kadm.TopicDetails, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(tlsCfg))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return kadm.NewClient(cl).ListTopics(ctx)
}

// -tls-ca-out: the CA file is written before the broker lines, and a client that trusts it
// lists the topics; one that does not fails.
func TestRunTLSGeneratedCA(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	addrs := startRun(t, "-brokers", "2", "-addr", "127.0.0.1:0", "-topic", "orders:2", "-tls-ca-out", caFile)
	caPEM, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))

	topics, err := listTopics(t, addrs, &tls.Config{RootCAs: pool})
	require.NoError(t, err)
	assert.Contains(t, topics, "orders")

	_, err = listTopics(t, addrs, &tls.Config{RootCAs: x509.NewCertPool()})
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)
}

// writeServerCert writes a self-signed server certificate for 127.0.0.1 and its key to dir,
// and returns the files and the certificate.
func writeServerCert(t *testing.T, dir string) (certFile, keyFile string, leaf *x509.Certificate) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test server"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	leaf, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	return certFile, keyFile, leaf
}

// -tls-cert and -tls-key: the brokers serve the given certificate.
func TestRunTLSCertAndKey(t *testing.T) {
	certFile, keyFile, leaf := writeServerCert(t, t.TempDir())
	addrs := startRun(t, "-brokers", "2", "-addr", "127.0.0.1:0", "-topic", "orders", "-tls-cert", certFile, "-tls-key", keyFile)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	topics, err := listTopics(t, addrs, &tls.Config{RootCAs: pool})
	require.NoError(t, err)
	assert.Contains(t, topics, "orders")
}

// -tls-client-ca with -tls-cert and ssl.client.auth=required: a client certificate that CA
// signed is accepted, one of another CA is not.
func TestRunTLSClientCA(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, leaf := writeServerCert(t, dir)
	issuer := testbroker.StartT(t, testbroker.GeneratedTLS())
	caFile := filepath.Join(dir, "client-ca.pem")
	require.NoError(t, os.WriteFile(caFile, issuer.TLSCAPEM(), 0o600))
	addrs := startRun(t, "-addr", "127.0.0.1:0", "-topic", "orders", "-tls-cert", certFile, "-tls-key", keyFile,
		"-tls-client-ca", caFile, "-config", "ssl.client.auth=required")
	pool := x509.NewCertPool()
	pool.AddCert(leaf)

	good, err := issuer.ClientCert(pkix.Name{CommonName: "client"})
	require.NoError(t, err)
	topics, err := listTopics(t, addrs, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{good}})
	require.NoError(t, err)
	assert.Contains(t, topics, "orders")

	// GetClientCertificate sends the certificate whatever CAs the broker names as acceptable.
	bad, err := testbroker.StartT(t, testbroker.GeneratedTLS()).ClientCert(pkix.Name{CommonName: "client"})
	require.NoError(t, err)
	var sent atomic.Bool
	_, err = listTopics(t, addrs, &tls.Config{RootCAs: pool, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		sent.Store(true)
		return &bad, nil
	}})
	assert.Error(t, err, "a certificate of another CA")
	assert.True(t, sent.Load(), "the certificate of another CA was sent")
}

// -config ssl.client.auth=required with -tls-client-cert-out: a client with the written
// certificate lists the topics, one without a certificate fails.
func TestRunMutualTLS(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	addrs := startRun(t, "-addr", "127.0.0.1:0", "-topic", "orders", "-tls-ca-out", caFile,
		"-tls-client-cert-out", dir, "-config", "ssl.client.auth=required")
	caPEM, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "CN=client", leaf.Subject.String())

	topics, err := listTopics(t, addrs, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	assert.Contains(t, topics, "orders")
	_, err = listTopics(t, addrs, &tls.Config{RootCAs: pool})
	assert.Error(t, err, "no client certificate")
}

func TestRunRejectsBadTLSFlags(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeServerCert(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", "c.pem"}, "-tls-cert needs -tls-key"},
		{[]string{"-tls-key", "k.pem"}, "-tls-key needs -tls-cert"},
		{[]string{"-tls-cert", "c.pem", "-tls-key", "k.pem", "-tls-ca-out", "ca.pem"}, "drop -tls-cert and -tls-key, or -tls-ca-out"},
		{[]string{"-tls-cert", "c.pem", "-tls-ca-out", "ca.pem"}, "drop -tls-cert and -tls-key, or -tls-ca-out"},
		{[]string{"-tls-cert", filepath.Join(dir, "none.pem"), "-tls-key", filepath.Join(dir, "none.key")}, "none.pem"},
		{[]string{"-addr", "127.0.0.1:0", "-tls-ca-out", filepath.Join(dir, "no", "such", "dir", "ca.pem")}, "-tls-ca-out"},
		{[]string{"-tls-client-cert-out", dir}, "add -tls-ca-out"},
		{[]string{"-tls-cert", certFile, "-tls-key", keyFile, "-tls-client-ca", certFile + ".none"}, "-tls-client-ca"},
		{[]string{"-tls-cert", certFile, "-tls-key", keyFile, "-tls-client-ca", keyFile}, "no PEM certificate in the file"},
		{[]string{"-tls-client-ca", "ca.pem", "-tls-ca-out", "ca.pem"}, "-tls-client-ca goes with -tls-cert"},
		{[]string{"-addr", "127.0.0.1:0", "-tls-ca-out", filepath.Join(dir, "ca.pem"), "-tls-client-cert-out", filepath.Join(dir, "no", "such")}, "-tls-client-cert-out"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

package main

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

// TestClientCertificateCluster lists the groups of a cluster whose brokers require a client
// certificate signed by the test CA: the tool presents the key store's certificate in each
// accepted form, and without one the handshake fails with what went wrong.
func TestClientCertificateCluster(t *testing.T) {
	t.Parallel()
	p := pki()
	c := testbroker.StartT(t, testbroker.TLS(&tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    p.ca,
	}), testbroker.BrokerConfig("ssl.client.auth", "required"))
	ca := writeFile(t, "ca.pem", p.caPEM)
	keyStore := writeFile(t, "keystore.pem", p.clientKey+p.clientCert)
	encrypted := writeFile(t, "encrypted.pem", encryptPKCS8(t, p.clientKey, "key-secret", nil)+p.clientCert)
	cert, key := writeFile(t, "cert.pem", p.clientCert), writeFile(t, "key.pem", p.clientKey)
	ssl := "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + ca + "\nssl.keystore.type=PEM\n"

	rc, stdout, stderr := runOn(t, c, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "--create", "--group", "mtls")
	require.Equal(t, 0, rc, stdout+stderr)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"key store location", []string{"--command-config", writeFile(t, "location.properties", ssl+"ssl.keystore.location="+keyStore+"\n")}},
		{"encrypted key", []string{"--command-config", writeFile(t, "encrypted.properties", ssl+
			"ssl.keystore.location="+encrypted+"\nssl.key.password=key-secret\n")}},
		{"inline key and chain", []string{"--command-config", writeFile(t, "inline.properties", ssl+
			"ssl.keystore.key="+inlinePEM([]byte(p.clientKey))+"\n"+
			"ssl.keystore.certificate.chain="+inlinePEM([]byte(p.clientCert))+"\n")}},
		{"flags", []string{"--tls-ca", ca, "--tls-cert", cert, "--tls-key", key}},
	} {
		rc, stdout, stderr := runOn(t, c, append(tc.args, "--list")...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Regexp(t, "\nmtls +Share +share +\n$", stdout, tc.name)
		assert.Empty(t, stderr, tc.name)
	}

	for _, args := range [][]string{
		{"--command-config", writeFile(t, "no-keystore.properties", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+ca+"\n")},
		{"--tls-ca", ca},
	} {
		rc, stdout, _ := runOn(t, c, append(args, "--list")...)
		assert.Equal(t, 1, rc, "%v", args)
		assert.True(t, strings.HasPrefix(stdout, "Error while executing groups command : "), stdout)
		assert.Contains(t, stdout, "tls: certificate required", "%v", args)
	}
}

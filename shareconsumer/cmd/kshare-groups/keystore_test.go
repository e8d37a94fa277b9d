package main

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPKI is a CA, a server certificate it signed for 127.0.0.1 and localhost, and a client
// certificate it signed, in the forms a key store takes.
type testPKI struct {
	caPEM      string
	ca         *x509.CertPool
	server     tls.Certificate
	clientCert string // the client's certificate, then the CA's: a chain
	clientKey  string // PKCS#8, BEGIN PRIVATE KEY
	clientSEC1 string // the same key in SEC 1, BEGIN EC PRIVATE KEY
	clientDER  []byte // the client key's PKCS#8 DER
	otherKey   string // a PKCS#8 key of no certificate here
}

var pki = sync.OnceValue(func() testPKI {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		return k
	}
	pemOf := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kshare-groups test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)
	sign := func(serial int64, name string, usage x509.ExtKeyUsage, key *ecdsa.PrivateKey) []byte {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		must(err)
		return der
	}
	serverKey, clientKey := newKey(), newKey()
	serverDER := sign(2, "broker", x509.ExtKeyUsageServerAuth, serverKey)
	clientDER := sign(3, "tool", x509.ExtKeyUsageClientAuth, clientKey)
	clientPKCS8, err := x509.MarshalPKCS8PrivateKey(clientKey)
	must(err)
	clientSEC1, err := x509.MarshalECPrivateKey(clientKey)
	must(err)
	otherPKCS8, err := x509.MarshalPKCS8PrivateKey(newKey())
	must(err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{
		caPEM:      pemOf("CERTIFICATE", caDER),
		ca:         pool,
		server:     tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey},
		clientCert: pemOf("CERTIFICATE", clientDER) + pemOf("CERTIFICATE", caDER),
		clientKey:  pemOf("PRIVATE KEY", clientPKCS8),
		clientSEC1: pemOf("EC PRIVATE KEY", clientSEC1),
		clientDER:  clientDER,
		otherKey:   pemOf("PRIVATE KEY", otherPKCS8),
	}
})

// encryptPKCS8 encrypts a PKCS#8 key as openssl pkcs8 -topk8 -v2 aes-128-cbc does: PBES2,
// PBKDF2 with HMAC-SHA256, AES-128-CBC. algorithm replaces PBES2's identifier when set, for a
// key encrypted otherwise.
func encryptPKCS8(t *testing.T, keyPEM, password string, algorithm asn1.ObjectIdentifier) string {
	t.Helper()
	block, _ := pem.Decode([]byte(keyPEM))
	salt, iv := make([]byte, 8), make([]byte, aes.BlockSize)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 16)
	require.NoError(t, err)
	pad := aes.BlockSize - len(block.Bytes)%aes.BlockSize
	data := append(block.Bytes, strings.Repeat(string(rune(pad)), pad)...)
	c, err := aes.NewCipher(key)
	require.NoError(t, err)
	cipher.NewCBCEncrypter(c, iv).CryptBlocks(data, data)
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		require.NoError(t, err)
		return asn1.RawValue{FullBytes: b}
	}
	params := pbes2Params{
		KeyDerivationFunc: algorithmIdentifier{oidPBKDF2, raw(pbkdf2Params{Salt: salt, IterationCount: 2048, PRF: algorithmIdentifier{oidHMACSHA256, asn1.NullRawValue}})},
		EncryptionScheme:  algorithmIdentifier{oidAES128CBC, raw(iv)},
	}
	if algorithm == nil {
		algorithm = oidPBES2
	}
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{Algorithm: algorithmIdentifier{algorithm, raw(params)}, EncryptedData: data})
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}))
}

// clientLeaf is the DER of the certificate s presents.
func clientLeaf(t *testing.T, s security) []byte {
	t.Helper()
	require.NotNil(t, s.keyPair)
	require.NotEmpty(t, s.keyPair.Certificate)
	return s.keyPair.Certificate[0]
}

// sslProps is the properties of an SSL connection with the key-value pairs kv.
func sslProps(kv ...string) map[string]string {
	props := map[string]string{"security.protocol": "SSL"}
	for i := 0; i < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	return props
}

// TestKeyStoreFromProperties reads every accepted form of a PEM key store: a file, inline
// values (also continued over lines in a properties file), an encrypted key with
// ssl.key.password (ours and openssl's), and no key store at all.
func TestKeyStoreFromProperties(t *testing.T) {
	t.Parallel()
	p := pki()
	opensslStore, err := os.ReadFile("testdata/openssl-encrypted-keystore.pem")
	require.NoError(t, err)
	read := files(map[string]string{
		"/ks.pem":           p.clientKey + p.clientCert,
		"/chain-first.pem":  p.clientCert + p.clientKey,
		"/encrypted.pem":    encryptPKCS8(t, p.clientKey, "secret", nil) + p.clientCert,
		"/openssl.pem":      string(opensslStore),
		"/no-line-end.pem":  strings.TrimSpace(p.clientCert + p.clientKey),
		"/with-headers.pem": "Bag Attributes\n    friendlyName: tool\n" + p.clientKey + "subject=CN = tool\n" + p.clientCert,
	})
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"location", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem")},
		{"location, chain before key", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/chain-first.pem")},
		{"location, no last line break", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/no-line-end.pem")},
		{"location, text around the blocks", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/with-headers.pem")},
		{"location, encrypted key", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/encrypted.pem", "ssl.key.password", "secret")},
		{"inline", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", p.clientKey, "ssl.keystore.certificate.chain", p.clientCert)},
		{"inline, encrypted key", sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", encryptPKCS8(t, p.clientKey, "pw", nil),
			"ssl.keystore.certificate.chain", p.clientCert, "ssl.key.password", "pw")},
		{"SASL_SSL", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS,
			"ssl.keystore.type": "PEM", "ssl.keystore.location": "/ks.pem"}},
	} {
		s, unused, err := securityFromProperties(tc.props, read)
		require.NoError(t, err, tc.name)
		assert.Empty(t, unused, tc.name)
		assert.Equal(t, p.clientDER, clientLeaf(t, s), tc.name)
		assert.Len(t, s.keyPair.Certificate, 2, tc.name)
		cfg, err := s.tlsConfig()
		require.NoError(t, err, tc.name)
		assert.Equal(t, []tls.Certificate{*s.keyPair}, cfg.Certificates, tc.name)
	}

	// A properties file continues the PEM values over lines, as Kafka's documentation writes them.
	props, err := parseProperties("security.protocol=SSL\nssl.keystore.type=PEM\n" +
		"ssl.keystore.key=" + inlinePEM([]byte(p.clientKey)) + "\n" +
		"ssl.keystore.certificate.chain=" + inlinePEM([]byte(p.clientCert)) + "\n")
	require.NoError(t, err)
	s, _, err := securityFromProperties(props, read)
	require.NoError(t, err)
	assert.Equal(t, p.clientDER, clientLeaf(t, s))

	// openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256 -passout pass:kshare-secret,
	// then openssl req -x509 -subj /CN=kshare-groups-openssl: another implementation's key.
	s, _, err = securityFromProperties(sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/openssl.pem", "ssl.key.password", "kshare-secret"), read)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(clientLeaf(t, s))
	require.NoError(t, err)
	assert.Equal(t, "kshare-groups-openssl", leaf.Subject.CommonName)

	// No key store, as Kafka allows: for brokers that do not ask for a client certificate. A
	// key store without TLS is not read, as Kafka does not read it.
	for _, props := range []map[string]string{
		sslProps(),
		sslProps("ssl.keystore.type", "JKS"),
		sslProps("ssl.keystore.type", "PKCS12", "ssl.key.password", "x"),
		{"security.protocol": "PLAINTEXT", "ssl.keystore.type": "JKS", "ssl.keystore.location": "/ks.jks"},
	} {
		s, unused, err := securityFromProperties(props, read)
		require.NoError(t, err, "%v", props)
		assert.Nil(t, s.keyPair, "%v", props)
		assert.Empty(t, unused, "%v", props)
	}
}

// TestKeyStoreFromPropertiesRefuses: each key store Kafka refuses is refused with Kafka's
// message, in Kafka's order; JKS and PKCS12 key stores, which Kafka reads, with the tool's.
func TestKeyStoreFromPropertiesRefuses(t *testing.T) {
	t.Parallel()
	p := pki()
	pbes1, err := os.ReadFile("testdata/openssl-pbes1-keystore.pem")
	require.NoError(t, err)
	encrypted := encryptPKCS8(t, p.clientKey, "secret", nil)
	read := files(map[string]string{
		"/ks.pem":        p.clientKey + p.clientCert,
		"/no-key.pem":    p.clientCert,
		"/two-keys.pem":  p.clientKey + p.clientKey + p.clientCert,
		"/sec1.pem":      p.clientSEC1 + p.clientCert,
		"/no-cert.pem":   p.clientKey,
		"/other-key.pem": p.otherKey + p.clientCert,
		"/encrypted.pem": encrypted + p.clientCert,
		"/pbes1.pem":     string(pbes1),
		"/pbes1-ours.pem": encryptPKCS8(t, p.clientKey, "secret", asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 3}) +
			p.clientCert,
	})
	const failed = "Failed to load PEM SSL keystore "
	for _, tc := range []struct {
		props map[string]string
		msg   string
	}{
		{sslProps("ssl.keystore.key", p.clientKey, "ssl.keystore.certificate.chain", p.clientCert),
			"SSL private key can be specified only for PEM, but key store type is JKS."},
		{sslProps("ssl.keystore.type", "PKCS12", "ssl.keystore.key", p.clientKey),
			"SSL private key can be specified only for PEM, but key store type is PKCS12."},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", p.clientKey),
			"SSL private key is specified, but certificate chain is not specified."},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", p.clientKey, "ssl.keystore.certificate.chain", p.clientCert, "ssl.keystore.location", "/ks.pem"),
			"Both SSL key store location and separate private key are specified."},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", p.clientKey, "ssl.keystore.certificate.chain", p.clientCert, "ssl.keystore.password", "x"),
			"SSL key store password cannot be specified with PEM format, only key password may be specified."},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.certificate.chain", p.clientCert),
			"SSL certificate chain is specified, but private key is not specified"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.keystore.password", "x"),
			"SSL key store password cannot be specified with PEM format, only key password may be specified"},
		{sslProps("ssl.keystore.password", "x"), "SSL key store is not specified, but key store password is specified."},
		{sslProps("ssl.keystore.location", "/ks.jks"), "SSL key store is specified, but key store password is not specified."},
		{sslProps("ssl.keystore.location", "/ks.jks", "ssl.keystore.password", "x"),
			"Invalid value JKS for configuration ssl.keystore.type: this tool reads key stores of type PEM only (ssl.keystore.type=PEM)"},
		{sslProps("ssl.keystore.type", "PKCS12", "ssl.keystore.location", "/ks.p12", "ssl.keystore.password", "x"),
			"Invalid value PKCS12 for configuration ssl.keystore.type: this tool reads key stores of type PEM only (ssl.keystore.type=PEM)"},
		{sslProps("ssl.keystore.type", "BKS"),
			"Invalid value BKS for configuration ssl.keystore.type: this tool knows PEM (and JKS and PKCS12 without a key store: no client certificate)"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/missing.pem"),
			"ssl.keystore.location: open /missing.pem: file does not exist"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/no-key.pem"),
			failed + "/no-key.pem: Invalid PEM keystore configs: No matching PRIVATE KEY entries in PEM file"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/two-keys.pem"),
			failed + "/two-keys.pem: Invalid PEM keystore configs: Expected one private key, but found 2"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/no-cert.pem"),
			failed + "/no-cert.pem: Invalid PEM keystore configs: No matching CERTIFICATE entries in PEM file"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.key", p.clientKey, "ssl.keystore.certificate.chain", "none"),
			"Invalid PEM keystore configs: No matching CERTIFICATE entries in PEM file"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/other-key.pem"),
			failed + "/other-key.pem: Invalid PEM keystore configs: tls: private key does not match public key"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/encrypted.pem", "ssl.key.password", "wrong"),
			failed + "/encrypted.pem: Invalid PEM keystore configs: the key does not decrypt with ssl.key.password (bad padding): wrong password?"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.key.password", "secret"),
			failed + "/ks.pem: Invalid PEM keystore configs: not an encrypted PKCS#8 private key (ENCRYPTED PRIVATE KEY)"},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/pbes1.pem", "ssl.key.password", "kshare-secret"),
			failed + "/pbes1.pem: Invalid PEM keystore configs: encryption 1.2.840.113549.1.12.1.3: " + errUnsupportedEncryption.Error()},
		{sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", "/pbes1-ours.pem", "ssl.key.password", "secret"),
			failed + "/pbes1-ours.pem: Invalid PEM keystore configs: encryption 1.2.840.113549.1.5.3: " + errUnsupportedEncryption.Error()},
	} {
		_, _, err := securityFromProperties(tc.props, read)
		assert.EqualError(t, err, tc.msg, "%v", tc.props)
	}

	// Kafka reads a key as PKCS#8 only; an encrypted key without its password, or a key in
	// SEC 1, does not load.
	for _, name := range []string{"/sec1.pem", "/encrypted.pem"} {
		_, _, err := securityFromProperties(sslProps("ssl.keystore.type", "PEM", "ssl.keystore.location", name), read)
		require.Error(t, err, name)
		assert.True(t, strings.HasPrefix(err.Error(), failed+name+": Invalid PEM keystore configs: Private key could not be loaded: "), err.Error())
	}
}

// TestKeyStoreFromFlags: --tls-cert and --tls-key present a client certificate (with or
// without --tls-ca and --command-config), and go together.
func TestKeyStoreFromFlags(t *testing.T) {
	t.Parallel()
	p := pki()
	read := files(map[string]string{
		"/cert.pem":      p.clientCert,
		"/key.pem":       p.clientKey,
		"/other-key.pem": p.otherKey,
		"/ca.pem":        p.caPEM,
		"/c.properties":  "security.protocol=SSL\n",
	})
	for _, f := range []connectionFlags{
		{tlsCert: "/cert.pem", tlsKey: "/key.pem"},
		{tlsCert: "/cert.pem", tlsKey: "/key.pem", tlsCA: "/ca.pem"},
		{tlsCert: "/cert.pem", tlsKey: "/key.pem", commandConfig: "/c.properties"},
	} {
		s, _, err := securityFromFlags(f, read)
		require.NoError(t, err, "%+v", f)
		assert.True(t, s.tls)
		assert.Equal(t, p.clientDER, clientLeaf(t, s))
	}

	for _, tc := range []struct {
		flags connectionFlags
		msg   string
	}{
		{connectionFlags{tlsCert: "/cert.pem"}, "--tls-cert and --tls-key go together: the client certificate and its private key"},
		{connectionFlags{tlsKey: "/key.pem"}, "--tls-cert and --tls-key go together: the client certificate and its private key"},
		{connectionFlags{tlsCert: "/missing.pem", tlsKey: "/key.pem"}, "--tls-cert: open /missing.pem: file does not exist"},
		{connectionFlags{tlsCert: "/cert.pem", tlsKey: "/missing.pem"}, "--tls-key: open /missing.pem: file does not exist"},
		{connectionFlags{tlsCert: "/key.pem", tlsKey: "/key.pem"},
			"--tls-cert /key.pem --tls-key /key.pem: Invalid PEM keystore configs: No matching CERTIFICATE entries in PEM file"},
		{connectionFlags{tlsCert: "/cert.pem", tlsKey: "/cert.pem"},
			"--tls-cert /cert.pem --tls-key /cert.pem: Invalid PEM keystore configs: No matching PRIVATE KEY entries in PEM file"},
		{connectionFlags{tlsCert: "/cert.pem", tlsKey: "/other-key.pem"},
			"--tls-cert /cert.pem --tls-key /other-key.pem: Invalid PEM keystore configs: tls: private key does not match public key"},
	} {
		_, _, err := securityFromFlags(tc.flags, read)
		assert.EqualError(t, err, tc.msg, "%+v", tc.flags)
	}
}

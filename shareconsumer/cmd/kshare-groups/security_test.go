package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
	scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`
	oauthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`
)

// files is a readFile over a map.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if v, ok := m[name]; ok {
			return []byte(v), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
}

// testCAPEM is a real CA certificate in PEM, a testbroker's.
var testCAPEM = sync.OnceValue(func() string {
	c, err := testbroker.Start(testbroker.GeneratedTLS())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	return string(c.TLSCAPEM())
})

// TestSecurityFromProperties reads every accepted form of Kafka's client security properties.
func TestSecurityFromProperties(t *testing.T) {
	t.Parallel()
	read := files(map[string]string{"/ca.pem": testCAPEM()})
	for _, tc := range []struct {
		name   string
		props  map[string]string
		want   security
		unused []string
	}{
		{"nothing is PLAINTEXT", map[string]string{}, security{}, nil},
		{"PLAINTEXT, other properties unused", map[string]string{"security.protocol": "PLAINTEXT", "client.id": "x", "request.timeout.ms": "5"},
			security{}, []string{"client.id", "request.timeout.ms"}},
		{"SSL with the system's CAs", map[string]string{"security.protocol": "ssl"}, security{tls: true}, nil},
		{"SSL, truststore type JKS without a store", map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, security{tls: true}, nil},
		{"SSL, PEM location", map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem"},
			security{tls: true, trustPEM: []byte(testCAPEM()), trustFrom: "/ca.pem"}, nil},
		{"SSL, inline PEM, no host check", map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": testCAPEM(),
			"ssl.endpoint.identification.algorithm": ""},
			security{tls: true, trustPEM: []byte(testCAPEM()), trustFrom: "ssl.truststore.certificates", skipHost: true}, nil},
		{"SSL, host check HTTPS", map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "HTTPS"}, security{tls: true}, nil},
		{"SASL_PLAINTEXT PLAIN", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS},
			security{mechanism: "PLAIN", username: "u", password: "p"}, nil},
		{"SASL_SSL SCRAM-SHA-256", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": scramJAAS},
			security{tls: true, mechanism: "SCRAM-SHA-256", username: "u", password: "p"}, nil},
		{"SCRAM-SHA-512 with PlainLoginModule, as Kafka's callback handler allows", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": plainJAAS},
			security{mechanism: "SCRAM-SHA-512", username: "u", password: "p"}, nil},
		{"an empty password", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="";`},
			security{mechanism: "PLAIN", username: "u"}, nil},
		{"SASL properties unused without SASL", map[string]string{"sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS}, security{}, nil},
	} {
		got, unused, err := securityFromProperties(tc.props, read)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.unused, unused, tc.name)
	}

	got, _, err := securityFromProperties(map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthJAAS}, read)
	require.NoError(t, err)
	assert.True(t, got.tls)
	assert.Equal(t, "OAUTHBEARER", got.mechanism)
	require.NotNil(t, got.oauthLogin)
	assert.Equal(t, map[string]any{"sub": "alice"}, got.oauthLogin.claims)
}

// TestSecurityFromPropertiesRefuses: each value the tool does not support is refused with a
// message naming the property (Kafka's message where Kafka refuses it too).
func TestSecurityFromPropertiesRefuses(t *testing.T) {
	t.Parallel()
	read := files(map[string]string{"/ca.pem": testCAPEM(), "/empty.pem": "no certificate here"})
	sasl := func(mechanism, jaas string) map[string]string {
		return map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas}
	}
	for _, tc := range []struct {
		props map[string]string
		msg   string
	}{
		{map[string]string{"security.protocol": "TLS"},
			"Invalid value TLS for configuration security.protocol: String must be one of (case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.jaas.config": plainJAAS},
			"Invalid value GSSAPI for configuration sasl.mechanism: this tool supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
		{sasl("scram-sha-256", scramJAAS),
			"Invalid value scram-sha-256 for configuration sasl.mechanism: this tool supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
		{sasl("PLAIN", ""), "sasl.jaas.config is required with SASL: Could not find a 'KafkaClient' entry in the JAAS configuration"},
		{sasl("PLAIN", "M required"), "sasl.jaas.config: JAAS config entry not terminated by semi-colon"},
		{sasl("PLAIN", `com.example.Login required username="u" password="p";`),
			"sasl.jaas.config: PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule or org.apache.kafka.common.security.scram.ScramLoginModule, not com.example.Login"},
		{sasl("PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`),
			"sasl.jaas.config: org.apache.kafka.common.security.plain.PlainLoginModule has no password"},
		{sasl("SCRAM-SHA-512", `org.apache.kafka.common.security.scram.ScramLoginModule required password="p";`),
			"sasl.jaas.config: org.apache.kafka.common.security.scram.ScramLoginModule has no username"},
		{sasl("OAUTHBEARER", plainJAAS),
			"sasl.jaas.config: OAUTHBEARER needs org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule, not org.apache.kafka.common.security.plain.PlainLoginModule"},
		{sasl("OAUTHBEARER", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`),
			"sasl.jaas.config: No principal name in JWT claim: sub"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.certificates": testCAPEM()},
			"SSL trust store certs can be specified only for PEM, but trust store type is JKS."},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": testCAPEM(), "ssl.truststore.location": "/ca.pem"},
			"Both SSL trust store location and separate trust certificates are specified."},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/ca.pem"},
			"Invalid value JKS for configuration ssl.truststore.type: this tool reads trust stores of type PEM only (ssl.truststore.type=PEM)"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/ca.p12"},
			"Invalid value PKCS12 for configuration ssl.truststore.type: this tool reads trust stores of type PEM only (ssl.truststore.type=PEM)"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "BKS"},
			"Invalid value BKS for configuration ssl.truststore.type: this tool knows PEM (and JKS and PKCS12 without a trust store: the system's CAs)"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/missing.pem"},
			"ssl.truststore.location: open /missing.pem: file does not exist"},
		{map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldaps"},
			"Invalid value ldaps for configuration ssl.endpoint.identification.algorithm: this tool knows https (check the broker's host name, the default) and the empty value (do not)"},
	} {
		_, _, err := securityFromProperties(tc.props, read)
		assert.EqualError(t, err, tc.msg, "%v", tc.props)
	}
	for _, name := range unsupportedProperties {
		_, _, err := securityFromProperties(map[string]string{"security.protocol": "SSL", name: "x"}, read)
		require.Error(t, err, name)
		assert.True(t, strings.HasPrefix(err.Error(), name+" is not supported by this tool: "), err.Error())
	}

	// A trust store without a certificate fails when the TLS config is made, with Kafka's message.
	s, _, err := securityFromProperties(map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/empty.pem"}, read)
	require.NoError(t, err)
	_, err = s.kgoOpts(time.Now)
	assert.EqualError(t, err, "/empty.pem: No matching CERTIFICATE entries in PEM file")
	s.trustPEM = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	_, err = s.kgoOpts(time.Now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/empty.pem: Invalid PEM truststore configs: x509: ")
}

// TestCertPool reads PEM as it comes in a file and as a properties value continued over lines
// (whitespace where the line breaks were), and several certificates.
func TestCertPool(t *testing.T) {
	t.Parallel()
	oneLine := strings.Join(strings.Fields(testCAPEM()), " ")
	oneLine = strings.Replace(oneLine, "BEGIN CERTIFICATE", "BEGIN  CERTIFICATE", 1)
	for _, text := range []string{testCAPEM(), oneLine, testCAPEM() + testCAPEM(), strings.TrimSpace(testCAPEM())} {
		pool, err := certPool([]byte(text))
		require.NoError(t, err, text)
		assert.NotNil(t, pool)
	}
}

// TestSecurityFromFlags lays the shortcut flags over --command-config and refuses what does
// not go together.
func TestSecurityFromFlags(t *testing.T) {
	t.Parallel()
	read := files(map[string]string{
		"/ca.pem":       testCAPEM(),
		"/c.properties": "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + plainJAAS + "\nclient.id=tool\nacks=all\n",
		"/bad":          `k=\u12`,
		"/bad-protocol": "security.protocol=QUIC\n",
	})
	for _, tc := range []struct {
		name   string
		flags  connectionFlags
		want   security
		unused []string
	}{
		{"none", connectionFlags{}, security{}, nil},
		{"--tls", connectionFlags{tls: true}, security{tls: true}, nil},
		{"--tls-ca", connectionFlags{tlsCA: "/ca.pem"}, security{tls: true, trustPEM: []byte(testCAPEM()), trustFrom: "/ca.pem"}, nil},
		{"--sasl-*", connectionFlags{saslMechanism: "SCRAM-SHA-512", saslUsername: "a", saslPassword: "b"},
			security{mechanism: "SCRAM-SHA-512", username: "a", password: "b"}, nil},
		{"--command-config", connectionFlags{commandConfig: "/c.properties"},
			security{mechanism: "PLAIN", username: "u", password: "p"}, []string{"acks", "client.id"}},
		{"--command-config and flags over it", connectionFlags{commandConfig: "/c.properties", tlsCA: "/ca.pem", saslMechanism: "SCRAM-SHA-256", saslUsername: "a", saslPassword: "b"},
			security{tls: true, trustPEM: []byte(testCAPEM()), trustFrom: "/ca.pem", mechanism: "SCRAM-SHA-256", username: "a", password: "b"}, []string{"acks", "client.id"}},
	} {
		got, unused, err := securityFromFlags(tc.flags, read)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.unused, unused, tc.name)
	}

	got, _, err := securityFromFlags(connectionFlags{saslMechanism: "OAUTHBEARER", saslUsername: "alice"}, read)
	require.NoError(t, err)
	require.NotNil(t, got.oauthLogin)
	assert.Equal(t, "OAUTHBEARER", got.mechanism)
	assert.Equal(t, map[string]any{"sub": "alice"}, got.oauthLogin.claims)
	assert.Equal(t, int64(3600), got.oauthLogin.lifetime)

	for _, tc := range []struct {
		flags connectionFlags
		msg   string
	}{
		{connectionFlags{saslUsername: "a"}, "--sasl-username and --sasl-password need --sasl-mechanism"},
		{connectionFlags{saslPassword: "a"}, "--sasl-username and --sasl-password need --sasl-mechanism"},
		{connectionFlags{saslMechanism: "GSSAPI", saslUsername: "a"}, "--sasl-mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
		{connectionFlags{saslMechanism: "PLAIN"}, "--sasl-mechanism PLAIN needs --sasl-username"},
		{connectionFlags{saslMechanism: "OAUTHBEARER", saslUsername: "a", saslPassword: "b"},
			"--sasl-password is not used with OAUTHBEARER: the token is unsecured, its sub claim --sasl-username"},
		{connectionFlags{tlsCA: "/missing.pem"}, "--tls-ca: open /missing.pem: file does not exist"},
		{connectionFlags{commandConfig: "/missing"}, "--command-config: open /missing: file does not exist"},
		{connectionFlags{commandConfig: "/bad"}, `--command-config /bad: Malformed \uxxxx encoding.`},
		{connectionFlags{commandConfig: "/bad-protocol"},
			"--command-config /bad-protocol: Invalid value QUIC for configuration security.protocol: String must be one of (case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
	} {
		_, _, err := securityFromFlags(tc.flags, read)
		assert.EqualError(t, err, tc.msg, "%+v", tc.flags)
	}
}

// TestSecurityOptionsNeedBootstrapServer: the embedded testbroker has no security, so the
// connection options without --bootstrap-server are refused before it starts.
func TestSecurityOptionsNeedBootstrapServer(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--list", "--tls"}, {"--list", "--command-config", "x"}, {"--list", "--sasl-mechanism", "PLAIN"}, {"--list", "--tls-cert", "c", "--tls-key", "k"}} {
		_, err := parseArgs(args)
		assert.EqualError(t, err, "--command-config, --tls* and --sasl-* need --bootstrap-server: the embedded testbroker runs without security", "%v", args)
	}
}

// TestUnusedPropertiesWarned: properties the tool does not use are named on stderr, as a Kafka
// client logs them, and the command goes on.
func TestUnusedPropertiesWarned(t *testing.T) {
	t.Parallel()
	var warned []string
	_, err := newConnection("127.0.0.1:1", connectionFlags{commandConfig: writeFile(t, "c.properties", "client.id=x\nretries=3\n")},
		func(msg string) { warned = append(warned, msg) })
	require.NoError(t, err)
	assert.Equal(t, []string{"These configurations '[client.id, retries]' were supplied but are not used yet."}, warned)
}

// TestTLSConfigHostCheck dials a TLS broker by a name its certificate does not have: refused
// with the host check on; accepted with ssl.endpoint.identification.algorithm empty, which
// still checks the chain, so a CA the tool does not trust is refused either way.
func TestTLSConfigHostCheck(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.GeneratedTLS())
	other := testbroker.StartT(t, testbroker.GeneratedTLS())
	dial := func(s security) error {
		cfg, err := s.tlsConfig()
		require.NoError(t, err)
		cfg.ServerName = "kafka.example"
		conn, err := tls.Dial("tcp", c.Addrs()[0], cfg)
		if err == nil {
			conn.Close()
		}
		return err
	}
	s := security{tls: true, trustPEM: c.TLSCAPEM(), trustFrom: "ca"}
	err := dial(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not kafka.example")

	s.skipHost = true
	require.NoError(t, dial(s))

	s.trustPEM = other.TLSCAPEM()
	err = dial(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
}

// TestUnsecuredLogin checks the options of Kafka's unsecured OAUTHBEARER login and the token
// made from them: an unsecured JWS with alg none, no signature, the claims, iat and exp.
func TestUnsecuredLogin(t *testing.T) {
	t.Parallel()
	u, err := parseUnsecuredLogin(map[string]string{
		"unsecuredLoginStringClaim_sub":       "alice",
		"unsecuredLoginStringClaim_aud":       `a"b`,
		"unsecuredLoginNumberClaim_nbf":       "12.5",
		"unsecuredLoginLifetimeSeconds":       "60",
		"unsecuredLoginExtension_traceId":     "123",
		"unsecuredLoginScopeClaimName":        "scp",
		"someOtherOption":                     "ignored, as Kafka ignores it",
		"unsecuredLoginStringClaim_":          "ignored: no claim name",
		"unsecuredLoginPrincipalClaimName":    " sub ",
		"unsecuredLoginExtension_environment": "prod",
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"traceId": "123", "environment": "prod"}, u.extensions)

	now := time.Date(2026, 12, 5, 17, 0, 0, 123_000_000, time.UTC)
	token := u.token(now)
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	assert.Empty(t, parts[2], "an unsecured JWS has no signature")
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"alg":"none"}`, string(header))
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(payload, &claims))
	iat := float64(now.UnixMilli()) / 1000
	assert.Equal(t, map[string]any{"sub": "alice", "aud": `a"b`, "nbf": 12.5, "iat": iat, "exp": iat + 60}, claims)

	u, err = parseUnsecuredLogin(map[string]string{"unsecuredLoginStringClaim_user": "bob", "unsecuredLoginPrincipalClaimName": "user"})
	require.NoError(t, err)
	assert.Equal(t, int64(3600), u.lifetime, "Kafka's default lifetime")

	for _, tc := range []struct {
		options map[string]string
		msg     string
	}{
		{map[string]string{}, "No principal name in JWT claim: sub"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "  "}, "No principal name in JWT claim: sub"},
		{map[string]string{"unsecuredLoginNumberClaim_sub": "1"}, "No principal name in JWT claim: sub"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginPrincipalClaimName": "user"}, "No principal name in JWT claim: user"},
		{map[string]string{"unsecuredLoginExtension_traceId": "1"}, "Extensions provided in login context without a token"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginStringClaim_iat": "1"}, "Cannot explicitly set the 'iat' claim"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_exp": "1"}, "Cannot explicitly set the 'exp' claim"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_n": "one"}, `For input string: "one"`},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "1.5"}, `For input string: "1.5"`},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"}, "Extension name auth is invalid"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_trace_id": "x"}, "Extension name trace_id is invalid"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_t": "\x01"}, "Extension value (\x01) for extension t is invalid"},
		{map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginListClaim_scope": "|a|b"},
			"unsecuredLoginListClaim_scope is not supported by this tool: give string and number claims only"},
	} {
		_, err := parseUnsecuredLogin(tc.options)
		assert.EqualError(t, err, tc.msg, "%v", tc.options)
	}
}

// TestOAuthMechanismToken: the OAUTHBEARER mechanism sends a fresh token, stamped with the
// clock, in its initial message.
func TestOAuthMechanismToken(t *testing.T) {
	t.Parallel()
	s, _, err := securityFromFlags(connectionFlags{saslMechanism: "OAUTHBEARER", saslUsername: "alice"}, files(nil))
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	m := s.saslMechanism(func() time.Time { return now })
	assert.Equal(t, "OAUTHBEARER", m.Name())
	_, first, err := m.Authenticate(t.Context(), "broker:9092")
	require.NoError(t, err)
	assert.Contains(t, string(first), "auth=Bearer "+s.oauthLogin.token(now)+"\x01")

	for mech, name := range map[string]string{"PLAIN": "PLAIN", "SCRAM-SHA-256": "SCRAM-SHA-256", "SCRAM-SHA-512": "SCRAM-SHA-512"} {
		s := security{mechanism: mech, username: "u", password: "p"}
		assert.Equal(t, name, s.saslMechanism(time.Now).Name())
	}
}

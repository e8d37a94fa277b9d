package testbroker_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kshare/kshare/testbroker"
)

// alice is the subject of the client certificates of these tests.
var alice = pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}}

// mtlsCluster starts a GeneratedTLS cluster requiring client certificates, the authorizer on
// and User:CN=admin a super user.
func mtlsCluster(t *testing.T, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.GeneratedTLS(),
		testbroker.BrokerConfig("ssl.client.auth", "required"),
		testbroker.BrokerConfig("authorizer.class.name", testbroker.StandardAuthorizer),
		testbroker.BrokerConfig("super.users", "User:CN=admin"),
	}, opts...)...)
}

// certConfig is c.ClientTLS presenting a certificate for subject.
func certConfig(t *testing.T, c *testbroker.Cluster, subject pkix.Name) *tls.Config {
	t.Helper()
	cert, err := c.ClientCert(subject)
	require.NoError(t, err)
	cfg := c.ClientTLS()
	cfg.Certificates = []tls.Certificate{cert}
	return cfg
}

// certClient is a kgo client presenting a certificate for subject, closed when the test ends.
func certClient(t *testing.T, c *testbroker.Cluster, subject pkix.Name, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return tlsClient(t, c, append([]kgo.Opt{kgo.DialTLSConfig(certConfig(t, c, subject))}, opts...)...)
}

// TestMTLSRequired: with ssl.client.auth=required a client without a certificate, or with one
// another CA signed, fails the handshake; one with the cluster CA's certificate connects as
// User: and its subject, which ACLs allow and deny.
func TestMTLSRequired(t *testing.T) {
	var logs logBuffer
	c := mtlsCluster(t, testbroker.Topic("t", 1), testbroker.Topic("secret", 1), loggerTo(&logs))
	ctx := aclContext(t)

	err := tlsClient(t, c).Ping(ctx)
	require.Error(t, err, "no certificate")
	require.NoError(t, ctx.Err())

	other := testbroker.StartT(t, testbroker.GeneratedTLS())
	foreign := certConfig(t, other, alice)
	foreign.RootCAs = c.TLSCA()
	err = tlsClient(t, c, kgo.DialTLSConfig(foreign)).Ping(ctx)
	require.Error(t, err, "a certificate of another CA")
	require.NoError(t, ctx.Err())
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "SSL handshake failed") && strings.Contains(logs.String(), "certificate signed by unknown authority")
	}, 10*time.Second, 10*time.Millisecond)

	admin := kadm.NewClient(certClient(t, c, pkix.Name{CommonName: "admin"}))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:CN=alice,OU=eng,O=acme").AllowHosts().Topics("t").
		Operations(kadm.OpWrite, kadm.OpDescribe))

	cl := certClient(t, c, alice)
	require.NoError(t, produceCode(t, ctx, cl, "t"))
	require.ErrorIs(t, produceCode(t, ctx, cl, "secret"), kerr.TopicAuthorizationFailed)
	assert.Equal(t, map[string]int16{"t": 0, "secret": kerr.TopicAuthorizationFailed.Code}, metadataTopics(t, ctx, cl, "t", "secret"))

	bob := certClient(t, c, pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}})
	require.ErrorIs(t, produceCode(t, ctx, bob, "t"), kerr.TopicAuthorizationFailed)
}

// TestMTLSPrincipalMappingRules: RULE:^CN=(.*?),.*$/$1/ makes alice's certificate User:alice;
// a subject no rule maps cannot connect; a rule SslPrincipalMapper cannot read is refused.
func TestMTLSPrincipalMappingRules(t *testing.T) {
	var logs logBuffer
	c := mtlsCluster(t, testbroker.Topic("t", 1), loggerTo(&logs),
		testbroker.BrokerConfig("ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/"),
		testbroker.BrokerConfig("super.users", "User:admin"))
	ctx := aclContext(t)

	admin := kadm.NewClient(certClient(t, c, pkix.Name{CommonName: "admin", Organization: []string{"acme"}}))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpWrite))
	require.NoError(t, produceCode(t, ctx, certClient(t, c, alice), "t"))

	err := certClient(t, c, pkix.Name{CommonName: "solo"}).Ping(ctx)
	require.Error(t, err, "CN=solo matches no rule")
	require.NoError(t, ctx.Err())
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "Failed to map name for 'CN=solo' based on SSL principal mapping rules.: No rules apply to CN=solo, rules [RULE:^CN=(.*?),.*$/$1]")
	}, 10*time.Second, 10*time.Millisecond)

	_, err = testbroker.Start(testbroker.GeneratedTLS(), testbroker.BrokerConfig("ssl.principal.mapping.rules", "RULE:a/b/X"))
	require.ErrorContains(t, err, "Invalid value RULE:a/b/X for configuration ssl.principal.mapping.rules: Invalid rule: `RULE:a/b/X`, unmatched substring: `X`")
	_, err = testbroker.Start(testbroker.GeneratedTLS(), testbroker.BrokerConfig("ssl.client.auth", "always"))
	require.ErrorContains(t, err, "Invalid value always for configuration ssl.client.auth: String must be one of: required, requested, none")
}

// TestMTLSRequested: with ssl.client.auth=requested a client without a certificate connects as
// User:ANONYMOUS, one with a certificate as its subject, and one of another CA fails.
func TestMTLSRequested(t *testing.T) {
	c := mtlsCluster(t, testbroker.Topic("t", 1), testbroker.Topic("u", 1), testbroker.BrokerConfig("ssl.client.auth", "requested"))
	ctx := aclContext(t)

	admin := kadm.NewClient(certClient(t, c, pkix.Name{CommonName: "admin"}))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts().Topics("t").Operations(kadm.OpDescribe))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:CN=alice,OU=eng,O=acme").AllowHosts().Topics("t").Operations(kadm.OpWrite))

	anon := tlsClient(t, c)
	assert.Equal(t, map[string]int16{"t": 0, "u": kerr.TopicAuthorizationFailed.Code}, metadataTopics(t, ctx, anon, "t", "u"))
	require.NoError(t, produceCode(t, ctx, certClient(t, c, alice), "t"))

	other := testbroker.StartT(t, testbroker.GeneratedTLS())
	foreign := certConfig(t, other, alice)
	foreign.RootCAs = c.TLSCA()
	require.Error(t, tlsClient(t, c, kgo.DialTLSConfig(foreign)).Ping(ctx))
	require.NoError(t, ctx.Err())
}

// TestMTLSWithSASL: over SASL_SSL with a client certificate, the SASL principal is the
// connection's, as in Kafka.
func TestMTLSWithSASL(t *testing.T) {
	c := mtlsCluster(t, testbroker.Topic("t", 1), testbroker.SASL("PLAIN"),
		testbroker.User("admin", "admin-secret"), testbroker.User("bob", "bob-secret"),
		testbroker.BrokerConfig("super.users", "User:admin"))
	ctx := aclContext(t)

	admin := kadm.NewClient(certClient(t, c, alice, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:CN=alice,OU=eng,O=acme").AllowHosts().Topics("t").Operations(kadm.OpWrite))

	bob := certClient(t, c, alice, kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()))
	require.ErrorIs(t, produceCode(t, ctx, bob, "t"), kerr.TopicAuthorizationFailed, "User:bob, not the certificate's")
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("t").Operations(kadm.OpWrite))
	require.NoError(t, produceCode(t, ctx, bob, "t"))
}

// TestMTLSReplication: the replica fetchers present a certificate of their own and are a super
// user, so acks=all on a replicated topic works with ssl.client.auth=required and ACLs on, also
// across a broker restart.
func TestMTLSReplication(t *testing.T) {
	c := mtlsCluster(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("r", 2, 3))
	ctx := aclContext(t)
	admin := kadm.NewClient(certClient(t, c, pkix.Name{CommonName: "admin"}))
	createACLs(t, ctx, admin, kadm.NewACLs().Allow("User:CN=alice,OU=eng,O=acme").AllowHosts().Topics("r").Operations(kadm.OpWrite))

	cl := certClient(t, c, alice, kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := range int32(2) {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Partition: p, Value: []byte("v")}).FirstErr())
	}
	require.NoError(t, c.StopBroker(1))
	require.NoError(t, c.StartBroker(1))
	require.Eventually(t, func() bool {
		for p := range int32(2) {
			if pt, ok := c.Partition("r", p); !ok || len(pt.ISR) != 3 {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "the restarted broker's fetchers rejoin every ISR")
}

// TestMTLSOwnClientCAs: with TLS(cfg), cfg.ClientCAs verifies client certificates (here the CA
// of another cluster); the replica fetchers of two brokers still replicate, and ClientCert,
// which signs with the generated CA only, fails.
func TestMTLSOwnClientCAs(t *testing.T) {
	issuer := testbroker.StartT(t, testbroker.GeneratedTLS())
	serverCert, _ := selfSigned(t)
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.ReplicatedTopic("r", 1, 2),
		testbroker.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: issuer.TLSCA()}),
		testbroker.BrokerConfig("ssl.client.auth", "required"))
	ctx := aclContext(t)

	_, err := c.ClientCert(alice)
	require.EqualError(t, err, "testbroker: ClientCert needs GeneratedTLS")

	cert, err := issuer.ClientCert(alice)
	require.NoError(t, err)
	cfg := c.ClientTLS()
	cfg.Certificates = []tls.Certificate{cert}
	cl := tlsClient(t, c, kgo.DialTLSConfig(cfg), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("x")}).FirstErr())
	p, _ := c.Partition("r", 0)
	for _, r := range p.ReplicaStates {
		assert.Equal(t, int64(1), r.LogEndOffset, "broker %d", r.Broker)
	}

	require.Error(t, tlsClient(t, c).Ping(ctx), "no certificate")
	require.NoError(t, ctx.Err())
}

// TestMTLSReservedInterBrokerName: a certificate that ssl.principal.mapping.rules maps to the
// replica fetchers' name, a super user, cannot connect.
func TestMTLSReservedInterBrokerName(t *testing.T) {
	var logs logBuffer
	c := mtlsCluster(t, loggerTo(&logs), testbroker.BrokerConfig("ssl.principal.mapping.rules", "RULE:^CN=([^,]*)$/$1/"))
	ctx := aclContext(t)

	require.NoError(t, certClient(t, c, pkix.Name{CommonName: "admin"}).Ping(ctx))
	err := certClient(t, c, pkix.Name{CommonName: "testbroker-inter-broker"}).Ping(ctx)
	require.Error(t, err, "the fetchers' name")
	require.NoError(t, ctx.Err())
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "Principal name testbroker-inter-broker is reserved for the cluster's replica fetchers")
	}, 10*time.Second, 10*time.Millisecond)
}

// TestMTLSWithSASLUnmapped: over SASL_SSL the certificate is not mapped, as in Kafka, so one
// that no ssl.principal.mapping.rules rule maps still connects, as its SASL user.
func TestMTLSWithSASLUnmapped(t *testing.T) {
	c := mtlsCluster(t, testbroker.Topic("t", 1), testbroker.SASL("PLAIN"),
		testbroker.User("admin", "admin-secret"),
		testbroker.BrokerConfig("ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/"),
		testbroker.BrokerConfig("super.users", "User:admin"))
	ctx := aclContext(t)

	cl := certClient(t, c, pkix.Name{CommonName: "solo"}, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	require.NoError(t, produceCode(t, ctx, cl, "t"))
}

// TestMTLSNone: with ssl.client.auth=none a client's certificate is not asked for, so the
// client is User:ANONYMOUS, not the certificate's subject (a super user here).
func TestMTLSNone(t *testing.T) {
	c := mtlsCluster(t, testbroker.Topic("t", 1), testbroker.BrokerConfig("ssl.client.auth", "none"),
		testbroker.BrokerConfig("super.users", "User:CN=alice,OU=eng,O=acme"))
	ctx := aclContext(t)

	cl := certClient(t, c, alice)
	assert.Equal(t, map[string]int16{"t": kerr.TopicAuthorizationFailed.Code}, metadataTopics(t, ctx, cl, "t"))
}

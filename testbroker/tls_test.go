package testbroker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// tlsClient is a kgo client of a TLS cluster, closed when the test ends.
func tlsClient(t *testing.T, c *testbroker.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.ClientTLS())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestTLSProduceConsumeAcrossBrokerRestart runs three TLS brokers with replicated partitions:
// a client produces, a broker stops and starts again (its new listener is TLS, its replica
// fetchers reach their leaders over TLS and it rejoins every ISR), and every record is
// consumed; the admin API answers over TLS too.
func TestTLSProduceConsumeAcrossBrokerRestart(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.GeneratedTLS(), testbroker.ReplicatedTopic("r", 3, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	producer := tlsClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"), kgo.MetadataMinAge(50*time.Millisecond))
	n := 0
	produce := func(k int) {
		for range k {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", n)}).FirstErr())
			n++
		}
	}
	produce(30)

	require.NoError(t, c.StopBroker(0))
	produce(30)
	require.NoError(t, c.StartBroker(0))
	// acks=all returns once the ISR of its moment has the record: producing until broker 0 is
	// back in every ISR waits for its fetchers' TLS connections without a sleep.
	for rejoined := false; !rejoined; {
		produce(1)
		rejoined = true
		for p := range int32(3) {
			pt, ok := c.Partition("r", p)
			require.True(t, ok)
			rejoined = rejoined && len(pt.ISR) == 3
		}
	}
	// The restarted broker serves TLS on its address.
	require.NoError(t, tlsClient(t, c, kgo.SeedBrokers(c.Addrs()[0])).Ping(ctx))

	consumer := tlsClient(t, c, kgo.ConsumeTopics("r"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	for len(got) < n {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for i := range n {
		assert.True(t, got[fmt.Sprintf("v%d", i)], "v%d", i)
	}

	adm := kadm.NewClient(tlsClient(t, c))
	meta, err := adm.BrokerMetadata(ctx)
	require.NoError(t, err)
	assert.Len(t, meta.Brokers, 3)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.Contains(t, topics, "r")
	assert.Len(t, topics["r"].Partitions, 3)
	created, err := adm.CreateTopic(ctx, 2, 1, nil, "made-over-tls")
	require.NoError(t, err)
	assert.NoError(t, created.Err)
}

// TestTLSShareConsumer consumes a record with kshare's share consumer over TLS.
func TestTLSShareConsumer(t *testing.T) {
	c := testbroker.StartT(t, testbroker.GeneratedTLS(), testbroker.Topic("t", 1))
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, tlsClient(t, c).ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr())

	cons, err := shareconsumer.New(
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.ClientTLS())),
		shareconsumer.Group("g"), shareconsumer.Topics("t"),
		shareconsumer.ExplicitAcknowledgement(),
	)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cons.Close(ctx)) }()
	var rs []*shareconsumer.Record
	for len(rs) == 0 {
		rs, err = cons.Poll(ctx)
		require.NoError(t, err)
	}
	require.Len(t, rs, 1)
	assert.Equal(t, "x", string(rs[0].Value))
	require.NoError(t, cons.Acknowledge(rs[0], acktype.Accept))
	errs, err := cons.CommitSync(ctx)
	require.NoError(t, err)
	for tp, err := range errs {
		require.NoError(t, err, "%v", tp)
	}
	start, _, ok := c.SharePartitionOffsets("g", "t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(1), start, "accepted")
}

// TestTLSUntrustedClientFails: a client that does not trust the generated CA fails its
// handshake with x509's unknown authority, and the broker logs the failed handshake.
func TestTLSUntrustedClientFails(t *testing.T) {
	var logs logBuffer
	c := testbroker.StartT(t, testbroker.GeneratedTLS(), loggerTo(&logs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	d := tls.Dialer{Config: &tls.Config{RootCAs: x509.NewCertPool()}}
	_, err := d.DialContext(ctx, "tcp", c.Addrs()[0])
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: x509.NewCertPool()}))
	require.NoError(t, err)
	defer cl.Close()
	err = cl.Ping(ctx)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the failure is the handshake's, not the deadline's")
	assert.ErrorAs(t, err, &unknown)

	// The broker's side of a handshake the client aborted is logged as Kafka logs it.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "SSL handshake failed") }, 10*time.Second, 10*time.Millisecond)
}

// TestTLSPlainTextClientFails: a plain-text client against a TLS listener gets an error, not a
// hang, and the broker closes the connection and logs why.
func TestTLSPlainTextClientFails(t *testing.T) {
	var logs logBuffer
	c := testbroker.StartT(t, testbroker.GeneratedTLS(), loggerTo(&logs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequestRetries(0))
	require.NoError(t, err)
	defer cl.Close()
	err = cl.Ping(ctx)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the broker closed the connection before the deadline")

	// The raw view: a Kafka request frame in plain text is answered by closing the connection.
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", c.Addrs()[0])
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Write(frameOf(apiVersionsV0()))
	require.NoError(t, err)
	_, err = io.ReadAll(nc) // an alert at most, then EOF
	require.NoError(t, err, "the broker closed the connection; a deadline error would mean it hung")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "SSL handshake failed") }, 10*time.Second, 10*time.Millisecond)
}

// apiVersionsV0 is an ApiVersions v0 request: key 18, version 0, correlation id 1, null client id.
func apiVersionsV0() []byte { return []byte{0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff} }

// TestTLSSilentClientClosedAtHandshakeDeadline: a client that opens a connection and never
// starts the handshake is closed after testbroker.request.read.timeout.ms, on the bubble's
// clock, and the broker logs it.
func TestTLSSilentClientClosedAtHandshakeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.GeneratedTLS(), loggerTo(&logs),
			testbroker.BrokerConfig("testbroker.request.read.timeout.ms", "5000"))
		rc := dialRawOn(t, c, c.Addrs()[0])
		ended := readErr(rc)
		time.Sleep(5*time.Second - time.Millisecond)
		requireOpen(t, ended, "before the handshake deadline")
		time.Sleep(time.Millisecond)
		assert.Equal(t, io.EOF, <-ended)
		synctest.Wait()
		assert.Contains(t, logs.String(), "SSL handshake failed: not complete after testbroker.request.read.timeout.ms (5000 ms)")
	})
}

// TestTLSInMemoryNetwork runs two TLS brokers on the in-memory network, with a replicated
// topic: clients wrap c.DialContext's connections in TLS themselves (kgo takes no Dialer with
// DialTLSConfig), and the replica fetchers reach their leaders over TLS.
func TestTLSInMemoryNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.GeneratedTLS(), testbroker.NumBrokers(2),
			testbroker.ReplicatedTopic("r", 1, 2))
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := c.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cfg := c.ClientTLS()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
			tc := tls.Client(nc, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				nc.Close()
				return nil, err
			}
			return tc, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := dialerClient(t, c, kgo.Dialer(dial), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics("r"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("x")}).FirstErr())
		p, ok := c.Partition("r", 0)
		require.True(t, ok)
		for _, r := range p.ReplicaStates {
			assert.Equal(t, int64(1), r.LogEndOffset, "acks=all: broker %d has the record", r.Broker)
		}
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		require.Equal(t, 1, fs.NumRecords())
		assert.Equal(t, "x", string(fs.Records()[0].Value))
	})
}

// selfSigned is a test's own server certificate for 127.0.0.1, and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
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
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestTLSOwnCertificate serves a test's own certificate on two brokers with a replicated
// topic: ClientTLS trusts it, a client with the test's own pool works too, and there is no
// generated CA.
func TestTLSOwnCertificate(t *testing.T) {
	cert, certPEM := selfSigned(t)
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}),
		testbroker.ReplicatedTopic("r", 1, 2))
	assert.Nil(t, c.TLSCA())
	assert.Nil(t, c.TLSCAPEM())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl := tlsClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("x")}).FirstErr())
	p, _ := c.Partition("r", 0)
	for _, r := range p.ReplicaStates {
		assert.Equal(t, int64(1), r.LogEndOffset, "the follower fetched over TLS: broker %d", r.Broker)
	}

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	own, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}))
	require.NoError(t, err)
	defer own.Close()
	require.NoError(t, own.Ping(ctx))
}

// TestGeneratedTLSCA checks the generated CA and server certificate: the PEM and the pool hold
// the same CA, the server certificate verifies for the loopback names, for days.
func TestGeneratedTLSCA(t *testing.T) {
	c := testbroker.StartT(t, testbroker.GeneratedTLS())
	block, _ := pem.Decode(c.TLSCAPEM())
	require.NotNil(t, block)
	ca, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.True(t, ca.IsCA)
	assert.Equal(t, x509.ECDSA, ca.PublicKeyAlgorithm)

	conn, err := tls.Dial("tcp", c.Addrs()[0], c.ClientTLS())
	require.NoError(t, err)
	leaf := conn.ConnectionState().PeerCertificates[0]
	require.NoError(t, conn.Close())
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: c.TLSCA()})
		assert.NoError(t, err, name)
		_, err = leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: c.TLSCA(), CurrentTime: time.Now().Add(72 * time.Hour)})
		assert.NoError(t, err, "%s, three days on", name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: c.TLSCA()})
	assert.Error(t, err)

	plain := testbroker.StartT(t)
	assert.Nil(t, plain.ClientTLS())
	assert.Nil(t, plain.TLSCA())
	assert.Nil(t, plain.TLSCAPEM())
}

func TestTLSOptionsRejected(t *testing.T) {
	cert, _ := selfSigned(t)
	for name, opts := range map[string][]testbroker.Opt{
		"both":           {testbroker.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}), testbroker.GeneratedTLS()},
		"nil config":     {testbroker.TLS(nil)},
		"no certificate": {testbroker.TLS(&tls.Config{})},
	} {
		_, err := testbroker.Start(opts...)
		assert.Error(t, err, name)
	}
	_, err := testbroker.Start(testbroker.TLS(nil))
	assert.ErrorContains(t, err, "use GeneratedTLS")
	_, err = testbroker.Start(testbroker.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert}))
	assert.EqualError(t, err, "testbroker: TLS(cfg): set the broker config ssl.client.auth instead of cfg.ClientAuth")
}

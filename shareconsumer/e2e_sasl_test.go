package shareconsumer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	kerrors "github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

func startSASLTestbroker(t *testing.T) *testbroker.Cluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.ReplicatedTopic("sasl", 1, 3),
		testbroker.SASL("SCRAM-SHA-256"), testbroker.User("alice", "secret"))
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	return c
}

// TestE2ETestbrokerSASLConsume: a share consumer authenticates with SCRAM-SHA-256 through
// ClientOpts(kgo.SASL(...)) and consumes what a SASL producer wrote.
func TestE2ETestbrokerSASLConsume(t *testing.T) {
	t.Parallel()
	c := startSASLTestbroker(t)
	auth := kgo.SASL(scram.Auth{User: "alice", Pass: "secret"}.AsSha256Mechanism())
	ctx := e2eCtx(t, 30*time.Second)
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), auth, kgo.DefaultProduceTopic("sasl"))
	require.NoError(t, err)
	defer p.Close()
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
	}

	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("sasl"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), auth))
	require.NoError(t, err)
	defer sc.Close(context.Background())
	recs := pollN(t, sc, 3, 30*time.Second)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	assert.Equal(t, []string{"a", "b", "c"}, got)
}

// TestE2ETestbrokerSASLWrongPassword: with a wrong password, Poll returns an
// *AuthenticationError at once (not when its context ends, and not "no broker reachable"),
// carrying Kafka's SASL_AUTHENTICATION_FAILED and message, and Status says why; the consumer
// keeps trying, so Poll says so again. Process returns the same error. testbroker only: kfake
// closes the connection on a wrong SCRAM password instead of answering
// SASL_AUTHENTICATION_FAILED, which no client can tell from a dropped connection.
func TestE2ETestbrokerSASLWrongPassword(t *testing.T) {
	t.Parallel()
	c := startSASLTestbroker(t)
	wrong := kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())
	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("sasl"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), wrong))
	require.NoError(t, err)
	defer sc.Close(context.Background())

	ctx := e2eCtx(t, 30*time.Second)
	recs, err := sc.Poll(ctx)
	assert.Empty(t, recs)
	require.NoError(t, ctx.Err(), "Poll returned at once, not when its context ended")
	var ae *kerrors.AuthenticationError
	require.ErrorAs(t, err, &ae)
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, c.Addrs(), ae.Broker)
	assert.Contains(t, err.Error(), "authentication failed with broker "+ae.Broker)
	assert.Contains(t, err.Error(), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")

	st := sc.Status()
	assert.Equal(t, kerrors.ReasonAuthentication, st.Reason)
	assert.Contains(t, st.Detail, "SASL_AUTHENTICATION_FAILED")
	assert.Equal(t, shareconsumer.StateJoining, st.State, "not fatal: the consumer keeps trying")

	_, err = sc.Poll(ctx)
	require.ErrorAs(t, err, &ae, "the next attempt fails the same way")

	err = sc.Process(ctx, func(context.Context, *shareconsumer.Record) error { return nil })
	require.NoError(t, ctx.Err())
	assert.ErrorAs(t, err, &ae, "Process returns it too")
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
}

// TestE2ETestbrokerTLSUntrustedCertificate: a consumer that does not trust the broker's
// certificate gets an *AuthenticationError carrying the TLS verification error at once, not
// "no broker reachable"; with the CA trusted it consumes.
func TestE2ETestbrokerTLSUntrustedCertificate(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.GeneratedTLS(), testbroker.Topic("tls", 1))
	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("tls"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: x509.NewCertPool()})))
	require.NoError(t, err)
	defer sc.Close(context.Background())

	ctx := e2eCtx(t, 30*time.Second)
	_, err = sc.Poll(ctx)
	require.NoError(t, ctx.Err(), "Poll returned at once")
	var ae *kerrors.AuthenticationError
	require.ErrorAs(t, err, &ae)
	var verify *tls.CertificateVerificationError
	assert.ErrorAs(t, err, &verify)
	assert.Equal(t, kerrors.ReasonAuthentication, sc.Status().Reason)

	trusted, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("tls"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.ClientTLS())))
	require.NoError(t, err)
	defer trusted.Close(context.Background())
	_, err = trusted.Poll(ctxWithDeadline(ctx, 500*time.Millisecond))
	var pte *kerrors.PollTimeoutError
	require.ErrorAs(t, err, &pte, "nothing to consume, and no authentication error")
	assert.NotEqual(t, kerrors.ReasonAuthentication, pte.Reason)
}

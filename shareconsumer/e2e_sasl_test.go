package shareconsumer_test

import (
	"context"
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

// TestE2ETestbrokerSASLWrongPassword: with a wrong password, Poll keeps trying until its
// context ends, then returns a *PollTimeoutError whose reason is "no broker reachable" and
// whose detail carries Kafka's SASL_AUTHENTICATION_FAILED and message (the Kafka error is in
// the text only: errors.Is(err, kerr.SaslAuthenticationFailed) does not hold today).
func TestE2ETestbrokerSASLWrongPassword(t *testing.T) {
	t.Parallel()
	c := startSASLTestbroker(t)
	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("sasl"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())))
	require.NoError(t, err)
	defer sc.Close(context.Background())
	recs, err := sc.Poll(e2eCtx(t, 3*time.Second))
	assert.Empty(t, recs)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var pte *kerrors.PollTimeoutError
	require.ErrorAs(t, err, &pte)
	assert.Contains(t, pte.Detail, "SASL_AUTHENTICATION_FAILED")
	assert.Contains(t, pte.Detail, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
	assert.NotErrorIs(t, err, kerr.SaslAuthenticationFailed)
}

package testbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/testbroker"
)

// TestSASLOverTLS is Kafka's SASL_SSL: SCRAM over TLS listeners on three brokers, with a
// replicated topic, so acks=all also proves the replica fetchers do TLS then SASL. The same
// client with a wrong password fails authentication, not the handshake.
func TestSASLOverTLS(t *testing.T) {
	c := saslCluster(t, testbroker.GeneratedTLS())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.ClientTLS()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("over tls")}).FirstErr())
	fs := cl.PollFetches(ctx)
	require.NoError(t, fs.Err())
	require.Equal(t, 1, fs.NumRecords())
	require.Equal(t, "over tls", string(fs.Records()[0].Value))

	bad, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(c.ClientTLS()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer bad.Close()
	err = bad.Ping(ctx)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
}

package testbroker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/testbroker"
)

func saslCluster(t *testing.T, opts ...testbroker.Opt) *testbroker.Cluster {
	t.Helper()
	return testbroker.StartT(t, append([]testbroker.Opt{
		testbroker.NumBrokers(3),
		testbroker.SASL("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
		testbroker.User("alice", "alice-secret"),
		testbroker.User("bob", "bob-secret"),
		testbroker.ReplicatedTopic("t", 3, 3),
	}, opts...)...)
}

// TestSASLProduceConsume produces and consumes on a 3-broker SASL cluster with each mechanism,
// with replicated partitions: the replica fetchers authenticate too (acks=all needs them).
func TestSASLProduceConsume(t *testing.T) {
	c := saslCluster(t)
	for name, m := range map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(m),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			require.NoError(t, err)
			defer cl.Close()
			for i := range 6 {
				require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%d", name, i)}).FirstErr())
			}
			got := map[string]bool{}
			for ctx.Err() == nil && countPrefix(got, name) < 6 {
				fs := cl.PollFetches(ctx)
				require.NoError(t, ctx.Err())
				fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
			}
			assert.Equal(t, 6, countPrefix(got, name))
		})
	}
}

func countPrefix(m map[string]bool, prefix string) int {
	n := 0
	for k := range m {
		if len(k) > len(prefix) && k[:len(prefix)+1] == prefix+"-" {
			n++
		}
	}
	return n
}

// TestSASLAuthenticationFailed: a wrong PLAIN password gets PlainSaslServer's message; a SCRAM
// failure (unknown user, wrong password) gets SaslServerAuthenticator's generic message.
func TestSASLAuthenticationFailed(t *testing.T) {
	c := saslCluster(t)
	for name, tc := range map[string]struct {
		m   sasl.Mechanism
		msg string
	}{
		"PLAIN wrong password":         {plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		"PLAIN unknown user":           {plain.Auth{User: "mallory", Pass: "x"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		"SCRAM-SHA-256 unknown user":   {scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		"SCRAM-SHA-512 wrong password": {scram.Auth{User: "bob", Pass: "nope"}.AsSha512Mechanism(), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"},
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(tc.m), kgo.RequestRetries(0))
			require.NoError(t, err)
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestSASLRequiredBeforeOtherRequests: a client without SASL gets no answer to Metadata, the
// connection is closed, and the request fails before its deadline.
func TestSASLRequiredBeforeOtherRequests(t *testing.T) {
	c := saslCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequestRetries(1))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "failed on the closed connection, not on the deadline: %v", err)
}

// TestSASLOptionsRefused: Start refuses an unknown mechanism and a user without SASL.
func TestSASLOptionsRefused(t *testing.T) {
	_, err := testbroker.Start(testbroker.SASL("PLAIN", "GSSAPI"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown SASL mechanism "GSSAPI"`)
	_, err = testbroker.Start(testbroker.SASL())
	assert.Error(t, err)
	_, err = testbroker.Start(testbroker.User("a", "b"))
	assert.Error(t, err)
}

// TestSASLHandshakeAnswers: the handshake lists the enabled mechanisms; an unknown one gets
// UNSUPPORTED_SASL_MECHANISM. Without SASL, the handshake is ILLEGAL_SASL_STATE, as KafkaApis
// answers it on a listener without SASL; ApiVersions always lists both SASL APIs.
func TestSASLHandshakeAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := testbroker.StartT(t, testbroker.SASL("SCRAM-SHA-256"), testbroker.User("a", "b"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(plain.Auth{User: "a", Pass: "b"}.AsMechanism()), kgo.RequestRetries(0))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.ErrorIs(t, err, kerr.UnsupportedSaslMechanism)

	plainCluster := testbroker.StartT(t)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(plainCluster.Addrs()...))
	require.NoError(t, err)
	defer pcl.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	hsResp, err := hs.RequestWith(ctx, pcl)
	require.NoError(t, err)
	assert.Equal(t, kerr.IllegalSaslState.Code, hsResp.ErrorCode)
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, pcl)
	require.NoError(t, err)
	var keys []int16
	for _, k := range av.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	assert.Contains(t, keys, int16(kmsg.SASLHandshake))
	assert.Contains(t, keys, int16(kmsg.SASLAuthenticate))
}

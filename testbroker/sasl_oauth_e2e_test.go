package testbroker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kshare/kshare/testbroker"
)

// unsecuredJWS makes an unsigned JWS (alg "none") with claims, as Kafka's unsecured login
// module does.
func unsecuredJWS(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(claims) + "."
}

func oauthClient(t *testing.T, c *testbroker.Cluster, token string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...),
		kgo.SASL(oauth.Auth{Token: token}.AsMechanism()), kgo.RequestRetries(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestOAuthBearerProduceConsume: a valid unsecured token produces and consumes on a replicated
// 3-broker OAUTHBEARER cluster (the replica fetchers authenticate with OAUTHBEARER too).
func TestOAuthBearerProduceConsume(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.SASL("OAUTHBEARER"), testbroker.ReplicatedTopic("t", 3, 3))
	token := unsecuredJWS(t, map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	cl := oauthClient(t, c, token, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestRetries(5))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i), Value: []byte{byte('a' + i)}}).FirstErr())
	}
	got := 0
	for got < 3 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		got += fs.NumRecords()
	}
	assert.Equal(t, 3, got)
}

// TestOAuthBearerRefusedTokens: tokens the unsecured validator refuses get the invalid_token
// challenge, then SASL_AUTHENTICATION_FAILED with it as the message; a token that names
// another authorization id gets OAuthBearerSaslServer's message.
func TestOAuthBearerRefusedTokens(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := testbroker.StartT(t, testbroker.SASL("OAUTHBEARER"), testbroker.WithManualClock(start))
	for name, tc := range map[string]struct {
		token, zid, msg string
	}{
		"expired":     {token: unsecuredJWS(t, map[string]any{"sub": "alice", "exp": start.Add(-time.Second).Unix()}), msg: `{"status":"invalid_token"}`},
		"without sub": {token: unsecuredJWS(t, map[string]any{"exp": start.Add(time.Hour).Unix()}), msg: `{"status":"invalid_token"}`},
		"not a JWS":   {token: "not-a-token", msg: `{"status":"invalid_token"}`},
		"other authzid": {token: unsecuredJWS(t, map[string]any{"sub": "alice", "exp": start.Add(time.Hour).Unix()}), zid: "bob",
			msg: "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"},
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequestRetries(0),
				kgo.SASL(oauth.Auth{Token: tc.token, Zid: tc.zid}.AsMechanism()))
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

// TestOAuthBearerTokenExpiresOnTheClusterClock: a token valid at the start of the manual clock
// serves; once the clock passes its exp, the session has ended (the connection is closed at
// the next request) and the token no longer authenticates.
func TestOAuthBearerTokenExpiresOnTheClusterClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := testbroker.StartT(t, testbroker.SASL("OAUTHBEARER"), testbroker.WithManualClock(start))
	token := unsecuredJWS(t, map[string]any{"sub": "alice", "exp": start.Add(time.Hour).Unix()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := oauthClient(t, c, token)
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)

	c.ManualClock().Advance(time.Hour)
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.Error(t, err, "the expired session's connection is closed")

	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, oauthClient(t, c, token))
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	assert.Contains(t, err.Error(), `{"status":"invalid_token"}`)
}

// connCounter counts, per broker, the connections a client opened and the SaslAuthenticate
// requests it wrote.
type connCounter struct {
	mu       sync.Mutex
	connects map[int32]int
	auths    map[int32]int
}

func (h *connCounter) OnBrokerConnect(m kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.mu.Lock()
		h.connects[m.NodeID]++
		h.mu.Unlock()
	}
}

func (h *connCounter) OnBrokerWrite(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == int16(kmsg.SASLAuthenticate) {
		h.mu.Lock()
		h.auths[m.NodeID]++
		h.mu.Unlock()
	}
}

func (h *connCounter) snapshot() (connects, auths int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.connects {
		connects += n
	}
	for _, n := range h.auths {
		auths += n
	}
	return connects, auths
}

// TestReauthenticationKeepsTheConnection: with connections.max.reauth.ms, kgo re-authenticates
// on its connections before their sessions end (KIP-368), so producing across several session
// lifetimes opens no new connection. The test runs in a synctest bubble, where the cluster and
// kgo share the bubble's clock: time.Sleep moves it past the session lifetime.
func TestReauthenticationKeepsTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := testbroker.Start(testbroker.InMemoryNetwork(), testbroker.Topic("t", 1), testbroker.SASL("PLAIN"),
			testbroker.User("alice", "secret"), testbroker.BrokerConfig("connections.max.reauth.ms", "10000"))
		require.NoError(t, err)
		defer c.Close()
		h := &connCounter{connects: map[int32]int{}, auths: map[int32]int{}}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext), kgo.WithHooks(h),
			kgo.SASL(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism()), kgo.DefaultProduceTopic("t"),
			kgo.MetadataMinAge(time.Hour), kgo.MetadataMaxAge(time.Hour))
		require.NoError(t, err)
		defer cl.Close()
		ctx := context.Background()
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("0")).FirstErr())
		connects, auths := h.snapshot()
		for i := range 3 {
			time.Sleep(11 * time.Second)
			require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(), "produce %d", i)
		}
		connects2, auths2 := h.snapshot()
		assert.Equal(t, connects, connects2, "no new connection")
		assert.GreaterOrEqual(t, auths2, auths+3, "a re-authentication per session lifetime")
	})
}

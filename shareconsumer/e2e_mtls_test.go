package shareconsumer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// TestE2ETestbrokerMutualTLSConsume: on a cluster requiring client certificates with ACLs on,
// the share consumer presents one through ClientOpts(kgo.DialTLSConfig) and consumes as the
// certificate's principal, which the ACLs name.
func TestE2ETestbrokerMutualTLSConsume(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.GeneratedTLS(), testbroker.Topic("mtls", 1),
		testbroker.BrokerConfig("ssl.client.auth", "required"),
		testbroker.BrokerConfig("authorizer.class.name", testbroker.StandardAuthorizer),
		testbroker.BrokerConfig("super.users", "User:CN=admin"))
	require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
	withCert := func(cn string) *tls.Config {
		cert, err := c.ClientCert(pkix.Name{CommonName: cn})
		require.NoError(t, err)
		cfg := c.ClientTLS()
		cfg.Certificates = []tls.Certificate{cert}
		return cfg
	}
	ctx := e2eCtx(t, 30*time.Second)

	admin, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(withCert("admin")), kgo.DefaultProduceTopic("mtls"))
	require.NoError(t, err)
	defer admin.Close()
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().
		Topics("mtls").Groups("g").Operations(kadm.OpRead))
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ErrMessage)
	}
	for _, v := range []string{"a", "b"} {
		require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
	}

	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("mtls"),
		shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(withCert("alice"))))
	require.NoError(t, err)
	defer sc.Close(context.Background())
	var got []string
	for _, r := range pollN(t, sc, 2, 30*time.Second) {
		got = append(got, string(r.Value))
	}
	assert.Equal(t, []string{"a", "b"}, got)
}

package shareconsumer_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// reauthHooks counts the connections a client opened and the SaslAuthenticate requests it
// wrote.
type reauthHooks struct {
	mu              sync.Mutex
	connects, auths int
}

func (h *reauthHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.mu.Lock()
		h.connects++
		h.mu.Unlock()
	}
}

func (h *reauthHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == int16(kmsg.SASLAuthenticate) {
		h.mu.Lock()
		h.auths++
		h.mu.Unlock()
	}
}

func (h *reauthHooks) counts() (connects, auths int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connects, h.auths
}

// TestE2ETestbrokerReauthenticationKeepsShareSession: on a cluster with
// connections.max.reauth.ms, a share consumer polls across several session lifetimes. Its
// client re-authenticates on the same connections (KIP-368), so the broker closes none of them
// and the share session they carry survives: the same member's ShareSessionEpoch keeps
// counting up, where a lost session would have started again at 1 after
// SHARE_SESSION_NOT_FOUND. The test runs in a synctest bubble so that the cluster and the
// client share one clock; time.Sleep moves it past a session lifetime.
func TestE2ETestbrokerReauthenticationKeepsShareSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := testbroker.Start(testbroker.InMemoryNetwork(), testbroker.Topic("t", 1),
			testbroker.SASL("PLAIN"), testbroker.User("alice", "secret"),
			testbroker.BrokerConfig("connections.max.reauth.ms", "10000"))
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetGroupConfig("g", "share.auto.offset.reset", "earliest"))
		auth := kgo.SASL(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism())
		p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext), auth, kgo.DefaultProduceTopic("t"))
		require.NoError(t, err)
		defer p.Close()
		ctx := context.Background()
		produce := func(v string) {
			require.NoError(t, p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr())
		}
		produce("0")

		h := &reauthHooks{}
		sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("t"), shareconsumer.FetchMaxWait(0),
			shareconsumer.ClientOpts(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext), auth, kgo.WithHooks(h)))
		require.NoError(t, err)
		defer sc.Close(context.Background())
		poll := func(want string) {
			recs, err := sc.Poll(ctx)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			assert.Equal(t, want, string(recs[0].Value))
		}
		session := func() testbroker.ShareSessionInfo {
			ss := c.ShareSessions(0)
			require.Len(t, ss, 1)
			return ss[0]
		}
		poll("0")
		first := session()
		connects, auths := h.counts()

		last := first
		for i := 1; i <= 3; i++ {
			time.Sleep(11 * time.Second)
			produce(strconv.Itoa(i))
			poll(strconv.Itoa(i))
			now := session()
			assert.Equal(t, first.Member, now.Member)
			assert.Greater(t, now.Epoch, last.Epoch, "the session epoch continues after re-authentication %d", i)
			last = now
		}
		connects2, auths2 := h.counts()
		assert.Equal(t, connects, connects2, "no new connection")
		assert.GreaterOrEqual(t, auths2, auths+3, "a re-authentication per session lifetime")
	})
}

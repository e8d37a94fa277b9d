package testbroker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// TestReplicationLeavesNoGoroutine runs a replicated cluster inside a synctest bubble through
// produces, a stopped and a restarted broker, and Close: synctest.Test fails if any goroutine
// of the cluster (listeners, connections, replica fetchers, the ISR task) outlives Close.
func TestReplicationLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := testbroker.Start(testbroker.InMemoryNetwork(), testbroker.NumBrokers(3), testbroker.ReplicatedTopic("r", 3, 3))
		require.NoError(t, err)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext), kgo.DefaultProduceTopic("r"),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(10*time.Millisecond))
		require.NoError(t, err)
		ctx := context.Background()
		produce := func() {
			for range 10 {
				require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr())
			}
		}
		produce()
		require.NoError(t, c.StopBroker(1))
		produce()
		require.NoError(t, c.StartBroker(1))
		produce()
		cl.Close()
		c.Close()
	})
}

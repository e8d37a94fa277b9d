package groupconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/testbroker"
)

func TestSet(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	require.NoError(t, groupconfig.Set(ctx, cl, "g", "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "20000"))
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	got := map[string]string{}
	for _, cfg := range resp.Resources[0].Configs {
		if cfg.Value != nil {
			got[cfg.Name] = *cfg.Value
		}
	}
	assert.Equal(t, "earliest", got["share.auto.offset.reset"])
	assert.Equal(t, "20000", got["share.record.lock.duration.ms"])

	err = groupconfig.Set(ctx, cl, "g", "share.record.lock.duration.ms", "1")
	require.ErrorIs(t, err, kerr.InvalidConfig)
	assert.Contains(t, err.Error(), "Invalid value 1 for configuration share.record.lock.duration.ms", "the broker's message is kept")
	assert.Error(t, groupconfig.Set(ctx, cl, "g", "share.auto.offset.reset"), "a key without a value")
}

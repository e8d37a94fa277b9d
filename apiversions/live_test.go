package apiversions_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/testbroker"
)

// fill asks every broker of the cluster for its ApiVersions, the way the consumer does (see the
// package doc), and records them.
func fill(t *testing.T, cl *kgo.Client, reg *apiversions.Registry, nodes ...int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	caps, ok := cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	require.True(t, ok, "kgo always has max versions")
	for _, node := range nodes {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kshare-test", "0.0.0"
		resp, err := cl.Broker(int(node)).Request(ctx, req)
		require.NoError(t, err)
		v, err := apiversions.FromResponse(resp.(*kmsg.ApiVersionsResponse))
		require.NoError(t, err)
		reg.Set(node, v.Cap(caps))
	}
}

func TestRegistryFromLiveBrokers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		cluster       []testbroker.Opt
		client        []kgo.Opt
		renew         bool
		shareFetchMax int16
		shareAckMax   int16
		shareGroups   bool
	}{
		{
			name:  "current broker",
			renew: true, shareFetchMax: 2, shareAckMax: 2, shareGroups: true,
		},
		{
			name:    "broker capped to Kafka 4.1's ShareFetch",
			cluster: []testbroker.Opt{testbroker.MaxVersion(kmsg.ShareFetch, 1)},
			renew:   false, shareFetchMax: 1, shareAckMax: 2, shareGroups: true,
		},
		{
			name:   "client capped to ShareAcknowledge v1",
			client: []kgo.Opt{kgo.MaxVersions(withMax(kmsg.ShareAcknowledge, 1))},
			renew:  false, shareFetchMax: 2, shareAckMax: 1, shareGroups: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := testbroker.StartT(t, append([]testbroker.Opt{testbroker.NumBrokers(2)}, tc.cluster...)...)
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, tc.client...)...)
			require.NoError(t, err)
			t.Cleanup(cl.Close)

			var reg apiversions.Registry
			fill(t, cl, &reg, 0, 1)
			for _, node := range []int32{0, 1} {
				v, ok := reg.Get(node)
				require.True(t, ok, "node %d", node)
				assert.Equal(t, tc.renew, v.SupportsRenew(), "node %d", node)
				assert.Equal(t, tc.shareGroups, v.SupportsShareGroups(), "node %d", node)
				max, _ := v.Max(kmsg.ShareFetch)
				assert.Equal(t, tc.shareFetchMax, max, "node %d ShareFetch", node)
				max, _ = v.Max(kmsg.ShareAcknowledge)
				assert.Equal(t, tc.shareAckMax, max, "node %d ShareAcknowledge", node)
			}
		})
	}
}

// TestLiveCapOfAPlainAPI checks the same path with an API every testbroker has always served.
func TestLiveCapOfAPlainAPI(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.MaxVersion(kmsg.Fetch, 11))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	var reg apiversions.Registry
	fill(t, cl, &reg, 0)
	v, ok := reg.Get(0)
	require.True(t, ok)
	got, err := v.Choose(kmsg.Fetch, (&kmsg.FetchRequest{}).MaxVersion())
	require.NoError(t, err)
	assert.Equal(t, int16(11), got)
	assert.True(t, v.Supports(kmsg.Fetch, 4))
	assert.False(t, v.Supports(kmsg.Fetch, 12))

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = cl.Broker(7).Request(ctx, kmsg.NewPtrApiVersionsRequest())
	assert.Error(t, err, "Broker(id) goes to that node only")
}

func withMax(key kmsg.Key, max int16) *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(key), max)
	return v
}

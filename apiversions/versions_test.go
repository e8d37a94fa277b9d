package apiversions_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/apiversions"
	"github.com/kshare/kshare/errors"
)

type api struct {
	key      kmsg.Key
	min, max int16
}

func response(apis ...api) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range apis {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(a.key), MinVersion: a.min, MaxVersion: a.max})
	}
	return resp
}

func versions(t *testing.T, apis ...api) apiversions.Versions {
	t.Helper()
	v, err := apiversions.FromResponse(response(apis...))
	require.NoError(t, err)
	return v
}

// Brokers by release, as far as share groups go.
var (
	kafka39 = []api{{kmsg.Fetch, 4, 17}, {kmsg.ApiVersions, 0, 4}}
	kafka41 = []api{
		{kmsg.Fetch, 4, 17}, {kmsg.ApiVersions, 0, 4},
		{kmsg.ShareGroupHeartbeat, 1, 1}, {kmsg.ShareGroupDescribe, 1, 1},
		{kmsg.ShareFetch, 1, 1}, {kmsg.ShareAcknowledge, 1, 1},
	}
	kafka42 = []api{
		{kmsg.Fetch, 4, 18}, {kmsg.ApiVersions, 0, 4},
		{kmsg.ShareGroupHeartbeat, 1, 1}, {kmsg.ShareGroupDescribe, 1, 1},
		{kmsg.ShareFetch, 1, 2}, {kmsg.ShareAcknowledge, 1, 2},
	}
	// A broker mid-upgrade, or a cap on one API only: RENEW needs both.
	fetchOnlyV2 = []api{{kmsg.ShareGroupHeartbeat, 1, 1}, {kmsg.ShareFetch, 1, 2}, {kmsg.ShareAcknowledge, 1, 1}}
	ackOnlyV2   = []api{{kmsg.ShareGroupHeartbeat, 1, 1}, {kmsg.ShareFetch, 1, 1}, {kmsg.ShareAcknowledge, 1, 2}}
)

func TestFeatureGates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                        string
		apis                        []api
		shareGroups, renew, limited bool
	}{
		{name: "nothing"},
		{name: "Kafka 3.9", apis: kafka39},
		{name: "Kafka 4.1", apis: kafka41, shareGroups: true},
		{name: "Kafka 4.2", apis: kafka42, shareGroups: true, renew: true, limited: true},
		{name: "ShareFetch v2 only", apis: fetchOnlyV2, shareGroups: true, limited: true},
		{name: "ShareAcknowledge v2 only", apis: ackOnlyV2, shareGroups: true},
		{
			name: "no heartbeat", apis: []api{{kmsg.ShareFetch, 1, 2}, {kmsg.ShareAcknowledge, 1, 2}},
			renew: true, limited: true,
		},
		{
			name: "Kafka 4.0 early access: v0 only", apis: []api{
				{kmsg.ShareGroupHeartbeat, 0, 0}, {kmsg.ShareFetch, 0, 0}, {kmsg.ShareAcknowledge, 0, 0},
			},
		},
		{
			name: "v2 dropped below", apis: []api{
				{kmsg.ShareGroupHeartbeat, 1, 1}, {kmsg.ShareFetch, 2, 2}, {kmsg.ShareAcknowledge, 2, 2},
			},
			renew: true, limited: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := versions(t, tc.apis...)
			assert.Equal(t, tc.shareGroups, v.SupportsShareGroups(), "SupportsShareGroups")
			assert.Equal(t, tc.renew, v.SupportsRenew(), "SupportsRenew")
			assert.Equal(t, tc.limited, v.SupportsRecordLimitAcquire(), "SupportsRecordLimitAcquire")
		})
	}
}

func TestZeroVersionsSupportNothing(t *testing.T) {
	t.Parallel()
	var v apiversions.Versions
	_, ok := v.Max(kmsg.ApiVersions)
	assert.False(t, ok)
	assert.False(t, v.Supports(kmsg.ApiVersions, 0))
	assert.False(t, v.SupportsShareGroups())
	_, err := v.Choose(kmsg.ApiVersions, 3)
	assert.ErrorIs(t, err, kerr.UnsupportedVersion)
}

func TestMaxAndSupports(t *testing.T) {
	t.Parallel()
	v := versions(t, kafka42...)
	for _, tc := range []struct {
		key       kmsg.Key
		version   int16
		supported bool
	}{
		{kmsg.ShareFetch, 0, false},
		{kmsg.ShareFetch, 1, true},
		{kmsg.ShareFetch, 2, true},
		{kmsg.ShareFetch, 3, false},
		{kmsg.Fetch, 3, false},
		{kmsg.Fetch, 4, true},
		{kmsg.Fetch, 18, true},
		{kmsg.Produce, 9, false},
		{kmsg.ShareFetch, -1, false},
	} {
		assert.Equal(t, tc.supported, v.Supports(tc.key, tc.version), "%s v%d", tc.key.Name(), tc.version)
	}
	max, ok := v.Max(kmsg.ShareAcknowledge)
	assert.True(t, ok)
	assert.Equal(t, int16(2), max)
	_, ok = v.Max(kmsg.Produce)
	assert.False(t, ok)
}

func TestChoose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		apis      []api
		key       kmsg.Key
		clientMax int16
		want      int16
		wantErr   string
	}{
		{name: "4.2 broker, v2 client", apis: kafka42, key: kmsg.ShareFetch, clientMax: 2, want: 2},
		{name: "4.2 broker, newer client", apis: kafka42, key: kmsg.ShareFetch, clientMax: 5, want: 2},
		{name: "4.2 broker, v1 client", apis: kafka42, key: kmsg.ShareAcknowledge, clientMax: 1, want: 1},
		{name: "4.1 broker, v2 client", apis: kafka41, key: kmsg.ShareFetch, clientMax: 2, want: 1},
		{name: "4.1 broker, v1 client", apis: kafka41, key: kmsg.ShareAcknowledge, clientMax: 1, want: 1},
		{
			name: "4.2 broker, v0 client", apis: kafka42, key: kmsg.ShareFetch, clientMax: 0,
			wantErr: "apiversions: the broker supports ShareFetch v1 to v2, the client at most v0: " + kerr.UnsupportedVersion.Error(),
		},
		{
			name: "3.9 broker", apis: kafka39, key: kmsg.ShareFetch, clientMax: 2,
			wantErr: "apiversions: the broker does not support ShareFetch: " + kerr.UnsupportedVersion.Error(),
		},
		{name: "exact lower bound", apis: kafka42, key: kmsg.Fetch, clientMax: 4, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := versions(t, tc.apis...).Choose(tc.key, tc.clientMax)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				assert.ErrorIs(t, err, kerr.UnsupportedVersion)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFromResponse(t *testing.T) {
	t.Parallel()
	t.Run("error code", func(t *testing.T) {
		resp := response(api{kmsg.ApiVersions, 0, 3})
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		_, err := apiversions.FromResponse(resp)
		require.Error(t, err)
		assert.ErrorIs(t, err, kerr.UnsupportedVersion)
		var ke *errors.KafkaError
		assert.ErrorAs(t, err, &ke)
	})
	t.Run("empty ranges are left out", func(t *testing.T) {
		v := versions(t, api{kmsg.ShareFetch, 2, 1}, api{kmsg.Fetch, -1, -1}, api{kmsg.Metadata, 0, 12})
		_, ok := v.Max(kmsg.ShareFetch)
		assert.False(t, ok)
		_, ok = v.Max(kmsg.Fetch)
		assert.False(t, ok)
		assert.True(t, v.Supports(kmsg.Metadata, 12))
	})
}

func TestCap(t *testing.T) {
	t.Parallel()
	broker := versions(t, slices.Concat(kafka42, []api{{kmsg.Key(30000), 0, 3}, {kmsg.Produce, 3, 13}})...)

	t.Run("kmsg caps alone", func(t *testing.T) {
		future := versions(t, api{kmsg.ShareFetch, 1, 7}, api{kmsg.ShareAcknowledge, 1, 7})
		capped := future.Cap(nil)
		max, _ := capped.Max(kmsg.ShareFetch)
		assert.Equal(t, (&kmsg.ShareFetchRequest{}).MaxVersion(), max)
		_, ok := broker.Cap(nil).Max(kmsg.Key(30000))
		assert.False(t, ok, "keys kmsg does not know are dropped")
	})
	t.Run("kgo's default, kversion.Stable", func(t *testing.T) {
		capped := broker.Cap(kversion.Stable())
		assert.True(t, capped.SupportsRenew())
		assert.True(t, capped.SupportsShareGroups())
	})
	t.Run("a client pinned to Kafka 4.1 cannot renew", func(t *testing.T) {
		client := kversion.Stable()
		client.SetMaxKeyVersion(int16(kmsg.ShareFetch), 1)
		capped := broker.Cap(client)
		assert.False(t, capped.SupportsRenew())
		assert.False(t, capped.SupportsRecordLimitAcquire())
		assert.True(t, capped.SupportsShareGroups())
		assert.True(t, broker.SupportsRenew(), "Cap does not change the original")
	})
	t.Run("below the broker's minimum or unknown to the client", func(t *testing.T) {
		client := kversion.Stable()
		client.SetMaxKeyVersion(int16(kmsg.Produce), 2)
		client.SetMaxKeyVersion(int16(kmsg.ShareAcknowledge), -1)
		capped := broker.Cap(client)
		_, ok := capped.Max(kmsg.Produce)
		assert.False(t, ok)
		_, ok = capped.Max(kmsg.ShareAcknowledge)
		assert.False(t, ok)
		assert.False(t, capped.SupportsShareGroups())
	})
}

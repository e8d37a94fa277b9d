package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestConnectionsDefaults(t *testing.T) {
	t.Parallel()
	s, err := New(nil)
	require.NoError(t, err)
	conns := s.Snapshot().Connections
	require.NotNil(t, conns.SSLPrincipalMapper)
	assert.Equal(t, "[DEFAULT]", conns.SSLPrincipalMapper.String())
	conns.SSLPrincipalMapper = nil
	assert.Equal(t, Connections{
		MaxIdle:            10 * time.Minute,
		RequestReadTimeout: 30 * time.Second,
		MaxPerIP:           2147483647,
		MaxPerIPOverrides:  map[string]int{},
		SSLClientAuth:      "none",
	}, conns)
}

func TestConnectionsConfigs(t *testing.T) {
	t.Parallel()
	s, err := New(map[string]string{
		"connections.max.idle.ms":            "-1",
		"testbroker.request.read.timeout.ms": "5000",
		"max.connections.per.ip":             "0",
		"max.connections.per.ip.overrides":   "127.0.0.1:3, ::1 : 2,client.memnet.invalid:4",
	})
	require.NoError(t, err)
	conns := s.Snapshot().Connections
	assert.Negative(t, conns.MaxIdle)
	assert.Equal(t, 5*time.Second, conns.RequestReadTimeout)
	assert.Equal(t, 3, conns.MaxFrom("127.0.0.1"))
	assert.Equal(t, 2, conns.MaxFrom("::1"))
	assert.Equal(t, 4, conns.MaxFrom("client.memnet.invalid"))
	assert.Zero(t, conns.MaxFrom("10.0.0.1"))

	require.NoError(t, s.AlterBroker(-1, []Op{set("max.connections.per.ip", "7"), set("max.connections.per.ip.overrides", "")}, false))
	assert.Equal(t, 7, s.Snapshot().Connections.MaxFrom("127.0.0.1"))

	err = s.AlterBroker(-1, []Op{set("connections.max.idle.ms", "1000")}, false)
	require.ErrorIs(t, err, kerr.InvalidRequest)
	assert.ErrorContains(t, err, "Cannot update these configs dynamically: Set(connections.max.idle.ms)")
}

func TestConnectionsConfigsRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{"max.connections.per.ip": "-1"}, "broker config: Invalid value -1 for configuration max.connections.per.ip: Value must be at least 0"},
		{map[string]string{"max.connections.per.ip": "0"}, "broker config: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."},
		{map[string]string{"max.connections.per.ip.overrides": "127.0.0.1"}, `broker config: Error parsing configuration property 'max.connections.per.ip.overrides': "127.0.0.1" is not host:count`},
		{map[string]string{"max.connections.per.ip.overrides": "127.0.0.1:many"}, `broker config: For input string: "many"`},
		{map[string]string{"max.connections.per.ip.overrides": "a b:1,c/d:2"}, "broker config: max.connections.per.ip.overrides contains invalid addresses : a b,c/d"},
		{map[string]string{"testbroker.request.read.timeout.ms": "0"}, "broker config: Invalid value 0 for configuration testbroker.request.read.timeout.ms: Value must be at least 1"},
		{map[string]string{"connections.max.idle.ms": "soon"}, "broker config: Invalid value soon for configuration connections.max.idle.ms: Not a number of type LONG"},
	}
	for _, tt := range tests {
		_, err := New(tt.configs)
		assert.EqualError(t, err, tt.want)
	}
}

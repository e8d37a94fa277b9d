package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func set(name, value string) Op {
	return Op{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &value}
}

func TestSnapshotDefaults(t *testing.T) {
	t.Parallel()
	s, err := New(nil)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, ClassicGroup{
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		InitialRebalanceDelay: 3 * time.Second,
		MaxSize:               2147483647,
	}, snap.ClassicGroup)
	assert.Equal(t, 7*24*time.Hour, snap.OffsetsRetention)
	assert.Equal(t, []string{"uniform", "range"}, snap.ConsumerGroupAssignors)
	g := snap.Group("any")
	assert.Equal(t, ConsumerGroup{HeartbeatInterval: 5 * time.Second, SessionTimeout: 45 * time.Second, MaxSize: 2147483647}, g.Consumer)
	assert.Equal(t, 30*time.Second, g.Share.Partition.LockDuration)
	assert.Equal(t, "latest", g.Share.Partition.AutoOffsetReset)
	assert.Equal(t, 200, g.Share.MaxSize)
}

func TestSnapshotFollowsChanges(t *testing.T) {
	t.Parallel()
	s, err := New(map[string]string{"group.min.session.timeout.ms": "1000", "group.max.size": "3"})
	require.NoError(t, err)
	before := s.Snapshot()
	assert.Equal(t, time.Second, before.ClassicGroup.MinSessionTimeout)
	assert.Equal(t, 3, before.ClassicGroup.MaxSize)

	require.NoError(t, s.AlterGroup("g", []Op{set("consumer.session.timeout.ms", "50000"), set("share.delivery.count.limit", "3")}, false))
	after := s.Snapshot()
	assert.Equal(t, 50*time.Second, after.Group("g").Consumer.SessionTimeout)
	assert.Equal(t, int16(3), after.Group("g").Share.Partition.DeliveryCountLimit)
	assert.Equal(t, 45*time.Second, after.Group("other").Consumer.SessionTimeout)
	assert.Equal(t, 45*time.Second, before.Group("g").Consumer.SessionTimeout, "a snapshot never changes")

	require.NoError(t, s.AlterGroup("g", []Op{set("consumer.session.timeout.ms", "55000")}, true))
	assert.Same(t, after, s.Snapshot(), "validate-only publishes nothing")

	err = s.AlterGroup("g", []Op{set("consumer.session.timeout.ms", "1")}, false)
	require.ErrorIs(t, err, kerr.InvalidConfig)
	assert.Equal(t, "INVALID_CONFIG: consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms", err.Error())

	require.NoError(t, s.AlterBroker(-1, []Op{set("message.max.bytes", "2048"), set("log.message.timestamp.type", "LogAppendTime")}, false))
	lc := s.LogConfig(nil)
	assert.Equal(t, 2048, lc.MaxMessageBytes)
	assert.True(t, lc.LogAppendTime)
	lc = s.LogConfig(map[string]string{"max.message.bytes": "100", "message.timestamp.type": "CreateTime"})
	assert.Equal(t, 100, lc.MaxMessageBytes)
	assert.False(t, lc.LogAppendTime)
}

func TestNewRejectsClassicGroupValues(t *testing.T) {
	t.Parallel()
	_, err := New(map[string]string{"group.max.size": "0"})
	assert.EqualError(t, err, "broker config: Invalid value 0 for configuration group.max.size: Value must be at least 1")
	_, err = New(map[string]string{"offsets.retention.minutes": "0"})
	assert.EqualError(t, err, "broker config: Invalid value 0 for configuration offsets.retention.minutes: Value must be at least 1")
}

func TestSnapshotShareIsolationLevel(t *testing.T) {
	t.Parallel()
	s, err := New(nil)
	require.NoError(t, err)
	assert.False(t, s.Snapshot().Group("g").Share.Partition.ReadCommitted, "read_uncommitted by default")
	require.NoError(t, s.AlterGroup("g", []Op{set("share.isolation.level", "read_committed")}, false))
	assert.True(t, s.Snapshot().Group("g").Share.Partition.ReadCommitted)
	assert.False(t, s.Snapshot().Group("h").Share.Partition.ReadCommitted)
}

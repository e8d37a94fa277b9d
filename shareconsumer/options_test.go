package shareconsumer

import (
	"context"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	seeds := ClientOpts(kgo.SeedBrokers("127.0.0.1:1"))
	for _, tc := range []struct {
		name string
		opts []Opt
		want string // part of the error
	}{
		{"no group", []Opt{seeds}, "a group is required: use Group(id)"},
		{"empty topic", []Opt{seeds, Group("g"), Topics("a", "")}, "Topics: a topic name is empty"},
		{"no topics", []Opt{seeds, Group("g"), Topics()}, "Topics: no topic given"},
		{"max poll records 0", []Opt{seeds, Group("g"), MaxPollRecords(0)}, "MaxPollRecords(0): must be between 1 and"},
		{"max poll records too many", []Opt{seeds, Group("g"), MaxPollRecords(math.MaxInt32 + 1)}, "MaxPollRecords(2147483648)"},
		{"negative max wait", []Opt{seeds, Group("g"), FetchMaxWait(-time.Second)}, "FetchMaxWait(-1s): must be between 0 and"},
		{"max wait too long", []Opt{seeds, Group("g"), FetchMaxWait(time.Duration(math.MaxInt32+1) * time.Millisecond)}, "FetchMaxWait("},
		{"max wait not ms", []Opt{seeds, Group("g"), FetchMaxWait(1500 * time.Microsecond)}, "FetchMaxWait(1.5ms): must be whole milliseconds"},
		{"negative min bytes", []Opt{seeds, Group("g"), FetchMinBytes(-1)}, "FetchMinBytes(-1): must be at least 0"},
		{"zero max bytes", []Opt{seeds, Group("g"), FetchMaxBytes(0)}, "FetchMaxBytes(0): must be at least 1"},
		{"min above max", []Opt{seeds, Group("g"), FetchMinBytes(10), FetchMaxBytes(5)}, "FetchMinBytes(10) is above FetchMaxBytes(5)"},
		{"kgo consume topics", []Opt{seeds, Group("g"), ClientOpts(kgo.ConsumeTopics("t"))}, "kgo.ConsumeTopics cannot be used"},
		{"kgo consumer group", []Opt{seeds, Group("g"), ClientOpts(kgo.ConsumeTopics("t"), kgo.ConsumerGroup("cg"))}, "kgo.ConsumeTopics cannot be used"},
		{"kgo consume regex", []Opt{seeds, Group("g"), ClientOpts(kgo.ConsumeRegex())}, "kgo.ConsumeRegex cannot be used"},
		{"kgo consume partitions", []Opt{seeds, Group("g"), ClientOpts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset()}}))}, "kgo.ConsumePartitions cannot be used"},
		{"bad kgo option", []Opt{Group("g"), ClientOpts(kgo.ConnIdleTimeout(time.Millisecond))}, "shareconsumer: ClientOpts:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.opts...)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), tc.want)
			assert.Regexp(t, regexp.MustCompile("^shareconsumer: "), err.Error())
		})
	}
}

func TestOptionsDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	c, err := New(ClientOpts(kgo.SeedBrokers("127.0.0.1:1")), Group("g"), nil)
	require.NoError(t, err)
	defer c.Close(context.Background())
	assert.Equal(t, 500, c.cfg.maxPollRecords)
	assert.Equal(t, 500*time.Millisecond, c.cfg.fetchMaxWait)
	assert.EqualValues(t, 1, c.cfg.fetchMinBytes)
	assert.EqualValues(t, 50<<20, c.cfg.fetchMaxBytes)
	assert.False(t, c.cfg.explicit)
	assert.False(t, c.cfg.recordLimit)
	assert.Equal(t, 9*time.Minute, c.cl.OptValue(kgo.ConnIdleTimeout))
	assert.Nil(t, c.Subscription())
	assert.Len(t, c.member.memberID, 22, "a Kafka Uuid string")

	c2, err := New(ClientOpts(kgo.SeedBrokers("127.0.0.1:1"), kgo.ConnIdleTimeout(time.Minute)), Group("g"),
		Topics("b", "a", "b"), MaxPollRecords(1), MaxPollRecords(7), FetchMaxWait(0), ExplicitAcknowledgement(), RecordLimitAcquire())
	require.NoError(t, err)
	defer c2.Close(context.Background())
	assert.Equal(t, 7, c2.cfg.maxPollRecords, "the last option wins")
	assert.Equal(t, time.Minute, c2.cl.OptValue(kgo.ConnIdleTimeout), "the application's kgo options win")
	assert.Equal(t, []string{"a", "b"}, c2.Subscription())
	assert.True(t, c2.cfg.explicit)
	assert.True(t, c2.cfg.recordLimit)
}

func TestMemberIDsDiffer(t *testing.T) {
	t.Parallel()
	assert.NotEqual(t, newMemberID(), newMemberID())
	assert.Regexp(t, `^[A-Za-z0-9_-]{22}$`, newMemberID())
	assert.Regexp(t, `^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`, softwareVersion())
}

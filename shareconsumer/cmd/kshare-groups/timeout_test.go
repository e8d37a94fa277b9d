package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestTimeoutEachRequest holds one request of each action on the testbroker's manual clock,
// which never moves: --timeout ends that request (not only the first one the tool sends), and
// the action fails as its Kafka tool fails, exit 1 for kafka-groups.sh and the share tool, 0
// for the consumer tool.
func TestTimeoutEachRequest(t *testing.T) {
	t.Parallel()
	const (
		timedOut = "no answer within --timeout 1000 ms: context deadline exceeded"
		share    = "\nError: Executing share group command failed due to " + timedOut + "\n"
		consumer = "\nError: Executing consumer group command failed due to " + timedOut + "\n"
	)
	for _, tc := range []struct {
		held   kmsg.Key
		args   []string
		rc     int
		stdout string
	}{
		{kmsg.ListGroups, []string{"--list"}, 1, "Error while executing groups command : " + timedOut + "\n"},
		{kmsg.ListGroups, []string{"--list", "--state"}, 1, share},
		{kmsg.ListGroups, []string{"--list", "--type"}, 0, consumer},
		{kmsg.ShareGroupHeartbeat, []string{"--create", "--group", "new"}, 1, "Error: " + timedOut + "\n"},
		{kmsg.ListGroups, []string{"--reset-offsets", "--group", "sg", "--topic", ordersTopic, "--to-earliest", "--dry-run"}, 1, share},
		{kmsg.DescribeShareGroupOffsets, []string{"--reset-offsets", "--group", "sg", "--all-topics", "--to-earliest", "--dry-run"}, 1, share},
		{kmsg.ListOffsets, []string{"--reset-offsets", "--group", "sg", "--topic", ordersTopic, "--to-earliest", "--dry-run"}, 1, share},
		{kmsg.AlterShareGroupOffsets, []string{"--reset-offsets", "--group", "sg", "--topic", ordersTopic, "--to-earliest", "--execute"}, 1, share},
		{kmsg.DescribeGroups, []string{"--reset-offsets", "--group", "simple", "--topic", ordersTopic, "--to-earliest", "--dry-run"}, 0, consumer},
		{kmsg.OffsetFetch, []string{"--reset-offsets", "--group", "simple", "--all-topics", "--to-earliest", "--dry-run"}, 0, consumer},
		{kmsg.ListOffsets, []string{"--reset-offsets", "--group", "simple", "--topic", ordersTopic, "--to-latest", "--dry-run"}, 0, consumer},
		{kmsg.OffsetCommit, []string{"--reset-offsets", "--group", "simple", "--topic", ordersTopic, "--to-latest", "--execute"}, 0, consumer},
		{kmsg.ListGroups, []string{"--delete-offsets", "--group", "sg", "--topic", ordersTopic}, 1, share},
		{kmsg.DeleteShareGroupOffsets, []string{"--delete-offsets", "--group", "sg", "--topic", ordersTopic}, 1, share},
		{kmsg.OffsetDelete, []string{"--delete-offsets", "--group", "simple", "--topic", ordersTopic}, 0, consumer},
		{kmsg.ListGroups, []string{"--delete", "--group", "sg"}, 1, share},
		{kmsg.DeleteGroups, []string{"--delete", "--group", "sg"}, 1, share},
		{kmsg.DeleteGroups, []string{"--delete", "--group", "simple"}, 0, consumer},
	} {
		t.Run(fmt.Sprintf("%v held %v", tc.args, tc.held), func(t *testing.T) {
			t.Parallel()
			f := newGroupsFixture(t, testbroker.WithManualClock(time.Now()))
			f.shareGroup(t, "sg", 1, 2)
			commits := kadm.Offsets{}
			commits.Add(kadm.Offset{Topic: ordersTopic, Partition: 0, At: 3, LeaderEpoch: -1})
			require.NoError(t, f.adm.CommitAllOffsets(testCtx(t), "simple", commits))
			_, err := f.c.InjectFault(testbroker.Fault{APIs: []kmsg.Key{tc.held}, Delay: time.Hour})
			require.NoError(t, err)
			rc, stdout, stderr := f.run(t, append([]string{"--timeout", "1000"}, tc.args...)...)
			assert.Equal(t, tc.rc, rc)
			assert.Equal(t, tc.stdout, stdout, stderr)
			f.c.ClearFaults()
			assert.Equal(t, map[int32]int64{0: 1, 1: 2}, f.offsets(t, "sg", true), "nothing changed")
			assert.Equal(t, map[int32]int64{0: 3}, f.offsets(t, "simple", false), "nothing changed")
		})
	}
}

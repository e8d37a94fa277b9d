package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/testbroker"
)

// TestResetAllGroups runs --reset-offsets --all-groups as kafka-consumer-groups.sh does, over
// two empty KIP-848 consumer groups and an empty classic group: a dry run (explicit, then
// without --dry-run or --execute, with the consumer tool's warning), the CSV with the group
// column, an execute and --from-file with that CSV. The share group and the Connect group are
// left out (kafka-consumer-groups.sh lists neither among its consumer groups), and keep their
// offsets.
func TestResetAllGroups(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.groupOfEveryType(t)
	f.consumerGroup(t, "cg2", true, 5, 6)
	emptyConnectGroup(t, f.c, "connect")
	unchanged := func(msg string) {
		t.Helper()
		assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "sg", true), msg)
		assert.Empty(t, f.offsets(t, "connect", false), msg)
	}
	table := func(rows ...string) string {
		s := fmt.Sprintf("\n%-15s %-15s %-10s %s", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
		for _, r := range rows {
			var g string
			var p, o int64
			_, err := fmt.Sscanf(r, "%s %d %d", &g, &p, &o)
			require.NoError(t, err)
			s += fmt.Sprintf("\n%-15s %-15s %-10d %d", g, ordersTopic, p, o)
		}
		return s + "\n"
	}

	rc, stdout, stderr := f.run(t, "--reset-offsets", "--all-groups", "--topic", ordersTopic, "--to-earliest", "--dry-run")
	require.Equal(t, 0, rc, stderr)
	assert.Empty(t, stderr)
	assert.Equal(t, table("cg 0 0", "cg 1 0", "cg2 0 0", "cg2 1 0", "classic 0 0", "classic 1 0"), stdout)

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--all-groups", "--topic", ordersTopic+":1", "--to-latest")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, consumerNoExecuteWarning+"\n", stderr)
	assert.Equal(t, table("cg 1 10", "cg2 1 10", "classic 1 10"), stdout)
	for _, g := range []string{"cg", "classic"} {
		assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, g, false), "dry runs change nothing: %s", g)
	}
	assert.Equal(t, map[int32]int64{0: 5, 1: 6}, f.offsets(t, "cg2", false), "dry runs change nothing")
	unchanged("dry runs change nothing")

	rc, exported, stderr := f.run(t, "--reset-offsets", "--all-groups", "--all-topics", "--shift-by", "-2", "--dry-run", "--export")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "cg,orders,0,1\ncg,orders,1,2\ncg2,orders,0,3\ncg2,orders,1,4\nclassic,orders,0,1\nclassic,orders,1,2\n\n", exported)

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--all-groups", "--all-topics", "--to-offset", "7", "--execute")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, table("cg 0 7", "cg 1 7", "cg2 0 7", "cg2 1 7", "classic 0 7", "classic 1 7"), stdout)
	for _, g := range []string{"cg", "cg2", "classic"} {
		assert.Equal(t, map[int32]int64{0: 7, 1: 7}, f.offsets(t, g, false), g)
	}
	unchanged("--all-groups leaves share and Connect groups alone")

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--all-groups", "--execute", "--from-file", writeFile(t, "plan.csv", exported))
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, table("cg 0 1", "cg 1 2", "cg2 0 3", "cg2 1 4", "classic 0 1", "classic 1 2"), stdout)
	assert.Equal(t, map[int32]int64{0: 1, 1: 2}, f.offsets(t, "cg", false))
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "cg2", false))
	assert.Equal(t, map[int32]int64{0: 1, 1: 2}, f.offsets(t, "classic", false))

	// A group without lines in the file is not reset.
	rc, stdout, stderr = f.run(t, "--reset-offsets", "--all-groups", "--execute", "--from-file", writeFile(t, "cg.csv", "cg,orders,0,8\n"))
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "\nError: No reset plan for group cg2 found.\n\nError: No reset plan for group classic found.\n"+table("cg 0 8"), stdout)
	assert.Equal(t, map[int32]int64{0: 8, 1: 2}, f.offsets(t, "cg", false))
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "cg2", false))

	// The CSV of one group has no group column, which --all-groups does not read: Kafka's
	// isSingleGroupQuery is false.
	rc, stdout, _ = f.run(t, "--reset-offsets", "--all-groups", "--execute", "--from-file", writeFile(t, "one.csv", "orders,0,9\n"))
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Executing consumer group command failed due to reset plan line 1 \"orders,0,9\": 3 fields, want 4\n", stdout)
	assert.Equal(t, map[int32]int64{0: 8, 1: 2}, f.offsets(t, "cg", false))
	unchanged("after --from-file")
}

// TestResetAllGroupsWithActiveGroups runs --reset-offsets --all-groups --execute on the demo
// groups, whose members stay, and one empty group: each active consumer or classic group gets
// kafka-consumer-groups.sh's error line and an empty plan, the empty group is reset, exit 0.
// The active share and Connect groups are not among the groups --all-groups resets.
func TestResetAllGroupsWithActiveGroups(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic(demoTopic, 3))
	ctx := testCtx(t)
	stop, err := seedDemoGroups(ctx, c.Addrs())
	require.NoError(t, err)
	t.Cleanup(stop)
	adm := kadm.NewClient(mustClient(t, c))
	idle := kadm.Offsets{}
	idle.Add(kadm.Offset{Topic: demoTopic, Partition: 0, At: 2, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "idle", idle)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	before, err := adm.FetchOffsets(ctx, demoConsumer)
	require.NoError(t, err)

	rc, stdout, stderr := runOn(t, c, "--reset-offsets", "--all-groups", "--all-topics", "--to-earliest", "--execute")
	require.Equal(t, 0, rc, stderr)
	assert.Empty(t, stderr)
	assert.Equal(t, ""+
		"\nError: Assignments can only be reset if the group 'demo-classic' is inactive, but the current state is Stable.\n"+
		"\nError: Assignments can only be reset if the group 'demo-consumer' is inactive, but the current state is Stable.\n"+
		fmt.Sprintf("\n%-15s %-15s %-10s %s", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")+
		fmt.Sprintf("\n%-15s %-15s %-10s %s\n", "idle", demoTopic, "0", "0"), stdout)

	fetched, err := adm.FetchOffsets(ctx, "idle")
	require.NoError(t, err)
	assert.Equal(t, int64(0), fetched[demoTopic][0].At)
	after, err := adm.FetchOffsets(ctx, demoConsumer)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the active group's offsets are as they were")
	ds, err := adm.DescribeShareGroupOffsets(ctx, demoShare)
	require.NoError(t, err)
	assert.Equal(t, int64(4), ds[demoShare].Offsets[demoQueue][0].StartOffset, "the share group is not reset")
}

// TestResetAllGroupsNone: --all-groups on a cluster without consumer or classic groups (a
// share group only) resets nothing and prints what Kafka's tools print for no plan: an empty
// line, with --export too.
func TestResetAllGroupsNone(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.shareGroup(t, "sg", 3, 4)
	for _, export := range []bool{false, true} {
		args := []string{"--reset-offsets", "--all-groups", "--topic", ordersTopic, "--to-earliest", "--execute"}
		if export {
			args = append(args, "--export")
		}
		rc, stdout, stderr := f.run(t, args...)
		assert.Equal(t, 0, rc, stderr)
		assert.Equal(t, "\n", stdout, "%v", args)
		assert.Empty(t, stderr)
	}
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "sg", true))
}

// TestResetAllGroupsOptionErrors: --reset-offsets takes --group or --all-groups, with
// kafka-consumer-groups.sh's message for neither and its checks for both; the other checks
// of --reset-offsets are the same with --all-groups as with --group.
func TestResetAllGroupsOptionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--reset-offsets", "--topic", "t", "--to-latest"}, "Option [reset-offsets] takes one of these options: [group], [all-groups]"},
		{[]string{"--reset-offsets", "--execute", "--topic", "t", "--to-latest"}, "Option [reset-offsets] takes one of these options: [group], [all-groups]"},
		{[]string{"--reset-offsets", "--all-groups", "--group", "g", "--dry-run", "--topic", "t", "--to-latest"}, `Option "[group]" can't be used with option "[all-groups]"`},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--execute", "--topic", "t", "--to-latest"}, "Option [reset-offsets] only accepts one of [execute] and [dry-run]"},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--to-latest"}, "Option [reset-offsets] takes one of these options: [all-topics], [from-file], [topic]"},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--topic", "t", "--all-topics", "--to-latest"}, `Option "[topic]" can't be used with option "[all-topics]"`},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--topic", "t"},
			"Option [reset-offsets] takes one of these options: [by-duration], [from-file], [shift-by], [to-current], [to-datetime], [to-earliest], [to-latest], [to-offset]"},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--topic", "t", "--to-latest", "--shift-by", "1"}, `Option "[to-latest]" can't be used with option "[shift-by]"`},
		{[]string{"--reset-offsets", "--all-groups", "--dry-run", "--from-file", "plan.csv", "--to-earliest"}, `Option "[to-earliest]" can't be used with option "[from-file]"`},
	} {
		assertUsageError(t, tc.args, tc.msg)
	}
}

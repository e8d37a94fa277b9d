package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// connectRefused is what kafka-consumer-groups.sh --reset-offsets writes for a classic group
// of protocol type "connect": the admin client's IllegalArgumentException inside the
// ExecutionException the tool wraps in a RuntimeException.
func connectRefused(group string) string {
	return "\nError: Executing consumer group command failed due to java.util.concurrent.ExecutionException: " +
		"java.lang.IllegalArgumentException: GroupId " + group + " is not a consumer group (connect).\n"
}

// emptyConnectGroup makes a classic group of protocol type "connect" whose one member joined
// and left, so that it is Empty.
func emptyConnectGroup(t *testing.T, c *testbroker.Cluster, group string) {
	t.Helper()
	cl := mustClient(t, c)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, "connect"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 45000, 60000
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "demo"
	join.Protocols = append(join.Protocols, proto)
	resp, err := join.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = resp.MemberID
		resp, err = join.RequestWith(testCtx(t), cl)
		require.NoError(t, err)
	}
	require.Zero(t, resp.ErrorCode)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = resp.MemberID
	leave.Members = append(leave.Members, m)
	_, err = leave.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	adm := kadm.NewClient(mustClient(t, c))
	require.Eventually(t, func() bool {
		listed, err := adm.ListGroups(testCtx(t))
		return err == nil && listed[group].State == "Empty" && listed[group].ProtocolType == "connect"
	}, 10*time.Second, 10*time.Millisecond)
}

// TestOffsetActionsOnConnectGroup runs --reset-offsets, --delete-offsets and --delete on
// Connect groups (classic, protocol type "connect") as kafka-consumer-groups.sh does: reset
// describes the group first and fails, exit 0, before any plan or commit, active or empty;
// --delete-offsets and --delete leave the group to the broker, which refuses an active one.
func TestOffsetActionsOnConnectGroup(t *testing.T) {
	t.Parallel()
	c := describeCluster(t)
	emptyConnectGroup(t, c, "connect-empty")

	for _, args := range [][]string{
		{"--reset-offsets", "--group", demoConnect, "--all-topics", "--to-earliest", "--dry-run"},
		{"--reset-offsets", "--group", demoConnect, "--topic", demoTopic, "--to-latest", "--execute"},
		{"--reset-offsets", "--group", "connect-empty", "--topic", "orders", "--to-earliest", "--execute"},
		{"--reset-offsets", "--group", "connect-empty", "--topic", "orders", "--to-earliest", "--dry-run", "--export"},
		{"--reset-offsets", "--group", "connect-empty", "--group", "orders-app", "--topic", "orders", "--to-earliest", "--execute"},
	} {
		rc, stdout, stderr := runOn(t, c, args...)
		assert.Equal(t, 0, rc, "%v", args)
		assert.Equal(t, connectRefused(args[2]), stdout, "%v", args)
		assert.Empty(t, stderr, "%v", args)
	}
	adm := kadm.NewClient(mustClient(t, c))
	fetched, err := adm.FetchOffsets(testCtx(t), "connect-empty")
	require.NoError(t, err)
	assert.Empty(t, fetched.Offsets(), "nothing committed")
	fetched, err = adm.FetchOffsets(testCtx(t), "orders-app")
	require.NoError(t, err)
	assert.Equal(t, int64(3), fetched.Offsets()["orders"][0].At, "nothing committed for the other group either")

	rc, stdout, stderr := runOn(t, c, "--reset-offsets", "--group", "connect-empty", "--topic", "orders", "--to-earliest")
	assert.Equal(t, 0, rc)
	assert.Equal(t, connectRefused("connect-empty"), stdout)
	assert.Equal(t, consumerNoExecuteWarning+"\n", stderr)

	rc, stdout, _ = runOn(t, c, "--delete-offsets", "--group", demoConnect, "--topic", demoTopic+":0")
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: The group is not empty.\n"+
		"\nTOPIC           PARTITION  STATUS         "+
		"\ndemo            0          Error: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n", stdout)

	rc, stdout, _ = runOn(t, c, "--delete", "--group", demoConnect)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Deletion of some consumer groups failed:\n"+
		"* Group 'demo-connect' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n", stdout)

	rc, stdout, _ = runOn(t, c, "--delete", "--group", "connect-empty")
	assert.Equal(t, 0, rc)
	assert.Equal(t, "Deletion of requested consumer groups ('connect-empty') was successful.\n", stdout)
}

// TestOffsetActionsAcrossTypes: options of one tool on a group of the other type. A share
// group with --shift-by (the consumer tool's option, our extension for share groups) still
// follows the share tool; a consumer group without --dry-run or --execute, which the share
// tool refuses, gets the consumer tool's warning and a dry run; --delete-offsets with a
// topic name on a share group is the share tool's, on a consumer group the consumer tool's.
func TestOffsetActionsAcrossTypes(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)

	rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", "sg", "--topic", ordersTopic, "--shift-by", "-1", "--execute")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, planTable("sg", [2]int64{0, 2}, [2]int64{1, 3}), stdout)
	assert.Equal(t, map[int32]int64{0: 2, 1: 3}, f.offsets(t, "sg", true))

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", "sg", "--topic", ordersTopic, "--to-earliest")
	assert.Equal(t, 1, rc)
	assert.Empty(t, stdout)
	assert.Equal(t, "Option [reset-offsets] takes the option: [execute] or [dry-run]\n"+usage(), stderr)

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", "cg", "--topic", ordersTopic, "--to-earliest")
	assert.Equal(t, 0, rc)
	assert.Equal(t, planTable("cg", [2]int64{0, 0}, [2]int64{1, 0}), stdout)
	assert.Equal(t, consumerNoExecuteWarning+"\n", stderr)
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "cg", false), "a dry run")

	rc, stdout, _ = f.run(t, "--delete-offsets", "--group", "cg", "--topic", ordersTopic)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "Request succeeded for deleting offsets from group cg.\n"+
		"\nTOPIC           PARTITION  STATUS         "+
		"\norders          0          Successful     "+
		"\norders          1          Successful     \n", stdout)
}

// TestResetSeveralGroups: kafka-consumer-groups.sh resets several consumer groups in one
// run, one table (or CSV with a group column) for all; with a share group among them the
// share tool's joptsimple error, exit 1, and nothing reset. --delete-offsets reads one group
// in both tools.
func TestResetSeveralGroups(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)
	f.consumerGroup(t, "classic", false, 5, 6)

	rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", "cg", "--group", "classic", "--topic", ordersTopic+":1", "--to-offset", "1", "--dry-run", "--export")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "cg,orders,1,1\nclassic,orders,1,1\n\n", stdout)

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", "cg", "--group", "classic", "--topic", ordersTopic, "--to-earliest", "--execute")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "\n"+
		"GROUP           TOPIC           PARTITION  NEW-OFFSET\n"+
		"cg              orders          0          0\n"+
		"cg              orders          1          0\n"+
		"classic         orders          0          0\n"+
		"classic         orders          1          0\n", stdout)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0}, f.offsets(t, "cg", false))
	assert.Equal(t, map[int32]int64{0: 0, 1: 0}, f.offsets(t, "classic", false))

	multiple := "Found multiple arguments for option group, but you asked for only one"
	rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", "cg", "--group", "sg", "--topic", ordersTopic, "--to-latest", "--execute")
	assert.Equal(t, 1, rc)
	assert.Equal(t, "\nError: Executing share group command failed due to "+multiple+"\n", stdout)
	assert.Empty(t, stderr)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0}, f.offsets(t, "cg", false))
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "sg", true))

	rc, stdout, _ = f.run(t, "--delete-offsets", "--group", "cg", "--group", "classic", "--topic", ordersTopic)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Executing consumer group command failed due to "+multiple+"\n", stdout)
	rc, stdout, _ = f.run(t, "--delete-offsets", "--group", "sg", "--group", "sg", "--topic", ordersTopic)
	assert.Equal(t, 1, rc)
	assert.Equal(t, "\nError: Executing share group command failed due to "+multiple+"\n", stdout)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0}, f.offsets(t, "classic", false))
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "sg", true))
}

// TestResetDryRunUnknownGroup: a dry run on a group the cluster does not have, under either
// tool, prints the plan and leaves no group behind.
func TestResetDryRunUnknownGroup(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	for _, tc := range []struct {
		args []string
		rc   int
	}{
		{[]string{"--reset-offsets", "--group", "ghost", "--topic", ordersTopic, "--to-earliest", "--dry-run"}, 0},
		{[]string{"--reset-offsets", "--group", "ghost", "--all-topics", "--to-earliest", "--dry-run"}, 0},
		{[]string{"--reset-offsets", "--group", "ghost", "--topic", ordersTopic, "--to-current", "--dry-run"}, 0},
		{[]string{"--reset-offsets", "--group", "ghost", "--topic", ordersTopic, "--by-duration", "PT1H"}, 0},
		// The consumer tool's IllegalArgumentException: "Cannot shift offset for partition
		// orders-0 since there is no current committed offset".
		{[]string{"--reset-offsets", "--group", "ghost", "--topic", ordersTopic, "--shift-by", "1", "--dry-run"}, 1},
	} {
		args := tc.args
		rc, _, stderr := f.run(t, args...)
		assert.Equal(t, tc.rc, rc, "%v: %s", args, stderr)
		listed, err := f.adm.ListGroups(testCtx(t))
		require.NoError(t, err)
		assert.NotContains(t, listed, "ghost", "%v", args)
	}
}

// TestEveryActionSecured runs every action against a testbroker with TLS and SASL (SCRAM),
// connecting with a --command-config file: a share group and a consumer group are made by
// --reset-offsets --execute, then listed, described, reset, their offsets deleted and the
// groups deleted.
func TestEveryActionSecured(t *testing.T) {
	t.Parallel()
	c, ca := securedCluster(t)
	config := scramConfig(t, ca)
	for _, tc := range []struct {
		args   []string
		stdout string
	}{
		{[]string{"--reset-offsets", "--group", "sg", "--topic", "orders", "--to-offset", "0", "--execute"}, planTable("sg", [2]int64{0, 0}, [2]int64{1, 0})},
		{[]string{"--reset-offsets", "--group", "cg", "--topic", "orders", "--by-duration", "PT1H", "--execute"},
			"\nWarn: Partition 0 from topic orders is empty. Falling back to latest known offset.\n" +
				"\nWarn: Partition 1 from topic orders is empty. Falling back to latest known offset.\n" +
				planTable("cg", [2]int64{0, 0}, [2]int64{1, 0})},
		{[]string{"--reset-offsets", "--group", "sg", "--all-topics", "--to-latest", "--dry-run"}, planTable("sg", [2]int64{0, 0}, [2]int64{1, 0})},
		{[]string{"--reset-offsets", "--group", "cg", "--all-topics", "--to-latest", "--dry-run"}, planTable("cg", [2]int64{0, 0}, [2]int64{1, 0})},
		{[]string{"--list"}, "GROUP                TYPE                 PROTOCOL            \n" +
			"cg                   Classic                                   \n" +
			"sg                   Share                share                \n"},
		{[]string{"--list", "--state"}, "GROUP           STATE\nsg              Empty\n"},
		{[]string{"--list", "--type", "--state"}, "GROUP                     TYPE                 STATE               \n" +
			"cg                        Classic              Empty               \n"},
		{[]string{"--describe", "--group", "sg"}, "\n" +
			"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
			"sg              orders          0          0             0\n" +
			"sg              orders          1          0             0\n"},
		{[]string{"--describe", "--group", "cg"}, "\n" +
			"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n" +
			"cg              orders          0          0               0               0               -               -               -\n" +
			"cg              orders          1          0               0               0               -               -               -\n"},
		{[]string{"--delete-offsets", "--group", "sg", "--topic", "orders"}, "\nTOPIC           STATUS\norders          Successful\n"},
		{[]string{"--delete-offsets", "--group", "cg", "--topic", "orders:0"}, "Request succeeded for deleting offsets from group cg.\n" +
			"\nTOPIC           PARTITION  STATUS         \norders          0          Successful     \n"},
		{[]string{"--delete", "--group", "sg"}, "Deletion of requested share groups ('sg') was successful.\n"},
		{[]string{"--delete", "--all-groups"}, "Deletion of requested consumer groups ('cg') was successful.\n"},
		{[]string{"--list"}, "GROUP                TYPE                 PROTOCOL            \n"},
	} {
		rc, stdout, stderr := runOn(t, c, append([]string{"--command-config", config}, tc.args...)...)
		require.Equal(t, 0, rc, "%v: %s%s", tc.args, stdout, stderr)
		assert.Equal(t, tc.stdout, stdout, "%v", tc.args)
	}
}

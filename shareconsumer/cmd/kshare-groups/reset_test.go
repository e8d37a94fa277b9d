package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// ordersTopic has two partitions of ten records each in the groups fixture.
const ordersTopic = "orders"

// groupsFixture is a testbroker with the topic orders, whose record i (0 to 9) on each
// partition has the timestamp base + i hours, base ten hours ago.
type groupsFixture struct {
	c    *testbroker.Cluster
	adm  *kadm.Client
	base time.Time
}

func newGroupsFixture(t *testing.T, opts ...testbroker.Opt) *groupsFixture {
	t.Helper()
	c := testbroker.StartT(t, append([]testbroker.Opt{testbroker.Topic(ordersTopic, 2)}, opts...)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	f := &groupsFixture{c: c, adm: kadm.NewClient(cl), base: time.Now().Add(-10 * time.Hour).Truncate(time.Millisecond)}
	var records []*kgo.Record
	for p := range int32(2) {
		for i := range 10 {
			records = append(records, &kgo.Record{Topic: ordersTopic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: f.base.Add(time.Duration(i) * time.Hour)})
		}
	}
	require.NoError(t, cl.ProduceSync(testCtx(t), records...).FirstErr())
	return f
}

// run runs the tool against the fixture's cluster.
func (f *groupsFixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runOn(t, f.c, args...)
}

// shareGroup makes an empty share group whose start offsets on orders are p0 and p1.
func (f *groupsFixture) shareGroup(t *testing.T, group string, p0, p1 int64) {
	t.Helper()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: ordersTopic, Partition: 0, At: p0})
	os.Add(kadm.Offset{Topic: ordersTopic, Partition: 1, At: p1})
	resp, err := f.adm.AlterShareGroupOffsets(testCtx(t), group, os)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// consumerGroup makes an empty group of orders whose committed offsets are p0 and p1: a
// member joins (KIP-848 with kip848, else classic with the range balancer) and leaves, then
// an admin commits.
func (f *groupsFixture) consumerGroup(t *testing.T, group string, kip848 bool, p0, p1 int64) {
	t.Helper()
	assigned := make(chan struct{}, 1)
	opts := []kgo.Opt{
		kgo.SeedBrokers(f.c.Addrs()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(ordersTopic), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	}
	if kip848 {
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	select {
	case <-assigned:
	case <-testCtx(t).Done():
		t.Fatal("no assignment")
	}
	cl.Close()
	require.Eventually(t, func() bool {
		listed, err := f.adm.ListGroups(testCtx(t))
		return err == nil && listed[group].State == "Empty"
	}, 10*time.Second, 10*time.Millisecond)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: ordersTopic, Partition: 0, At: p0, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: ordersTopic, Partition: 1, At: p1, LeaderEpoch: -1})
	resp, err := f.adm.CommitOffsets(testCtx(t), group, os)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// groupOfType is a group of the fixture and whether it is a share group.
type groupOfType struct {
	id    string
	share bool
}

// groupOfEveryType makes the share group sg, the consumer group cg and the classic group
// classic, each at offsets 3 and 4, and returns them.
func (f *groupsFixture) groupOfEveryType(t *testing.T) []groupOfType {
	t.Helper()
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)
	f.consumerGroup(t, "classic", false, 3, 4)
	return []groupOfType{{"sg", true}, {"cg", false}, {"classic", false}}
}

// offsets is the group's current offset on each partition of orders it has one for: the
// share-partition start offsets of a share group, the committed offsets of another.
func (f *groupsFixture) offsets(t *testing.T, group string, share bool) map[int32]int64 {
	t.Helper()
	got := map[int32]int64{}
	if share {
		ds, err := f.adm.DescribeShareGroupOffsets(testCtx(t), group)
		require.NoError(t, err)
		for p, o := range ds[group].Offsets[ordersTopic] {
			if o.Err == nil && o.StartOffset >= 0 {
				got[p] = o.StartOffset
			}
		}
		return got
	}
	fetched, err := f.adm.FetchOffsets(testCtx(t), group)
	require.NoError(t, err)
	for p, o := range fetched[ordersTopic] {
		if o.Err == nil && o.At >= 0 {
			got[p] = o.At
		}
	}
	return got
}

// planTable is the reset plan table of group on orders.
func planTable(group string, offsets ...[2]int64) string {
	s := fmt.Sprintf("\n%-15s %-15s %-10s %s", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, o := range offsets {
		s += fmt.Sprintf("\n%-15s %-15s %-10d %d", group, ordersTopic, o[0], o[1])
	}
	return s + "\n"
}

// TestResetOffsets runs every scenario with --execute against a share group, a KIP-848
// consumer group and a classic group, each empty, and checks the offsets each set.
func TestResetOffsets(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	groups := f.groupOfEveryType(t)
	listed, err := f.adm.ListGroups(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, "share", listed["sg"].GroupType)
	require.Equal(t, "consumer", listed["cg"].GroupType)
	require.Equal(t, "classic", listed["classic"].GroupType)

	datetime := f.base.Add(5 * time.Hour).UTC().Format("2006-01-02T15:04:05.000")
	for _, g := range groups {
		for _, tc := range []struct {
			args   []string
			rows   [][2]int64 // partition, new offset
			want   [2]int64   // the offsets afterwards
			notice string
			warn   string
		}{
			{[]string{"--topic", ordersTopic, "--to-earliest"}, [][2]int64{{0, 0}, {1, 0}}, [2]int64{0, 0}, "", ""},
			{[]string{"--all-topics", "--to-latest"}, [][2]int64{{0, 10}, {1, 10}}, [2]int64{10, 10}, "", ""},
			{[]string{"--topic", ordersTopic, "--to-offset", "6"}, [][2]int64{{0, 6}, {1, 6}}, [2]int64{6, 6}, "", ""},
			{[]string{"--topic", ordersTopic + ":1", "--to-offset", "99"}, [][2]int64{{1, 10}}, [2]int64{6, 10}, "",
				"WARN New offset (99) is higher than latest offset for topic partition orders-1. Value will be set to 10.\n"},
			{[]string{"--all-topics", "--shift-by", "-2"}, [][2]int64{{0, 4}, {1, 8}}, [2]int64{4, 8}, "", ""},
			{[]string{"--all-topics", "--shift-by", "-7"}, [][2]int64{{0, 0}, {1, 1}}, [2]int64{0, 1}, "",
				"WARN New offset (-3) is lower than earliest offset for topic partition orders-0. Value will be set to 0.\n"},
			{[]string{"--topic", ordersTopic, "--to-datetime", datetime}, [][2]int64{{0, 5}, {1, 5}}, [2]int64{5, 5}, "", ""},
			{[]string{"--topic", ordersTopic + ":0", "--to-datetime", "2099-01-01T00:00:00.000+01:00"}, [][2]int64{{0, 10}}, [2]int64{10, 5},
				"\nWarn: Partition 0 from topic orders is empty. Falling back to latest known offset.\n", ""},
			{[]string{"--topic", ordersTopic, "--by-duration", "PT8H30M"}, [][2]int64{{0, 2}, {1, 2}}, [2]int64{2, 2}, "", ""},
			{[]string{"--all-topics", "--to-current"}, [][2]int64{{0, 2}, {1, 2}}, [2]int64{2, 2}, "", ""},
		} {
			args := append([]string{"--reset-offsets", "--group", g.id, "--execute"}, tc.args...)
			rc, stdout, stderr := f.run(t, args...)
			require.Equal(t, 0, rc, "%s %v: %s%s", g.id, tc.args, stdout, stderr)
			assert.Equal(t, tc.notice+planTable(g.id, tc.rows...), stdout, "%s %v", g.id, tc.args)
			assert.Equal(t, tc.warn, stderr, "%s %v", g.id, tc.args)
			assert.Equal(t, map[int32]int64{0: tc.want[0], 1: tc.want[1]}, f.offsets(t, g.id, g.share), "%s %v", g.id, tc.args)
		}
	}
}

// TestResetOffsetsDryRunChangesNothing prints the plan of each group type, in the table and
// as CSV, and leaves the offsets as they were; without --dry-run or --execute the share tool
// refuses and the consumer tool warns and does a dry run.
func TestResetOffsetsDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	for _, g := range f.groupOfEveryType(t) {
		rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", g.id, "--dry-run", "--all-topics", "--to-latest")
		require.Equal(t, 0, rc, stderr)
		assert.Equal(t, planTable(g.id, [2]int64{0, 10}, [2]int64{1, 10}), stdout)

		rc, stdout, _ = f.run(t, "--reset-offsets", "--group", g.id, "--dry-run", "--topic", ordersTopic, "--shift-by", "1", "--export")
		require.Equal(t, 0, rc)
		assert.Equal(t, "orders,0,4\norders,1,5\n\n", stdout)

		rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", g.id, "--topic", ordersTopic, "--to-earliest")
		if g.share {
			assert.Equal(t, 1, rc)
			assert.Empty(t, stdout)
			assert.Equal(t, "Option [reset-offsets] takes the option: [execute] or [dry-run]\n"+usage(), stderr)
		} else {
			assert.Equal(t, 0, rc)
			assert.Equal(t, planTable(g.id, [2]int64{0, 0}, [2]int64{1, 0}), stdout)
			assert.Equal(t, consumerNoExecuteWarning+"\n", stderr)
		}
		assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, g.id, g.share), g.id)
	}
}

// TestResetOffsetsRefusedWhileActive: a share group with members is refused on stderr with
// exit code 1; a consumer or classic group with members gets the consumer tool's error line,
// an empty plan and exit code 0. Nothing changes.
func TestResetOffsetsRefusedWhileActive(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic(demoTopic, 3))
	ctx := testCtx(t)
	stop, err := seedDemoGroups(ctx, c.Addrs())
	require.NoError(t, err)
	t.Cleanup(stop)

	rc, stdout, stderr := runOn(t, c, "--reset-offsets", "--group", demoShare, "--topic", demoQueue, "--to-earliest", "--execute")
	assert.Equal(t, 1, rc)
	assert.Empty(t, stdout)
	assert.Equal(t, "Share group 'demo-share' is not empty.\n", stderr)

	for _, g := range []string{demoConsumer, demoClassic} {
		rc, stdout, stderr := runOn(t, c, "--reset-offsets", "--group", g, "--all-topics", "--to-earliest", "--execute")
		assert.Equal(t, 0, rc, g)
		assert.Equal(t, "\nError: Assignments can only be reset if the group '"+g+"' is inactive, but the current state is Stable.\n"+
			fmt.Sprintf("\n%-15s %-15s %-10s %s\n", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), stdout, g)
		assert.Empty(t, stderr, g)
	}
	ds, err := kadm.NewClient(mustClient(t, c)).DescribeShareGroupOffsets(ctx, demoShare)
	require.NoError(t, err)
	assert.Equal(t, int64(4), ds[demoShare].Offsets[demoQueue][0].StartOffset, "the share group's start offset is as it was")
}

func mustClient(t *testing.T, c *testbroker.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestResetOffsetsUnknownGroup: a group no broker lists follows the share tool, and
// AlterShareGroupOffsets makes it a share group with those offsets; with --shift-by (an option
// only the consumer tool has) it follows the consumer tool, which has no offset to shift.
func TestResetOffsetsUnknownGroup(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", "fresh", "--topic", ordersTopic, "--to-offset", "2", "--execute")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, planTable("fresh", [2]int64{0, 2}, [2]int64{1, 2}), stdout)
	listed, err := f.adm.ListGroups(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, "share", listed["fresh"].GroupType)
	assert.Equal(t, map[int32]int64{0: 2, 1: 2}, f.offsets(t, "fresh", true))

	rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", "other", "--topic", ordersTopic, "--shift-by", "1", "--execute")
	assert.Equal(t, 1, rc)
	assert.Empty(t, stdout)
	assert.Equal(t, "Cannot shift offset for partition orders-0 since there is no current committed offset\n"+usage(), stderr)
}

// TestResetOffsetsErrors: partitions that do not exist, a bad --topic and a bad --to-datetime
// fail in Kafka's words, the share tool's with exit code 1 and the consumer tool's with 0.
func TestResetOffsetsErrors(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)
	for _, g := range []struct {
		id, tool string
		rc       int
	}{{"sg", "share", 1}, {"cg", "consumer", 0}} {
		for _, tc := range []struct {
			args []string
			msg  string
		}{
			{[]string{"--topic", "nope", "--to-earliest"}, "Topic nope not found."},
			{[]string{"--topic", "orders:1,2,5", "--to-earliest"}, `The partitions "orders-2,orders-5" do not exist`},
			{[]string{"--topic", ordersTopic, "--to-datetime", "yesterday"}, "java.text.ParseException: Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"},
			{[]string{"--topic", ordersTopic, "--by-duration", "1h"}, "Text cannot be parsed to a Duration"},
		} {
			rc, stdout, _ := f.run(t, append([]string{"--reset-offsets", "--group", g.id, "--execute"}, tc.args...)...)
			assert.Equal(t, g.rc, rc, "%s %v", g.id, tc.args)
			assert.Equal(t, "\nError: Executing "+g.tool+" group command failed due to "+tc.msg+"\n", stdout, "%s %v", g.id, tc.args)
		}
		rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", g.id, "--execute", "--topic", "orders:x", "--to-earliest")
		assert.Equal(t, 1, rc)
		assert.Empty(t, stdout)
		want := "Invalid partition 'x' specified in topic arg 'orders:x''\n"
		if g.tool == "consumer" {
			want += usage()
		}
		assert.Equal(t, want, stderr)
		assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, g.id, g.tool == "share"))
	}
}

// TestResetShareGroupOfAnotherType: should a group change type between the listing and the
// reset, AlterShareGroupOffsets answers with Kafka's message, which the share tool prints.
func TestResetShareGroupOfAnotherType(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	f.consumerGroup(t, "cg", true, 3, 4)
	err := alterShareGroupOffsets(testCtx(t), mustClient(t, f.c), options{timeoutMs: defaultTimeoutMs}, "cg", []newOffset{{topicPartition{ordersTopic, 0}, 1}})
	var stdout, stderr strings.Builder
	assert.Equal(t, 1, shareTool.fail(&stdout, &stderr, err))
	assert.Equal(t, "\nError: Executing share group command failed due to Group cg is not a share group.\n", stdout.String())
	assert.Equal(t, map[int32]int64{0: 3, 1: 4}, f.offsets(t, "cg", false))
}

// TestOffsetActionOptionErrors runs command lines kafka-share-groups.sh's checkArgs refuses,
// each with its message and the usage on stderr, before any cluster is reached.
func TestOffsetActionOptionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--delete"}, "Option [delete] takes the options [group] or [all-groups]."},
		{[]string{"--delete", "--group", "g", "--all-groups"}, "Option [delete] takes either [group] or [all-groups], not both."},
		{[]string{"--delete", "--group", "g", "--topic", "t"}, "Option [delete] does not take the options [topic] or [all-topics]."},
		{[]string{"--delete-offsets", "--group", "g"}, "Option [delete-offsets] takes the following options: [group], [topic]"},
		{[]string{"--delete-offsets", "--topic", "t"}, "Option [delete-offsets] takes the following options: [group], [topic]"},
		{[]string{"--reset-offsets", "--group", "", "--dry-run", "--to-latest"}, "Option [reset-offsets] takes one of these options: [all-topics], [from-file], [topic]"},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--from-file", ""}, `Option "[topic]" can't be used with option "[from-file]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--to-datetime", "", "--by-duration", ""}, `Option "[to-datetime]" can't be used with option "[by-duration]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--to-offset", "x"}, "Cannot parse argument 'x' of option [to-offset]"},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--shift-by", "1.5"}, "Cannot parse argument '1.5' of option [shift-by]"},
		{[]string{"--list", "--timeout", "\"x\""}, `Cannot parse argument '"x"' of option [timeout]`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--execute"}, "Option [reset-offsets] only accepts one of [execute] and [dry-run]"},
		{[]string{"--reset-offsets", "--dry-run", "--topic", "t", "--to-latest"}, "Option [reset-offsets] takes one of these options: [group], [all-groups]"},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--to-latest"}, "Option [reset-offsets] takes one of these options: [all-topics], [from-file], [topic]"},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--all-topics", "--to-latest"}, `Option "[topic]" can't be used with option "[all-topics]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t"},
			"Option [reset-offsets] takes one of these options: [by-duration], [from-file], [shift-by], [to-current], [to-datetime], [to-earliest], [to-latest], [to-offset]"},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--from-file", "plan.csv"}, `Option "[topic]" can't be used with option "[from-file]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--from-file", "plan.csv", "--to-latest"}, `Option "[to-latest]" can't be used with option "[from-file]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--to-latest", "--to-earliest"}, `Option "[to-earliest]" can't be used with option "[to-latest]"`},
		{[]string{"--reset-offsets", "--group", "g", "--dry-run", "--topic", "t", "--to-offset", "0", "--shift-by", "1"}, `Option "[to-offset]" can't be used with option "[shift-by]"`},
		{[]string{"--describe", "--group", "g", "--topic", "t"}, `Option "[topic]" can't be used with option "[describe]"`},
		{[]string{"--reset-offsets", "--delete", "--group", "g"}, "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets, --create."},
	} {
		assertUsageError(t, tc.args, tc.msg)
	}
}

// TestResetOffsetsSecured resets a share group's offsets on a testbroker with TLS and SASL,
// connecting with a --command-config file.
func TestResetOffsetsSecured(t *testing.T) {
	t.Parallel()
	c, ca := securedCluster(t)
	config := scramConfig(t, ca)
	rc, stdout, stderr := runOn(t, c, "--command-config", config, "--reset-offsets", "--group", "secured", "--topic", "orders:1", "--to-offset", "0", "--execute")
	require.Equal(t, 0, rc, stdout+stderr)
	assert.Equal(t, planTable("secured", [2]int64{1, 0}), stdout)

	rc, stdout, stderr = runOn(t, c, "--command-config", config, "--describe", "--group", "secured")
	require.Equal(t, 0, rc, stdout+stderr)
	assert.Contains(t, stdout, fmt.Sprintf("\n%-15s %-15s %-10s %-13s %s", "secured", "orders", "1", "0", "0"))
}

// TestResetOffsetsFromFile exports a plan with --export --dry-run and executes it with
// --from-file, for each group type; a file without the group's lines resets nothing.
func TestResetOffsetsFromFile(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t)
	for _, g := range f.groupOfEveryType(t) {
		rc, exported, stderr := f.run(t, "--reset-offsets", "--group", g.id, "--dry-run", "--all-topics", "--shift-by", "3", "--export")
		require.Equal(t, 0, rc, stderr)
		require.Equal(t, "orders,0,6\norders,1,7\n\n", exported)
		rc, stdout, stderr := f.run(t, "--reset-offsets", "--group", g.id, "--execute", "--from-file", writeFile(t, "plan.csv", exported))
		require.Equal(t, 0, rc, stderr)
		assert.Equal(t, planTable(g.id, [2]int64{0, 6}, [2]int64{1, 7}), stdout, g.id)
		assert.Equal(t, map[int32]int64{0: 6, 1: 7}, f.offsets(t, g.id, g.share), g.id)

		plan := writeFile(t, "groups.csv", g.id+",orders,1,42\nother,orders,0,1\n")
		rc, stdout, stderr = f.run(t, "--reset-offsets", "--group", g.id, "--execute", "--from-file", plan)
		require.Equal(t, 0, rc, stderr)
		assert.Equal(t, planTable(g.id, [2]int64{1, 10}), stdout, g.id)
		assert.Equal(t, "WARN New offset (42) is higher than latest offset for topic partition orders-1. Value will be set to 10.\n", stderr)
		assert.Equal(t, map[int32]int64{0: 6, 1: 10}, f.offsets(t, g.id, g.share), g.id)

		rc, stdout, _ = f.run(t, "--reset-offsets", "--group", g.id, "--execute", "--from-file", writeFile(t, "other.csv", "other,orders,0,1\n"))
		require.Equal(t, 0, rc)
		want := "\nError: No reset plan for group " + g.id + " found.\n"
		if g.share {
			want += "\n"
		} else {
			want += planTable(g.id)
		}
		assert.Equal(t, want, stdout, g.id)
		assert.Equal(t, map[int32]int64{0: 6, 1: 10}, f.offsets(t, g.id, g.share), g.id)
	}
}

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestOptionErrors runs command lines kafka-groups.sh refuses: each fails before any cluster is
// reached, with Kafka's message on stderr, followed by the usage where Kafka prints it.
func TestOptionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		msg       string
		withUsage bool
	}{
		{nil, "This tool helps to list groups of all types, create share groups, describe them, reset and delete their offsets, and delete them.", true},
		{[]string{"--share"}, actionsMsg, true},
		{[]string{"--list", "--create"}, actionsMsg, true},
		{[]string{"--list", "--group-type", "queue"}, "--group-type must be a valid group type.", false},
		{[]string{"--list", "--group-type", "unknown"}, "--group-type must be a valid group type.", false},
		{[]string{"--list", "--consumer", "--group-type", "share"}, `Option "[consumer]" can't be used with option "[group-type]"`, true},
		{[]string{"--list", "--consumer", "--protocol", "consumer"}, `Option "[consumer]" can't be used with option "[protocol]"`, true},
		{[]string{"--list", "--share", "--consumer"}, `Option "[consumer]" can't be used with option "[share]"`, true},
		{[]string{"--list", "--share", "--streams"}, `Option "[share]" can't be used with option "[streams]"`, true},
		{[]string{"--list", "--streams", "--group-type", "streams"}, `Option "[streams]" can't be used with option "[group-type]"`, true},
		{[]string{"--list", "--group", "g"}, `Option "[list]" can't be used with option "[group]"`, true},
		{[]string{"--create"}, `Missing required argument "[group]"`, true},
		{[]string{"--describe", "--group", "g", "--share"}, `Option "[describe]" can't be used with option "[share]"`, true},
		{[]string{"--create", "--group", "g", "--protocol", "x"}, `Option "[create]" can't be used with option "[protocol]"`, true},
		{[]string{"--list", "--bogus"}, "bogus is not a recognized option", true},
		{[]string{"--list", "extra"}, "Found non-option arguments: extra", true},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 1, run(testCtx(t), &stdout, &stderr, tc.args), "%v", tc.args)
		want := tc.msg + "\n"
		if tc.withUsage {
			want += usage()
		}
		assert.Equal(t, want, stderr.String(), "%v", tc.args)
		assert.Empty(t, stdout.String(), "%v", tc.args)
	}
}

// actionsMsg is the message of a command line without exactly one action.
const actionsMsg = "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets, --create."

// assertUsageError checks that the command line args fails with exit code 1, msg and the usage
// on stderr, and nothing on stdout.
func assertUsageError(t *testing.T, args []string, msg string) {
	t.Helper()
	var stdout, stderr strings.Builder
	assert.Equal(t, 1, run(testCtx(t), &stdout, &stderr, args), "%v", args)
	assert.Equal(t, msg+"\n"+usage(), stderr.String(), "%v", args)
	assert.Empty(t, stdout.String(), "%v", args)
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	o, err := parseArgs([]string{"--list", "--group-type", "CLASSIC", "--protocol", ""})
	require.NoError(t, err)
	assert.Equal(t, "classic", o.groupType, "case-insensitive, as Kafka's GroupType.parse")
	require.NotNil(t, o.protocol)
	assert.Empty(t, *o.protocol, "an empty protocol is a filter: simple groups")

	o, err = parseArgs([]string{"--bootstrap-server", "b:9092", "--describe", "--group", "g"})
	require.NoError(t, err)
	assert.Equal(t, options{bootstrapServer: "b:9092", describe: true, group: "g", groups: []string{"g"}, timeoutMs: 30000,
		given: map[string]bool{"bootstrap-server": true, "describe": true, "group": true}}, o)
}

// syntheticGroups has one group of each kind, as ListGroups v5 lists them, and one listed by
// a broker before v5 (no type).
var syntheticGroups = []kadm.ListedGroup{
	{Group: "CGclassic", GroupType: "classic", ProtocolType: "consumer"},
	{Group: "CGconsumer", GroupType: "consumer", ProtocolType: "consumer"},
	{Group: "SG", GroupType: "share", ProtocolType: "share"},
	{Group: "STRG", GroupType: "streams", ProtocolType: "streams"},
	{Group: "connect-cluster-with-a-long-name", GroupType: "classic", ProtocolType: "connect"},
	{Group: "simple", GroupType: "classic", ProtocolType: ""},
	{Group: "old-broker", GroupType: "", ProtocolType: "consumer"},
	{Group: "future", GroupType: "queue", ProtocolType: "queue"},
}

// TestWriteGroupListGolden formats a synthetic listing with each filter kafka-groups.sh has.
func TestWriteGroupListGolden(t *testing.T) {
	t.Parallel()
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		filter groupFilter
		want   string
	}{
		{"all", groupFilter{}, "" +
			"GROUP                            TYPE                             PROTOCOL                        \n" +
			"CGclassic                        Classic                          consumer                         \n" +
			"CGconsumer                       Consumer                         consumer                         \n" +
			"SG                               Share                            share                            \n" +
			"STRG                             Streams                          streams                          \n" +
			"connect-cluster-with-a-long-name Classic                          connect                          \n" +
			"simple                           Classic                                                           \n" +
			"old-broker                                                        consumer                         \n" +
			"future                           Unknown                          queue                            \n"},
		{"consumer", groupFilter{consumer: true}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"CGclassic            Classic              consumer             \n" +
			"CGconsumer           Consumer             consumer             \n" +
			"simple               Classic                                   \n" +
			"old-broker                                consumer             \n"},
		{"share", groupFilter{share: true}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"SG                   Share                share                \n"},
		{"streams", groupFilter{streams: true}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"STRG                 Streams              streams              \n"},
		{"group type classic", groupFilter{groupType: "classic"}, "" +
			"GROUP                            TYPE                             PROTOCOL                        \n" +
			"CGclassic                        Classic                          consumer                         \n" +
			"connect-cluster-with-a-long-name Classic                          connect                          \n" +
			"simple                           Classic                                                           \n"},
		{"group type classic, protocol connect", groupFilter{groupType: "classic", protocol: p("connect")}, "" +
			"GROUP                            TYPE                             PROTOCOL                        \n" +
			"connect-cluster-with-a-long-name Classic                          connect                          \n"},
		{"protocol consumer", groupFilter{protocol: p("consumer")}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"CGclassic            Classic              consumer             \n" +
			"CGconsumer           Consumer             consumer             \n" +
			"old-broker                                consumer             \n"},
		{"nothing kept", groupFilter{groupType: "streams", protocol: p("consumer")}, "" +
			"GROUP                TYPE                 PROTOCOL            \n"},
	} {
		var b bytes.Buffer
		writeGroupList(&b, syntheticGroups, tc.filter)
		assert.Equal(t, tc.want, b.String(), tc.name)
	}
}

// TestKfake runs the command against kfake with the demo groups. kfake lists a KIP-848
// consumer group with protocol type "" (Kafka: "consumer"), answers a share heartbeat on a
// group of another type with GROUP_ID_NOT_FOUND without Kafka's message, and drops a share
// group without members or share-partition state, so a created group is gone again.
func TestKfake(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.SeedTopics(3, demoTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx := testCtx(t)
	stop, err := seedDemoGroups(ctx, c.ListenAddrs())
	require.NoError(t, err)
	t.Cleanup(stop)
	cmd := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		rc := run(ctx, &stdout, &stderr, append([]string{"--bootstrap-server", c.ListenAddrs()[0]}, args...))
		return rc, stdout.String(), stderr.String()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"demo-classic         Classic              consumer             \n" +
			"demo-connect         Classic              connect              \n" +
			"demo-consumer        Consumer                                  \n" +
			"demo-share           Share                share                \n"},
		{[]string{"--list", "--share"}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"demo-share           Share                share                \n"},
		{[]string{"--list", "--group-type", "Classic", "--protocol", "connect"}, "" +
			"GROUP                TYPE                 PROTOCOL            \n" +
			"demo-connect         Classic              connect              \n"},
	} {
		rc, stdout, stderr := cmd(tc.args...)
		assert.Equal(t, 0, rc, "%v: %s", tc.args, stderr)
		assert.Equal(t, tc.want, stdout, "%v", tc.args)
	}

	rc, stdout, _ := cmd("--create", "--group", "new")
	assert.Equal(t, 0, rc)
	assert.Equal(t, "Share group 'new' created.\n", stdout)
	rc, stdout, _ = cmd("--create", "--group", demoClassic)
	assert.Equal(t, 1, rc)
	assert.Equal(t, "Error: Group 'demo-classic' is not a share group.\n", stdout,
		"kfake sends GROUP_ID_NOT_FOUND without a message, but in answer to a join that means another type")

	rc, stdout, stderr := cmd("--describe", "--group", demoShare)
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "\n"+
		"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n"+
		"demo-share      demo-queue      0          4             6\n", stdout)

	rc, stdout, stderr = cmd("--describe", "--group", demoShare, "--members")
	require.Equal(t, 0, rc, stderr)
	// The member id (22 characters, as every kshare member id) and the host (at most 15) vary.
	stdout = regexp.MustCompile(`(?m)^(demo-share +)\S{22} \S+ +kgo`).ReplaceAllString(stdout, "${1}MEMBER-ID------------- HOST            kgo")
	assert.Equal(t, "\n"+
		"GROUP           CONSUMER-ID            HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT\n"+
		"demo-share      MEMBER-ID------------- HOST            kgo             1            demo-queue:0\n", stdout)

	rc, stdout, _ = cmd("--describe", "--group", "nope")
	assert.Equal(t, 1, rc)
	assert.Equal(t, "\nError: Executing share group command failed due to "+
		"org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.\n", stdout,
		"kfake sends GROUP_ID_NOT_FOUND without a message: Kafka's default message for the code")
}

// TestEmbeddedGolden lists the demo groups of the embedded testbroker: one group of each type
// it has.
func TestEmbeddedGolden(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	rc := run(testCtx(t), &stdout, &stderr, []string{"--list"})
	require.Equal(t, 0, rc, stderr.String())
	assert.Equal(t, ""+
		"GROUP                TYPE                 PROTOCOL            \n"+
		"demo-classic         Classic              consumer             \n"+
		"demo-connect         Classic              connect              \n"+
		"demo-consumer        Consumer             consumer             \n"+
		"demo-share           Share                share                \n", stdout.String())
	assert.Contains(t, stderr.String(), "started an embedded testbroker with demo groups: ")
}

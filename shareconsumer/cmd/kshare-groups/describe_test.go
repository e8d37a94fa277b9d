package main

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/testbroker"
)

// Groups describeCluster adds to the demo groups, both without members.
const (
	emptyShare   = "orders-share" // a share group whose start offset on orders-0 was set to 2
	emptyClassic = "orders-app"   // a simple classic group that committed offset 3 on orders-0 and 1 on orders-1
)

// describeCluster starts a testbroker with the demo groups (members stay until the test ends)
// and a topic "orders" of two partitions holding 5 records on partition 0 and 2 on partition
// 1, with two groups without members: emptyShare and emptyClassic.
func describeCluster(t *testing.T) *testbroker.Cluster {
	t.Helper()
	ctx := testCtx(t)
	c := testbroker.StartT(t, testbroker.Topic(demoTopic, 3), testbroker.Topic("orders", 2))
	stop, err := seedDemoGroups(ctx, c.Addrs())
	require.NoError(t, err)
	t.Cleanup(stop)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	for p, n := range []int{5, 2} {
		for i := range n {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(p), Value: []byte(fmt.Sprint(i))}).FirstErr())
		}
	}
	adm := kadm.NewClient(cl)
	var share kadm.Offsets
	share.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 2})
	altered, err := adm.AlterShareGroupOffsets(ctx, emptyShare, share)
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	var committed kadm.Offsets
	committed.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3, LeaderEpoch: -1})
	committed.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 1, LeaderEpoch: -1})
	require.NoError(t, adm.CommitAllOffsets(ctx, emptyClassic, committed))
	return c
}

// masked is out with the varying values replaced by placeholders of the same length, so that
// the columns keep their widths: member ids (kshare's 22 characters, a KIP-848 member's 24,
// franz-go's classic "kgo-" and a UUID) and the broker's address.
func masked(out string, c *testbroker.Cluster) string {
	for _, addr := range c.Addrs() {
		out = strings.ReplaceAll(out, addr, "BROKER"+strings.Repeat("-", len(addr)-len("BROKER")))
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`kgo-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`),
		regexp.MustCompile(`[A-Za-z0-9+/_-]{22}==`),
		regexp.MustCompile(`(?m)(^demo-share +)([A-Za-z0-9_-]{22}) `),
	} {
		out = re.ReplaceAllStringFunc(out, func(s string) string {
			if m := re.FindStringSubmatch(s); len(m) == 3 {
				return m[1] + "MEMBER" + strings.Repeat("-", len(m[2])-len("MEMBER")) + " "
			}
			return "MEMBER" + strings.Repeat("-", len(s)-len("MEMBER"))
		})
	}
	return out
}

// TestDescribeViews describes share, consumer (KIP-848) and classic groups, with and without
// members, in every view (offsets, the default; --members; --state; each with --verbose), one
// group, several and --all-groups, and the groups the tools refuse: each in the format and with
// the messages of its kind's Kafka tool.
func TestDescribeViews(t *testing.T) {
	t.Parallel()
	c := describeCluster(t)
	for _, tc := range []struct {
		args           []string
		rc             int
		stdout, stderr string
	}{
		{[]string{"--describe", "--all-groups"}, 0,
			"\n" +
				"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                              HOST            CLIENT-ID\n" +
				"demo-classic    demo            0          -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            1          -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            2          -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID              HOST            CLIENT-ID\n" +
				"demo-consumer   demo            0          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            1          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            2          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
				"demo-share      demo-queue      0          4             6\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n" +
				"orders-app      orders          0          3               5               2               -               -               -\n" +
				"orders-app      orders          1          1               2               1               -               -               -\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
				"orders-share    orders          0          2             3\n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n"},
		{[]string{"--describe", "--all-groups", "--verbose"}, 0,
			"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                              HOST            CLIENT-ID\n" +
				"demo-classic    demo            0          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            1          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            2          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID              HOST            CLIENT-ID\n" +
				"demo-consumer   demo            0          -               -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            1          -               -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            2          -               -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG\n" +
				"demo-share      demo-queue      0          0             4             6\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n" +
				"orders-app      orders          0          -               3               5               2               -               -               -\n" +
				"orders-app      orders          1          -               1               2               1               -               -               -\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG\n" +
				"orders-share    orders          0          0             2             3\n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n"},
		{[]string{"--describe", "--all-groups", "--members"}, 0,
			"\n" +
				"GROUP           CONSUMER-ID                              HOST            CLIENT-ID       #PARTITIONS     \n" +
				"demo-classic    MEMBER---------------------------------- /127.0.0.1      kgo             3               \n" +
				"\n" +
				"GROUP           CONSUMER-ID              HOST            CLIENT-ID       #PARTITIONS     \n" +
				"demo-consumer   MEMBER------------------ /127.0.0.1      kgo             3               \n" +
				"\n" +
				"GROUP           CONSUMER-ID            HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT\n" +
				"demo-share      MEMBER---------------- /127.0.0.1      kgo             1            demo-queue:0\n" +
				"\n" +
				"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n" +
				"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--all-groups", "--members", "--verbose"}, 0,
			"\n" +
				"GROUP           CONSUMER-ID                              HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   \n" +
				"demo-classic    MEMBER---------------------------------- /127.0.0.1      kgo             3               -               demo:0,1,2           -               -                   \n" +
				"\n" +
				"GROUP           CONSUMER-ID              HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   \n" +
				"demo-consumer   MEMBER------------------ /127.0.0.1      kgo             3               1               demo:0,1,2           1               demo:0,1,2          \n" +
				"\n" +
				"GROUP           CONSUMER-ID            HOST            CLIENT-ID       #PARTITIONS  MEMBER-EPOCH  ASSIGNMENT\n" +
				"demo-share      MEMBER---------------- /127.0.0.1      kgo             1            1             demo-queue:0\n" +
				"\n" +
				"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   \n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n" +
				"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--all-groups", "--state"}, 0,
			"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS\n" +
				"demo-classic    BROKER---------  (0)      range                Stable               1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS\n" +
				"demo-consumer   BROKER---------  (0)      range                Stable               1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          STATE           #MEMBERS\n" +
				"demo-share      BROKER---------  (0)      Stable          1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS\n" +
				"orders-app      BROKER---------  (0)      -                    Empty                0\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          STATE           #MEMBERS\n" +
				"orders-share    BROKER---------  (0)      Empty           0\n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n" +
				"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--all-groups", "--state", "--verbose"}, 0,
			"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS\n" +
				"demo-classic    BROKER---------  (0)      range                Stable               -               -                         1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS\n" +
				"demo-consumer   BROKER---------  (0)      range                Stable               1               1                         1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          STATE           GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS\n" +
				"demo-share      BROKER---------  (0)      Stable          1            1                 1\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS\n" +
				"orders-app      BROKER---------  (0)      -                    Empty                -               -                         0\n" +
				"\n" +
				"GROUP           COORDINATOR (ID)          STATE           GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS\n" +
				"orders-share    BROKER---------  (0)      Empty           0            0                 0\n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n" +
				"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--group", "demo-share", "--offsets"}, 0,
			"\n" +
				"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
				"demo-share      demo-queue      0          4             6\n",
			""},
		{[]string{"--describe", "--group", "demo-classic", "--offsets", "--verbose"}, 0,
			"\n" +
				"GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                              HOST            CLIENT-ID\n" +
				"demo-classic    demo            0          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            1          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n" +
				"demo-classic    demo            2          -               -               0               -               MEMBER---------------------------------- /127.0.0.1      kgo\n",
			""},
		{[]string{"--describe", "--group", "orders-app", "--members"}, 0,
			"\n" +
				"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n",
			"\n" +
				"Consumer group 'orders-app' has no active members.\n"},
		{[]string{"--describe", "--group", "orders-share", "--members", "--verbose"}, 0,
			"",
			"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--group", "orders-share", "--state"}, 0,
			"\n" +
				"GROUP           COORDINATOR (ID)          STATE           #MEMBERS\n" +
				"orders-share    BROKER---------  (0)      Empty           0\n",
			"\n" +
				"Share group 'orders-share' has no active members.\n"},
		{[]string{"--describe", "--group", "demo-consumer", "--group", "demo-share", "--group", "demo-consumer"}, 0,
			"\n" +
				"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID              HOST            CLIENT-ID\n" +
				"demo-consumer   demo            0          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            1          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"demo-consumer   demo            2          -               0               -               MEMBER------------------ /127.0.0.1      kgo\n" +
				"\n" +
				"GROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
				"demo-share      demo-queue      0          4             6\n",
			""},
		{[]string{"--describe", "--group", "nope", "--group", "demo-share"}, 1,
			"\n" +
				"Error: Executing share group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n",
			""},
		{[]string{"--describe", "--group", "demo-connect", "--members"}, 0,
			"\n" +
				"Error: Executing consumer group command failed due to java.lang.IllegalArgumentException: GroupId demo-connect is not a consumer group (connect).\n",
			""},
		{[]string{"--describe", "--group", "nope", "--state"}, 1,
			"\n" +
				"Error: Executing share group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n",
			""},
		{[]string{"--describe", "--group", "orders-share", "--group", "nope", "--members"}, 1,
			"\n" +
				"Error: Executing share group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n",
			""},
	} {
		rc, stdout, stderr := runOn(t, c, tc.args...)
		assert.Equal(t, tc.rc, rc, "%v", tc.args)
		assert.Equal(t, tc.stdout, masked(stdout, c), "%v", tc.args)
		assert.Equal(t, tc.stderr, stderr, "%v", tc.args)
	}
}

// TestListStates lists with --state (kafka-share-groups.sh: share groups) and with --type or
// --consumer --state (kafka-consumer-groups.sh: consumer and classic groups of protocol type
// "consumer" or empty), filtered by the values given, and refuses a state or type the tool
// does not know with its message: the share tool's alone, the consumer tool's with the usage.
func TestListStates(t *testing.T) {
	t.Parallel()
	c := describeCluster(t)
	for _, tc := range []struct {
		args   []string
		stdout string
	}{
		{[]string{"--list", "--state"}, "" +
			"GROUP           STATE\n" +
			"demo-share      Stable\n" +
			"orders-share    Empty\n"},
		{[]string{"--list", "--share", "--state", "empty, DEAD"}, "" +
			"GROUP           STATE\n" +
			"orders-share    Empty\n"},
		{[]string{"--list", "--state=Stable", "--share"}, "" +
			"GROUP           STATE\n" +
			"demo-share      Stable\n"},
		{[]string{"--list", "--state", "Dead"}, "" +
			"GROUP           STATE\n"},
		{[]string{"--list", "--type"}, "" +
			"GROUP                     TYPE                \n" +
			"demo-classic              Classic             \n" +
			"demo-consumer             Consumer            \n" +
			"orders-app                Classic             \n"},
		{[]string{"--list", "--type", "consumer", "--state"}, "" +
			"GROUP                     TYPE                 STATE               \n" +
			"demo-consumer             Consumer             Stable              \n"},
		{[]string{"--list", "--consumer", "--state", "Empty,PreparingRebalance"}, "" +
			"GROUP                     STATE               \n" +
			"orders-app                Empty               \n"},
		{[]string{"--list", "--type", "classic", "--state", "Reconciling"}, "" +
			"GROUP                     TYPE                 STATE               \n"},
	} {
		rc, stdout, stderr := runOn(t, c, tc.args...)
		assert.Equal(t, 0, rc, "%v: %s", tc.args, stderr)
		assert.Equal(t, tc.stdout, stdout, "%v", tc.args)
	}

	for _, tc := range []struct {
		args      []string
		msg       string
		withUsage bool
	}{
		{[]string{"--list", "--state", "Stable,Rebalancing"}, "Invalid state list 'Stable,Rebalancing'. Valid states are: Stable, Dead, Empty", false},
		{[]string{"--list", "--state", "Assigning"}, "Invalid state list 'Assigning'. Valid states are: Stable, Dead, Empty", false},
		{[]string{"--list", "--consumer", "--state", "NotReady"}, "Invalid state list 'NotReady'. Valid states are: " +
			"PreparingRebalance, CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling", true},
		{[]string{"--list", "--type", "share"}, "Invalid types list 'share'. Valid types are: Consumer, Classic", true},
	} {
		rc, stdout, stderr := runOn(t, c, tc.args...)
		assert.Equal(t, 1, rc, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
		want := tc.msg + "\n"
		if tc.withUsage {
			want += usage()
		}
		assert.Equal(t, want, stderr, "%v", tc.args)
	}
}

// TestDescribeListOptionErrors runs the command lines Kafka's tools refuse for --describe and
// --list, each before any cluster is reached, with Kafka's message and the usage on stderr.
func TestDescribeListOptionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--describe"}, "Option [describe] takes one of these options: [all-groups], [group]"},
		{[]string{"--describe", "--members"}, "Option [describe] takes one of these options: [all-groups], [group]"},
		{[]string{"--describe", "--group", "g", "--members", "--state"}, "Option [describe] takes at most one of these options: [members], [offsets], [state]"},
		{[]string{"--describe", "--all-groups", "--offsets", "--members", "--verbose"}, "Option [describe] takes at most one of these options: [members], [offsets], [state]"},
		{[]string{"--describe", "--group", "g", "--state", "Stable"}, "Option [describe] does not take a value for [state]"},
		{[]string{"--describe", "--group", "g", "--all-groups"}, `Option "[group]" can't be used with option "[all-groups]"`},
		{[]string{"--list", "--members"}, "Option(s) [members] are unavailable given other options on the command line"},
		{[]string{"--list", "--verbose", "--offsets"}, "Option(s) [offsets, verbose] are unavailable given other options on the command line"},
		{[]string{"--create", "--group", "g", "--state"}, "Option(s) [state] are unavailable given other options on the command line"},
		{[]string{"--describe", "--group", "g", "--type"}, "Option(s) [type] are unavailable given other options on the command line"},
		{[]string{"--members"}, "Option(s) [members] are unavailable given other options on the command line"},
		{[]string{"--describe", "--list", "--group", "g"}, actionsMsg},
		{[]string{"--create", "--all-groups", "--group", "g"}, `Option "[group]" can't be used with option "[all-groups]"`},
		{[]string{"--create", "--all-groups"}, `Option "[all-groups]" can't be used with option "[create]"`},
		{[]string{"--list", "--state", "--group-type", "share"}, `Option "[state]" can't be used with option "[group-type]"`},
		{[]string{"--list", "--type", "--share"}, `Option "[type]" can't be used with option "[share]"`},
		{[]string{"--list", "--state", "--streams"}, `Option "[state]" can't be used with option "[streams]"`},
	} {
		assertUsageError(t, tc.args, tc.msg)
	}
}

// TestTimeout runs every action against a listener that accepts connections and never
// answers: the first request ends after --timeout with an error that names it, written as the
// action's Kafka tool writes a failure (see TestTimeoutEachRequest for the later requests).
func TestTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	const (
		share    = "\nError: Executing share group command failed due to no answer within --timeout 50 ms: context deadline exceeded\n"
		consumer = "\nError: Executing consumer group command failed due to no answer within --timeout 50 ms: context deadline exceeded\n"
	)
	for _, tc := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"--describe", "--group", "g"}, 1, share},
		{[]string{"--list"}, 1, "Error while executing groups command : no answer within --timeout 50 ms: context deadline exceeded\n"},
		{[]string{"--list", "--state"}, 1, share},
		{[]string{"--list", "--type"}, 0, consumer},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run"}, 1, share},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics", "--shift-by", "1", "--dry-run"}, 0, consumer},
		{[]string{"--delete-offsets", "--group", "g", "--topic", "t"}, 1, share},
		{[]string{"--delete", "--group", "g"}, 1, share},
	} {
		var stdout, stderr strings.Builder
		rc := run(testCtx(t), &stdout, &stderr, append([]string{"--bootstrap-server", ln.Addr().String(), "--timeout", "50"}, tc.args...))
		assert.Equal(t, tc.rc, rc, "%v", tc.args)
		assert.Equal(t, tc.want, stdout.String(), "%v", tc.args)
	}
}

func TestJoinOptionalArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--list", "--state"}, []string{"--list", "--state="}},
		{[]string{"--list", "--state", "Stable,Empty", "--share"}, []string{"--list", "--state=Stable,Empty", "--share"}},
		{[]string{"--list", "--state", "--share"}, []string{"--list", "--state=", "--share"}},
		{[]string{"-type", "consumer", "-state=Empty"}, []string{"-type=consumer", "-state=Empty"}},
		{[]string{"--group", "state", "--", "--state"}, []string{"--group", "state", "--", "--state"}},
	} {
		assert.Equal(t, tc.want, joinOptionalArgs(tc.in), "%v", tc.in)
	}
}

// TestWriteConsumerMembersGolden formats a consumer group in the middle of an upgrade from the
// classic protocol, with a static member: GROUP-INSTANCE-ID and, verbose, UPGRADED appear.
func TestWriteConsumerMembersGolden(t *testing.T) {
	t.Parallel()
	epoch, assignmentEpoch, yes, no := int32(7), int32(8), true, false
	g := consumerGroup{state: "Reconciling", assignor: "uniform", groupEpoch: &assignmentEpoch, assignmentEpoch: &assignmentEpoch, members: []consumerMember{
		{id: "m-consumer", host: "/10.0.0.1", clientID: "app", epoch: &epoch, upgraded: &yes,
			assignment: map[string][]int32{"orders": {2, 0}, "audit": {1}}, target: map[string][]int32{"orders": {0, 2}}},
		{id: "m-classic", instanceID: "pod-1", host: "/10.0.0.2", clientID: "app", epoch: &epoch, upgraded: &no,
			assignment: map[string][]int32{}, target: map[string][]int32{"orders": {1}}},
	}}
	var stdout, stderr strings.Builder
	writeConsumerMembers(&stdout, &stderr, "g", g, true)
	assert.Equal(t, "\n"+
		"GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT    UPGRADED\n"+
		"g               m-consumer                        /10.0.0.1       app             3               7               audit:1;orders:0,2   8               orders:0,2           true\n"+
		"g               m-classic       pod-1             /10.0.0.2       app             0               7               -                    8               orders:1             false\n",
		stdout.String())
	assert.Equal(t, "\nWarning: Consumer group 'g' is rebalancing.\n", stderr.String())

	stdout.Reset()
	stderr.Reset()
	writeConsumerMembers(&stdout, &stderr, "g", g, false)
	assert.Equal(t, "\n"+
		"GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     \n"+
		"g               m-consumer                        /10.0.0.1       app             3               \n"+
		"g               m-classic       pod-1             /10.0.0.2       app             0               \n",
		stdout.String())
}

// TestGroupStateMessages: what each tool says of a group's state, and whether the table follows.
func TestGroupStateMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		share          bool
		state          string
		rows           int
		table          bool
		stdout, stderr string
	}{
		{true, "Dead", 1, false, "\nError: Share group 'g' does not exist.\n", ""},
		{true, "Empty", 0, false, "", "\nShare group 'g' has no active members.\n"},
		{true, "Empty", 1, true, "", "\nShare group 'g' has no active members.\n"},
		{true, "Stable", 1, true, "", ""},
		{false, "Dead", 1, false, "\nError: Consumer group 'g' does not exist.\n", ""},
		{false, "Empty", 2, true, "", "\nConsumer group 'g' has no active members.\n"},
		{false, "PreparingRebalance", 1, true, "", "\nWarning: Consumer group 'g' is rebalancing.\n"},
		{false, "CompletingRebalance", 1, true, "", "\nWarning: Consumer group 'g' is rebalancing.\n"},
		{false, "Assigning", 1, true, "", "\nWarning: Consumer group 'g' is rebalancing.\n"},
		{false, "Stable", 0, false, "", ""},
	} {
		var stdout, stderr strings.Builder
		var table bool
		if tc.share {
			table = printShareGroupState(&stdout, &stderr, "g", tc.state, tc.rows)
		} else {
			table = printConsumerGroupState(&stdout, &stderr, "g", tc.state, tc.rows)
		}
		assert.Equal(t, tc.table, table, "%+v", tc)
		assert.Equal(t, tc.stdout, stdout.String(), "%+v", tc)
		assert.Equal(t, tc.stderr, stderr.String(), "%+v", tc)
	}
}

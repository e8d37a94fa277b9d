package interop

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kshare/kshare/testbroker"
)

var (
	printTable = flag.Bool("interop.table", false, "print the compatibility table (client x check, per broker) as Markdown after TestInterop")
	knownFile  = flag.String("interop.known", "", "file of known failures, one client/broker/check a line (# comments): such a check may fail without failing the test, and fails it when it passes")
)

// checkTimeout bounds one check: a client that retries a refused request forever (librdkafka
// asks again every 500 ms for a transaction coordinator) fails the check at this deadline.
const checkTimeout = 15 * time.Second

// checkNames is every check, in the table's order. A client without an API for a check gives
// the reason in its na map; that is listed as n/a, not as a failure.
var checkNames = []string{
	"metadata",
	"create-topic",
	"produce-none",
	"produce-gzip",
	"produce-snappy",
	"produce-lz4",
	"produce-zstd",
	"consume-partition",
	"partition-eof",
	"group-classic",
	"group-848",
	"resume-committed",
	"group-admin",
	"list-offsets",
	"offsets-by-timestamp",
	"delete-records",
	"describe-configs",
	"txn-commit",
	"txn-abort",
	"read-committed",
}

// clientKinds are the clients under test, each built on a cluster's seeds.
var clientKinds = []clientKind{
	{"sarama", saramaClient},
	{"kafka-go", kafkaGoClient},
	{"confluent-kafka-go", confluentClient},
}

type clientKind struct {
	name string
	new  func(seeds []string) client
}

// client is one Kafka client under test: its checks, by name, each against the broker in env.
type client struct {
	name   string
	checks map[string]func(ctx context.Context, e *env) error
	// na gives the reason for each check the client has no API for.
	na map[string]string
}

// brokerKinds are the clusters every client runs against; each call starts a fresh 3-broker
// cluster with the topic "seeded" (3 partitions).
var brokerKinds = []brokerKind{
	{"testbroker", func(t *testing.T) []string {
		c := testbroker.StartT(t,
			testbroker.NumBrokers(3),
			testbroker.Topic("seeded", 3),
			// Kafka's test harness runs with 0 too; the production default (3 s) would make
			// every classic group check wait.
			testbroker.BrokerConfig("group.initial.rebalance.delay.ms", "0"),
		)
		return c.Addrs()
	}},
	{"kfake", func(t *testing.T) []string {
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "seeded"))
		if err != nil {
			t.Fatalf("kfake: %v", err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}},
}

type brokerKind struct {
	name  string
	start func(t *testing.T) []string
}

// result is one cell of the table.
type result string

const (
	resPass  result = "pass"
	resFail  result = "FAIL"
	resKnown result = "FAIL (known)"
	resNA    result = "n/a"
)

var table = struct {
	sync.Mutex
	cells map[string]result // client/broker/check
	notes map[string]string // client/check: why n/a
}{cells: map[string]result{}, notes: map[string]string{}}

func record(key string, r result) {
	table.Lock()
	defer table.Unlock()
	table.cells[key] = r
}

// TestInterop runs every client's checks against testbroker and kfake, as
// TestInterop/clients/<client>/<broker>/<check>. Clients and brokers run in parallel, each pair
// on its own cluster; the checks of one pair run in order, since a later one reuses what an
// earlier one left (group-admin the group of group-classic). The table is printed once the
// parallel subtests of "clients" are all done.
func TestInterop(t *testing.T) {
	known := readKnown(t)
	for key := range known {
		if !isCheckKey(key) {
			t.Errorf("known failure %q is no client/broker/check: fix it in %s", key, *knownFile)
		}
	}
	t.Run("clients", func(t *testing.T) {
		for _, ck := range clientKinds {
			for _, bk := range brokerKinds {
				t.Run(ck.name+"/"+bk.name, func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, bk.name, bk.start(t))
					cl := ck.new(e.seeds)
					for _, name := range checkNames {
						key := cl.name + "/" + bk.name + "/" + name
						t.Run(name, func(t *testing.T) {
							runCheck(t, cl, name, key, e, known[key])
						})
					}
				})
			}
		}
	})
	if *printTable {
		fmt.Print(markdownTable())
	}
}

func runCheck(t *testing.T, cl client, name, key string, e *env, known bool) {
	run, ok := cl.checks[name]
	if !ok {
		reason := cl.na[name]
		if reason == "" {
			t.Fatalf("%s has neither a check %q nor a reason why not", cl.name, name)
		}
		table.Lock()
		table.notes[cl.name+"/"+name] = reason
		table.Unlock()
		record(key, resNA)
		t.Logf("n/a: %s", reason)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	err := run(ctx, e)
	switch {
	case err == nil && known:
		record(key, resPass)
		t.Errorf("%s passes now: remove it from the known failures (%s)", key, *knownFile)
	case err == nil:
		record(key, resPass)
	case known:
		record(key, resKnown)
		t.Logf("known failure: %v", err)
	default:
		record(key, resFail)
		t.Error(err)
	}
}

func isCheckKey(key string) bool {
	parts := strings.Split(key, "/")
	return len(parts) == 3 &&
		slices.ContainsFunc(clientKinds, func(c clientKind) bool { return c.name == parts[0] }) &&
		slices.ContainsFunc(brokerKinds, func(b brokerKind) bool { return b.name == parts[1] }) &&
		slices.Contains(checkNames, parts[2])
}

func readKnown(t *testing.T) map[string]bool {
	known := map[string]bool{}
	if *knownFile == "" {
		return known
	}
	f, err := os.Open(*knownFile)
	if err != nil {
		t.Fatalf("-interop.known: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			known[line] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("-interop.known: %v", err)
	}
	return known
}

// markdownTable prints check x client, each cell "testbroker / kfake", then why checks are n/a.
func markdownTable() string {
	table.Lock()
	defer table.Unlock()
	var b strings.Builder
	b.WriteString("| check |")
	for _, ck := range clientKinds {
		fmt.Fprintf(&b, " %s |", ck.name)
	}
	b.WriteString("\n|---|")
	for range clientKinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, name := range checkNames {
		fmt.Fprintf(&b, "| %s |", name)
		for _, ck := range clientKinds {
			tb := table.cells[ck.name+"/testbroker/"+name]
			kf := table.cells[ck.name+"/kfake/"+name]
			if tb == resNA && kf == resNA {
				b.WriteString(" n/a |")
				continue
			}
			fmt.Fprintf(&b, " %s / %s |", orNotRun(tb), orNotRun(kf))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nCells are testbroker / kfake. n/a: the client has no API for the check, or none that works:\n\n")
	notes := make([]string, 0, len(table.notes))
	for k, v := range table.notes {
		notes = append(notes, fmt.Sprintf("- %s: %s", k, v))
	}
	sort.Strings(notes)
	b.WriteString(strings.Join(notes, "\n") + "\n")
	return b.String()
}

func orNotRun(r result) result {
	if r == "" {
		return "not run"
	}
	return r
}

// mismatch builds a check's failure; want and got are printed with %v.
func mismatch(what string, want, got any) error {
	return fmt.Errorf("%s: want %v, got %v", what, want, got)
}

// waitFor polls cond until it holds or ctx ends; cond's last error is the failure.
func waitFor(ctx context.Context, cond func() error) error {
	var last error
	for {
		if last = cond(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

package interop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kshare/kshare/testbroker"
)

var printTable = flag.Bool("interop.table", false, "print the compatibility table (client x check, per broker) as Markdown after TestInterop")

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
	resPass result = "pass"
	resFail result = "FAIL"
	resNA   result = "n/a"
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
							runCheck(t, cl, name, key, e)
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

func runCheck(t *testing.T, cl client, name, key string, e *env) {
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
	if err != nil {
		record(key, resFail)
		t.Error(err)
		return
	}
	record(key, resPass)
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

package kshareprom_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/benchhooks"
	"github.com/kshare/kshare/internal/brokerproc"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/shareconsumer/kshareprom"
)

// BenchmarkMetrics is shareconsumer's BenchmarkHooks with the real hook: the same workloads
// (internal/benchhooks) without hooks and with a Metrics of its own registry per consumer. It
// reports allocations, bytes and time per record. Run it with
//
//	go test github.com/kshare/kshare/shareconsumer/kshareprom/... -run '^$' -bench . -benchtime 1x -count 5
func BenchmarkMetrics(b *testing.B) {
	benchhooks.Run(b, kshareRoot(b),
		benchhooks.Case{Name: "none"},
		benchhooks.Case{Name: "kshareprom", Hooks: func() []shareconsumer.Opt {
			return []shareconsumer.Opt{shareconsumer.Hooks(kshareprom.New("kshare"))}
		}},
	)
}

// kshareRoot is the kshare module's directory, two levels up from this module's.
func kshareRoot(b *testing.B) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := brokerproc.ModuleRoot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(root, "..", "..")
}

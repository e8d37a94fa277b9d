package main

import (
	"context"
	"os"

	"github.com/kshare/kshare/internal/benchkit"
	"github.com/kshare/kshare/internal/brokerproc"
)

// brokerProgram is a broker we measure: a Go package with testbroker's command line.
type brokerProgram struct {
	name string // as in -brokers-to-run
	pkg  string // Go package path, relative to the module root; empty for a prebuilt program
	bin  string // the built program; empty until build succeeds
}

// build compiles p with progs; a prebuilt program (-broker-bin) only has to exist.
func (p *brokerProgram) build(ctx context.Context, progs *benchkit.Programs) error {
	if p.pkg == "" {
		_, err := os.Stat(p.bin)
		return err
	}
	bin, err := progs.BuildPackage(ctx, p.name, p.pkg)
	if err != nil {
		return err
	}
	p.bin = bin
	return nil
}

// startBroker runs p with nbrokers brokers, topic topic:partitions and a -config for each of
// configs; see brokerproc.Start.
func startBroker(ctx context.Context, p *brokerProgram, nbrokers int, topic string, partitions int, configs []string, verbose bool) (*brokerproc.Proc, error) {
	o := brokerproc.Options{Name: p.name, Bin: p.bin, Brokers: nbrokers, Topic: topic, Partitions: partitions, Configs: configs}
	return benchkit.StartBroker(ctx, o, verbose)
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kshare/kshare/internal/brokerproc"
)

// brokerPackages are the broker programs, by name: Go packages with testbroker's command line
// (-brokers, -addr, -topic name:partitions, -config key=value).
var brokerPackages = map[string]string{
	"testbroker": brokerproc.TestbrokerPkg,
	"kfake":      brokerproc.KfakePkg,
}

// buildBroker builds the broker program name into dir and returns the binary's path.
func buildBroker(ctx context.Context, name, dir string) (string, error) {
	root, err := brokerproc.ModuleRoot(ctx)
	if err != nil {
		return "", fmt.Errorf("run benchconsumer inside the kshare module: %w", err)
	}
	return brokerproc.Build(ctx, root, dir, name, brokerPackages[name])
}

// startBrokerProc starts bin with one broker on a free loopback port, topic with partitions
// and the broker configs (key=value); see brokerproc.Start.
func startBrokerProc(ctx context.Context, name, bin, topic string, partitions int, configs []string, verbose bool) (*brokerproc.Proc, error) {
	o := brokerproc.Options{Name: name, Bin: bin, Brokers: 1, Topic: topic, Partitions: partitions, Configs: configs}
	if verbose {
		o.Echo = os.Stderr
	}
	return brokerproc.Start(ctx, o)
}

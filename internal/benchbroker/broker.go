package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kshare/kshare/internal/brokerproc"
)

// brokerProgram is a broker we measure: a Go package with testbroker's command line.
type brokerProgram struct {
	name string // as in -brokers-to-run
	pkg  string // Go package path, relative to the module root
	bin  string // the built program; empty until build succeeds
}

// build compiles p into dir, running the go command in the module root.
func (p *brokerProgram) build(ctx context.Context, root, dir string) error {
	bin, err := brokerproc.Build(ctx, root, dir, p.name, p.pkg)
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
	if verbose {
		o.Echo = &prefixWriter{prefix: p.name + ": ", w: os.Stderr}
	}
	return brokerproc.Start(ctx, o)
}

// prefixWriter writes each line it is given to w with prefix in front.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	midln  bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !p.midln {
			out = append(out, p.prefix...)
			p.midln = true
		}
		out = append(out, c)
		if c == '\n' {
			p.midln = false
		}
	}
	_, err := p.w.Write(out)
	return len(b), err
}

// stopBroker stops a measurement's broker; a failed stop becomes the measurement's error (*err)
// unless it failed already.
func stopBroker(bp *brokerproc.Proc, err *error) {
	if _, _, stopErr := bp.Stop(10 * time.Second); *err == nil && stopErr != nil {
		*err = fmt.Errorf("stopping: %w", stopErr)
	}
}

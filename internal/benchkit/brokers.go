package benchkit

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kshare/kshare/internal/brokerproc"
)

// BrokerPackages are the broker programs the harnesses run, by name: Go packages, relative to
// the module root, with testbroker's command line (-brokers, -addr, -topic, -config).
var BrokerPackages = map[string]string{
	"testbroker": brokerproc.TestbrokerPkg,
	"kfake":      brokerproc.KfakePkg,
}

// Programs builds broker programs into a directory of its own, each once; Close removes it.
type Programs struct {
	root, dir string
	bins      map[string]string
}

// NewPrograms finds the module root and makes the directory; harness names the command in
// the error of a run outside the kshare module.
func NewPrograms(ctx context.Context, harness string) (*Programs, error) {
	root, err := brokerproc.ModuleRoot(ctx)
	if err != nil {
		return nil, fmt.Errorf("run %s inside the kshare module: %w", harness, err)
	}
	dir, err := os.MkdirTemp("", harness+"-")
	if err != nil {
		return nil, err
	}
	return &Programs{root: root, dir: dir, bins: make(map[string]string)}, nil
}

// Build builds the broker program name from its package in BrokerPackages, once, and returns
// the binary's path.
func (p *Programs) Build(ctx context.Context, name string) (string, error) {
	return p.BuildPackage(ctx, name, BrokerPackages[name])
}

// BuildPackage is Build from the Go package pkg, relative to the module root.
func (p *Programs) BuildPackage(ctx context.Context, name, pkg string) (string, error) {
	if bin, ok := p.bins[name]; ok {
		return bin, nil
	}
	fmt.Fprintf(os.Stderr, "building %s (%s)\n", name, pkg)
	bin, err := brokerproc.Build(ctx, p.root, p.dir, name, pkg)
	if err != nil {
		return "", err
	}
	p.bins[name] = bin
	return bin, nil
}

// Close removes the built programs; running ones keep their files open.
func (p *Programs) Close() error { return os.RemoveAll(p.dir) }

// StartBroker starts o.Bin as its own process (see brokerproc.Start); with verbose, its output
// goes to stderr too, each line prefixed with o.Name.
func StartBroker(ctx context.Context, o brokerproc.Options, verbose bool) (*brokerproc.Proc, error) {
	if verbose {
		o.Echo = &prefixWriter{prefix: o.Name + ": ", w: os.Stderr}
	}
	return brokerproc.Start(ctx, o)
}

// StopBroker stops bp, giving it 10 s to exit after SIGTERM; a failed stop becomes *err
// unless that holds an error already. It is meant for a defer.
func StopBroker(bp *brokerproc.Proc, err *error) {
	if _, _, stopErr := bp.Stop(10 * time.Second); *err == nil && stopErr != nil {
		*err = fmt.Errorf("stopping: %w", stopErr)
	}
}

// BrokerCPU returns the CPU time the broker process has used so far (ProcessCPU).
func BrokerCPU(bp *brokerproc.Proc) (time.Duration, error) {
	d, _, err := ProcessCPU(bp.Pid())
	return d, err
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

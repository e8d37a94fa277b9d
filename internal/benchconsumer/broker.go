package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerPackages are the broker programs, by name: Go packages with testbroker's command line
// (-brokers, -addr, -topic name:partitions, -config key=value).
var brokerPackages = map[string]string{
	"testbroker": "./testbroker/cmd/testbroker",
	"kfake":      "./internal/benchbroker/kfakebroker",
}

// buildBroker builds the broker program name into dir and returns the binary's path.
func buildBroker(ctx context.Context, name, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, brokerPackages[name])
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", brokerPackages[name], err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run benchconsumer inside the kshare module")
	}
	return filepath.Dir(mod), nil
}

// brokerProc is a running broker program.
type brokerProc struct {
	name   string
	cmd    *exec.Cmd
	seed   string
	out    *lockedBuffer
	exited chan struct{}
	err    error // set before exited is closed
}

// startBrokerProc starts bin with one broker on a free loopback port and topic with
// partitions, and returns once the topic has a leader for every partition.
func startBrokerProc(ctx context.Context, name, bin, topic string, partitions int, verbose bool) (*brokerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bp := &brokerProc{name: name, seed: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), out: &lockedBuffer{}, exited: make(chan struct{})}
	bp.cmd = exec.Command(bin, "-brokers", "1", "-addr", bp.seed, "-topic", fmt.Sprintf("%s:%d", topic, partitions))
	var w io.Writer = bp.out
	if verbose {
		w = io.MultiWriter(bp.out, os.Stderr)
	}
	bp.cmd.Stdout, bp.cmd.Stderr = w, w
	if err := bp.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		bp.err = bp.cmd.Wait()
		close(bp.exited)
	}()
	if err := bp.waitReady(ctx, topic, partitions); err != nil {
		bp.stop()
		return nil, fmt.Errorf("%s did not start: %w\n%s", name, err, bp.out.String())
	}
	return bp, nil
}

func (bp *brokerProc) waitReady(ctx context.Context, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bp.seed))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td, ok := md.Topics[topic]
			if ok && td.Err == nil && len(td.Partitions) == partitions {
				ready := true
				for _, pd := range td.Partitions {
					ready = ready && pd.Leader >= 0 && pd.Err == nil
				}
				if ready {
					return nil
				}
			} else if ok && errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("topic %s was not created", topic)
			}
		}
		select {
		case <-bp.exited:
			return fmt.Errorf("it exited: %v", bp.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits up to ten seconds before killing the process.
func (bp *brokerProc) stop() {
	_ = bp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-bp.exited:
	case <-time.After(10 * time.Second):
		_ = bp.cmd.Process.Kill()
		<-bp.exited
	}
}

// freePort returns a loopback port that was free when we looked.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

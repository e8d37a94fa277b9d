// Package brokerproc builds and runs a broker program (testbroker's or kfake's wrapper) as its own
// process, for the benchmarks in internal/benchbroker and internal/benchconsumer: running it apart
// from the client lets them measure the broker's CPU time and the client's separately.
package brokerproc

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

// The broker programs' Go packages, relative to the module root. Both take testbroker's command
// line: -brokers, -addr, -topic name:partitions, -config key=value.
const (
	TestbrokerPkg = "./testbroker/cmd/testbroker"
	KfakePkg      = "./internal/benchbroker/kfakebroker"
)

// ModuleRoot returns the directory of the main module's go.mod, where Build runs the go command.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD names no go.mod")
	}
	return filepath.Dir(gomod), nil
}

// Build compiles the Go package pkg into dir/name, running the go command in the module root, and
// returns the binary's path.
func Build(ctx context.Context, root, dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// Options says which broker program to start and how.
type Options struct {
	Name       string    // for messages
	Bin        string    // the built program
	Brokers    int       // brokers in the cluster, on consecutive ports
	Topic      string    // created with -topic Topic:Partitions
	Partitions int       // partitions of Topic
	Configs    []string  // each passed as -config key=value
	Echo       io.Writer // if not nil, also gets the program's stdout and stderr
}

// Proc is one running broker program.
type Proc struct {
	Name   string
	Seeds  []string // every broker's host:port
	cmd    *exec.Cmd
	output *tailBuffer   // stdout and stderr, for errors
	exited chan struct{} // closed once cmd.Wait returns; wait is then set
	wait   error
}

// Start runs o.Bin with o.Brokers brokers on consecutive free loopback ports, and returns once every
// broker accepts connections and the topic has a leader for every partition. It creates the topic
// with a CreateTopics request if the program did not.
func Start(ctx context.Context, o Options) (*Proc, error) {
	port, err := freePorts(o.Brokers)
	if err != nil {
		return nil, err
	}
	bp := &Proc{Name: o.Name, output: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	for i := range o.Brokers {
		bp.Seeds = append(bp.Seeds, net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
	}
	args := []string{
		"-brokers", strconv.Itoa(o.Brokers),
		"-addr", bp.Seeds[0],
		"-topic", fmt.Sprintf("%s:%d", o.Topic, o.Partitions),
	}
	for _, kv := range o.Configs {
		args = append(args, "-config", kv)
	}
	bp.cmd = exec.Command(o.Bin, args...)
	var out io.Writer = bp.output
	if o.Echo != nil {
		out = io.MultiWriter(bp.output, o.Echo)
	}
	bp.cmd.Stdout, bp.cmd.Stderr = out, out
	if err := bp.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		bp.wait = bp.cmd.Wait()
		close(bp.exited)
	}()
	if err := bp.waitReady(ctx, o.Topic, o.Partitions); err != nil {
		_, _, _ = bp.Stop(5 * time.Second)
		return nil, fmt.Errorf("%s did not start: %w%s", o.Name, err, bp.outputTail())
	}
	return bp, nil
}

// Pid returns the process id, for reading the broker's CPU time while it runs.
func (bp *Proc) Pid() int { return bp.cmd.Process.Pid }

// waitReady polls until every broker accepts a connection and the topic is ready, failing if the
// process exits or ctx ends first.
func (bp *Proc) waitReady(ctx context.Context, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	poll := func(check func() (bool, error)) error {
		for {
			ok, err := check()
			if ok || err != nil {
				return err
			}
			select {
			case <-bp.exited:
				return fmt.Errorf("it exited: %v", bp.wait)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for _, seed := range bp.Seeds {
		err := poll(func() (bool, error) {
			c, err := net.DialTimeout("tcp", seed, time.Second)
			if err != nil {
				return false, nil
			}
			c.Close()
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to accept connections: %w", seed, err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(bp.Seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	created := false
	return poll(func() (bool, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, nil // not answering metadata yet
		}
		td, ok := md.Topics[topic]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			if !created {
				created = true
				_, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
				if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
					return false, fmt.Errorf("topic %s: not created by -topic, and CreateTopics failed: %w", topic, err)
				}
			}
			return false, nil
		}
		if td.Err != nil {
			return false, nil
		}
		if len(td.Partitions) != partitions {
			return false, fmt.Errorf("topic %s has %d partitions, want %d", topic, len(td.Partitions), partitions)
		}
		for _, pd := range td.Partitions {
			if pd.Leader < 0 || pd.Err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then kills it. It returns the
// process's user and system CPU time from start to exit, and an error if it did not exit 0 by itself.
func (bp *Proc) Stop(grace time.Duration) (user, sys time.Duration, err error) {
	_ = bp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-bp.exited:
		err = bp.wait
	case <-time.After(grace):
		_ = bp.cmd.Process.Kill()
		<-bp.exited
		err = fmt.Errorf("did not exit within %v of SIGTERM; killed", grace)
	}
	ps := bp.cmd.ProcessState
	if err != nil {
		return ps.UserTime(), ps.SystemTime(), fmt.Errorf("%s: %w%s", bp.Name, err, bp.outputTail())
	}
	return ps.UserTime(), ps.SystemTime(), nil
}

func (bp *Proc) outputTail() string {
	s := bytes.TrimSpace(bp.output.Bytes())
	if len(s) == 0 {
		return ""
	}
	return "\n--- " + bp.Name + " output ---\n" + string(s)
}

// freePorts returns the first of n consecutive loopback ports that were free when we looked. Another
// process may take one before the broker does; the broker then fails to start and says so.
func freePorts(n int) (int, error) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := ln.Addr().(*net.TCPAddr).Port
		held := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("found no %d consecutive free loopback ports", n)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

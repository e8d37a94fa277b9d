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
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerProgram is a broker we measure: a Go package with testbroker's command line.
type brokerProgram struct {
	name string // as in -brokers-to-run
	pkg  string // Go package path, relative to the module root
	bin  string // the built program; empty until build succeeds
}

// build compiles p into dir, running the go command in the module root.
func (p *brokerProgram) build(ctx context.Context, root, dir string) error {
	bin := filepath.Join(dir, p.name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, p.pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s: %v\n%s", p.pkg, err, bytes.TrimSpace(out))
	}
	p.bin = bin
	return nil
}

// brokerProcess is one running broker program.
type brokerProcess struct {
	name   string
	cmd    *exec.Cmd
	seeds  []string
	output *tailBuffer   // stdout and stderr, for errors
	exited chan struct{} // closed once cmd.Wait returns; wait is then set
	wait   error
}

// startBroker runs p with nbrokers brokers on consecutive free loopback ports, topic
// topic:partitions and a -config for each of configs, and returns once every broker accepts connections and the topic has a leader
// for every partition. It creates the topic with a CreateTopics request if the program did not.
func startBroker(ctx context.Context, p *brokerProgram, nbrokers int, topic string, partitions int, configs []string, verbose bool) (*brokerProcess, error) {
	port, err := freePorts(nbrokers)
	if err != nil {
		return nil, err
	}
	bp := &brokerProcess{name: p.name, output: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	for i := range nbrokers {
		bp.seeds = append(bp.seeds, net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
	}
	args := []string{
		"-brokers", strconv.Itoa(nbrokers),
		"-addr", bp.seeds[0],
		"-topic", fmt.Sprintf("%s:%d", topic, partitions),
	}
	for _, kv := range configs {
		args = append(args, "-config", kv)
	}
	bp.cmd = exec.Command(p.bin, args...)
	var out io.Writer = bp.output
	if verbose {
		out = io.MultiWriter(bp.output, &prefixWriter{prefix: p.name + ": ", w: os.Stderr})
	}
	bp.cmd.Stdout, bp.cmd.Stderr = out, out
	if err := bp.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		bp.wait = bp.cmd.Wait()
		close(bp.exited)
	}()
	if err := bp.waitReady(ctx, topic, partitions); err != nil {
		_, _, _ = bp.stop(5 * time.Second)
		return nil, fmt.Errorf("%s did not start: %w%s", p.name, err, bp.outputTail())
	}
	return bp, nil
}

// waitReady polls until every broker accepts a connection and the topic is ready, failing if the
// process exits or ctx ends first.
func (bp *brokerProcess) waitReady(ctx context.Context, topic string, partitions int) error {
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
	for _, seed := range bp.seeds {
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

	cl, err := kgo.NewClient(kgo.SeedBrokers(bp.seeds...))
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

// stop sends SIGTERM and waits up to grace for the process to exit, then kills it. It returns the
// process's user and system CPU time from start to exit, and an error if it did not exit 0 by itself.
func (bp *brokerProcess) stop(grace time.Duration) (user, sys time.Duration, err error) {
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
		return ps.UserTime(), ps.SystemTime(), fmt.Errorf("%s: %w%s", bp.name, err, bp.outputTail())
	}
	return ps.UserTime(), ps.SystemTime(), nil
}

func (bp *brokerProcess) outputTail() string {
	s := bytes.TrimSpace(bp.output.Bytes())
	if len(s) == 0 {
		return ""
	}
	return "\n--- " + bp.name + " output ---\n" + string(s)
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

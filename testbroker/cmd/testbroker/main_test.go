package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-brokers", "2", "-addr", "127.0.0.1:0", "-topic", "orders:3", "-config", "num.partitions=2"}, w, io.Discard)
		w.Close()
	}()

	sc := bufio.NewScanner(out)
	var addrs []string
	for sc.Scan() {
		line := sc.Text()
		if a, ok := strings.CutPrefix(line, "broker "); ok {
			_, addr, _ := strings.Cut(a, " listening on ")
			addrs = append(addrs, addr)
		}
		if strings.Contains(line, "ready") {
			break
		}
	}
	require.Len(t, addrs, 2)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer cl.Close()
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer reqCancel()
	topics, err := kadm.NewClient(cl).ListTopics(reqCtx)
	require.NoError(t, err)
	require.Contains(t, topics, "orders")
	assert.Len(t, topics["orders"].Partitions, 3)

	cancel()
	go io.Copy(io.Discard, out)
	require.NoError(t, <-done)
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-topic", "orders:zero"},
		{"-config", "novalue"},
		{"-brokers", "0"},
		{"stray"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		assert.Error(t, err, "%v", args)
	}
}

// -cpuprofile writes a profile once the program stops: pprof's format, gzipped protobuf.
func TestRunWritesCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-cpuprofile", path}, w, io.Discard)
		w.Close()
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "ready") {
	}
	cancel()
	go io.Copy(io.Discard, out)
	require.NoError(t, <-done)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.NotEmpty(t, b)
}

func TestRunFailsOnUnwritableCPUProfile(t *testing.T) {
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")}, io.Discard, io.Discard)
	assert.Error(t, err)
}

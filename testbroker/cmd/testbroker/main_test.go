package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
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
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
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
		{"-addr", "127.0.0.1:0", "-sasl", "PLAIN,KERBEROS"},
		{"-addr", "127.0.0.1:0", "-sasl", "PLAIN", "-user", "nopassword"},
		{"-addr", "127.0.0.1:0", "-sasl", "PLAIN", "-user", ":pw"},
		{"-addr", "127.0.0.1:0", "-user", "a:b"},
		{"-addr", "127.0.0.1:0", "-config", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer"},
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

func TestParseSASL(t *testing.T) {
	opts, err := parseSASL("PLAIN,SCRAM-SHA-256", []string{"alice:pa:ss", "bob:"})
	require.NoError(t, err)
	assert.Len(t, opts, 3, "SASL and one User per -user; the password is everything after the first colon")
	opts, err = parseSASL("", nil)
	require.NoError(t, err)
	assert.Empty(t, opts)

	_, err = parseSASL("PLAIN", []string{"alice"})
	assert.EqualError(t, err, `-user "alice": want NAME:PASSWORD`)
	_, err = parseSASL("", []string{"alice:x"})
	assert.EqualError(t, err, "-user needs -sasl MECH[,MECH...]")
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-sasl", "PLAIN,KERBEROS"}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, `unknown SASL mechanism "KERBEROS"`)
}

// -sasl and -user: a client authenticates with SCRAM-SHA-512 and lists the topics; -sasl
// OAUTHBEARER needs no -user, and an unsigned token authenticates.
func TestRunServesSASL(t *testing.T) {
	claims := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"sub":"alice","exp":%d}`, time.Now().Add(time.Hour).Unix()))
	token := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + claims + "."
	for name, tc := range map[string]struct {
		args []string
		mech sasl.Mechanism
	}{
		"SCRAM":       {[]string{"-sasl", "PLAIN,SCRAM-SHA-512", "-user", "alice:secret"}, scram.Auth{User: "alice", Pass: "secret"}.AsSha512Mechanism()},
		"OAUTHBEARER": {[]string{"-sasl", "OAUTHBEARER"}, oauth.Auth{Token: token}.AsMechanism()},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			out, w := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-topic", "orders"}, tc.args...), w, io.Discard)
				w.Close()
			}()
			sc := bufio.NewScanner(out)
			var seeds string
			for sc.Scan() {
				if _, s, ok := strings.Cut(sc.Text(), "seed brokers: "); ok {
					seeds = s
					break
				}
			}
			require.NotEmpty(t, seeds)
			cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seeds, ",")...), kgo.SASL(tc.mech))
			require.NoError(t, err)
			defer cl.Close()
			reqCtx, reqCancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer reqCancel()
			topics, err := kadm.NewClient(cl).ListTopics(reqCtx)
			require.NoError(t, err)
			assert.Contains(t, topics, "orders")
			cancel()
			go io.Copy(io.Discard, out)
			require.NoError(t, <-done)
		})
	}
}

// ACLs through -config with Kafka's broker config names: with the authorizer on, a super user
// sees the topic and may create ACLs; a user without ACLs sees no topic.
func TestRunServesACLs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-topic", "orders", "-sasl", "PLAIN",
			"-user", "admin:admin-secret", "-user", "bob:bob-secret",
			"-config", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"-config", "super.users=User:admin"}, w, io.Discard)
		w.Close()
	}()
	sc := bufio.NewScanner(out)
	var seeds string
	for sc.Scan() {
		if _, s, ok := strings.Cut(sc.Text(), "seed brokers: "); ok {
			seeds = s
			break
		}
	}
	require.NotEmpty(t, seeds)
	client := func(user string) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seeds, ",")...),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer reqCancel()

	topics, err := client("bob").ListTopics(reqCtx)
	require.NoError(t, err)
	assert.NotContains(t, topics, "orders", "bob may not describe it")

	admin := client("admin")
	topics, err = admin.ListTopics(reqCtx)
	require.NoError(t, err)
	assert.Contains(t, topics, "orders")
	res, err := admin.CreateACLs(reqCtx, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("orders").Operations(kadm.OpDescribe))
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	topics, err = client("bob").ListTopics(reqCtx)
	require.NoError(t, err)
	assert.Contains(t, topics, "orders", "the ACL lets bob describe it")

	cancel()
	go io.Copy(io.Discard, out)
	require.NoError(t, <-done)
}

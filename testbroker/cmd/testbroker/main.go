// Command testbroker runs the kshare fake Kafka cluster as a program, for local runs, scripts
// and clients in other languages:
//
//	go run ./testbroker/cmd/testbroker -brokers 3 -addr 127.0.0.1:9092 -topic orders:3
//
// Broker i listens on the port of -addr plus i (with port 0, every broker picks a free port).
// It prints one line per broker with its node id and address, then serves until SIGINT or
// SIGTERM, when it closes every connection and exits 0. With -cpuprofile it writes a CPU
// profile of that run, for go tool pprof.
//
// With -tls-cert and -tls-key every broker serves TLS with that certificate; with -tls-ca-out it
// serves TLS with a certificate of a CA generated at start (for 127.0.0.1, ::1, localhost and the
// -addr host, valid for seven days), and writes the CA's PEM to that file before printing the
// broker lines, for clients to trust.
//
// With -config ssl.client.auth=required (or requested) clients must present a certificate
// (mutual TLS): -tls-client-cert-out DIR writes one for CN=client, signed by the generated CA,
// to DIR/client.pem and its key to DIR/client-key.pem; with -tls-cert, -tls-client-ca FILE
// names the PEM CAs that verify client certificates.
//
// With -sasl PLAIN,SCRAM-SHA-256 and -user NAME:PASSWORD (repeatable) every client must
// authenticate with SASL first. -sasl OAUTHBEARER needs no -user: a client presents an unsigned
// JWS whose "sub" claim is its principal (Kafka's unsecured validator).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/kshare/kshare/testbroker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "testbroker:", err)
		os.Exit(2)
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// run starts the cluster, reports where it listens and serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("testbroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.Int("brokers", 1, "number of brokers (node ids 0..N-1)")
	addr := fs.String("addr", "127.0.0.1:9092", "host:port of broker 0; broker i listens on port+i (port 0: free ports)")
	verbose := fs.Bool("v", false, "log connection-level events (closed connections and why) to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run, until SIGINT or SIGTERM, to this file (for go tool pprof)")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this PEM server certificate (chain) file; needs -tls-key")
	tlsKey := fs.String("tls-key", "", "PEM private key of -tls-cert")
	tlsCAOut := fs.String("tls-ca-out", "", "serve TLS with a generated CA and server certificate, and write the CA's PEM to this file for clients")
	tlsClientOut := fs.String("tls-client-cert-out", "", "with -tls-ca-out, write a client certificate for CN=client and its key to this directory (client.pem, client-key.pem), for ssl.client.auth")
	tlsClientCA := fs.String("tls-client-ca", "", "with -tls-cert, PEM file of the CAs that verify client certificates, for ssl.client.auth")
	saslMechs := fs.String("sasl", "", "require SASL with these mechanisms, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (OAUTHBEARER needs no -user)")
	var topics, configs, users listFlag
	fs.Var(&users, "user", "SASL user as NAME:PASSWORD, for PLAIN and both SCRAM mechanisms (repeatable; needs -sasl)")
	fs.Var(&topics, "topic", "topic to create at start, as name or name:partitions (repeatable)")
	fs.Var(&configs, "config", "broker config as key=value, e.g. auto.create.topics.enable=false (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	opts := []testbroker.Opt{testbroker.NumBrokers(*brokers), testbroker.ListenAddr(*addr)}
	if *verbose {
		opts = append(opts, testbroker.Logger(slog.New(slog.NewTextHandler(stderr, nil))))
	}
	tlsOpt, err := tlsFlags(*tlsCert, *tlsKey, *tlsCAOut, *tlsClientOut, *tlsClientCA)
	if err != nil {
		return err
	}
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	for _, t := range topics {
		name, parts, err := parseTopic(t)
		if err != nil {
			return err
		}
		opts = append(opts, testbroker.Topic(name, parts))
	}
	for _, kv := range configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("-config %q: want key=value", kv)
		}
		opts = append(opts, testbroker.BrokerConfig(k, v))
	}

	saslOpts, err := parseSASL(*saslMechs, users)
	if err != nil {
		return err
	}
	opts = append(opts, saslOpts...)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	c, err := testbroker.Start(opts...)
	if err != nil {
		return err
	}
	defer c.Close()

	if *tlsCAOut != "" {
		if err := os.WriteFile(*tlsCAOut, c.TLSCAPEM(), 0o644); err != nil {
			return fmt.Errorf("-tls-ca-out: %w", err)
		}
	}
	if *tlsClientOut != "" {
		if err := writeClientCert(c, *tlsClientOut); err != nil {
			return fmt.Errorf("-tls-client-cert-out: %w", err)
		}
	}
	for id, a := range c.Addrs() {
		fmt.Fprintf(stdout, "broker %d listening on %s\n", id, a)
	}
	fmt.Fprintf(stdout, "cluster %s ready; seed brokers: %s\n", c.ClusterID(), strings.Join(c.Addrs(), ","))
	<-ctx.Done()
	return nil
}

// tlsFlags checks the TLS flags and turns them into the option, nil for plain text.
func tlsFlags(cert, key, caOut, clientOut, clientCA string) (testbroker.Opt, error) {
	switch {
	case caOut != "" && (cert != "" || key != ""):
		return nil, errors.New("-tls-ca-out generates the server certificate: drop -tls-cert and -tls-key, or -tls-ca-out")
	case clientOut != "" && caOut == "":
		return nil, errors.New("-tls-client-cert-out signs with the CA of -tls-ca-out: add -tls-ca-out")
	case clientCA != "" && cert == "":
		return nil, errors.New("-tls-client-ca goes with -tls-cert (with -tls-ca-out the generated CA verifies clients)")
	case caOut != "":
		return testbroker.GeneratedTLS(), nil
	case cert == "" && key == "":
		return nil, nil
	case cert == "":
		return nil, errors.New("-tls-key needs -tls-cert, the certificate it is the key of")
	case key == "":
		return nil, errors.New("-tls-cert needs -tls-key, the certificate's private key")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert %s -tls-key %s: %w", cert, key, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if clientCA != "" {
		caPEM, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("-tls-client-ca: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("-tls-client-ca %s: no PEM certificate in the file", clientCA)
		}
	}
	return testbroker.TLS(cfg), nil
}

// writeClientCert writes a client certificate for CN=client, signed by the cluster's CA, and
// its key to dir as client.pem and client-key.pem.
func writeClientCert(c *testbroker.Cluster, dir string) error {
	cert, err := c.ClientCert(pkix.Name{CommonName: "client"})
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	if err := os.WriteFile(filepath.Join(dir, "client.pem"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "client-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

func parseTopic(s string) (string, int32, error) {
	name, parts, found := strings.Cut(s, ":")
	if !found {
		return name, 1, nil
	}
	n, err := strconv.ParseInt(parts, 10, 32)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("-topic %q: partitions must be a positive number", s)
	}
	return name, int32(n), nil
}

// parseSASL turns -sasl and -user into options; the mechanisms themselves are checked by Start.
func parseSASL(mechs string, users []string) ([]testbroker.Opt, error) {
	var opts []testbroker.Opt
	if mechs != "" {
		opts = append(opts, testbroker.SASL(strings.Split(mechs, ",")...))
	} else if len(users) > 0 {
		return nil, fmt.Errorf("-user needs -sasl MECH[,MECH...]")
	}
	for _, u := range users {
		name, pass, ok := strings.Cut(u, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("-user %q: want NAME:PASSWORD", u)
		}
		opts = append(opts, testbroker.User(name, pass))
	}
	return opts, nil
}

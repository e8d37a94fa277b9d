// Command kfakebroker runs franz-go's kfake as a process of its own, with the same command line as
// testbroker, so that benchbroker can drive and measure both brokers the same way:
//
//	go run ./internal/benchbroker/kfakebroker -brokers 1 -addr 127.0.0.1:9092 -topic bench:3
//
// Broker i listens on the port of -addr plus i (every broker on a port of the system's choosing when
// that port is 0). It prints a line "broker N listening on HOST:PORT" per broker once all of them
// accept connections, logs nothing else, and on SIGINT or SIGTERM closes the cluster and exits 0.
//
// kfake does not create topics on a metadata request unless told to, and neither do we: topics come
// from -topic, or from a CreateTopics request.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
}

// topicFlag collects -topic name:partitions, which may be given more than once.
type topicFlag map[string]int32

func (f topicFlag) String() string { return "" }

func (f topicFlag) Set(s string) error {
	name, parts, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return fmt.Errorf("want name:partitions, got %q", s)
	}
	n, err := strconv.ParseInt(parts, 10, 32)
	if err != nil || n < 1 {
		return fmt.Errorf("want a positive partition count in %q", s)
	}
	f[name] = int32(n)
	return nil
}

// configFlag collects -config key=value, which may be given more than once.
type configFlag map[string]string

func (f configFlag) String() string { return "" }

func (f configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = v
	return nil
}

func run() error {
	topics := topicFlag{}
	configs := configFlag{}
	brokers := flag.Int("brokers", 1, "number of brokers; broker i listens on the port of -addr plus i")
	addr := flag.String("addr", "127.0.0.1:0", "host:port of broker 0 (port 0: every broker on a free port)")
	flag.Var(topics, "topic", "topic to create at start, as name:partitions (repeatable)")
	flag.Var(configs, "config", "broker config as key=value, passed to kfake.BrokerConfigs (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *brokers < 1 {
		return fmt.Errorf("-brokers must be at least 1, got %d", *brokers)
	}
	host, portStr, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port+*brokers-1 > 65535 {
		return fmt.Errorf("-addr: bad port %q for %d brokers", portStr, *brokers)
	}

	ports := make([]int, *brokers) // all 0 when port is 0: kfake then picks each port
	for i := range ports {
		if port != 0 {
			ports[i] = port + i
		}
	}
	opts := []kfake.Opt{
		kfake.Ports(ports...),
		// kfake always asks for 127.0.0.1; we keep its port and use our host.
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}),
	}
	for name, parts := range topics {
		opts = append(opts, kfake.SeedTopics(parts, name))
	}
	if len(configs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	for i, a := range c.ListenAddrs() {
		fmt.Printf("broker %d listening on %s\n", i, a)
	}
	<-ctx.Done()
	return nil
}

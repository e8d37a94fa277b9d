package testbroker

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/sasl"
	"github.com/kshare/kshare/testbroker/internal/server"
)

// Opt configures a Cluster.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

type cfg struct {
	brokers       int
	addr          string // "" until ListenAddr: the default depends on the network
	inMemory      bool
	manualStart   *time.Time
	maxFrameBytes int32
	maxVersions   map[int16]int16
	brokerConfigs map[string]string
	topics        []metadata.TopicSpec
	logger        *slog.Logger
	clusterID     string
	racks         []string
	tls           *tls.Config // TLS(cfg); tlsSet tells TLS(nil) from no TLS
	tlsSet        bool
	generatedTLS  bool
	sasl          bool
	saslMechs     []string
	users         map[string]string
	// noReplicaFetchers is for this package's tests of the leader (export_test.go).
	noReplicaFetchers bool
}

func defaultCfg() cfg {
	return cfg{
		brokers:       1,
		maxVersions:   map[int16]int16{},
		brokerConfigs: map[string]string{},
	}
}

// NumBrokers sets how many brokers the cluster runs (default 1). Node ids are 0..n-1.
func NumBrokers(n int) Opt { return opt(func(c *cfg) { c.brokers = n }) }

// ListenAddr sets where the brokers listen, as host:port: broker i listens on port+i. A port of
// 0 (the default, "127.0.0.1:0") gives every broker a free port of its own.
func ListenAddr(hostport string) Opt { return opt(func(c *cfg) { c.addr = hostport }) }

// InMemoryNetwork runs the brokers on an in-memory network of the cluster's own instead of TCP:
// no socket is opened, and only Cluster.DialContext reaches them (kgo.Dialer(c.DialContext)).
// Broker i listens on and advertises "broker-<i>.testbroker.invalid:9092", a name no resolver
// knows. A goroutine waiting on such a connection is durably blocked in the sense of
// testing/synctest, so a cluster started inside a synctest bubble, with its clients, runs on the
// bubble's fake clock: time.Sleep in the test moves every timer of the cluster (long polls,
// acquisition locks, session timeouts) and of the clients, and no WithManualClock is needed.
// Start the cluster inside the bubble that uses it. It cannot be combined with ListenAddr.
func InMemoryNetwork() Opt { return opt(func(c *cfg) { c.inMemory = true }) }

// WithManualClock runs the cluster on a manual clock that starts at start and moves only when
// the test advances it (Cluster.ManualClock). Without it the cluster uses the real clock.
func WithManualClock(start time.Time) Opt {
	return opt(func(c *cfg) { c.manualStart = &start })
}

// MaxRequestBytes sets the largest request frame accepted (default 100 MiB). A larger frame
// closes the connection, with the reason logged.
func MaxRequestBytes(n int32) Opt { return opt(func(c *cfg) { c.maxFrameBytes = n }) }

// MaxVersion caps the version of one API (a kmsg key, e.g. kmsg.ShareFetch): ApiVersions
// advertises at most version, and a request above it is answered with UNSUPPORTED_VERSION. A cap
// below the lowest implemented version removes the API from ApiVersions, and its requests close
// the connection.
func MaxVersion(key kmsg.Key, version int16) Opt {
	return opt(func(c *cfg) { c.maxVersions[int16(key)] = version })
}

// BrokerConfig sets a broker-level config (a server.properties key such as
// "auto.create.topics.enable" or "num.partitions"). Start fails on an unknown key or a bad value.
func BrokerConfig(key, value string) Opt {
	return opt(func(c *cfg) { c.brokerConfigs[key] = value })
}

// StandardAuthorizer is the value of the broker config "authorizer.class.name" that turns ACLs
// on, Kafka's KRaft authorizer: BrokerConfig("authorizer.class.name", StandardAuthorizer). Its
// other configs are "super.users" ("User:admin;User:ops") and "allow.everyone.if.no.acl.found"
// (default false); ACLs are then managed with CreateAcls, DescribeAcls and DeleteAcls (kadm's
// CreateACLs, DescribeACLs, DeleteACLs), and every request is authorized by them.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Topic creates a topic with the given number of partitions when the cluster starts.
func Topic(name string, partitions int32) Opt {
	return TopicWithConfigs(name, partitions, nil)
}

// TopicWithConfigs creates a topic with topic-level configs (e.g. "message.timestamp.type").
func TopicWithConfigs(name string, partitions int32, configs map[string]string) Opt {
	return opt(func(c *cfg) {
		c.topics = append(c.topics, metadata.TopicSpec{Name: name, Partitions: partitions, Configs: configs})
	})
}

// ReplicatedTopic creates a topic whose partitions have replicationFactor replicas each, on
// that many brokers, when the cluster starts. Partition p of the cluster's k-th topic is led
// by broker (k+p) mod NumBrokers and followed by the brokers after it. A factor above
// NumBrokers makes Start fail with Kafka's INVALID_REPLICATION_FACTOR message.
func ReplicatedTopic(name string, partitions int32, replicationFactor int16) Opt {
	return opt(func(c *cfg) {
		c.topics = append(c.topics, metadata.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: replicationFactor})
	})
}

// Logger receives the cluster's connection-level events, such as a connection closed because
// of a malformed request and why. The default discards them.
func Logger(l *slog.Logger) Opt { return opt(func(c *cfg) { c.logger = l }) }

// ClusterID sets the cluster id reported to clients (default: random).
func ClusterID(id string) Opt { return opt(func(c *cfg) { c.clusterID = id }) }

// BrokerRacks gives each broker a rack (broker.rack), by node id: one rack per broker, "" for
// a broker without one. Metadata and DescribeCluster report the racks. With
// BrokerConfig("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector")
// a partition's leader sends a consumer that names its rack (kgo.Rack) to an in-sync replica
// in that rack, and the consumer fetches from that follower (KIP-392).
func BrokerRacks(racks ...string) Opt {
	return opt(func(c *cfg) { c.racks = append([]string(nil), racks...) })
}

// SASL makes every listener require SASL authentication with one of mechanisms: "PLAIN",
// "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER" (Kafka's names, exact case); Start fails on
// any other. Users of PLAIN and SCRAM are added with User. OAUTHBEARER needs no user: it runs
// Kafka's default unsecured validator, which accepts an unsigned JWS (alg "none") whose "sub"
// claim names the principal and whose "exp" claim, checked against the cluster clock, has not
// passed; any other token is answered with the challenge {"status":"invalid_token"}, then
// SASL_AUTHENTICATION_FAILED with that text as the message. With BrokerConfig
// "connections.max.reauth.ms" (or an OAUTHBEARER token's exp) a session has a lifetime that
// SaslAuthenticate reports, and a client must re-authenticate on its connection before it
// ends (KIP-368). Before a client has authenticated, the brokers accept only ApiVersions,
// SaslHandshake and SaslAuthenticate, as Kafka does: any other request closes the connection.
// A wrong password or an unknown user is answered with SASL_AUTHENTICATION_FAILED and Kafka's
// message, then the connection is closed. The cluster's replica fetchers authenticate as
// "testbroker-inter-broker", with a random password, using the first mechanism.
func SASL(mechanisms ...string) Opt {
	return opt(func(c *cfg) {
		c.sasl = true
		c.saslMechs = append(c.saslMechs[:len(c.saslMechs):len(c.saslMechs)], mechanisms...)
	})
}

// User adds a SASL user (repeatable; a later User with the same name replaces the password):
// name and password authenticate with PLAIN, and with both SCRAM mechanisms through
// credentials derived with a random salt and 4096 iterations (Kafka's default). It needs SASL.
func User(name, password string) Opt {
	return opt(func(c *cfg) {
		if c.users == nil {
			c.users = map[string]string{}
		}
		c.users[name] = password
	})
}

// validate checks every option in one place and turns them into the server's config.
func (c *cfg) validate() (server.Config, *clock.Manual, *clusterTLS, error) {
	if c.brokers < 1 {
		return server.Config{}, nil, nil, fmt.Errorf("testbroker: NumBrokers(%d): need at least one broker", c.brokers)
	}
	addrs, err := c.listenAddrs()
	if err != nil {
		return server.Config{}, nil, nil, err
	}
	if c.maxFrameBytes < 0 {
		return server.Config{}, nil, nil, fmt.Errorf("testbroker: MaxRequestBytes(%d): must be positive", c.maxFrameBytes)
	}
	if c.racks != nil && len(c.racks) != c.brokers {
		return server.Config{}, nil, nil, fmt.Errorf("testbroker: BrokerRacks got %d racks for %d brokers: give one per broker, \"\" for none", len(c.racks), c.brokers)
	}
	for key, v := range c.maxVersions {
		if kmsg.RequestForKey(key) == nil {
			return server.Config{}, nil, nil, fmt.Errorf("testbroker: MaxVersion(%d, %d): unknown API key", key, v)
		}
	}
	var store *sasl.Store
	if c.sasl || c.users != nil {
		if !c.sasl {
			return server.Config{}, nil, nil, fmt.Errorf("testbroker: User without SASL: enable SASL with SASL(mechanisms...)")
		}
		if store, err = sasl.NewStore(c.saslMechs, c.users); err != nil {
			return server.Config{}, nil, nil, fmt.Errorf("testbroker: SASL: %w", err)
		}
	}
	sc := server.Config{
		Brokers:       c.brokers,
		ListenAddrs:   addrs,
		MaxFrameBytes: c.maxFrameBytes,
		MaxVersions:   c.maxVersions,
		BrokerConfigs: c.brokerConfigs,
		Topics:        c.topics,
		Logger:        c.logger,
		ClusterID:     c.clusterID,
		Racks:         c.racks,
		SASL:          store,

		NoReplicaFetchers: c.noReplicaFetchers,
	}
	hosts := make([]string, len(addrs))
	for i, a := range addrs {
		hosts[i], _, _ = net.SplitHostPort(a)
	}
	ct, err := c.buildTLS(hosts)
	if err != nil {
		return server.Config{}, nil, nil, err
	}
	if ct != nil {
		sc.TLS, sc.InterBrokerTLS, sc.ClientCAs = ct.server, ct.interBroker, ct.clientCAs
	}
	var manual *clock.Manual
	if c.manualStart != nil {
		manual = clock.NewManual(*c.manualStart)
		sc.Clock = manual
	}
	return sc, manual, ct, nil
}

// listenAddrs returns each broker's listen address, by node id.
func (c *cfg) listenAddrs() ([]string, error) {
	addrs := make([]string, c.brokers)
	if c.inMemory {
		if c.addr != "" {
			return nil, fmt.Errorf("testbroker: ListenAddr(%q) with InMemoryNetwork: in-memory brokers have fixed addresses; drop one of the two", c.addr)
		}
		for i := range addrs {
			addrs[i] = "broker-" + strconv.Itoa(i) + ".testbroker.invalid:9092"
		}
		return addrs, nil
	}
	addr := c.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("testbroker: ListenAddr(%q): want host:port: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port+c.brokers-1 > 65535 {
		return nil, fmt.Errorf("testbroker: ListenAddr(%q): port must be 0, or leave room for %d brokers below 65536", addr, c.brokers)
	}
	for i := range addrs {
		p := 0
		if port != 0 {
			p = port + i
		}
		addrs[i] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return addrs, nil
}

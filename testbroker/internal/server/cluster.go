package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/config"
	"github.com/kshare/kshare/testbroker/internal/fault"
	"github.com/kshare/kshare/testbroker/internal/group"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/replica"
	"github.com/kshare/kshare/testbroker/internal/sasl"
	"github.com/kshare/kshare/testbroker/internal/share"
	"github.com/kshare/kshare/testbroker/internal/txn"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

// Config is what a Cluster is started with. The public testbroker package validates it.
type Config struct {
	// Brokers is the number of brokers (node ids 0..Brokers-1).
	Brokers int
	// ListenAddrs has one address per broker; "127.0.0.1:0" picks a free port.
	ListenAddrs []string
	// Listen opens a broker's listener on one of ListenAddrs; nil means TCP (net.Listen). The
	// listener's Addr().String() is the host:port the broker advertises.
	Listen func(addr string) (net.Listener, error)
	// Dial reaches a broker's listener, for the replica fetchers; nil means TCP (net.Dialer).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TLS, when set, makes every broker listener a TLS listener with this server config (Start
	// wraps Listen, so a restarted broker's listener is TLS too), and the replica fetchers dial
	// the brokers with InterBrokerTLS, whose ServerName defaults to the dialled host.
	TLS            *tls.Config
	InterBrokerTLS *tls.Config
	// ClientCAs verify client certificates when ssl.client.auth asks for them; with none, only
	// the replica fetchers' own certificate (made at Start) is accepted.
	ClientCAs *x509.CertPool
	// Clock runs every timer of the cluster; nil means the real clock.
	Clock clock.Clock
	// MaxFrameBytes is the largest request accepted; larger frames close the connection.
	MaxFrameBytes int32
	// MaxVersions caps the version advertised and accepted per API key.
	MaxVersions map[int16]int16
	// BrokerConfigs are broker-level settings (server.properties keys) that override defaults.
	BrokerConfigs map[string]string
	// Topics are created before the cluster accepts connections.
	Topics []metadata.TopicSpec
	// Logger receives connection-level events (closed connections and why). nil discards them.
	Logger *slog.Logger
	// ClusterID is reported in Metadata and DescribeCluster; empty picks a random one.
	ClusterID string
	// Racks has broker i's rack (broker.rack) at index i, "" for none; nil gives no broker a
	// rack.
	Racks []string
	// SASL, when set, makes every connection authenticate with one of its mechanisms first.
	SASL *sasl.Store
	// NoReplicaFetchers leaves the followers' fetchers off, for tests of the leader that send
	// the followers' fetches themselves.
	NoReplicaFetchers bool
}

// Cluster is a running fake cluster.
type Cluster struct {
	cfg       Config
	clock     clock.Clock
	logger    *slog.Logger
	clusterID string
	brokers   []*Broker
	faults    *fault.Set
	configs   *config.Store
	// scram holds the SCRAM credentials: cfg.SASL's, or a store of its own on a cluster
	// without SASL, where AlterUserScramCredentials works all the same.
	scram *sasl.Store

	meta *metadata.Controller

	producerIDs producerIDs
	groups      *group.Coordinator
	shares      *share.Manager
	replicas    *replica.Manager
	retention   clock.Timer // the periodic retention check
	txns        *txn.Coordinator
	authz       *acl.Authorizer // nil without authorizer.class.name
	// interBrokerCert is the replica fetchers' client certificate, nil without TLS: a
	// connection presenting it is sasl.InterBrokerUser's.
	interBrokerCert *x509.Certificate

	lifecycleMu sync.Mutex // serialises StopBroker and StartBroker

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup
}

// Start listens on every broker's address and creates the configured topics.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Brokers < 1 || len(cfg.ListenAddrs) != cfg.Brokers {
		return nil, fmt.Errorf("server: %d brokers need %d listen addresses, got %d", cfg.Brokers, cfg.Brokers, len(cfg.ListenAddrs))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Listen == nil {
		cfg.Listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = wire.DefaultMaxFrameBytes
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	configs, err := config.New(cfg.BrokerConfigs)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	var interBrokerCert *x509.Certificate
	if cfg.TLS != nil {
		if cfg.InterBrokerTLS == nil {
			return nil, errors.New("server: TLS needs InterBrokerTLS for the replica fetchers")
		}
		cert, err := interBrokerCertificate()
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		interBrokerCert = cert.Leaf
		dialCfg := cfg.InterBrokerTLS.Clone()
		// Sent whatever CAs the broker names as acceptable: it is accepted by its bytes.
		dialCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		cfg.Listen = tlsListen(cfg.Listen, serverTLS(cfg.TLS, cfg.ClientCAs, cert.Leaf, configs))
		cfg.Dial = tlsDial(cfg.Dial, dialCfg)
	}
	c := &Cluster{
		cfg:             cfg,
		interBrokerCert: interBrokerCert,
		clock:           cfg.Clock,
		logger:          logger,
		clusterID:       cfg.ClusterID,
		faults:          fault.NewSet(),
		configs:         configs,
		scram:           cfg.SASL,
		closed:          make(chan struct{}),
	}
	if c.scram == nil {
		c.scram = sasl.NewCredentialStore()
	}
	c.groups = c.newGroupCoordinator()
	c.shares = c.newShareManager()
	c.replicas = c.newReplicaManager()
	c.meta = metadata.New(cfg.Brokers, c.configs, c.replicas)
	c.txns = c.newTxnCoordinator()
	c.authz = c.newAuthorizer()
	if c.clusterID == "" {
		var id [16]byte
		_, _ = rand.Read(id[:])
		c.clusterID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	for _, t := range cfg.Topics {
		if _, err := c.meta.CreateTopic(t); err != nil {
			return nil, fmt.Errorf("server: creating topic %q: %w", t.Name, err)
		}
	}
	for i, addr := range cfg.ListenAddrs {
		ln, err := cfg.Listen(addr)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("server: broker %d: %w", i, err)
		}
		b, err := newBroker(c, int32(i), ln)
		if err != nil {
			ln.Close()
			c.Close()
			return nil, fmt.Errorf("server: broker %d: %w", i, err)
		}
		c.brokers = append(c.brokers, b)
	}
	for _, b := range c.brokers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			b.serve()
		}()
	}
	if !cfg.NoReplicaFetchers {
		c.replicas.Start()
	}
	c.retention = c.startRetention()
	return c, nil
}

// Close stops every listener and connection and waits for all of the cluster's goroutines.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.retention != nil {
			c.retention.Stop()
		}
		// A StartBroker under way finishes first, so that its listener is closed below.
		c.lifecycleMu.Lock()
		defer c.lifecycleMu.Unlock()
		c.groups.Close()
		c.txns.Close()
		c.replicas.Close()
		for _, b := range c.brokers {
			b.close()
		}
		c.shares.Close()
	})
	c.wg.Wait()
}

// Addrs returns each broker's listen address, by node id.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		addrs[i] = b.addr
	}
	return addrs
}

// Clock returns the cluster clock.
func (c *Cluster) Clock() clock.Clock { return c.clock }

// Faults returns the cluster's fault rules.
func (c *Cluster) Faults() *fault.Set { return c.faults }

// ClusterID returns the id reported to clients.
func (c *Cluster) ClusterID() string { return c.clusterID }

// NumBrokers returns how many brokers the cluster runs.
func (c *Cluster) NumBrokers() int { return len(c.cfg.ListenAddrs) }

// broker returns the broker with the given node id, or nil.
func (c *Cluster) broker(id int32) *Broker {
	if id < 0 || int(id) >= len(c.brokers) {
		return nil
	}
	return c.brokers[id]
}

var errClusterClosed = errors.New("server: cluster closed")

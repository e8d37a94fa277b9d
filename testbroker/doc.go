// Package testbroker is a fake Kafka cluster that speaks the real wire protocol, for tests and
// local runs. Any Kafka client can talk to it: franz-go, the Java client, kcat.
//
// Start one in a test with StartT, which closes it when the test ends:
//
//	c := testbroker.StartT(t, testbroker.Topic("orders", 3))
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
//
// A cluster runs one or more brokers in the process, each on its own loopback listener, with
// partition leaders spread over them. Everything time-based runs on one clock, the real one by
// default; WithManualClock gives tests a clock that moves only when they advance it, so that a
// long-poll wait, and later an acquisition lock, ends exactly when the test says.
//
// InMemoryNetwork runs the brokers on an in-memory network instead of loopback TCP; clients
// reach it with kgo.Dialer(c.DialContext). Started inside a testing/synctest bubble, such a
// cluster and its clients all run on the bubble's fake clock, with no manual clock:
//
//	synctest.Test(t, func(t *testing.T) {
//		c := testbroker.StartT(t, testbroker.InMemoryNetwork(), testbroker.Topic("orders", 1))
//		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Dialer(c.DialContext))
//		defer cl.Close()
//		// time.Sleep(30 * time.Second) here takes no real time and expires a lock
//	})
//
// Version caps (MaxVersion) make the cluster play an older Kafka: ApiVersions advertises the cap
// and requests above it are answered with UNSUPPORTED_VERSION. Faults (Cluster.InjectFault)
// answer matching requests with an error code, hold them, or drop the connection. The
// inspection methods (Topics, Partition) show what a test may want to assert on.
//
// Share groups (KIP-932) are implemented as Kafka 4.2+ has them, RENEW (KIP-1222) included:
// membership through ShareGroupHeartbeat, share sessions, ShareFetch and ShareAcknowledge with
// Kafka's validation and messages, acquisition locks that expire exactly on the cluster clock,
// and inspection of every record's state (ShareRecords) for tests to assert on.
//
// GeneratedTLS (or TLS with a test's own certificate) makes every listener a TLS listener;
// clients trust the cluster with kgo.DialTLSConfig(c.ClientTLS()). BrokerConfig("ssl.client.auth",
// "required") asks clients for a certificate (ClientCert makes one), whose subject is then their
// principal. SASL and User make clients
// authenticate; BrokerConfig("authorizer.class.name", StandardAuthorizer) turns on ACLs, with
// Kafka's StandardAuthorizer rules and error codes on every API (see docs/testbroker.md, ACLs).
//
// The same cluster runs as a program: go run ./testbroker/cmd/testbroker -brokers 3. See
// docs/testbroker.md for every option and for what is and is not implemented.
package testbroker

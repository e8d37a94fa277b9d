package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// connectionFlags are the command line's connection options besides --bootstrap-server:
// Kafka's --command-config and the tool's own shortcuts for TLS and SASL.
type connectionFlags struct {
	commandConfig string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	saslMechanism string
	saslUsername  string
	saslPassword  string
}

// given reports whether any connection option is set.
func (f connectionFlags) given() bool { return f != connectionFlags{} }

// connection is how every client of the tool reaches the cluster.
type connection struct {
	seeds    []string
	security []kgo.Opt
}

// opts are the client options for the cluster, followed by extra.
func (c connection) opts(extra ...kgo.Opt) []kgo.Opt {
	return slices.Concat([]kgo.Opt{kgo.SeedBrokers(c.seeds...)}, c.security, extra)
}

// securityFromFlags reads --command-config (Kafka's client properties) and lays the shortcut
// flags over it: --tls and --tls-ca switch TLS on (--tls-ca trusting the CAs of a PEM file
// instead of the system's; --tls-cert and --tls-key presenting a client certificate),
// --sasl-mechanism with --sasl-username and --sasl-password sets
// SASL (for OAUTHBEARER, the username is the sub claim of an unsecured token). A flag replaces
// what the file says about the same thing. It returns the properties it did not use.
func securityFromFlags(f connectionFlags, readFile func(string) ([]byte, error)) (security, []string, error) {
	var s security
	var unused []string
	if f.commandConfig != "" {
		text, err := readFile(f.commandConfig)
		if err != nil {
			return s, nil, fmt.Errorf("--command-config: %w", err)
		}
		props, err := parseProperties(string(text))
		if err != nil {
			return s, nil, fmt.Errorf("--command-config %s: %w", f.commandConfig, err)
		}
		if s, unused, err = securityFromProperties(props, readFile); err != nil {
			return s, nil, fmt.Errorf("--command-config %s: %w", f.commandConfig, err)
		}
	}
	if f.tls || f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" {
		s.tls = true
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		pair, err := keyPairFromFiles(f.tlsCert, f.tlsKey, readFile)
		if err != nil {
			return s, nil, err
		}
		s.keyPair = &pair
	}
	if f.tlsCA != "" {
		pem, err := readFile(f.tlsCA)
		if err != nil {
			return s, nil, fmt.Errorf("--tls-ca: %w", err)
		}
		s.trustPEM, s.trustFrom = pem, f.tlsCA
	}
	if f.saslMechanism == "" {
		if f.saslUsername != "" || f.saslPassword != "" {
			return s, nil, errors.New("--sasl-username and --sasl-password need --sasl-mechanism")
		}
		return s, unused, nil
	}
	if !slices.Contains(saslMechanisms, f.saslMechanism) {
		return s, nil, fmt.Errorf("--sasl-mechanism must be one of %s", strings.Join(saslMechanisms, ", "))
	}
	if f.saslUsername == "" {
		return s, nil, fmt.Errorf("--sasl-mechanism %s needs --sasl-username", f.saslMechanism)
	}
	s.mechanism, s.username, s.password, s.oauthLogin = f.saslMechanism, f.saslUsername, f.saslPassword, nil
	if f.saslMechanism == "OAUTHBEARER" {
		if f.saslPassword != "" {
			return s, nil, errors.New("--sasl-password is not used with OAUTHBEARER: the token is unsecured, its sub claim --sasl-username")
		}
		s.username = ""
		s.oauthLogin = &unsecuredLogin{claims: map[string]any{"sub": f.saslUsername}, lifetime: 3600, extensions: map[string]string{}}
	}
	return s, unused, nil
}

// keyPairFromFiles reads --tls-cert (the certificate chain in PEM) and --tls-key (its
// unencrypted PKCS#8 private key in PEM) as Kafka reads a PEM key store.
func keyPairFromFiles(certFile, keyFile string, readFile func(string) ([]byte, error)) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("--tls-cert and --tls-key go together: the client certificate and its private key")
	}
	chain, err := readFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert: %w", err)
	}
	key, err := readFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key: %w", err)
	}
	pair, err := keyPair(string(key), string(chain), nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s --tls-key %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// newConnection makes the connection the command line asks for: bootstrapServer (a comma
// separated list) and the security of flags. Properties of --command-config the tool does not
// use are named on warn, as a Kafka client logs them.
func newConnection(bootstrapServer string, flags connectionFlags, warn func(string)) (connection, error) {
	s, unused, err := securityFromFlags(flags, os.ReadFile)
	if err != nil {
		return connection{}, err
	}
	if len(unused) > 0 {
		warn(fmt.Sprintf("These configurations '[%s]' were supplied but are not used yet.", strings.Join(unused, ", ")))
	}
	opts, err := s.kgoOpts(time.Now)
	if err != nil {
		return connection{}, err
	}
	return connection{seeds: strings.Split(bootstrapServer, ","), security: opts}, nil
}

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// security is how the tool connects to a cluster: Kafka's security.protocol and what it
// needs. The zero value is PLAINTEXT.
type security struct {
	tls        bool
	trustPEM   []byte           // the CA certificates to trust, in PEM; nil for the system's
	trustFrom  string           // where trustPEM came from, for messages
	skipHost   bool             // ssl.endpoint.identification.algorithm empty: the certificate's names are not checked
	keyPair    *tls.Certificate // the client certificate for mutual TLS; nil without a key store
	mechanism  string           // "" without SASL
	username   string
	password   string
	oauthLogin *unsecuredLogin // OAUTHBEARER's token
}

// Kafka's security protocols, in the order Kafka lists them.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// saslMechanisms are the mechanisms the tool speaks.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// Kafka's login modules for sasl.jaas.config.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// unsupportedProperties are Kafka client properties the tool cannot honour: given, they are
// refused rather than ignored, because the connection would not be the one asked for.
var unsupportedProperties = []string{
	"ssl.truststore.password",
	"sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "sasl.login.class",
	"sasl.oauthbearer.token.endpoint.url", "sasl.kerberos.service.name",
}

// usedProperties are the properties securityFromProperties reads.
var usedProperties = slices.Concat([]string{
	"security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.type",
	"ssl.truststore.location", "ssl.truststore.certificates", "ssl.endpoint.identification.algorithm",
}, keyStoreProperties)

// configError is Kafka's ConfigException message for a value it refuses.
func configError(name, value, why string) error {
	return fmt.Errorf("Invalid value %s for configuration %s: %s", value, name, why)
}

// securityFromProperties reads Kafka's client security properties (a --command-config file)
// as a Kafka client does, refusing a value the tool does not support with a message naming the
// property. readFile reads ssl.truststore.location and ssl.keystore.location. It returns the properties it did not use,
// sorted, which a Kafka client logs as supplied but not used.
func securityFromProperties(props map[string]string, readFile func(string) ([]byte, error)) (security, []string, error) {
	var s security
	for _, name := range unsupportedProperties {
		if _, ok := props[name]; ok {
			return s, nil, fmt.Errorf("%s is not supported by this tool: it connects with a CA and a key store in PEM (ssl.truststore.*, ssl.keystore.*) and SASL PLAIN, SCRAM or OAUTHBEARER with sasl.jaas.config", name)
		}
	}
	protocol := "PLAINTEXT"
	if v, ok := props["security.protocol"]; ok {
		protocol = strings.ToUpper(v)
		if !slices.Contains(securityProtocols, protocol) {
			return s, nil, configError("security.protocol", v, "String must be one of (case insensitive): "+strings.Join(securityProtocols, ", "))
		}
	}
	s.tls = protocol == "SSL" || protocol == "SASL_SSL"
	if s.tls {
		if err := s.trustFromProperties(props, readFile); err != nil {
			return s, nil, err
		}
		if err := s.keyStoreFromProperties(props, readFile); err != nil {
			return s, nil, err
		}
	}
	if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
		mechanism, ok := props["sasl.mechanism"]
		if !ok {
			mechanism = "GSSAPI" // Kafka's default
		}
		if err := s.saslFromJAAS(mechanism, props["sasl.jaas.config"]); err != nil {
			return s, nil, err
		}
	}
	var unused []string
	for name := range props {
		if !slices.Contains(usedProperties, name) {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	return s, unused, nil
}

// trustFromProperties reads the ssl.truststore.* and ssl.endpoint.identification.algorithm
// properties of an SSL or SASL_SSL connection.
func (s *security) trustFromProperties(props map[string]string, readFile func(string) ([]byte, error)) error {
	typ, typeSet := props["ssl.truststore.type"]
	if !typeSet {
		typ = "JKS" // Kafka's default
	}
	location, hasLocation := props["ssl.truststore.location"]
	certs, hasCerts := props["ssl.truststore.certificates"]
	switch {
	case hasCerts && typ != "PEM":
		return fmt.Errorf("SSL trust store certs can be specified only for PEM, but trust store type is %s.", typ)
	case hasCerts && hasLocation:
		return errors.New("Both SSL trust store location and separate trust certificates are specified.")
	case hasCerts:
		s.trustPEM, s.trustFrom = []byte(certs), "ssl.truststore.certificates"
	case hasLocation && typ != "PEM":
		return configError("ssl.truststore.type", typ, "this tool reads trust stores of type PEM only (ssl.truststore.type=PEM)")
	case hasLocation:
		pem, err := readFile(location)
		if err != nil {
			return fmt.Errorf("ssl.truststore.location: %w", err)
		}
		s.trustPEM, s.trustFrom = pem, location
	case typeSet && typ != "PEM" && typ != "JKS" && typ != "PKCS12":
		return configError("ssl.truststore.type", typ, "this tool knows PEM (and JKS and PKCS12 without a trust store: the system's CAs)")
	}
	if alg, ok := props["ssl.endpoint.identification.algorithm"]; ok {
		switch strings.ToLower(alg) {
		case "":
			s.skipHost = true
		case "https":
		default:
			return configError("ssl.endpoint.identification.algorithm", alg, "this tool knows https (check the broker's host name, the default) and the empty value (do not)")
		}
	}
	return nil
}

// saslFromJAAS reads the mechanism and its login module's options from sasl.jaas.config.
// PLAIN and SCRAM take username and password from either PlainLoginModule or
// ScramLoginModule, as a Kafka client's callback handler takes them from whichever module
// logged in; OAUTHBEARER takes its unsecured token's claims from OAuthBearerLoginModule.
func (s *security) saslFromJAAS(mechanism, jaas string) error {
	if !slices.Contains(saslMechanisms, mechanism) {
		return configError("sasl.mechanism", mechanism, "this tool supports "+strings.Join(saslMechanisms, ", "))
	}
	s.mechanism = mechanism
	if strings.TrimSpace(jaas) == "" {
		return errors.New("sasl.jaas.config is required with SASL: Could not find a 'KafkaClient' entry in the JAAS configuration")
	}
	e, err := parseJAAS(jaas)
	if err != nil {
		return fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if mechanism == "OAUTHBEARER" {
		if e.loginModule != oauthLoginModule {
			return fmt.Errorf("sasl.jaas.config: OAUTHBEARER needs %s, not %s", oauthLoginModule, e.loginModule)
		}
		u, err := parseUnsecuredLogin(e.options)
		if err != nil {
			return fmt.Errorf("sasl.jaas.config: %w", err)
		}
		s.oauthLogin = u
		return nil
	}
	if e.loginModule != plainLoginModule && e.loginModule != scramLoginModule {
		return fmt.Errorf("sasl.jaas.config: %s needs %s or %s, not %s", mechanism, plainLoginModule, scramLoginModule, e.loginModule)
	}
	for _, k := range []string{"username", "password"} {
		if _, ok := e.options[k]; !ok {
			return fmt.Errorf("sasl.jaas.config: %s has no %s", e.loginModule, k)
		}
	}
	s.username, s.password = e.options["username"], e.options["password"]
	return nil
}

// kgoOpts are the client options for s; now stamps OAUTHBEARER tokens.
func (s security) kgoOpts(now func() time.Time) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.tls {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.mechanism != "" {
		opts = append(opts, kgo.SASL(s.saslMechanism(now)))
	}
	return opts, nil
}

// tlsConfig trusts s.trustPEM's certificates (the system's without), checks the broker's
// host name unless s.skipHost, and presents s.keyPair to a broker that asks for a client
// certificate.
func (s security) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.keyPair != nil {
		cfg.Certificates = []tls.Certificate{*s.keyPair}
	}
	if s.trustPEM != nil {
		pool, err := certPool(s.trustPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.trustFrom, err)
		}
		cfg.RootCAs = pool
	}
	if s.skipHost {
		// Go checks the chain and the name together; without the name, check the chain here.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// pemCertificate matches a certificate in PEM as Kafka's PemParser does: its base64 may be
// broken anywhere by whitespace, so that a properties value continued over lines (which drops
// the line breaks) still reads.
var pemCertificate = regexp.MustCompile(`-+BEGIN\s+CERTIFICATE-+\s*([a-zA-Z0-9/+=\s]*)-+END\s+CERTIFICATE-+`)

// pemDERs decodes every match of re in text, whose first group is base64 broken anywhere by
// whitespace: one DER per match, so that a caller can count them before it looks at err, the
// error of the first match that does not decode.
func pemDERs(re *regexp.Regexp, text string) ([][]byte, error) {
	var ders [][]byte
	var firstErr error
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(m[1]), ""))
		if err != nil && firstErr == nil {
			firstErr = err
		}
		ders = append(ders, der)
	}
	return ders, firstErr
}

// certPool reads every certificate in pemText; Kafka's message when there is none.
func certPool(pemText []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	ders, err := pemDERs(pemCertificate, string(pemText))
	if len(ders) == 0 {
		return nil, errors.New("No matching CERTIFICATE entries in PEM file")
	}
	if err != nil {
		return nil, fmt.Errorf("Invalid PEM truststore configs: %w", err)
	}
	for _, der := range ders {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("Invalid PEM truststore configs: %w", err)
		}
		pool.AddCert(cert)
	}
	return pool, nil
}

func (s security) saslMechanism(now func() time.Time) sasl.Mechanism {
	switch s.mechanism {
	case "PLAIN":
		return plain.Auth{User: s.username, Pass: s.password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.username, Pass: s.password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.username, Pass: s.password}.AsSha512Mechanism()
	}
	u := s.oauthLogin
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		return oauth.Auth{Token: u.token(now()), Extensions: u.extensions}, nil
	})
}

// unsecuredLogin is what Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes a token from:
// the options unsecuredLoginStringClaim_<name>, unsecuredLoginNumberClaim_<name>,
// unsecuredLoginPrincipalClaimName (default sub), unsecuredLoginLifetimeSeconds (default
// 3600) and unsecuredLoginExtension_<name>.
type unsecuredLogin struct {
	claims     map[string]any // string and number claims
	lifetime   int64          // seconds
	extensions map[string]string
}

const (
	unsecuredPrefix       = "unsecuredLogin"
	stringClaimPrefix     = unsecuredPrefix + "StringClaim_"
	numberClaimPrefix     = unsecuredPrefix + "NumberClaim_"
	listClaimPrefix       = unsecuredPrefix + "ListClaim_"
	extensionPrefix       = unsecuredPrefix + "Extension_"
	principalClaimOption  = unsecuredPrefix + "PrincipalClaimName"
	lifetimeSecondsOption = unsecuredPrefix + "LifetimeSeconds"
)

var (
	extensionName  = regexp.MustCompile(`^[A-Za-z]+$`)
	extensionValue = regexp.MustCompile(`^[\x21-\x7E \t\r\n]+$`)
)

// parseUnsecuredLogin checks the login module's options as Kafka's unsecured login callback
// handler does when it makes a token, with its messages. List claims are refused: the tool
// does not make them.
func parseUnsecuredLogin(options map[string]string) (*unsecuredLogin, error) {
	u := &unsecuredLogin{claims: map[string]any{}, lifetime: 3600, extensions: map[string]string{}}
	onlyExtensions := true
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		if !strings.HasPrefix(k, extensionPrefix) {
			onlyExtensions = false
		}
		var claim string
		switch {
		case strings.HasPrefix(k, stringClaimPrefix) && len(k) > len(stringClaimPrefix):
			claim = k[len(stringClaimPrefix):]
			u.claims[claim] = v
		case strings.HasPrefix(k, numberClaimPrefix) && len(k) > len(numberClaimPrefix):
			claim = k[len(numberClaimPrefix):]
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("For input string: %q", v)
			}
			u.claims[claim] = n
		case strings.HasPrefix(k, listClaimPrefix):
			return nil, fmt.Errorf("%s is not supported by this tool: give string and number claims only", k)
		case strings.HasPrefix(k, extensionPrefix):
			name := k[len(extensionPrefix):]
			if name == "auth" || !extensionName.MatchString(name) {
				return nil, fmt.Errorf("Extension name %s is invalid", name)
			}
			if !extensionValue.MatchString(v) {
				return nil, fmt.Errorf("Extension value (%s) for extension %s is invalid", v, name)
			}
			u.extensions[name] = v
		case k == lifetimeSecondsOption:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("For input string: %q", v)
			}
			u.lifetime = n
		}
		if claim == "iat" || claim == "exp" {
			return nil, fmt.Errorf("Cannot explicitly set the '%s' claim", claim)
		}
	}
	if len(options) > 0 && onlyExtensions {
		return nil, errors.New("Extensions provided in login context without a token")
	}
	principal := strings.TrimSpace(options[principalClaimOption])
	if principal == "" {
		principal = "sub"
	}
	if name, ok := u.claims[principal].(string); !ok || strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("No principal name in JWT claim: %s", principal)
	}
	return u, nil
}

// token is an unsecured JWS (RFC 7515 with alg none, no signature) as Kafka's unsecured login
// makes it: the claims, iat at now and exp lifetime seconds later, both in seconds with
// milliseconds as a fraction.
func (u *unsecuredLogin) token(now time.Time) string {
	claims := maps.Clone(u.claims)
	iat := float64(now.UnixMilli()) / 1000
	claims["iat"] = iat
	claims["exp"] = iat + float64(u.lifetime)
	header, _ := json.Marshal(map[string]string{"alg": "none"})
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(payload) + "."
}

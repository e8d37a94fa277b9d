package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
)

// keyStoreProperties are the properties of a client's key store: the certificate it presents
// to a broker that asks for one (mutual TLS).
var keyStoreProperties = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.key",
	"ssl.keystore.certificate.chain", "ssl.key.password",
}

// keyStoreFromProperties reads the key store of an SSL or SASL_SSL connection as a Kafka
// client does: of type PEM, either a file (ssl.keystore.location) holding the private key and
// the certificate chain, or both inline (ssl.keystore.key and ssl.keystore.certificate.chain).
// Kafka's checks come in Kafka's order with its messages. With ssl.key.password the key is an
// encrypted PKCS#8 key (see decryptPKCS8 for the encryptions read). Key stores of type JKS or
// PKCS12 are refused: the tool reads PEM only.
func (s *security) keyStoreFromProperties(props map[string]string, readFile func(string) ([]byte, error)) error {
	typ, typeSet := props["ssl.keystore.type"]
	if !typeSet {
		typ = "JKS" // Kafka's default
	}
	location, hasLocation := props["ssl.keystore.location"]
	_, hasPassword := props["ssl.keystore.password"]
	key, hasKey := props["ssl.keystore.key"]
	chain, hasChain := props["ssl.keystore.certificate.chain"]
	keyPassword, hasKeyPassword := props["ssl.key.password"]
	var keyPEM, chainPEM, from string
	switch {
	case hasKey && typ != "PEM":
		return fmt.Errorf("SSL private key can be specified only for PEM, but key store type is %s.", typ)
	case hasKey && !hasChain:
		return errors.New("SSL private key is specified, but certificate chain is not specified.")
	case hasKey && hasLocation:
		return errors.New("Both SSL key store location and separate private key are specified.")
	case hasKey && hasPassword:
		return errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified.")
	case hasKey:
		keyPEM, chainPEM = key, chain
	case hasChain:
		return errors.New("SSL certificate chain is specified, but private key is not specified")
	case typ == "PEM" && hasLocation && hasPassword:
		return errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
	case typ == "PEM" && hasLocation:
		text, err := readFile(location)
		if err != nil {
			return fmt.Errorf("ssl.keystore.location: %w", err)
		}
		keyPEM, chainPEM, from = string(text), string(text), location
	case !hasLocation && hasPassword:
		return errors.New("SSL key store is not specified, but key store password is specified.")
	case hasLocation && !hasPassword:
		return errors.New("SSL key store is specified, but key store password is not specified.")
	case hasLocation:
		return configError("ssl.keystore.type", typ, "this tool reads key stores of type PEM only (ssl.keystore.type=PEM)")
	case typeSet && typ != "PEM" && typ != "JKS" && typ != "PKCS12":
		return configError("ssl.keystore.type", typ, "this tool knows PEM (and JKS and PKCS12 without a key store: no client certificate)")
	default:
		return nil // no key store: for brokers that do not ask for a client certificate
	}
	var password *string
	if hasKeyPassword {
		password = &keyPassword
	}
	pair, err := keyPair(keyPEM, chainPEM, password)
	if err != nil && from != "" {
		return fmt.Errorf("Failed to load PEM SSL keystore %s: %w", from, err)
	}
	if err != nil {
		return err
	}
	s.keyPair = &pair
	return nil
}

// pemPrivateKey matches a private key in PEM as Kafka's PemParser does: any label ending in
// PRIVATE KEY, header lines (Name: value) skipped, base64 broken anywhere by whitespace.
var pemPrivateKey = regexp.MustCompile(`-+BEGIN\s*.*PRIVATE\s+KEY[^-]*-+\s+(?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*([a-zA-Z0-9/+=\s]*)-+END\s*.*PRIVATE\s+KEY[^-]*-+\s+`)

// keyPair reads a client certificate as Kafka's PemStore does: exactly one private key, in
// PKCS#8 (encrypted with password, unless nil), then the certificate chain, the client's own
// certificate first. Go also checks that the key is the certificate's. Errors carry Kafka's
// messages.
func keyPair(keyPEM, chainPEM string, password *string) (tls.Certificate, error) {
	const invalid = "Invalid PEM keystore configs"
	keys, err := pemDERs(pemPrivateKey, keyPEM+"\n") // the last line break may be missing in a value
	switch len(keys) {
	case 0:
		return tls.Certificate{}, fmt.Errorf("%s: No matching PRIVATE KEY entries in PEM file", invalid)
	case 1:
	default:
		return tls.Certificate{}, fmt.Errorf("%s: Expected one private key, but found %d", invalid, len(keys))
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", invalid, err)
	}
	keyDER := keys[0]
	if password != nil {
		if keyDER, err = decryptPKCS8(keyDER, *password); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: %w", invalid, err)
		}
	}
	if _, err := x509.ParsePKCS8PrivateKey(keyDER); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: Private key could not be loaded: %w", invalid, err)
	}
	certs, err := pemDERs(pemCertificate, chainPEM)
	if len(certs) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: No matching CERTIFICATE entries in PEM file", invalid)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", invalid, err)
	}
	var chain []byte
	for _, der := range certs {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	pair, err := tls.X509KeyPair(chain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", invalid, err)
	}
	return pair, nil
}

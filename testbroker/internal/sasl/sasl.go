// Package sasl is the server side of SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER as
// Kafka runs them (PlainSaslServer, ScramSaslServer, OAuthBearerSaslServer with the unsecured
// validator), with the error messages those send, the credentials they check, and the client
// side the cluster's own replica fetchers use to authenticate to their leaders. The exchange
// around a mechanism (handshake, re-authentication, the message for invalid credentials) is
// SaslServerAuthenticator's, in the server package.
package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// The mechanisms testbroker implements, with Kafka's names.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Mechanisms lists every implemented mechanism.
var Mechanisms = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// Iterations is the SCRAM iteration count of every credential: Kafka's default (4096), also the
// minimum Kafka accepts for both SCRAM mechanisms.
const Iterations = 4096

// InterBrokerUser is the user the cluster's replica fetchers authenticate as. Its credentials
// are not among those AlterUserScramCredentials manages, and no User may take its name.
const InterBrokerUser = "testbroker-inter-broker"

// ErrInvalidCredentials is a failure whose reason Kafka keeps from the client (a SaslException
// from its mechanism servers): SaslServerAuthenticator answers SASL_AUTHENTICATION_FAILED with a
// message of its own, which names the mechanism and whether a re-authentication failed.
var ErrInvalidCredentials error = &kafkaerr.Error{Code: kerr.SaslAuthenticationFailed,
	Detail: "invalid credentials (the client is told the mechanism only)"}

// failed is a SaslAuthenticationException: SASL_AUTHENTICATION_FAILED with a message the client
// is sent as it is.
func failed(format string, args ...any) error {
	return kafkaerr.New(kerr.SaslAuthenticationFailed, format, args...)
}

// Store holds the enabled mechanisms and every user's credentials. Its SCRAM credentials
// change at run time (AlterUserScramCredentials); the rest is fixed at NewStore.
type Store struct {
	mechanisms []string
	plain      map[string]string
	interPass  string
	// interBroker is InterBrokerUser's SCRAM credential by mechanism, kept apart from scram so
	// that no AlterUserScramCredentials reaches what the replica fetchers authenticate with.
	interBroker map[string]*scramCredential

	mu    sync.RWMutex
	scram map[string]map[string]*scramCredential // by mechanism, then user; under mu
}

// NewCredentialStore returns a store with no mechanism and no user, which only keeps the SCRAM
// credentials of a cluster that requires no SASL: Kafka manages them all the same.
func NewCredentialStore() *Store {
	return &Store{plain: map[string]string{}, scram: map[string]map[string]*scramCredential{}}
}

// NewStore checks the mechanisms and derives each user's credentials: the password for PLAIN, a
// salted SCRAM credential per hash with Iterations iterations.
func NewStore(mechanisms []string, users map[string]string) (*Store, error) {
	if len(mechanisms) == 0 {
		return nil, fmt.Errorf("no SASL mechanism given: use one or more of %s", strings.Join(Mechanisms, ", "))
	}
	for _, m := range mechanisms {
		if !slices.Contains(Mechanisms, m) {
			return nil, fmt.Errorf("unknown SASL mechanism %q: testbroker implements %s", m, strings.Join(Mechanisms, ", "))
		}
	}
	s := &Store{
		mechanisms:  slices.Compact(slices.Clone(mechanisms)),
		plain:       make(map[string]string, len(users)+1),
		scram:       map[string]map[string]*scramCredential{},
		interPass:   rand.Text(),
		interBroker: map[string]*scramCredential{},
	}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		s.scram[m] = map[string]*scramCredential{}
		cred, err := newScramCredential(m, s.interPass, Iterations)
		if err != nil {
			return nil, err
		}
		s.interBroker[m] = cred
	}
	s.plain[InterBrokerUser] = s.interPass
	for u, p := range users {
		switch u {
		case "":
			return nil, fmt.Errorf("SASL user with an empty name")
		case InterBrokerUser:
			return nil, fmt.Errorf("SASL user %q is reserved for the cluster's replica fetchers: choose another name", u)
		}
		s.plain[u] = p
		for _, m := range []string{ScramSHA256, ScramSHA512} {
			cred, err := newScramCredential(m, p, Iterations)
			if err != nil {
				return nil, err
			}
			s.scram[m][u] = cred
		}
	}
	return s, nil
}

// Mechanisms returns the enabled mechanisms, in the order given.
func (s *Store) Mechanisms() []string { return slices.Clone(s.mechanisms) }

// Enabled reports whether mechanism is enabled.
func (s *Store) Enabled(mechanism string) bool { return slices.Contains(s.mechanisms, mechanism) }

// Session is one server-side authentication exchange.
type Session interface {
	// Step evaluates the client's token and returns the token to send back; done reports that
	// the client is authenticated. A failure is ErrInvalidCredentials, or a *kafkaerr.Error
	// whose code and message the client is sent.
	Step(token []byte) (out []byte, done bool, err error)
	// User is the authenticated user, once done.
	User() string
	// Expires is when the credential the client authenticated with expires (an OAUTHBEARER
	// token's exp), once done; the zero time for a credential without a lifetime.
	Expires() time.Time
}

// NewSession starts an exchange for an enabled mechanism; now is the cluster clock, against
// which an OAUTHBEARER token's times are checked.
func (s *Store) NewSession(mechanism string, now func() time.Time) Session {
	switch mechanism {
	case Plain:
		return &plainSession{s: s}
	case OAuthBearer:
		return &oauthSession{now: now, interPass: s.interPass}
	}
	return &scramSession{s: s, mechanism: mechanism}
}

// InterBroker returns the mechanism and a client session for the cluster's replica fetchers.
// With OAUTHBEARER they present an unsecured token for InterBrokerUser that expires after
// the year 9999, so that no cluster clock reaches its end, with the store's secret in an
// extension: a token for InterBrokerUser without it fails (beyond Kafka).
func (s *Store) InterBroker() (string, ClientSession) {
	m := s.mechanisms[0]
	switch m {
	case Plain:
		return m, &plainClient{user: InterBrokerUser, pass: s.interPass}
	case OAuthBearer:
		return m, &oauthClient{token: UnsecuredToken(InterBrokerUser, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), interPass: s.interPass}
	}
	return m, &scramClient{mechanism: m, user: InterBrokerUser, pass: s.interPass}
}

// ClientSession is the client side of an exchange: Step takes the server's last token (nil at
// first) and returns the next one to send.
type ClientSession interface {
	Step(serverToken []byte) ([]byte, error)
}

// plainSession is PlainSaslServer.
type plainSession struct {
	s    *Store
	user string
}

func (p *plainSession) Step(token []byte) ([]byte, bool, error) {
	parts := strings.SplitN(string(token), "\x00", 3)
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return nil, false, ErrInvalidCredentials
	}
	authzid, user, pass := parts[0], parts[1], parts[2]
	want, ok := p.s.plain[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), []byte(pass)) != 1 {
		return nil, false, failed("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return nil, false, failed("Authentication failed: Client requested an authorization id that is different from username")
	}
	p.user = user
	return []byte{}, true, nil
}

func (p *plainSession) User() string { return p.user }

func (p *plainSession) Expires() time.Time { return time.Time{} }

type plainClient struct{ user, pass string }

func (p *plainClient) Step([]byte) ([]byte, error) {
	return []byte("\x00" + p.user + "\x00" + p.pass), nil
}

// scramCredential is what Kafka stores for a SCRAM user (ScramCredential).
type scramCredential struct {
	salt                []byte
	storedKey, serverKy []byte
	iterations          int
}

func hashFor(mechanism string) func() hash.Hash {
	if mechanism == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func digest(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// saltedPassword is SCRAM's Hi(password, salt, i).
func saltedPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h := hashFor(mechanism)
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

func newScramCredential(mechanism, password string, iterations int) (*scramCredential, error) {
	salt := make([]byte, 20)
	_, _ = rand.Read(salt)
	sp, err := saltedPassword(mechanism, password, salt, iterations)
	if err != nil {
		return nil, err
	}
	return credentialFromSalted(mechanism, salt, sp, iterations), nil
}

// credentialFromSalted derives the stored and server keys from a salted password, as
// ScramControlManager does with what AlterUserScramCredentials carries.
func credentialFromSalted(mechanism string, salt, salted []byte, iterations int) *scramCredential {
	h := hashFor(mechanism)
	return &scramCredential{
		salt:       slices.Clone(salt),
		storedKey:  digest(h, hmacOf(h, salted, "Client Key")),
		serverKy:   hmacOf(h, salted, "Server Key"),
		iterations: iterations,
	}
}

// SetScram creates or replaces user's credential for a SCRAM mechanism from a salt and the
// salted password (SCRAM's Hi(password, salt, iterations)); it authenticates at once. The
// credentials SetScram, DeleteScram, HasScram, ScramIterations and ScramUsers see are the ones
// AlterUserScramCredentials manages: InterBrokerUser's are not among them, and a credential set
// under that name would never authenticate.
func (s *Store) SetScram(user, mechanism string, salt, salted []byte, iterations int) {
	cred := credentialFromSalted(mechanism, salt, salted, iterations)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scram[mechanism] == nil {
		s.scram[mechanism] = map[string]*scramCredential{}
	}
	s.scram[mechanism][user] = cred
}

// DeleteScram removes user's credential for a SCRAM mechanism.
func (s *Store) DeleteScram(user, mechanism string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.scram[mechanism], user)
}

// HasScram reports whether user has a credential for a SCRAM mechanism.
func (s *Store) HasScram(user, mechanism string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scram[mechanism][user] != nil
}

// ScramIterations returns the iteration count of each of user's SCRAM credentials, by
// mechanism; empty for a user without one.
func (s *Store) ScramIterations(user string) map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for m, users := range s.scram {
		if c := users[user]; c != nil {
			out[m] = c.iterations
		}
	}
	return out
}

// ScramUsers returns every user with a SCRAM credential, sorted.
func (s *Store) ScramUsers() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, users := range s.scram {
		for u := range users {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	slices.Sort(out)
	return out
}

// scramCredential returns the credential user authenticates with.
func (s *Store) scramCredential(mechanism, user string) *scramCredential {
	if user == InterBrokerUser {
		return s.interBroker[mechanism]
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scram[mechanism][user]
}

// scramSession is ScramSaslServer (RFC 5802).
type scramSession struct {
	s            *Store
	mechanism    string
	user         string
	cred         *scramCredential
	clientBare   string
	serverFirst  string
	nonce        string
	done, failed bool
}

func (c *scramSession) Step(token []byte) ([]byte, bool, error) {
	out, done, err := c.step(string(token))
	if err != nil {
		c.failed = true
	}
	return out, done, err
}

func (c *scramSession) step(msg string) ([]byte, bool, error) {
	if c.failed || c.done {
		return nil, false, ErrInvalidCredentials
	}
	if c.cred == nil {
		// client-first-message: gs2-header ("n,," or "n,a=authzid,") then n=saslname,r=nonce.
		gs2, bare, ok := cutGS2(msg)
		if !ok {
			return nil, false, ErrInvalidCredentials
		}
		attrs := strings.Split(bare, ",")
		if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || attrs[1] == "r=" {
			return nil, false, ErrInvalidCredentials
		}
		user := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(attrs[0][2:])
		cred := c.s.scramCredential(c.mechanism, user)
		if cred == nil {
			return nil, false, ErrInvalidCredentials
		}
		if gs2 != "" && gs2 != user {
			return nil, false, failed("Authentication failed: Client requested an authorization id that is different from username")
		}
		c.user, c.cred, c.clientBare = user, cred, bare
		c.nonce = attrs[1][2:] + strings.ToLower(rand.Text())
		c.serverFirst = "r=" + c.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.salt) + ",i=" + fmt.Sprint(cred.iterations)
		return []byte(c.serverFirst), false, nil
	}
	// client-final-message: c=...,r=nonce[,extensions],p=proof.
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, ErrInvalidCredentials
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[1] != "r="+c.nonce {
		return nil, false, ErrInvalidCredentials
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h := hashFor(c.mechanism)
	if err != nil || len(proof) != h().Size() {
		return nil, false, ErrInvalidCredentials
	}
	authMessage := c.clientBare + "," + c.serverFirst + "," + withoutProof
	sig := hmacOf(h, c.cred.storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, sig)
	if !hmac.Equal(digest(h, clientKey), c.cred.storedKey) {
		return nil, false, ErrInvalidCredentials
	}
	c.done = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(h, c.cred.serverKy, authMessage))), true, nil
}

func (c *scramSession) User() string { return c.user }

func (c *scramSession) Expires() time.Time { return time.Time{} }

// cutGS2 splits a client-first-message into its authzid ("" for none) and its bare part.
func cutGS2(msg string) (authzid, bare string, ok bool) {
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || (flag != "n" && flag != "y") {
		return "", "", false
	}
	a, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	if a != "" {
		v, found := strings.CutPrefix(a, "a=")
		if !found {
			return "", "", false
		}
		a = v
	}
	return a, bare, true
}

// scramClient is the client side of SCRAM, for the replica fetchers.
type scramClient struct {
	mechanism, user, pass string
	bare                  string
}

func (c *scramClient) Step(server []byte) ([]byte, error) {
	if c.bare == "" {
		c.bare = "n=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(c.user) + ",r=" + rand.Text()
		return []byte("n,," + c.bare), nil
	}
	first := string(server)
	var nonce, saltB64 string
	iterations := 0
	for _, a := range strings.Split(first, ",") {
		switch {
		case strings.HasPrefix(a, "r="):
			nonce = a[2:]
		case strings.HasPrefix(a, "s="):
			saltB64 = a[2:]
		case strings.HasPrefix(a, "i="):
			fmt.Sscan(a[2:], &iterations)
		}
	}
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil || iterations <= 0 {
		return nil, fmt.Errorf("sasl: bad server-first-message %q", first)
	}
	sp, err := saltedPassword(c.mechanism, c.pass, salt, iterations)
	if err != nil {
		return nil, err
	}
	h := hashFor(c.mechanism)
	clientKey := hmacOf(h, sp, "Client Key")
	withoutProof := "c=biws,r=" + nonce
	sig := hmacOf(h, digest(h, clientKey), c.bare+","+first+","+withoutProof)
	proof := make([]byte, len(sig))
	subtle.XORBytes(proof, clientKey, sig)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

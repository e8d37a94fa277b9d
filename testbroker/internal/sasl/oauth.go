package sasl

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// OAuthBearer is SASL/OAUTHBEARER (RFC 7628) with Kafka's default validator
// (OAuthBearerUnsecuredValidatorCallbackHandler): the token is an unsigned JWS whose "sub"
// claim is the principal and whose "exp" claim ends its lifetime.
const OAuthBearer = "OAUTHBEARER"

// invalidToken is what OAuthBearerSaslServer sends as the challenge for a token the validator
// refuses (RFC 7628 section 3.2.2), and the message of the failure that follows the client's
// %x01 answer to it.
const invalidToken = `{"status":"invalid_token"}`

// The client's initial response, as OAuthBearerClientInitialResponse parses it: a GS2 header
// with an optional authzid, then %x01-separated key=value pairs, then %x01.
var (
	oauthInitial = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	oauthAuth    = regexp.MustCompile(`^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$`)
)

// oauthSession is OAuthBearerSaslServer with the unsecured validator.
type oauthSession struct {
	now func() time.Time
	// interPass is what the replica fetchers' token carries in the interBrokerExtension.
	interPass string
	// errorSent is set once the invalid_token challenge went out: the client's %x01 then
	// fails the exchange.
	errorSent bool
	user      string
	expires   time.Time
	done      bool
}

func (o *oauthSession) Step(token []byte) ([]byte, bool, error) {
	if len(token) == 1 && token[0] == 0x01 && o.errorSent {
		return nil, false, failed("%s", invalidToken)
	}
	o.errorSent = false
	if o.done {
		return nil, false, ErrInvalidCredentials
	}
	authzid, value, proof, ok := parseOAuthInitial(string(token))
	if !ok {
		// A SaslException: SaslServerAuthenticator does not pass its message on.
		return nil, false, ErrInvalidCredentials
	}
	jws, err := parseUnsecuredJWS(value, o.now())
	if err != nil {
		o.errorSent = true
		return []byte(invalidToken), false, nil
	}
	if authzid != "" && authzid != jws.principal {
		return nil, false, failed(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			authzid, jws.principal)
	}
	if jws.principal == InterBrokerUser && subtle.ConstantTimeCompare([]byte(proof), []byte(o.interPass)) != 1 {
		return nil, false, failed("%s", reservedPrincipal)
	}
	o.user, o.expires, o.done = jws.principal, jws.expires, true
	return []byte{}, true, nil
}

func (o *oauthSession) User() string { return o.user }

func (o *oauthSession) Expires() time.Time { return o.expires }

// interBrokerExtension is the SASL extension whose value proves a token for InterBrokerUser is
// the replica fetchers': anyone can make an unsecured token, and that user is a super user.
const interBrokerExtension = "testbrokerInterBroker"

// reservedPrincipal is why a token for InterBrokerUser without the fetchers' proof fails.
const reservedPrincipal = "Authentication failed: principal name " + InterBrokerUser + " is reserved for the cluster's replica fetchers"

// parseOAuthInitial returns the authzid, the bearer token and the value of the
// interBrokerExtension of a client's initial response. Other extensions are accepted and
// ignored, as the unsecured validator accepts every one.
func parseOAuthInitial(msg string) (authzid, token, proof string, ok bool) {
	m := oauthInitial.FindStringSubmatch(msg)
	if m == nil {
		return "", "", "", false
	}
	var auth string
	found := false
	for _, kv := range strings.Split(strings.TrimSuffix(m[2], "\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "auth":
			auth, found = v, true
		case interBrokerExtension:
			proof = v
		}
	}
	if !found {
		return "", "", "", false
	}
	am := oauthAuth.FindStringSubmatch(auth)
	if am == nil || !strings.EqualFold(am[1], "bearer") {
		return "", "", "", false
	}
	return m[1], am[2], proof, true
}

// unsecuredJWS is what the validator keeps of a token.
type unsecuredJWS struct {
	principal string
	expires   time.Time
}

// parseUnsecuredJWS checks a token as OAuthBearerUnsecuredJws and the unsecured validator do,
// at now with no clock skew: three dot-separated Base64 parts, a JSON header with alg "none",
// a JSON claim set, no signature; a numeric "exp" after now; a non-blank string "sub"; if
// present, a numeric "iat" not after now and before "exp". The error says which rule failed,
// for the broker's log: the client only sees invalid_token.
func parseUnsecuredJWS(token string, now time.Time) (*unsecuredJWS, error) {
	if strings.Contains(token, "..") {
		return nil, fmt.Errorf("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := jwsPart(parts[0])
	if err != nil {
		return nil, err
	}
	claims, err := jwsPart(parts[1])
	if err != nil {
		return nil, err
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return nil, fmt.Errorf("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return nil, fmt.Errorf("Unsecured JWS must not contain a digital signature")
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return nil, fmt.Errorf("No expiration time in JWT")
	}
	sub, _ := claims["sub"].(string)
	if strings.TrimSpace(sub) == "" {
		return nil, fmt.Errorf("No principal name in JWT claim: sub")
	}
	nowMs := now.UnixMilli()
	iatRaw, hasIat := claims["iat"]
	iat, iatNum := iatRaw.(float64)
	if hasIat && !iatNum {
		return nil, fmt.Errorf("The 'iat' claim was not of type Number")
	}
	if hasIat && 1000*iat > float64(nowMs) {
		return nil, fmt.Errorf("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (0 ms)", iat, nowMs)
	}
	if float64(nowMs) >= 1000*exp {
		return nil, fmt.Errorf("The indicated time (%d ms) minus allowable clock skew (0 ms) was on or after the Expiration Time value (%f seconds)", nowMs, exp)
	}
	if hasIat && exp <= iat {
		return nil, fmt.Errorf("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	return &unsecuredJWS{principal: sub, expires: time.UnixMilli(int64(math.Round(exp * 1000)))}, nil
}

// jwsPart decodes one Base64 part of a JWS into a JSON object. Both alphabets are accepted,
// with or without padding.
func jwsPart(s string) (map[string]any, error) {
	s = strings.TrimRight(s, "=")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("malformed Base64 URL encoded value")
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("malformed JSON")
	}
	return m, nil
}

// UnsecuredToken returns an unsigned JWS for principal, expiring at expires, as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler makes them; the replica fetchers authenticate with
// one.
func UnsecuredToken(principal string, expires time.Time) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(map[string]any{"sub": principal, "exp": expires.Unix()}) + "."
}

// oauthClient is the client side of OAUTHBEARER, for the replica fetchers.
type oauthClient struct{ token, interPass string }

func (c *oauthClient) Step([]byte) ([]byte, error) {
	return []byte("n,,\x01auth=Bearer " + c.token + "\x01" + interBrokerExtension + "=" + c.interPass + "\x01\x01"), nil
}

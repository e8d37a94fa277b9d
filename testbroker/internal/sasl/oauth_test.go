package sasl

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jws(header, claims string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "."
}

func initial(authzid, token string) []byte {
	a := ""
	if authzid != "" {
		a = "a=" + authzid
	}
	return []byte("n," + a + ",\x01auth=Bearer " + token + "\x01\x01")
}

// A valid token authenticates its sub, with exp as the credential's expiry.
func TestOAuthBearerValid(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &oauthSession{now: func() time.Time { return now }}
	out, done, err := s.Step(initial("", jws(`{"alg":"none"}`, `{"sub":"alice","exp":1060.5,"iat":990}`)))
	require.NoError(t, err)
	assert.True(t, done)
	assert.Empty(t, out)
	assert.Equal(t, "alice", s.User())
	assert.Equal(t, time.UnixMilli(1060500), s.Expires())
}

// Every token the unsecured validator refuses is answered with the invalid_token challenge; the
// client's %x01 then fails with that JSON as the message.
func TestOAuthBearerInvalidTokens(t *testing.T) {
	now := time.Unix(1000, 0)
	for name, token := range map[string]string{
		"expired":           jws(`{"alg":"none"}`, `{"sub":"alice","exp":1000}`),
		"no exp":            jws(`{"alg":"none"}`, `{"sub":"alice"}`),
		"no sub":            jws(`{"alg":"none"}`, `{"exp":2000}`),
		"blank sub":         jws(`{"alg":"none"}`, `{"sub":" ","exp":2000}`),
		"sub not a string":  jws(`{"alg":"none"}`, `{"sub":7,"exp":2000}`),
		"signed":            jws(`{"alg":"HS256"}`, `{"sub":"alice","exp":2000}`),
		"signature":         jws(`{"alg":"none"}`, `{"sub":"alice","exp":2000}`) + "c2ln",
		"issued later":      jws(`{"alg":"none"}`, `{"sub":"alice","exp":2000,"iat":1001}`),
		"two parts":         "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0",
		"not base64":        "a.e30.",
		"not json":          base64.RawURLEncoding.EncodeToString([]byte("x")) + ".e30.",
		"double dot":        "e30..",
		"exp not after iat": jws(`{"alg":"none"}`, `{"sub":"alice","exp":1500,"iat":1500}`),
	} {
		t.Run(name, func(t *testing.T) {
			s := &oauthSession{now: func() time.Time { return now }}
			out, done, err := s.Step(initial("", token))
			require.NoError(t, err)
			assert.False(t, done)
			assert.Equal(t, `{"status":"invalid_token"}`, string(out))
			_, _, err = s.Step([]byte{0x01})
			assertFailed(t, `{"status":"invalid_token"}`, err)
		})
	}
}

// A malformed initial response is a SaslException: invalid credentials, whose reason the
// client is not told.
func TestOAuthBearerMalformedInitialResponse(t *testing.T) {
	for name, msg := range map[string]string{
		"no auth":      "n,,\x01host=x\x01\x01",
		"basic scheme": "n,,\x01auth=Basic abc\x01\x01",
		"no gs2":       "\x01auth=Bearer abc\x01\x01",
		"unterminated": "n,,\x01auth=Bearer abc\x01",
		"x01 first":    "\x01",
		"token chars":  "n,,\x01auth=Bearer a*b.c.\x01\x01",
	} {
		t.Run(name, func(t *testing.T) {
			s := &oauthSession{now: time.Now}
			_, _, err := s.Step([]byte(msg))
			assert.ErrorIs(t, err, ErrInvalidCredentials)
		})
	}
}

// An authzid other than the token's principal fails with OAuthBearerSaslServer's message;
// extensions are accepted.
func TestOAuthBearerAuthzid(t *testing.T) {
	now := time.Unix(1000, 0)
	token := jws(`{"alg":"none"}`, `{"sub":"alice","exp":2000}`)
	s := &oauthSession{now: func() time.Time { return now }}
	_, _, err := s.Step(initial("bob", token))
	assertFailed(t, "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)", err)

	s = &oauthSession{now: func() time.Time { return now }}
	_, done, err := s.Step([]byte("n,a=alice,\x01auth=Bearer " + token + "\x01traceId=42\x01\x01"))
	require.NoError(t, err)
	assert.True(t, done)
}

// A token for InterBrokerUser, a super user, authenticates only with the fetchers' secret in
// the interBrokerExtension: anyone can make an unsecured token.
func TestOAuthBearerInterBrokerUserReserved(t *testing.T) {
	st, err := NewStore([]string{OAuthBearer}, nil)
	require.NoError(t, err)
	token := UnsecuredToken(InterBrokerUser, time.Unix(2000, 0))
	now := func() time.Time { return time.Unix(1000, 0) }
	for _, msg := range []string{
		"n,,\x01auth=Bearer " + token + "\x01\x01",
		"n,,\x01auth=Bearer " + token + "\x01testbrokerInterBroker=guess\x01\x01",
	} {
		_, _, err := st.NewSession(OAuthBearer, now).Step([]byte(msg))
		assertFailed(t, "Authentication failed: principal name testbroker-inter-broker is reserved for the cluster's replica fetchers", err)
	}
	_, done, err := st.NewSession(OAuthBearer, now).Step([]byte("n,,\x01auth=Bearer " + token + "\x01testbrokerInterBroker=" + st.interPass + "\x01\x01"))
	require.NoError(t, err)
	assert.True(t, done)
}

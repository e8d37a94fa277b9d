package sasl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// The replica fetchers' client authenticates against the server side with every mechanism.
func TestInterBrokerClient(t *testing.T) {
	for _, m := range Mechanisms {
		t.Run(m, func(t *testing.T) {
			s, err := NewStore([]string{m}, map[string]string{"a": "b"})
			require.NoError(t, err)
			mech, cl := s.InterBroker()
			require.Equal(t, m, mech)
			srv := s.NewSession(mech, time.Now)
			var fromServer []byte
			for range 3 {
				toServer, err := cl.Step(fromServer)
				require.NoError(t, err)
				out, done, err := srv.Step(toServer)
				require.NoError(t, err)
				if done {
					assert.Equal(t, InterBrokerUser, srv.User())
					return
				}
				fromServer = out
			}
			t.Fatal("not done after 3 steps")
		})
	}
}

// A SCRAM exchange with a wrong password fails at the client's proof as invalid credentials,
// whose reason the client is not told.
func TestScramWrongPassword(t *testing.T) {
	s, err := NewStore([]string{ScramSHA512}, map[string]string{"a": "right"})
	require.NoError(t, err)
	cl := &scramClient{mechanism: ScramSHA512, user: "a", pass: "wrong"}
	srv := s.NewSession(ScramSHA512, time.Now)
	first, err := cl.Step(nil)
	require.NoError(t, err)
	serverFirst, done, err := srv.Step(first)
	require.NoError(t, err)
	require.False(t, done)
	final, err := cl.Step(serverFirst)
	require.NoError(t, err)
	_, _, err = srv.Step(final)
	assert.ErrorIs(t, err, ErrInvalidCredentials)
}

// assertFailed checks that err is SASL_AUTHENTICATION_FAILED with msg as the message the
// client is sent.
func assertFailed(t *testing.T, msg string, err error) {
	t.Helper()
	var ke *kafkaerr.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, kerr.SaslAuthenticationFailed, ke.Code)
	assert.Equal(t, msg, ke.Message)
}

// The inter-broker user's credentials are not among those AlterUserScramCredentials manages:
// not listed, not there to delete, and one set under its name does not replace the one the
// replica fetchers authenticate with.
func TestInterBrokerCredentialApart(t *testing.T) {
	s, err := NewStore([]string{ScramSHA256}, map[string]string{"a": "b"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, s.ScramUsers())
	assert.False(t, s.HasScram(InterBrokerUser, ScramSHA256))
	assert.Empty(t, s.ScramIterations(InterBrokerUser))

	salt := []byte("salt")
	salted, err := saltedPassword(ScramSHA256, "admin's choice", salt, Iterations)
	require.NoError(t, err)
	s.SetScram(InterBrokerUser, ScramSHA256, salt, salted, Iterations)
	mech, cl := s.InterBroker()
	srv := s.NewSession(mech, time.Now)
	var fromServer []byte
	for done := false; !done; {
		toServer, err := cl.Step(fromServer)
		require.NoError(t, err)
		fromServer, done, err = srv.Step(toServer)
		require.NoError(t, err)
	}
	assert.Equal(t, InterBrokerUser, srv.User())
}

// No User may take the inter-broker user's name.
func TestNewStoreRefusesInterBrokerUser(t *testing.T) {
	_, err := NewStore([]string{Plain}, map[string]string{InterBrokerUser: "x"})
	assert.EqualError(t, err, `SASL user "testbroker-inter-broker" is reserved for the cluster's replica fetchers: choose another name`)
}

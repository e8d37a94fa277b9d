package sasl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A SCRAM exchange with a wrong password fails at the client's proof with Kafka's generic
// message.
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
	assert.EqualError(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
}

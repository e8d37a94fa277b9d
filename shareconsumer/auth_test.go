package shareconsumer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/testbroker"
)

// requireGroupDenied checks that err is the consumer's fatal GROUP_AUTHORIZATION_FAILED for
// group g, and that Poll, Process and Status say the same from now on.
func requireGroupDenied(t *testing.T, cons *Consumer, err error) {
	t.Helper()
	var fe *errors.FatalError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "g", fe.Group)
	assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	assert.Equal(t, StateFatal, cons.Status().State)
	_, again := cons.Poll(tCtx(t))
	assert.Same(t, fe, asFatal(t, again), "every later Poll returns the same error")
	perr := cons.Process(tCtx(t), func(context.Context, *Record) error { return nil })
	assert.Same(t, fe, asFatal(t, perr), "and so does Process")
}

func asFatal(t *testing.T, err error) *errors.FatalError {
	t.Helper()
	var fe *errors.FatalError
	require.ErrorAs(t, err, &fe)
	return fe
}

// TestGroupAuthorizationFailedInShareFetch: a ShareFetch refused with GROUP_AUTHORIZATION_FAILED
// makes the consumer fail, as the heartbeat's does: the acknowledgements it carried fail with
// the code (the broker did not take them; the records come again once their locks run out), and
// Close still works.
func TestGroupAuthorizationFailedInShareFetch(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a", "b"})
	failed := make(chan AcknowledgementCommit, 16)
	cons := tNew(t, c, "g", Topics("t"), OnAcknowledgementCommit(func(ac AcknowledgementCommit) {
		if ac.Err != nil {
			failed <- ac
		}
	}))
	tPollN(t, cons, 2)

	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareFetch}, Group: "g", Err: kerr.GroupAuthorizationFailed})
	require.NoError(t, err)
	var pollErr error
	for pollErr == nil {
		_, pollErr = cons.Poll(tCtx(t))
	}
	requireGroupDenied(t, cons, pollErr)
	ac := <-failed
	assert.ErrorIs(t, ac.Err, kerr.GroupAuthorizationFailed)
	assert.Equal(t, []int64{0, 1}, ac.Offsets)
	require.NoError(t, cons.Close(tCtx(t)))
}

// TestGroupAuthorizationFailedInShareAcknowledge: a commit refused with
// GROUP_AUTHORIZATION_FAILED reports it for its partitions and makes the consumer fail.
func TestGroupAuthorizationFailedInShareAcknowledge(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	cons := tNew(t, c, "g", Topics("t"), ExplicitAcknowledgement())
	recs := tPollN(t, cons, 1)
	require.NoError(t, cons.Acknowledge(recs[0], acktype.Accept))

	_, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareAcknowledge}, Group: "g", Err: kerr.GroupAuthorizationFailed})
	require.NoError(t, err)
	res, err := cons.CommitSync(tCtx(t))
	require.NoError(t, err)
	assert.ErrorIs(t, res[TopicPartition{"t", 0}], kerr.GroupAuthorizationFailed)
	_, err = cons.Poll(tCtx(t))
	requireGroupDenied(t, cons, err)
}

// tDeniedCluster starts two brokers with topic "ok" led by one and "denied" by the other, three
// records in each, and a fault that makes the leader of "denied" refuse ShareFetch with
// TOPIC_AUTHORIZATION_FAILED; it returns the cluster and the fault.
func tDeniedCluster(t *testing.T) (*testbroker.Cluster, testbroker.FaultID) {
	t.Helper()
	c := tStart(t, testbroker.NumBrokers(2), testbroker.Topic("ok", 1), testbroker.Topic("denied", 1))
	tEarliest(t, c, "g")
	ok, found := c.Partition("ok", 0)
	require.True(t, found)
	other := 1 - ok.Leader
	require.NoError(t, c.MoveLeader("denied", 0, other))
	tProduce(t, c, "ok", 0, []string{"o1", "o2", "o3"})
	tProduce(t, c, "denied", 0, []string{"d1", "d2", "d3"})
	id, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareFetch}, Brokers: []int32{other}, Err: kerr.TopicAuthorizationFailed})
	require.NoError(t, err)
	return c, id
}

// TestTopicAuthorizationFailedInShareFetch: a topic whose leader refuses it
// (TOPIC_AUTHORIZATION_FAILED) is reported once, by Poll, for that topic, and by Status and
// Poll's reason while it lasts; the other topic's records keep coming, and the refused topic's
// come once the broker allows it.
func TestTopicAuthorizationFailedInShareFetch(t *testing.T) {
	t.Parallel()
	c, fault := tDeniedCluster(t)
	cons := tNew(t, c, "g", Topics("ok", "denied"))

	ctx := tCtx(t)
	var got []string
	var denials []error
	for len(got) < 3 || len(denials) == 0 {
		recs, err := cons.Poll(ctx)
		require.NoError(t, ctx.Err())
		if err != nil {
			denials = append(denials, err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	assert.Equal(t, []string{"o1", "o2", "o3"}, got)
	require.Len(t, denials, 1)
	var pe *errors.PartitionError
	require.ErrorAs(t, denials[0], &pe)
	assert.Equal(t, "denied", pe.Topic)
	var tae *errors.TopicAuthorizationError
	require.ErrorAs(t, denials[0], &tae)
	assert.Equal(t, []string{"denied"}, tae.Topics)
	assert.ErrorIs(t, denials[0], kerr.TopicAuthorizationFailed)
	assert.Contains(t, denials[0].Error(), "Not authorized to access topics: [denied]")

	st := cons.Status()
	assert.Equal(t, StateStable, st.State)
	require.Len(t, st.TopicErrors, 1)
	assert.ErrorIs(t, st.TopicErrors["denied"], kerr.TopicAuthorizationFailed)

	_, err := cons.Poll(ctxWithTimeout(ctx, 300*time.Millisecond))
	var pte *errors.PollTimeoutError
	require.ErrorAs(t, err, &pte, "the denial is reported once; then Poll says why nothing comes")
	assert.Equal(t, errors.ReasonTopicAuthorization, pte.Reason)
	assert.Contains(t, pte.Detail, "TOPIC_AUTHORIZATION_FAILED for denied")

	require.True(t, c.RemoveFault(fault))
	got = nil
	for _, r := range tPollN(t, cons, 3) {
		got = append(got, string(r.Value))
	}
	assert.Equal(t, []string{"d1", "d2", "d3"}, got)
	assert.Nil(t, cons.Status().TopicErrors)
}

// TestProcessGoesOnPastADeniedTopic: Process handles the records of the topics it may read and
// goes on while another is refused; Status names the refused one.
func TestProcessGoesOnPastADeniedTopic(t *testing.T) {
	t.Parallel()
	c, _ := tDeniedCluster(t)
	cons := tNew(t, c, "g", Topics("ok", "denied"))

	ctx, cancel := context.WithCancel(tCtx(t))
	handled := make(chan string, 8)
	errc := make(chan error, 1)
	go func() {
		errc <- cons.Process(ctx, func(_ context.Context, r *Record) error {
			handled <- string(r.Value)
			return nil
		})
	}()
	var got []string
	for range 3 {
		got = append(got, <-handled)
	}
	assert.ElementsMatch(t, []string{"o1", "o2", "o3"}, got)
	require.Eventually(t, func() bool { return cons.Status().TopicErrors["denied"] != nil }, 10*time.Second, 10*time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("Process returned %v", err)
	default:
	}
	cancel()
	require.NoError(t, <-errc)
}

// TestTopicAuthorizationFailedInHeartbeat: Kafka refuses the whole heartbeat when a subscribed
// topic may not be described. Poll returns a *TopicAuthorizationError once, then says why it
// waits; the member stays joining and joins once the broker allows it.
func TestTopicAuthorizationFailedInHeartbeat(t *testing.T) {
	t.Parallel()
	c := tStart(t, testbroker.Topic("t", 1))
	tEarliest(t, c, "g")
	tProduce(t, c, "t", 0, []string{"a"})
	fault, err := c.InjectFault(testbroker.Fault{APIs: []kmsgKey{kmsgShareGroupHeartbeat}, Err: kerr.TopicAuthorizationFailed})
	require.NoError(t, err)
	cons := tNew(t, c, "g", Topics("t"))

	_, err = cons.Poll(tCtx(t))
	var tae *errors.TopicAuthorizationError
	require.ErrorAs(t, err, &tae)
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	_, err = cons.Poll(ctxWithTimeout(tCtx(t), 300*time.Millisecond))
	var pte *errors.PollTimeoutError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, errors.ReasonTopicAuthorization, pte.Reason)
	assert.Equal(t, StateJoining, cons.Status().State, "not fatal")

	require.True(t, c.RemoveFault(fault))
	tPollN(t, cons, 1)
}

// TestMetadataNamesDeniedTopics: a Metadata answer's TOPIC_AUTHORIZATION_FAILED marks the topic
// refused for Status and the reason, and an answer that knows the topic clears it, but not a
// refusal a ShareFetch made.
func TestMetadataNamesDeniedTopics(t *testing.T) {
	resp := kmsg.NewPtrMetadataResponse()
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, rt)
	}
	resp.Topics[1].ErrorCode = 0
	denied := metadataDenied(resp)
	require.Len(t, denied, 1)
	assert.ErrorIs(t, denied["a"], kerr.TopicAuthorizationFailed)

	var h health
	m := membership{subscription: []string{"a", "b"}}
	h.topicsSeen(nil, nil, denied)
	assert.Equal(t, []string{"a"}, h.deniedOf([]string{"b", "a", "a"}))
	require.Len(t, h.topicErrors(&m), 1)
	assert.Empty(t, h.topicErrors(&membership{subscription: []string{"b"}}), "only topics subscribed or assigned")
	h.topicsSeen(nil, []string{"a"}, nil)
	assert.Empty(t, h.topicErrors(&m), "metadata clears its own refusal")

	h.deny("a", &errors.TopicAuthorizationError{Topics: []string{"a"}}, true)
	h.topicsSeen(nil, []string{"a"}, nil)
	assert.ErrorIs(t, h.topicErrors(&m)["a"], kerr.TopicAuthorizationFailed, "describing is not reading")
	h.allow("a", true)
	assert.Empty(t, h.topicErrors(&m))
}

// TestAuthFailure: which connect errors say that the broker refused the login, as Kafka's
// AuthenticationException does, and which only that it could not be reached.
func TestAuthFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		auth bool
	}{
		{"SASL credentials refused", fmt.Errorf("%w: invalid credentials", kerr.SaslAuthenticationFailed), true},
		{"SASL mechanism not enabled", kerr.UnsupportedSaslMechanism, true},
		{"SASL out of order", kerr.IllegalSaslState, true},
		{"certificate not trusted", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, true},
		{"TLS alert from the broker", fmt.Errorf("remote error: %w", tls.AlertError(42)), true},
		{"not a TLS listener", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		{"connection closed", io.EOF, false},
		{"another Kafka error", kerr.NotCoordinator, false},
	} {
		assert.Equal(t, tc.auth, authFailure(tc.err), tc.name)
	}
}

// TestMembershipWithholdsTopicsMetadataRefuses: the heartbeats leave out the subscribed topics
// Metadata refuses, send them again once Metadata knows them, and send everything when every
// topic is refused.
func TestMembershipWithholdsTopicsMetadataRefuses(t *testing.T) {
	t.Parallel()
	denied := &errors.KafkaError{Code: kerr.TopicAuthorizationFailed.Code}
	m := newMembership("g", "m", nil)
	m.subscription = []string{"a", "b"}
	assert.Equal(t, []string{"a", "b"}, m.heartbeat().SubscribedTopicNames)

	assert.True(t, m.withhold(map[string]error{"b": denied, "other": denied}, nil))
	assert.Equal(t, []string{"a"}, m.heartbeat().SubscribedTopicNames)
	assert.False(t, m.withhold(map[string]error{"b": denied}, []string{"a"}), "nothing changed")

	m.epoch, m.sentSub = 1, []string{"a"}
	assert.Nil(t, m.heartbeat().SubscribedTopicNames, "the coordinator has it")
	assert.True(t, m.withhold(nil, []string{"b"}))
	assert.Equal(t, []string{"a", "b"}, m.heartbeat().SubscribedTopicNames, "sent again once known")

	assert.True(t, m.withhold(map[string]error{"a": denied}, nil))
	assert.True(t, m.withhold(map[string]error{"b": denied}, nil), "every topic refused: all are sent again")
	assert.Equal(t, []string{"a", "b"}, m.heartbeatTopics())
	m.subscription = []string{"c"}
	m.withhold(nil, nil)
	assert.Empty(t, m.withheld, "topics no longer subscribed are forgotten")
}

package shareconsumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	kerrors "github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/internal/groupconfig"
	"github.com/kshare/kshare/shareconsumer"
)

// The consumer's errors under real ACLs: a principal without READ on its group, or on one of
// its topics. They run on kfake, which enforces Kafka's ACLs on ShareGroupHeartbeat and
// ShareFetch; testbroker's tests of the same conditions inject the codes as faults.

// aclCluster is a kfake cluster with SASL and ACLs on, topics "ok" and "denied" with three
// records each, group "g" starting at the log start, a superuser (admin) and bob, who has only
// the ACLs given.
type aclCluster struct {
	seeds []string
	bob   kgo.Opt
}

// admin returns a client of the superuser, closed when the test ends.
func (a aclCluster) admin(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.seeds...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func startACLKfake(t *testing.T, bobACLs ...kfake.ACL) aclCluster {
	t.Helper()
	const mech = "SCRAM-SHA-256"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ok", "denied"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "100"}),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser(mech, "admin", "admin"), kfake.User(mech, "bob", "bob", bobACLs...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	a := aclCluster{seeds: c.ListenAddrs(), bob: kgo.SASL(scram.Auth{User: "bob", Pass: "bob"}.AsSha256Mechanism())}
	admin := a.admin(t)
	ctx := e2eCtx(t, 30*time.Second)
	require.NoError(t, groupconfig.Set(ctx, admin, "g", "share.auto.offset.reset", "earliest"))
	for _, topic := range []string{"ok", "denied"} {
		for _, v := range []string{"1", "2", "3"} {
			require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic + v)}).FirstErr())
		}
	}
	return a
}

func allow(resource kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: resource, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

func (a aclCluster) consumer(t *testing.T, topics ...string) *shareconsumer.Consumer {
	t.Helper()
	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics(topics...),
		shareconsumer.ClientOpts(kgo.SeedBrokers(a.seeds...), a.bob), shareconsumer.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sc.Close(context.Background()) })
	return sc
}

// TestE2EKfakeGroupNotAuthorized: without READ on the group, Poll fails with a fatal error that
// names the group and Kafka's code, every later Poll and Process too, and Close works.
func TestE2EKfakeGroupNotAuthorized(t *testing.T) {
	t.Parallel()
	a := startACLKfake(t, allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationDescribe))
	sc := a.consumer(t, "ok")

	ctx := e2eCtx(t, 30*time.Second)
	recs, err := sc.Poll(ctx)
	assert.Empty(t, recs)
	require.NoError(t, ctx.Err(), "Poll failed at once")
	var fe *kerrors.FatalError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "g", fe.Group)
	assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	assert.Contains(t, err.Error(), `share group "g": GROUP_AUTHORIZATION_FAILED`)
	assert.Equal(t, shareconsumer.StateFatal, sc.Status().State)

	_, again := sc.Poll(ctx)
	assert.ErrorAs(t, again, &fe)
	assert.ErrorIs(t, sc.Process(ctx, func(context.Context, *shareconsumer.Record) error { return nil }), kerr.GroupAuthorizationFailed)
	require.NoError(t, sc.Close(ctx))
}

// TestE2EKfakeTopicNotAuthorized: bob may read the group and topic "ok", and only describe
// "denied": the consumer joins with both, reads "ok", reports "denied" once (Poll) and in
// Status, and goes on; Process too.
func TestE2EKfakeTopicNotAuthorized(t *testing.T) {
	t.Parallel()
	acls := []kfake.ACL{
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationDescribe),
	}
	t.Run("Poll", func(t *testing.T) {
		t.Parallel()
		sc := startACLKfake(t, acls...).consumer(t, "ok", "denied")
		ctx := e2eCtx(t, 30*time.Second)
		var got []string
		var denials []error
		for len(got) < 3 || len(denials) == 0 {
			recs, err := sc.Poll(ctx)
			require.NoError(t, ctx.Err(), "got %v, denials %v", got, denials)
			if err != nil {
				denials = append(denials, err)
			}
			for _, r := range recs {
				got = append(got, string(r.Value))
			}
		}
		assert.Equal(t, []string{"ok1", "ok2", "ok3"}, got)
		require.Len(t, denials, 1)
		var tae *kerrors.TopicAuthorizationError
		require.ErrorAs(t, denials[0], &tae)
		assert.Equal(t, []string{"denied"}, tae.Topics)
		assert.ErrorIs(t, denials[0], kerr.TopicAuthorizationFailed)

		st := sc.Status()
		assert.Equal(t, shareconsumer.StateStable, st.State)
		assert.ErrorIs(t, st.TopicErrors["denied"], kerr.TopicAuthorizationFailed)
		assert.NotContains(t, st.TopicErrors, "ok")

		_, err := sc.Poll(ctxWithDeadline(ctx, 300*time.Millisecond))
		var pte *kerrors.PollTimeoutError
		require.ErrorAs(t, err, &pte)
		assert.Equal(t, kerrors.ReasonTopicAuthorization, pte.Reason)
		assert.Contains(t, pte.Detail, "denied")
	})
	t.Run("Process", func(t *testing.T) {
		t.Parallel()
		sc := startACLKfake(t, acls...).consumer(t, "ok", "denied")
		ctx, cancel := context.WithCancel(e2eCtx(t, 30*time.Second))
		handled := make(chan string, 8)
		errc := make(chan error, 1)
		go func() {
			errc <- sc.Process(ctx, func(_ context.Context, r *shareconsumer.Record) error {
				handled <- string(r.Value)
				return nil
			})
		}()
		var got []string
		for range 3 {
			got = append(got, <-handled)
		}
		assert.ElementsMatch(t, []string{"ok1", "ok2", "ok3"}, got)
		require.Eventually(t, func() bool { return sc.Status().TopicErrors["denied"] != nil }, 10*time.Second, 10*time.Millisecond)
		cancel()
		require.NoError(t, <-errc, "Process went on past the refused topic")
	})
}

// TestE2EKfakeTopicNotDescribable: Kafka refuses the whole heartbeat of a member subscribed to
// a topic it may not describe. Poll returns a *TopicAuthorizationError once; Metadata names the
// topic for Status, and the heartbeats leave it out, so the member joins and consumes the other
// topic; once an ACL allows the topic, the heartbeats send it again and its records come.
func TestE2EKfakeTopicNotDescribable(t *testing.T) {
	t.Parallel()
	a := startACLKfake(t, allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead))
	sc := a.consumer(t, "ok", "denied")
	ctx := e2eCtx(t, 30*time.Second)
	var got []string
	var denials []error
	for len(got) < 3 || len(denials) == 0 {
		recs, err := sc.Poll(ctx)
		require.NoError(t, ctx.Err(), "got %v, denials %v", got, denials)
		if err != nil {
			denials = append(denials, err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	assert.Equal(t, []string{"ok1", "ok2", "ok3"}, got)
	require.Len(t, denials, 1)
	var tae *kerrors.TopicAuthorizationError
	require.ErrorAs(t, denials[0], &tae)
	assert.ErrorIs(t, denials[0], kerr.TopicAuthorizationFailed)
	st := sc.Status()
	assert.Equal(t, shareconsumer.StateStable, st.State)
	assert.ErrorIs(t, st.TopicErrors["denied"], kerr.TopicAuthorizationFailed)
	assert.NotContains(t, st.TopicErrors, "ok")
	_, err := sc.Poll(ctxWithDeadline(ctx, 300*time.Millisecond))
	var pte *kerrors.PollTimeoutError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, kerrors.ReasonTopicAuthorization, pte.Reason)
	assert.Contains(t, pte.Detail, "TOPIC_AUTHORIZATION_FAILED for denied")

	acl := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("denied").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead)
	res, err := kadm.NewClient(a.admin(t)).CreateACLs(ctx, acl)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	got = nil
	for len(got) < 3 {
		recs, err := sc.Poll(ctx)
		require.NoError(t, err, "got %v", got)
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	assert.Equal(t, []string{"denied1", "denied2", "denied3"}, got)
	assert.Nil(t, sc.Status().TopicErrors)
}

// ctxWithDeadline returns a child of ctx that ends after d.
func ctxWithDeadline(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	_ = cancel // ends with ctx or after d
	return ctx
}

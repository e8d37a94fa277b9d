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
	"github.com/kshare/kshare/testbroker"
)

// The consumer's errors under real ACLs: a principal without READ on its group, or on one of
// its topics. They run on testbroker (with StandardAuthorizer) and on kfake, which both
// enforce Kafka's ACLs on ShareGroupHeartbeat and ShareFetch.

// aclCluster is a cluster with SASL SCRAM-SHA-256 and ACLs on, topics "ok" and "denied" with
// three records each, group "g" starting at the log start, a super user (admin) and bob, who
// has only the ACLs given.
type aclCluster struct {
	seeds []string
	bob   kgo.Opt
}

// aclRule is an ALLOW ACL for bob on a literal resource, from any host.
type aclRule struct {
	resource kmsg.ACLResourceType
	name     string
	op       kmsg.ACLOperation
}

func allow(resource kmsg.ACLResourceType, name string, op kmsg.ACLOperation) aclRule {
	return aclRule{resource, name, op}
}

// aclBrokers start an aclCluster on each fake broker.
var aclBrokers = []struct {
	name  string
	start func(t *testing.T, rules ...aclRule) aclCluster
}{
	{"testbroker", startACLTestbroker},
	{"kfake", startACLKfake},
}

// forEachACLBroker runs fn as a parallel subtest on each broker, each with a cluster of its
// own, started with bob's rules.
func forEachACLBroker(t *testing.T, rules []aclRule, fn func(t *testing.T, a aclCluster)) {
	t.Helper()
	for _, b := range aclBrokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.start(t, rules...))
		})
	}
}

// admin returns a client of the super user, closed when the test ends.
func (a aclCluster) admin(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.seeds...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// grant creates ACLs for bob as the super user.
func (a aclCluster) grant(t *testing.T, ctx context.Context, rules ...aclRule) {
	t.Helper()
	adm := kadm.NewClient(a.admin(t))
	for _, r := range rules {
		b := kadm.NewACLs().Allow("User:bob").AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.ACLOperation(r.op))
		switch r.resource {
		case kmsg.ACLResourceTypeTopic:
			b = b.Topics(r.name)
		case kmsg.ACLResourceTypeGroup:
			b = b.Groups(r.name)
		case kmsg.ACLResourceTypeCluster:
			b = b.Clusters()
		default:
			t.Fatalf("no ACL builder for resource type %v", r.resource)
		}
		res, err := adm.CreateACLs(ctx, b)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err, r.ErrMessage)
		}
	}
}

// seed sets the group to start at the log start and produces the records.
func (a aclCluster) seed(t *testing.T) {
	t.Helper()
	admin := a.admin(t)
	ctx := e2eCtx(t, 30*time.Second)
	require.NoError(t, groupconfig.Set(ctx, admin, "g", "share.auto.offset.reset", "earliest"))
	for _, topic := range []string{"ok", "denied"} {
		for _, v := range []string{"1", "2", "3"} {
			require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic + v)}).FirstErr())
		}
	}
}

const aclMechanism = "SCRAM-SHA-256"

func bobSASL() kgo.Opt { return kgo.SASL(scram.Auth{User: "bob", Pass: "bob"}.AsSha256Mechanism()) }

func startACLTestbroker(t *testing.T, rules ...aclRule) aclCluster {
	t.Helper()
	c := testbroker.StartT(t, testbroker.Topic("ok", 1), testbroker.Topic("denied", 1),
		testbroker.BrokerConfig("group.share.min.heartbeat.interval.ms", "50"),
		testbroker.BrokerConfig("group.share.heartbeat.interval.ms", "100"),
		testbroker.SASL(aclMechanism), testbroker.User("admin", "admin"), testbroker.User("bob", "bob"),
		testbroker.BrokerConfig("authorizer.class.name", testbroker.StandardAuthorizer),
		testbroker.BrokerConfig("super.users", "User:admin"))
	a := aclCluster{seeds: c.Addrs(), bob: bobSASL()}
	a.seed(t)
	a.grant(t, e2eCtx(t, 30*time.Second), rules...)
	return a
}

func startACLKfake(t *testing.T, rules ...aclRule) aclCluster {
	t.Helper()
	acls := make([]kfake.ACL, len(rules))
	for i, r := range rules {
		acls[i] = kfake.ACL{Resource: r.resource, Name: r.name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: r.op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ok", "denied"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "100"}),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser(aclMechanism, "admin", "admin"), kfake.User(aclMechanism, "bob", "bob", acls...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	a := aclCluster{seeds: c.ListenAddrs(), bob: bobSASL()}
	a.seed(t)
	return a
}

func (a aclCluster) consumer(t *testing.T, topics ...string) *shareconsumer.Consumer {
	t.Helper()
	sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics(topics...),
		shareconsumer.ClientOpts(kgo.SeedBrokers(a.seeds...), a.bob), shareconsumer.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sc.Close(context.Background()) })
	return sc
}

// TestE2EGroupNotAuthorized: without READ on the group, Poll fails with a fatal error that
// names the group and Kafka's code, every later Poll and Process too, and Close works.
func TestE2EGroupNotAuthorized(t *testing.T) {
	t.Parallel()
	rules := []aclRule{allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationDescribe)}
	forEachACLBroker(t, rules, func(t *testing.T, a aclCluster) {
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
	})
}

// TestE2ETopicNotAuthorized: bob may read the group and topic "ok", and only describe
// "denied": the consumer joins with both, reads "ok", reports "denied" once (Poll) and in
// Status, and goes on; Process too. With Poll, READ on "denied" is then granted: the share
// session kept the refused partition (Kafka answers it TOPIC_AUTHORIZATION_FAILED at every
// fetch), so its records arrive and Status forgets the refusal.
func TestE2ETopicNotAuthorized(t *testing.T) {
	t.Parallel()
	rules := []aclRule{
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationDescribe),
	}
	for _, b := range aclBrokers {
		t.Run(b.name+"/Poll", func(t *testing.T) {
			t.Parallel()
			a := b.start(t, rules...)
			sc := a.consumer(t, "ok", "denied")
			ctx := e2eCtx(t, 30*time.Second)
			got, denials := pollValuesAndErrors(t, ctx, sc, 3)
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

			a.grant(t, ctx, allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationRead))
			assert.Equal(t, []string{"denied1", "denied2", "denied3"}, pollValues(t, ctx, sc, 3))
			assert.Nil(t, sc.Status().TopicErrors)
		})
		t.Run(b.name+"/Process", func(t *testing.T) {
			t.Parallel()
			sc := b.start(t, rules...).consumer(t, "ok", "denied")
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
}

// TestE2ETopicNotDescribable: Kafka refuses the whole heartbeat of a member subscribed to
// a topic it may not describe. Poll returns a *TopicAuthorizationError once; Metadata names the
// topic for Status, and the heartbeats leave it out, so the member joins and consumes the other
// topic; once an ACL allows the topic, the heartbeats send it again and its records come.
func TestE2ETopicNotDescribable(t *testing.T) {
	t.Parallel()
	rules := []aclRule{allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead)}
	forEachACLBroker(t, rules, func(t *testing.T, a aclCluster) {
		sc := a.consumer(t, "ok", "denied")
		ctx := e2eCtx(t, 30*time.Second)
		got, denials := pollValuesAndErrors(t, ctx, sc, 3)
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

		a.grant(t, ctx, allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationRead))
		got = pollValues(t, ctx, sc, 3)
		assert.Equal(t, []string{"denied1", "denied2", "denied3"}, got)
		assert.Nil(t, sc.Status().TopicErrors)
	})
}

// ctxWithDeadline returns a child of ctx that ends after d.
func ctxWithDeadline(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	_ = cancel // ends with ctx or after d
	return ctx
}

// pollValuesAndErrors polls c until it has n records' values and at least one error, and
// returns both; ctx bounds it.
func pollValuesAndErrors(t *testing.T, ctx context.Context, c *shareconsumer.Consumer, n int) (values []string, errs []error) {
	t.Helper()
	for len(values) < n || len(errs) == 0 {
		recs, err := c.Poll(ctx)
		require.NoError(t, ctx.Err(), "got %v, errors %v", values, errs)
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range recs {
			values = append(values, string(r.Value))
		}
	}
	return values, errs
}

// pollValues polls c, failing on any error, until it has n records' values.
func pollValues(t *testing.T, ctx context.Context, c *shareconsumer.Consumer, n int) []string {
	t.Helper()
	var values []string
	for len(values) < n {
		recs, err := c.Poll(ctx)
		require.NoError(t, err, "got %v", values)
		for _, r := range recs {
			values = append(values, string(r.Value))
		}
	}
	return values
}

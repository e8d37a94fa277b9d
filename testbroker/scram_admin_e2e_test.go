package testbroker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/testbroker"
)

func scramAdmin(t *testing.T, c *testbroker.Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// metadataAs sends a Metadata request authenticated with m and returns its error.
func metadataAs(t *testing.T, c *testbroker.Cluster, auth scram.Auth, sha512 bool) error {
	t.Helper()
	m := auth.AsSha256Mechanism()
	if sha512 {
		m = auth.AsSha512Mechanism()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(m), kgo.RequestRetries(0))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

// TestAlterUserSCRAMsAuthenticates: a credential upserted with AlterUserScramCredentials
// authenticates at once with its mechanism (and its iteration count), DescribeUserScramCredentials
// lists it, a replaced password stops working, and a deleted credential no longer authenticates.
func TestAlterUserSCRAMsAuthenticates(t *testing.T) {
	c := testbroker.StartT(t, testbroker.SASL("SCRAM-SHA-256", "SCRAM-SHA-512"), testbroker.User("admin", "admin-secret"))
	adm := scramAdmin(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.Error(t, metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw1"}, false))
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "pw1"},
	})
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	require.NoError(t, metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw1"}, false))
	require.Error(t, metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw1"}, true), "no SCRAM-SHA-512 credential")

	described, err := adm.DescribeUserSCRAMs(ctx, "carol", "admin")
	require.NoError(t, err)
	assert.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 8192}}, described["carol"].CredInfos)
	assert.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 4096}, {Mechanism: kadm.ScramSha512, Iterations: 4096}},
		described["admin"].CredInfos, "a User option's credentials")
	all, err := adm.DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"admin", "carol"}, userNames(all), "the inter-broker user is not listed")

	_, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Password: "pw2"}})
	require.NoError(t, err)
	err = metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw1"}, false)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	require.NoError(t, metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw2"}, false))

	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	require.ErrorIs(t, metadataAs(t, c, scram.Auth{User: "carol", Pass: "pw2"}, false), kerr.SaslAuthenticationFailed)
	described, err = adm.DescribeUserSCRAMs(ctx, "carol")
	require.NoError(t, err)
	assert.ErrorIs(t, described["carol"].Err, kerr.ResourceNotFound)
	assert.Equal(t, "Attempt to describe a user credential that does not exist: carol", described["carol"].ErrMessage)
}

func userNames(m kadm.DescribedUserSCRAMs) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAlterUserSCRAMsRefused: ScramControlManager's checks, each with its error and message;
// the rest of the request applies.
func TestAlterUserSCRAMsRefused(t *testing.T) {
	c := testbroker.StartT(t, testbroker.SASL("SCRAM-SHA-256"), testbroker.User("admin", "admin-secret"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	upsert := func(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iterations
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
		return u
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		del("nobody", 1), del("", 1), del("unknown-mech", 3),
	}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsert("few", 1, 4095), upsert("many", 2, 16385), upsert("bad-mech", 0, 4096),
		upsert("dup", 1, 4096), upsert("dup", 2, 4096), upsert("ok", 2, 16384),
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	type result struct {
		code int16
		msg  string
	}
	got := map[string]result{}
	for _, r := range resp.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		got[r.User] = result{r.ErrorCode, msg}
	}
	assert.Equal(t, map[string]result{
		"nobody":       {kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
		"":             {kerr.UnacceptableCredential.Code, "Username must not be empty"},
		"unknown-mech": {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"few":          {kerr.UnacceptableCredential.Code, "Too few iterations"},
		"many":         {kerr.UnacceptableCredential.Code, "Too many iterations"},
		"bad-mech":     {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"dup":          {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		"ok":           {0, ""},
	}, got)
	assert.Len(t, resp.Results, 8)

	// A user deleted twice in one request: DUPLICATE_RESOURCE, and the credential stays.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("ok", 2), del("ok", 2)}
	resp, err = req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	assert.Equal(t, kerr.DuplicateResource.Code, resp.Results[0].ErrorCode)

	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"ok", "ok", "nobody"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		dreq.Users = append(dreq.Users, ru)
	}
	dresp, err := dreq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, dresp.Results, 2)
	for _, r := range dresp.Results {
		switch r.User {
		case "ok":
			assert.Equal(t, kerr.DuplicateResource.Code, r.ErrorCode)
			if assert.NotNil(t, r.ErrorMessage) {
				assert.Equal(t, "Cannot describe SCRAM credentials for the same user twice in a single request: ok", *r.ErrorMessage)
			}
		case "nobody":
			assert.Equal(t, kerr.ResourceNotFound.Code, r.ErrorCode)
		default:
			t.Errorf("unexpected user %q", r.User)
		}
	}
}

// TestAlterUserSCRAMsWithoutSASL: a cluster without SASL keeps SCRAM credentials too, as Kafka
// does.
func TestAlterUserSCRAMsWithoutSASL(t *testing.T) {
	c := testbroker.StartT(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Password: "x"}})
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	described, err := adm.DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha512, Iterations: 4096}}, described["dave"].CredInfos)
}

// TestAlterUserSCRAMsLeavesTheInterBrokerUser: an admin can neither delete nor replace the
// credential the replica fetchers authenticate with. The deletion is not found, as for any
// user without a credential; the upsertion is refused. With every connection dropped, the
// fetchers authenticate again and acks=all produces still replicate to every broker.
func TestAlterUserSCRAMsLeavesTheInterBrokerUser(t *testing.T) {
	c := testbroker.StartT(t, testbroker.NumBrokers(3), testbroker.SASL("SCRAM-SHA-256", "SCRAM-SHA-512"),
		testbroker.User("admin", "admin-secret"), testbroker.ReplicatedTopic("r", 1, 3))
	adm := scramAdmin(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const interBroker = "testbroker-inter-broker"

	altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: interBroker, Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.Len(t, altered, 1)
	assert.ErrorIs(t, altered[interBroker].Err, kerr.ResourceNotFound)
	assert.Equal(t, "Attempt to delete a user credential that does not exist", altered[interBroker].ErrMessage)

	altered, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: interBroker, Mechanism: kadm.ScramSha256, Password: "taken-over"}})
	require.NoError(t, err)
	require.Len(t, altered, 1)
	assert.ErrorIs(t, altered[interBroker].Err, kerr.UnacceptableCredential)
	assert.Equal(t, "Username testbroker-inter-broker is reserved for the cluster's replica fetchers", altered[interBroker].ErrMessage)
	assert.ErrorIs(t, metadataAs(t, c, scram.Auth{User: interBroker, Pass: "taken-over"}, false), kerr.SaslAuthenticationFailed)

	all, err := adm.DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"admin"}, userNames(all))
	described, err := adm.DescribeUserSCRAMs(ctx, interBroker)
	require.NoError(t, err)
	assert.ErrorIs(t, described[interBroker].Err, kerr.ResourceNotFound)

	c.DropConnections(-1)
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism()))
	require.NoError(t, err)
	defer producer.Close()
	for i := range 10 {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}
	p, ok := c.Partition("r", 0)
	require.True(t, ok)
	assert.Equal(t, []int32{0, 1, 2}, p.ISR)
	for _, r := range p.ReplicaStates {
		assert.Equal(t, int64(10), r.LogEndOffset, "broker %d", r.Broker)
	}
}

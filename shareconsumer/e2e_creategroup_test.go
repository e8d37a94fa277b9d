package shareconsumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
)

// TestE2ECreateGroup creates share groups with CreateGroup: a new one is left Empty, an
// existing one stays as it was with its member, and a context that ended stops it. kfake, unlike
// Kafka, drops a share group as soon as it has neither members nor share-partition state, so
// there the new group is gone again once CreateGroup returns.
func TestE2ECreateGroup(t *testing.T) {
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) {
		ctx := e2eCtx(t, 30*time.Second)
		seeds := kgo.SeedBrokers(env.seeds...)
		create := func(group string) error { return shareconsumer.CreateGroup(ctx, group, seeds) }
		describe := func(group string) kadm.DescribedShareGroup {
			ds, err := env.adm(t).DescribeShareGroups(ctx, group)
			require.NoError(t, err)
			return ds[group]
		}

		require.NoError(t, create("new"))
		if env.tb != nil {
			d := describe("new")
			require.NoError(t, d.Err)
			assert.Equal(t, "Empty", d.GroupState)
			assert.Empty(t, d.Members)
		} else {
			assert.ErrorIs(t, describe("new").Err, kerr.GroupIDNotFound, "kfake dropped the empty group")
		}
		require.NoError(t, create("new"), "again")

		env.prepareGroup(t, "busy")
		env.produce(t, []int32{0}, 1)
		c := env.newMembers(t, "busy", 1)[0]
		pollN(t, c, 1, 10*time.Second)
		require.NoError(t, create("busy"), "a share group with a member")
		env.waitMembers(t, "busy", 1)
		require.NoError(t, c.Close(ctx))
		env.waitMembers(t, "busy", 0)
		require.NoError(t, create("busy"), "a share group without members, with share-partition state")
		d := describe("busy")
		require.NoError(t, d.Err)
		assert.Equal(t, "Empty", d.GroupState)

		done, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, shareconsumer.CreateGroup(done, "late", seeds), context.Canceled)
		assert.ErrorIs(t, describe("late").Err, kerr.GroupIDNotFound, "no group created after the context ended")
	})
}

// TestCreateGroupOnClassicGroup: CreateGroup on the id of a classic group fails with
// ErrInconsistentGroupType (and kerr.GroupIDNotFound), and the classic group stays.
func TestCreateGroupOnClassicGroup(t *testing.T) {
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) { createGroupOnClassicGroup(t, env) })
}

func createGroupOnClassicGroup(t *testing.T, env *e2eEnv) {
	ctx := e2eCtx(t, 30*time.Second)
	joined := make(chan struct{}, 1)
	member := env.client(t, kgo.ConsumerGroup("classic"), kgo.ConsumeTopics(e2eTopic),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case joined <- struct{}{}:
			default:
			}
		}))
	t.Cleanup(member.Close)
	go member.PollFetches(ctx)
	select {
	case <-joined:
	case <-ctx.Done():
		t.Fatal("the classic group member never joined")
	}
	err := shareconsumer.CreateGroup(ctx, "classic", kgo.SeedBrokers(env.seeds...))
	require.Error(t, err)
	assert.ErrorIs(t, err, errors.ErrInconsistentGroupType)
	assert.ErrorIs(t, err, kerr.GroupIDNotFound)
	assert.Contains(t, err.Error(), `creating share group "classic"`)
	listed, err := env.adm(t).ListGroups(ctx)
	require.NoError(t, err)
	assert.Equal(t, "classic", listed["classic"].GroupType, "the classic group is left as it was")
}

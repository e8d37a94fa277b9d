package shareconsumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
)

// TestPollOnGroupOfAnotherType: a share consumer whose group id belongs to a classic group or
// to a consumer (KIP-848) group fails from Poll at once with a *errors.FatalError that matches
// ErrInconsistentGroupType and kerr.GroupIDNotFound, instead of retrying until its context ends.
// testbroker sends Kafka's message with the code; kfake sends none, and the consumer reads the
// code in answer to its join as the same condition.
func TestPollOnGroupOfAnotherType(t *testing.T) {
	forEachBroker(t, e2eSetup{}, func(t *testing.T, env *e2eEnv) { pollOnGroupOfAnotherType(t, env) })
}

func pollOnGroupOfAnotherType(t *testing.T, env *e2eEnv) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"consumer", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := tc.name + "-group"
			joined := make(chan struct{}, 1)
			member := env.client(t, append([]kgo.Opt{
				kgo.ConsumerGroup(group),
				kgo.ConsumeTopics(e2eTopic),
				kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
					select {
					case joined <- struct{}{}:
					default:
					}
				}),
			}, tc.opts...)...)
			t.Cleanup(member.Close)
			ctx := e2eCtx(t, 30*time.Second)
			go member.PollFetches(ctx) // drives the join
			select {
			case <-joined:
			case <-ctx.Done():
				t.Fatal("the group member never joined")
			}

			c := env.newConsumer(t, group)
			start := time.Now()
			_, err := c.Poll(ctx)
			require.Error(t, err)
			assert.Less(t, time.Since(start), 10*time.Second, "Poll should fail at once, not wait")
			var fatal *errors.FatalError
			require.ErrorAs(t, err, &fatal)
			assert.True(t, fatal.InconsistentGroupType)
			assert.ErrorIs(t, err, errors.ErrInconsistentGroupType)
			assert.ErrorIs(t, err, kerr.GroupIDNotFound)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), `share group "`+group+`"`)
			if env.tb != nil {
				assert.Equal(t, "Group "+group+" is not a share group.", fatal.Message, "Kafka's message kept")
			}

			_, again := c.Poll(ctx)
			assert.ErrorIs(t, again, errors.ErrInconsistentGroupType, "every later Poll fails the same way")
		})
	}
}

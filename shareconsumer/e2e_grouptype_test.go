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
// It runs on kfake only: testbroker has share groups alone so far (issue 10).
func TestPollOnGroupOfAnotherType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"consumer", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := startKfake(t, e2eSetup{})
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

			_, again := c.Poll(ctx)
			assert.ErrorIs(t, again, errors.ErrInconsistentGroupType, "every later Poll fails the same way")
		})
	}
}

package shareconsumer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	kerrors "github.com/kshare/kshare/errors"
)

// TestE2ETopicAuthorizedLater: bob may describe "denied" but not read it. The consumer,
// subscribed to both topics, reads "ok" while its share session keeps the refused partition
// (Kafka answers it TOPIC_AUTHORIZATION_FAILED at every fetch); once READ on "denied" is
// granted, its records arrive and Status forgets the refusal.
func TestE2ETopicAuthorizedLater(t *testing.T) {
	t.Parallel()
	rules := []aclRule{
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationDescribe),
	}
	forEachACLBroker(t, rules, func(t *testing.T, a aclCluster) {
		sc := a.consumer(t, "ok", "denied")
		ctx := e2eCtx(t, 30*time.Second)
		got, denials := pollValuesAndErrors(t, ctx, sc, 3)
		assert.Equal(t, []string{"ok1", "ok2", "ok3"}, got)
		require.Len(t, denials, 1)
		var tae *kerrors.TopicAuthorizationError
		require.ErrorAs(t, denials[0], &tae)
		assert.Equal(t, []string{"denied"}, tae.Topics)
		assert.ErrorIs(t, sc.Status().TopicErrors["denied"], kerr.TopicAuthorizationFailed)

		a.grant(t, ctx, allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationRead))
		got = pollValues(t, ctx, sc, 3)
		assert.Equal(t, []string{"denied1", "denied2", "denied3"}, got)
		assert.Nil(t, sc.Status().TopicErrors)
	})
}

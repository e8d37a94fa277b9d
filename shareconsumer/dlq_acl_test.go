package shareconsumer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	kerrors "github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
)

// TestE2EDeadLetterWriteDenied: bob may read group "g" and topic "ok" and only describe
// "denied", his dead-letter topic. The produce fails with TOPIC_AUTHORIZATION_FAILED and the
// record is left to him (explicit mode); once he may write it, DeadLetter succeeds. Without
// DESCRIBE_CONFIGS on the group the delivery count limit cannot be read (the error says so);
// with it, it can.
func TestE2EDeadLetterWriteDenied(t *testing.T) {
	t.Parallel()
	rules := []aclRule{
		allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationDescribe),
	}
	forEachACLBroker(t, rules, func(t *testing.T, a aclCluster) {
		sc, err := shareconsumer.New(shareconsumer.Group("g"), shareconsumer.Topics("ok"),
			shareconsumer.ClientOpts(kgo.SeedBrokers(a.seeds...), a.bob), shareconsumer.FetchMaxWait(100*time.Millisecond),
			shareconsumer.ExplicitAcknowledgement(), shareconsumer.DeadLetterTopic("denied"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = sc.Close(e2eCtx(t, 10*time.Second)) })
		ctx := e2eCtx(t, 30*time.Second)

		limit, err := sc.DeliveryCountLimit(ctx)
		if strings.HasSuffix(t.Name(), "/kfake") {
			// kfake does not check the group's ACL on DescribeConfigs and answers without the
			// group config: the consumer reads the broker config, refused without
			// DESCRIBE_CONFIGS on the cluster.
			assert.ErrorIs(t, err, kerr.ClusterAuthorizationFailed)
		} else {
			assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed, "no DESCRIBE_CONFIGS on the group")
		}
		assert.Zero(t, limit, "never read")
		a.grant(t, ctx, allow(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationDescribeConfigs),
			allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationDescribeConfigs))
		require.Eventually(t, func() bool { // the read is tried again after a backoff
			limit, err = sc.DeliveryCountLimit(ctx)
			return err == nil
		}, 10*time.Second, 10*time.Millisecond)
		assert.Equal(t, 5, limit, "the group's answer: the broker default")

		recs := pollN(t, sc, 1, 20*time.Second)
		r := recs[0]
		err = sc.DeadLetter(ctx, r, nil)
		var de *kerrors.DeadLetterError
		require.ErrorAs(t, err, &de)
		assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		for _, r := range recs {
			require.NoError(t, sc.Acknowledge(r, acktype.Release))
		}

		a.grant(t, ctx, allow(kmsg.ACLResourceTypeTopic, "denied", kmsg.ACLOperationWrite))
		again := pollN(t, sc, 1, 20*time.Second)
		require.Equal(t, r.Offset, again[0].Offset)
		require.NoError(t, sc.DeadLetter(ctx, again[0], nil))
		for _, r := range again[1:] {
			require.NoError(t, sc.Acknowledge(r, acktype.Release))
		}
		commitSyncOK(t, sc, "bob")
	})
}

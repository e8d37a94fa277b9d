package shareconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// createGroupTopic is the subscription of the member CreateGroup sends: Kafka requires one in
// the first heartbeat but does not check that the topics exist. The name holds a character no
// topic name may have, so that the member is assigned nothing and initializes no share
// partition.
const createGroupTopic = "kshare:create-group"

// CreateGroup creates the share group group, without members, on the cluster opts reach (at
// least kgo.SeedBrokers). Kafka has no RPC for it: the draft of KIP-1043 had one, the shipped
// KIP dropped it. CreateGroup does what creates a share group in Kafka: a member joins
// (ShareGroupHeartbeat with member epoch 0, subscribed to a name that no topic has) and leaves
// at once (member epoch -1). Kafka keeps an emptied share group, listed as Empty, until it is
// deleted, so the group is there for Kafka's tools to configure (share.auto.offset.reset, say)
// before its first consumer starts.
//
// It returns nil when group did not exist or already is a share group; a share group that has
// members sees a member come and go, which bumps its group epoch twice. When group names a
// classic, consumer or streams group, the error matches errors.ErrInconsistentGroupType and
// kerr.GroupIDNotFound. Any other refusal is a *errors.KafkaError with Kafka's code and message
// (GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST for an empty group id,
// ...). NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS are retried
// until ctx ends. When the leave fails after the join succeeded, the group exists but the
// member stays in it until its session times out (share.session.timeout.ms); the error says
// so.
func CreateGroup(ctx context.Context, group string, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("shareconsumer: creating share group %q: %w", group, err)
	}
	defer cl.Close()
	cg := groupCreator{cl: cl, group: group, memberID: newMemberID()}
	if err := cg.run(ctx); err != nil {
		return fmt.Errorf("shareconsumer: creating share group %q: %w", group, err)
	}
	return nil
}

type groupCreator struct {
	cl       *kgo.Client
	group    string
	memberID string
}

func (cg *groupCreator) run(ctx context.Context) error {
	for failures := 0; ; failures++ {
		if err := pause(ctx, failures); err != nil {
			return err
		}
		coord, err := cg.findCoordinator(ctx)
		if retriableCoordinatorError(err) {
			continue
		}
		if err != nil {
			return err
		}
		resp, err := cg.heartbeat(ctx, coord, 0)
		if err != nil {
			return err
		}
		err = errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		if retriableCoordinatorError(err) {
			continue
		}
		if errors.IsInconsistentGroupType(resp.ErrorCode, deref(resp.ErrorMessage), 0) {
			return fmt.Errorf("%w: %w", errors.ErrInconsistentGroupType, err)
		}
		if err != nil {
			return err
		}
		if err := cg.leave(ctx, coord); err != nil {
			return fmt.Errorf("the group exists, but its member stays until its session times out: leaving: %w", err)
		}
		return nil
	}
}

// pause waits before the retry after failures failed attempts (not at all before the first
// attempt), or returns ctx's cause when it ends first.
func pause(ctx context.Context, failures int) error {
	if failures == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(min(retryBackoff<<min(failures-1, 6), maxBackoff))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// retriableCoordinatorError reports whether err says to find the coordinator again.
func retriableCoordinatorError(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// findCoordinator asks for the group's coordinator (FindCoordinator, key type 0: share groups
// live on the group coordinator).
func (cg *groupCreator) findCoordinator(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = cg.group
	req.CoordinatorKeys = []string{cg.group}
	req.CoordinatorType = 0
	kresp, err := cg.cl.Request(ctx, req)
	if err != nil {
		return -1, err
	}
	resp := kresp.(*kmsg.FindCoordinatorResponse)
	code, msg, node := resp.ErrorCode, resp.ErrorMessage, resp.NodeID
	for _, co := range resp.Coordinators {
		if co.Key == cg.group {
			code, msg, node = co.ErrorCode, co.ErrorMessage, co.NodeID
		}
	}
	return node, errors.FromKafka(code, msg)
}

// heartbeat sends the member's ShareGroupHeartbeat with epoch: 0 joins, -1 leaves.
func (cg *groupCreator) heartbeat(ctx context.Context, coord, epoch int32) (*kmsg.ShareGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = cg.group, cg.memberID, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{createGroupTopic}
	}
	kresp, err := cg.cl.Broker(int(coord)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return kresp.(*kmsg.ShareGroupHeartbeatResponse), nil
}

// leave sends the heartbeat that leaves the group, finding the coordinator again while it
// moves. UNKNOWN_MEMBER_ID counts as left: the coordinator no longer has the member.
func (cg *groupCreator) leave(ctx context.Context, coord int32) error {
	for failures := 0; ; failures++ {
		if err := pause(ctx, failures); err != nil {
			return err
		}
		if failures > 0 {
			var err error
			if coord, err = cg.findCoordinator(ctx); retriableCoordinatorError(err) {
				continue
			} else if err != nil {
				return err
			}
		}
		resp, err := cg.heartbeat(ctx, coord, -1)
		if err != nil {
			return err
		}
		err = errors.FromKafka(resp.ErrorCode, resp.ErrorMessage)
		switch {
		case err == nil, errors.Is(err, kerr.UnknownMemberID):
			return nil
		case !retriableCoordinatorError(err):
			return err
		}
	}
}

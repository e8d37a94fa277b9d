package errors_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func TestLockLostReasonString(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range errors.LockLostReasons {
		names = append(names, r.String())
	}
	assert.Equal(t, []string{"renew_refused", "invalid_record_state", "session_reset", "leader_moved", "deadline_passed", "max_hold_reached"}, names)
	assert.Equal(t, "LockLostReason(0)", errors.LockLostReason(0).String())
	assert.Equal(t, "LockLostReason(42)", errors.LockLostReason(42).String())
}

func TestLockLostError(t *testing.T) {
	t.Parallel()
	deadline := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 17, Reason: errors.LockDeadlinePassed}
	assert.EqualError(t, deadline, "shareconsumer: acquisition lock of orders-3 offset 17 lost (deadline_passed)")
	assert.ErrorIs(t, fmt.Errorf("cause: %w", deadline), errors.ErrLockLost)

	ack := &errors.AckError{Topic: "orders", Partition: 3, Offsets: []int64{17}, Err: kerr.InvalidRecordState, Message: "The record state is invalid."}
	refused := &errors.LockLostError{Topic: "orders", Partition: 3, Offset: 17, Reason: errors.LockInvalidRecordState, Err: ack}
	assert.EqualError(t, refused, "shareconsumer: acquisition lock of orders-3 offset 17 lost (invalid_record_state): "+
		"acknowledging orders-3 offset 17: INVALID_RECORD_STATE: The record state is invalid.")
	assert.ErrorIs(t, refused, errors.ErrLockLost)
	assert.ErrorIs(t, refused, kerr.InvalidRecordState, "the renew's Kafka code")
	var got *errors.AckError
	assert.True(t, errors.As(refused, &got))
	assert.Same(t, ack, got)
}

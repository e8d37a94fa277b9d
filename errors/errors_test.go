package errors_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func TestFromKafka(t *testing.T) {
	t.Parallel()
	msg := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		code    int16
		message *string
		want    string
		is      error
	}{
		{name: "no error", code: 0, message: msg("ignored")},
		{
			name: "with message", code: kerr.InvalidRecordState.Code, message: msg("The record state is invalid."),
			want: "INVALID_RECORD_STATE: The record state is invalid.", is: kerr.InvalidRecordState,
		},
		{
			name: "nil message", code: kerr.InvalidShareSessionEpoch.Code,
			want: kerr.InvalidShareSessionEpoch.Error(), is: kerr.InvalidShareSessionEpoch,
		},
		{
			name: "empty message", code: kerr.GroupIDNotFound.Code, message: msg(""),
			want: kerr.GroupIDNotFound.Error(), is: kerr.GroupIDNotFound,
		},
		{
			name: "unknown server error", code: -1, message: msg("boom"),
			want: "UNKNOWN_SERVER_ERROR: boom", is: kerr.UnknownServerError,
		},
		{
			name: "code kerr does not know", code: 9999,
			want: "UNKNOWN_ERROR_CODE_9999: ", is: kerr.UnknownServerError,
		},
		{
			name: "code kerr does not know, with message", code: 9999, message: msg("new in Kafka 9"),
			want: "UNKNOWN_ERROR_CODE_9999: new in Kafka 9", is: kerr.UnknownServerError,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := errors.FromKafka(tc.code, tc.message)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, tc.is)
			var ke *kerr.Error
			require.True(t, errors.As(err, &ke))
			assert.Same(t, tc.is, ke)
			var kafka *errors.KafkaError
			require.True(t, errors.As(err, &kafka))
			assert.Equal(t, tc.code, kafka.Code)
		})
	}
}

func TestAckError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  *errors.AckError
		want string
	}{
		{
			name: "range with Kafka's message",
			err: &errors.AckError{Topic: "orders", Partition: 3, Offsets: []int64{10, 11, 12, 13}, Err: kerr.InvalidRecordState,
				Message: "The record state is invalid."},
			want: "acknowledging orders-3 offsets 10-13: INVALID_RECORD_STATE: The record state is invalid.",
		},
		{
			name: "unsorted range",
			err:  &errors.AckError{Topic: "orders", Partition: 0, Offsets: []int64{12, 10, 11}, Err: kerr.NotLeaderForPartition},
			want: "acknowledging orders-0 offsets 10-12: " + kerr.NotLeaderForPartition.Error(),
		},
		{
			name: "scattered offsets",
			err:  &errors.AckError{Topic: "t", Partition: 1, Offsets: []int64{40, 10, 20}, Err: kerr.InvalidRecordState, Message: "m"},
			want: "acknowledging t-1 3 offsets in 10-40: INVALID_RECORD_STATE: m",
		},
		{
			name: "one offset, SDK error",
			err:  &errors.AckError{Topic: "t", Partition: 2, Offsets: []int64{7}, Err: errors.ErrUnsupportedAcknowledgeType},
			want: "acknowledging t-2 offset 7: acknowledge type not supported by the partition leader",
		},
		{
			name: "no offsets, message only",
			err:  &errors.AckError{Topic: "t", Partition: 2, Message: "Acknowledgement not successful due to invalid response from broker"},
			want: "acknowledging t-2: Acknowledgement not successful due to invalid response from broker",
		},
		{
			name: "nothing known",
			err:  &errors.AckError{Topic: "t", Partition: 2},
			want: "acknowledging t-2: unknown error",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.EqualError(t, tc.err, tc.want)
			if tc.err.Err != nil {
				assert.ErrorIs(t, fmt.Errorf("commit: %w", tc.err), tc.err.Err, "Is works through wrappers")
			}
		})
	}
}

func TestFatalError(t *testing.T) {
	t.Parallel()
	err := error(&errors.FatalError{Group: "billing", Err: kerr.GroupMaxSizeReached,
		Message: "The share group has reached its maximum capacity of 2 members."})
	assert.EqualError(t, err, `share group "billing": GROUP_MAX_SIZE_REACHED: The share group has reached its maximum capacity of 2 members.`)
	assert.ErrorIs(t, err, kerr.GroupMaxSizeReached)

	err = &errors.FatalError{Group: "g", Err: kerr.GroupAuthorizationFailed}
	assert.EqualError(t, err, `share group "g": `+kerr.GroupAuthorizationFailed.Error())
}

func TestIsFatalHeartbeatCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err   *kerr.Error
		fatal bool
	}{
		{kerr.GroupAuthorizationFailed, true},
		{kerr.InvalidRequest, true},
		{kerr.GroupMaxSizeReached, true},
		{kerr.GroupIDNotFound, true},
		{kerr.FencedMemberEpoch, false},
		{kerr.UnknownMemberID, false},
		{kerr.NotCoordinator, false},
		{kerr.CoordinatorNotAvailable, false},
		{kerr.CoordinatorLoadInProgress, false},
		{kerr.TopicAuthorizationFailed, false},
	} {
		assert.Equal(t, tc.fatal, errors.IsFatalHeartbeatCode(tc.err.Code), tc.err.Message)
	}
	assert.False(t, errors.IsFatalHeartbeatCode(0))
}

func TestSentinelsAreDistinct(t *testing.T) {
	t.Parallel()
	all := []error{
		errors.ErrUnsupportedAcknowledgeType, errors.ErrClosed, errors.ErrWokenUp, errors.ErrConcurrentPoll,
		errors.ErrImplicitMode, errors.ErrCannotAcknowledge, errors.ErrUnacknowledgedRecords,
		errors.ErrNotSubscribed, errors.ErrProcessRunning, errors.ErrProcessStopped, errors.ErrReject, errors.ErrLockLost,
		errors.ErrInvalidAcknowledgeType, errors.ErrRecordLimitUnsupported, errors.ErrTooManyAcquired,
		errors.ErrDeadLetter, errors.ErrNoDeadLetterTopic,
	}
	for i, a := range all {
		for k, b := range all {
			assert.Equal(t, i == k, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
	wrapped := fmt.Errorf("poll: %w", errors.ErrUnacknowledgedRecords)
	assert.True(t, errors.Is(wrapped, errors.ErrUnacknowledgedRecords))
	assert.Equal(t, "All records must be acknowledged in explicit acknowledgement mode.", errors.ErrUnacknowledgedRecords.Error())
	assert.Equal(t, "Implicit acknowledgement of delivery is being used.", errors.ErrImplicitMode.Error())
	assert.Equal(t, "The record cannot be acknowledged.", errors.ErrCannotAcknowledge.Error())
	assert.Equal(t, "Consumer is not subscribed to any topics.", errors.ErrNotSubscribed.Error())
}

func TestInconsistentGroupType(t *testing.T) {
	t.Parallel()
	notFound := kerr.GroupIDNotFound.Code
	assert.True(t, errors.IsInconsistentGroupType(notFound, "Group g is not a share group.", 3), "Kafka's message")
	assert.True(t, errors.IsInconsistentGroupType(notFound, "", 0), "a join cannot find no group: it creates one")
	assert.False(t, errors.IsInconsistentGroupType(notFound, "Share group g not found.", 3), "a missing group")
	assert.False(t, errors.IsInconsistentGroupType(notFound, "", -1))
	assert.False(t, errors.IsInconsistentGroupType(kerr.GroupAuthorizationFailed.Code, "Group g is not a share group.", 0))

	withMessage := &errors.FatalError{Group: "g", Err: kerr.GroupIDNotFound, Message: "Group g is not a share group.", InconsistentGroupType: true}
	assert.ErrorIs(t, withMessage, errors.ErrInconsistentGroupType)
	assert.ErrorIs(t, withMessage, kerr.GroupIDNotFound)
	assert.Equal(t, `share group "g": `+kerr.GroupIDNotFound.Message+": Group g is not a share group.", withMessage.Error())

	silent := &errors.FatalError{Group: "g", Err: kerr.GroupIDNotFound, InconsistentGroupType: true}
	assert.Equal(t, `share group "g": `+kerr.GroupIDNotFound.Message+": the group exists but is of another type", silent.Error())

	missing := &errors.FatalError{Group: "g", Err: kerr.GroupIDNotFound, Message: "Share group g not found."}
	assert.NotErrorIs(t, missing, errors.ErrInconsistentGroupType)
	assert.ErrorIs(t, missing, kerr.GroupIDNotFound)
}

func TestStandardLibraryFunctions(t *testing.T) {
	t.Parallel()
	a, b := errors.New("a"), errors.New("b")
	assert.EqualError(t, a, "a")
	assert.NotSame(t, a, errors.New("a"), "New returns a distinct error each time")
	joined := errors.Join(a, nil, b)
	assert.EqualError(t, joined, "a\nb")
	assert.True(t, errors.Is(joined, b))
	assert.NoError(t, errors.Join(nil, nil))
	assert.Same(t, a, errors.Unwrap(fmt.Errorf("wrapped: %w", a)))
	assert.NoError(t, errors.Unwrap(joined), "Unwrap returns nil for a list")
}

package kafkaerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorText(t *testing.T) {
	assert.Equal(t, "INVALID_REQUEST", Code(kerr.InvalidRequest).Error())
	err := New(kerr.InvalidRecordState, "Member is not the owner of batch record")
	assert.Equal(t, "INVALID_RECORD_STATE: Member is not the owner of batch record", err.Error())
	assert.ErrorIs(t, err, kerr.InvalidRecordState)
	assert.Equal(t, "INVALID_RECORD: no batch", Detailed(kerr.InvalidRecord, "no batch").Error())
}

func TestWireFields(t *testing.T) {
	msg := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		err  error
		code int16
		msg  *string
	}{
		{"nil", nil, 0, nil},
		{"message", New(kerr.InvalidConfig, "bad %s", "value"), kerr.InvalidConfig.Code, msg("bad value")},
		{"wrapped message", fmt.Errorf("altering: %w", New(kerr.InvalidConfig, "bad")), kerr.InvalidConfig.Code, msg("bad")},
		{"code only", Code(kerr.NotCoordinator), kerr.NotCoordinator.Code, nil},
		{"detail is not sent", Detailed(kerr.InvalidRecord, "no batch"), kerr.InvalidRecord.Code, nil},
		{"bare code", fmt.Errorf("moving: %w", kerr.UnknownTopicOrPartition), kerr.UnknownTopicOrPartition.Code, nil},
		{"no code", errors.New("disk on fire"), kerr.UnknownServerError.Code, msg("disk on fire")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.code, CodeOf(tc.err))
			assert.Equal(t, tc.msg, MessageOf(tc.err))
		})
	}
}

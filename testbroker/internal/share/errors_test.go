package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorText(t *testing.T) {
	assert.Equal(t, kerr.InvalidRequest.Error(), (&Error{Code: kerr.InvalidRequest}).Error())
	err := &Error{Code: kerr.InvalidRecordState, Message: msgNotOwnerOfBatch}
	assert.Equal(t, kerr.InvalidRecordState.Error()+": Member is not the owner of batch record", err.Error())
	assert.ErrorIs(t, err, kerr.InvalidRecordState)
}

func TestRecordStateString(t *testing.T) {
	for s, want := range map[RecordState]string{Available: "AVAILABLE", Acquired: "ACQUIRED", Acknowledged: "ACKNOWLEDGED", Archived: "ARCHIVED", 3: "UNKNOWN"} {
		assert.Equal(t, want, s.String())
	}
}

package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRecordStateString(t *testing.T) {
	for s, want := range map[RecordState]string{Available: "AVAILABLE", Acquired: "ACQUIRED", Acknowledged: "ACKNOWLEDGED", Archived: "ARCHIVED", 3: "UNKNOWN"} {
		assert.Equal(t, want, s.String())
	}
}

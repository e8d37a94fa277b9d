package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The probe must make the broker create a share partition for every partition of the topic;
// it fails otherwise.
func TestBrokerBytesPerSharePartition(t *testing.T) {
	perPartition, err := brokerBytesPerSharePartition(context.Background(), 50)
	require.NoError(t, err)
	assert.Positive(t, perPartition)
}

func TestConfigValidate(t *testing.T) {
	ok := config{consumers: 2, partitions: 4, records: 8}
	assert.NoError(t, ok.validate())
	for name, c := range map[string]config{
		"no consumers":           {consumers: 0, partitions: 4, records: 8},
		"records not a multiple": {consumers: 2, partitions: 4, records: 9},
		"fewer records":          {consumers: 2, partitions: 4, records: 2},
		"heartbeat under 1 ms":   {consumers: 2, partitions: 4, records: 8, heartbeatInterval: 1},
		"no partitions":          {consumers: 2, partitions: 0, records: 8},
	} {
		assert.Error(t, c.validate(), name)
	}
}

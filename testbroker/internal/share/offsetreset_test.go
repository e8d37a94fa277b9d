package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidOffsetReset(t *testing.T) {
	for v, want := range map[string]bool{
		"latest":                 true,
		"earliest":               true,
		"by_duration:P1DT2H":     true,
		"by_duration:PT0.5S":     true,
		"by_duration:pt18000s":   true,
		"by_duration:-PT1H":      false,
		"by_duration:PT":         false,
		"by_duration:P":          false,
		"by_duration:":           false,
		"by_duration:1h":         false,
		"Latest":                 false,
		"none":                   false,
		"":                       false,
		"by_duration:P1DT2H3M4S": true,
	} {
		assert.Equal(t, want, ValidOffsetReset(v), v)
	}
}

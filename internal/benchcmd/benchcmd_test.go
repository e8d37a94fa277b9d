package benchcmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInts(t *testing.T) {
	t.Parallel()
	var l Ints
	require.NoError(t, l.Set("1, 3"))
	assert.Equal(t, Ints{1, 3}, l)
	assert.Equal(t, "[1 3]", l.String())
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		assert.Error(t, l.Set(bad), "%q", bad)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{0: "0", 999.4: "999", 999.6: "1,000", 1234567: "1,234,567"} {
		assert.Equal(t, want, Thousands(f), "%v", f)
	}
}

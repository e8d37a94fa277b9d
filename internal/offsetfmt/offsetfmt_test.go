package offsetfmt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		offsets []int64
		want    string
	}{
		{nil, "no offsets"},
		{[]int64{7}, "offset 7"},
		{[]int64{10, 11, 12}, "offsets 10-12"},
		{[]int64{12, 10, 11}, "offsets 10-12"},
		{[]int64{40, 10, 20}, "3 offsets in 10-40"},
	} {
		assert.Equal(t, c.want, Describe(c.offsets), "%v", c.offsets)
	}
}

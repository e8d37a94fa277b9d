// Package offsetfmt words a set of offsets for error messages, the same way in every package
// that reports offsets.
package offsetfmt

import (
	"fmt"
	"strconv"
)

// Describe returns "offset 7", "offsets 10-19" when the offsets make one whole range (in any
// order), "3 offsets in 10-40" otherwise, and "no offsets" for none.
func Describe(offsets []int64) string {
	switch len(offsets) {
	case 0:
		return "no offsets"
	case 1:
		return "offset " + strconv.FormatInt(offsets[0], 10)
	}
	lo, hi := offsets[0], offsets[0]
	for _, o := range offsets[1:] {
		lo, hi = min(lo, o), max(hi, o)
	}
	if hi-lo+1 == int64(len(offsets)) {
		return fmt.Sprintf("offsets %d-%d", lo, hi)
	}
	return fmt.Sprintf("%d offsets in %d-%d", len(offsets), lo, hi)
}

//go:build !unix

package benchkit

import (
	"errors"
	"time"
)

// SelfCPU is only implemented where getrusage exists.
func SelfCPU() (time.Duration, error) {
	return 0, errors.New("measuring CPU time needs getrusage, which this system lacks")
}

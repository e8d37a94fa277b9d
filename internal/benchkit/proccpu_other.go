//go:build !linux

package benchkit

import (
	"errors"
	"time"
)

// ProcessCPU is only implemented on Linux, where another process's CPU time can be read while it runs.
func ProcessCPU(int) (time.Duration, string, error) {
	return 0, "", errors.New("measuring another process's CPU time needs Linux")
}

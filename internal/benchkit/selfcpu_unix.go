//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// SelfCPU returns the user plus system CPU time this process has used so far, every thread
// included (getrusage RUSAGE_SELF, microseconds).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
